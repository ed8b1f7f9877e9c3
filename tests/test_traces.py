"""Traces by name (``pipeline/spec/traces.py``): the catalogue, ``schedsweep traces`` (list, fetch,
add) and ``pwa:NAME`` spec values. The download goes through pooch for real, from a file
served over HTTP on 127.0.0.1 by a thread of this process."""
from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import threading
import tomllib
from pathlib import Path

import pytest

from schedsweep import pipeline
from schedsweep.pipeline.spec import traces
from schedsweep.pipeline.cli import main
from schedsweep.pipeline.base.errors import SpecError

SWF = "; MaxProcs: 4\n" + "".join(f"{i} {i * 3} -1 {5 + i} {1 + i % 4} -1 -1 {1 + i % 4} {10 + i} -1 1 1 1 1 1 1 -1 -1\n"
                                  for i in range(1, 21))


@pytest.fixture
def served(tmp_path):
    """A folder served by http.server on 127.0.0.1 (ephemeral port): (folder, base URL, hits)."""
    root = tmp_path / "www"
    root.mkdir()
    hits: list[str] = []

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # the requests are counted, not printed
            hits.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _log(folder: Path, name: str = "tiny.swf.gz") -> tuple[Path, str]:
    path = folder / name
    path.write_bytes(gzip.compress(SWF.encode(), mtime=0))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _catalogue(tmp_path, monkeypatch, url: str, sha: str, size: int, name: str = "TINY-1") -> None:
    """A catalogue of one more entry (SCHEDSWEEP_TRACE_CATALOGUE) and an empty cache."""
    text = (f'[trace."{name}"]\nfile = "tiny.swf.gz"\nurl = "{url}"\nsize = {size}\nsha256 = "{sha}"\n'
            'jobs = 20\nmax_procs = 4\nacknowledge = "nobody"\nsource = "made by tests/test_traces.py"\n')
    (tmp_path / "extra.toml").write_text(text)
    monkeypatch.setenv(traces.CATALOGUE_ENV, str(tmp_path / "extra.toml"))
    monkeypatch.setenv(traces.DATA_ENV, str(tmp_path / "cache"))


def test_fetch_downloads_through_pooch_checks_the_hash_and_keeps_it(served, tmp_path, monkeypatch):
    root, base, hits = served
    src, sha = _log(root)
    _catalogue(tmp_path, monkeypatch, f"{base}/tiny.swf.gz", sha, src.stat().st_size)
    assert not traces.is_cached(traces.entry("TINY-1"))
    got = traces.fetch("TINY-1")
    assert got == tmp_path / "cache" / "tiny.swf.gz"           # SCHEDSWEEP_DATA is the cache
    assert got.read_bytes() == src.read_bytes() and hits == ["/tiny.swf.gz"]
    assert traces.is_cached(traces.entry("TINY-1"))
    traces.fetch("TINY-1")                                      # present with its hash: no download
    assert hits == ["/tiny.swf.gz"]


def test_fetch_refuses_bytes_of_another_hash_and_keeps_nothing(served, tmp_path, monkeypatch):
    root, base, _ = served
    src, sha = _log(root)
    wrong = hashlib.sha256(b"another file").hexdigest()
    _catalogue(tmp_path, monkeypatch, f"{base}/tiny.swf.gz", wrong, src.stat().st_size)
    with pytest.raises(traces.TraceError) as exc:
        traces.fetch("TINY-1")
    message = str(exc.value)
    assert "\n" not in message and sha in message and wrong in message
    assert not (tmp_path / "cache" / "tiny.swf.gz").exists()


def test_fetch_of_a_missing_file_is_one_line(served, tmp_path, monkeypatch):
    _, base, _ = served
    _catalogue(tmp_path, monkeypatch, f"{base}/absent.swf.gz", "0" * 64, 10)
    with pytest.raises(traces.TraceError) as exc:
        traces.fetch("TINY-1")
    assert "\n" not in str(exc.value) and "404" in str(exc.value) and "absent.swf.gz" in str(exc.value)


def test_a_log_without_a_download_says_to_add_a_copy():
    """The raw KTH log's catalogued bytes were compressed locally: no server has them."""
    with pytest.raises(traces.TraceError) as exc:
        traces.fetch("KTH-SP2-1996-2-raw")
    assert "\n" not in str(exc.value) and "schedsweep traces add FILE" in str(exc.value)


def test_cache_folder_is_pooch_s_user_cache_unless_moved(monkeypatch, tmp_path):
    import pooch

    monkeypatch.delenv(traces.DATA_ENV, raising=False)
    assert traces.cache_dir() == Path(pooch.os_cache("schedsweep"))
    monkeypatch.setenv(traces.DATA_ENV, str(tmp_path / "elsewhere"))
    assert traces.cache_dir() == tmp_path / "elsewhere"


def test_add_registers_the_right_file_and_refuses_another(tmp_path, monkeypatch):
    src, sha = _log(tmp_path)
    _catalogue(tmp_path, monkeypatch, "", sha, src.stat().st_size)
    wrong = tmp_path / "tiny.swf.gz.bak"
    wrong.write_bytes(src.read_bytes()[:-1] + b"x")
    wrong_sha = hashlib.sha256(wrong.read_bytes()).hexdigest()
    with pytest.raises(traces.TraceError) as exc:
        traces.add(wrong, "TINY-1")
    assert "\n" not in str(exc.value) and sha in str(exc.value) and wrong_sha in str(exc.value)
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())
    trace, path = traces.add(src)                       # found by its hash
    assert trace.name == "TINY-1" and path.read_bytes() == src.read_bytes()


def test_cli_lists_fetches_and_refuses_in_one_line(served, tmp_path, monkeypatch, capsys):
    root, base, _ = served
    src, sha = _log(root)
    _catalogue(tmp_path, monkeypatch, f"{base}/tiny.swf.gz", sha, src.stat().st_size)
    assert main(["traces"]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("TINY-1 "))
    assert row.split()[-1] == "no" and "20" in row.split()
    assert main(["traces", "fetch", "TINY-1"]) == 0
    capsys.readouterr()
    assert main(["traces"]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("TINY-1 "))
    assert row.split()[-1] == "yes"
    (tmp_path / "other.swf.gz").write_bytes(b"not the log")
    assert main(["traces", "add", str(tmp_path / "other.swf.gz"), "--name", "TINY-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and sha in err and hashlib.sha256(b"not the log").hexdigest() in err
    assert main(["traces", "fetch", "NO-SUCH-LOG"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "TINY-1" in err and "KTH-SP2-1996-2.1-cln-filtered" in err


SPEC = """name = "t"
workload = "cluster"
replications = 1
seed = 1
[params]
source = "swf"
trace = "{trace}"
queue = "easy"
"""


def test_pwa_values_resolve_from_the_cache_or_say_how_to_fetch(tmp_path, monkeypatch):
    src, sha = _log(tmp_path)
    _catalogue(tmp_path, monkeypatch, "", sha, src.stat().st_size)
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(trace="pwa:TINY-1"))
    with pytest.raises(SpecError) as exc:
        pipeline.load(spec)
    message = str(exc.value)
    assert "\n" not in message and str(spec) in message and "schedsweep traces fetch TINY-1" in message
    # a listing validates without the file: the name is the catalogue's (the store's label)
    assert pipeline.load(spec, shallow=True).params["trace"] == "TINY-1"
    traces.add(src)
    loaded = pipeline.load(spec)
    assert loaded.params["trace"] == "TINY-1"  # a store knows the log by its catalogue name
    assert loaded.cell_params(())["trace"] == str(tmp_path / "cache" / "tiny.swf.gz")  # the workload reads the cache's copy
    spec.write_text(SPEC.format(trace="pwa:KTH-SP2-1996-2.1-cln"))
    for shallow in (False, True):
        with pytest.raises(SpecError) as exc:
            pipeline.load(spec, shallow=shallow)
        message = str(exc.value)
        assert "\n" not in message and "unknown trace 'KTH-SP2-1996-2.1-cln'" in message
        assert all(name in message for name in traces.catalogue())
    spec.write_text(SPEC.format(trace=src.name))      # a path, relative to the spec, as before
    assert pipeline.load(spec).cell_params(())["trace"] == str(src)


def test_the_shipped_catalogue_is_consistent():
    """Every entry: distinct file names, a PWA archive URL for the archive's own files and a
    distinct name for the copies that are not (the filtered KTH, the locally gzipped raw KTH)."""
    doc = tomllib.loads(traces.TABLE.read_text())
    entries = traces.catalogue()
    assert set(entries) == set(doc["trace"]) and len(entries) >= 5
    assert len({t.file for t in entries.values()}) == len(entries)
    assert "Feitelson" in traces.citation() and "Parallel Workloads Archive" in traces.citation()
    for t in entries.values():
        assert all(c in "0123456789abcdef" for c in t.sha256) and t.size > 0 and t.jobs > 0 and t.acknowledge
        pristine = t.url.startswith("https://www.cs.huji.ac.il/labs/parallel/workload/")
        assert pristine == t.name.endswith("-cln"), t.name     # the archive's own cleaned logs only
        if pristine:
            assert t.url.endswith("/" + t.file) and t.file == t.name + ".swf.gz"
