"""A malformed SWF trace is found once, at validation, not inside every
replication: one line naming the spec, the trace file and (for a bad record) the line, exit 2.
The parse made at validation is the one the replications reuse."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from schedsweep.pipeline import cli
from schedsweep.pipeline.spec import sweep as spec_mod
from schedsweep.workloads.cluster import flow, swf

HEADER = "; Version: 2.2\n; MaxProcs: 64\n"


def job(i: int, procs: int = 4, run: int = 100, submit: int = 0) -> str:
    """One valid 18-field SWF record."""
    return f"{i} {submit + i} 10 {run} {procs} -1 -1 {procs} 200 -1 1 1 1 -1 1 -1 -1 -1\n"


GOOD = HEADER + "".join(job(i) for i in range(1, 4))
MANY = HEADER + "".join(job(i) for i in range(1, 101))  # records on lines 3..102

# case -> (file name, content (str or bytes), words the error must contain)
CASES = {
    "17 fields": ("t.swf", HEADER + job(1) + " ".join(["1"] * 17) + "\n", ["line 4", "expected 18 fields, found 17"]),
    "19 fields": ("t.swf", HEADER + " ".join(["1"] * 19) + "\n", ["line 3", "found 19"]),
    "comma separated": ("t.swf", HEADER + ",".join(["1"] * 18) + "\n", ["line 3", "found 1"]),
    "word": ("t.swf", HEADER + job(1).replace(" 4 -1", " four -1", 1), ["line 3", "field 5", "'four'"]),
    "nan": ("t.swf", HEADER + job(1) + job(2).replace(" 100 ", " nan ", 1), ["line 4", "field 4", "nan"]),
    "inf": ("t.swf", HEADER + job(1).replace(" 200 ", " inf ", 1), ["line 3", "field 9", "inf"]),
    "overflow": ("t.swf", HEADER + job(1).replace(" 200 ", " 1e999 ", 1), ["line 3", "field 9"]),
    "hex": ("t.swf", HEADER + job(1).replace(" 200 ", " 0x10 ", 1), ["line 3", "'0x10'"]),
    "decimal comma": ("t.swf", HEADER + job(1).replace(" 200 ", " 2,5 ", 1), ["line 3", "'2,5'"]),
    "deep bad line": ("t.swf", MANY.replace(job(77), job(77).replace(" 10 ", " x ", 1)), ["line 79", "field 3"]),
    "no header": ("t.swf", "".join(job(i) for i in range(1, 4)), ["MaxProcs"]),
    "MaxProcs 0": ("t.swf", GOOD.replace("MaxProcs: 64", "MaxProcs: 0"), ["MaxProcs"]),
    "MaxProcs negative": ("t.swf", GOOD.replace("MaxProcs: 64", "MaxProcs: -5"), ["MaxProcs"]),
    "empty file": ("t.swf", "", ["MaxProcs"]),
    "header only": ("t.swf", HEADER, ["no usable job"]),
    "all negative run times": ("t.swf", HEADER + job(1, run=-1) + job(2, run=-5), ["no usable job", "2 with run time < 0"]),
    "all too large": ("t.swf", HEADER + job(1, procs=65) + job(2, procs=100), ["no usable job", "2 larger"]),
    "not gzip": ("t.swf.gz", GOOD, ["cannot be read as an SWF trace", "BadGzipFile"]),
    "truncated gzip": ("t.swf.gz", gzip.compress(MANY.encode())[:200], ["cannot be read as an SWF trace"]),
    "bad line in gzip": ("t.swf.gz", gzip.compress((GOOD + "1 2 3\n").encode()), ["line 6", "found 3"]),
    "negative submit": ("t.swf", HEADER + job(1) + job(2, submit=-9) + job(3), ["line 4", "field 2 (submit time) is -7",
                                                                              "allowed: >= 0", "1 such records"]),
    "binary junk": ("t.swf", b"\x89PNG\r\n\x1a\n\xff\xfe" * 40, ["cannot be read as an SWF trace"]),
}


def write_trace(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def cluster_spec(folder: Path, trace: str, extra: str = "", sweep: str = "") -> Path:
    path = folder / "spec.toml"
    path.write_text(f'workload = "cluster"\nreplications = 2\nseed = 3\n[params]\nsource = "swf"\n'
                    f'trace = "{trace}"\n{extra}\n' + (f"[sweep]\n{sweep}\n" if sweep else ""))
    return path


def test_enough_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_trace_one_line_exit_2(case, tmp_path, capsys):
    name, content, words = CASES[case]
    trace = write_trace(tmp_path, name, content)
    path = cluster_spec(tmp_path, name)
    code = cli.main(["run", str(path), "--workers", "0", "--store", str(tmp_path / "s.zarr"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("schedsweep: error: ") and str(path) in err and str(trace) in err, err
    for word in words:
        assert word in err, (word, err)
    assert not (tmp_path / "s.zarr").exists()


def test_trace_max_procs_override_is_checked_too(tmp_path):
    write_trace(tmp_path, "t.swf", GOOD)  # every job asks for 4 processors
    with pytest.raises(spec_mod.SpecError, match="no usable job.*3 larger than the machine's 2"):
        spec_mod.load(cluster_spec(tmp_path, "t.swf", "trace_max_procs = 2"))
    spec_mod.load(cluster_spec(tmp_path, "t.swf", "trace_max_procs = 4"))


def test_trace_parsed_once_for_all_cells_and_replications(tmp_path, monkeypatch):
    """Validation parses the trace once for every cell; a replication afterwards reuses that parse."""
    trace = write_trace(tmp_path, "once.swf", MANY)
    calls = []
    real_read = swf.read
    monkeypatch.setattr(swf, "read", lambda *a, **k: calls.append(a) or real_read(*a, **k))
    swf._read_cached.cache_clear()
    spec = spec_mod.load(cluster_spec(tmp_path, "once.swf", sweep='queue = ["fcfs", "easy", "conservative"]'))
    assert len(calls) == 1 and spec.n_cells == 3
    for _, params in spec.cells():
        f, _ = flow(params, 12345)
        assert f.submit.size == 100
    assert len(calls) == 1
    trace.write_text(MANY.replace(job(50), ""))  # a changed file is parsed again (mtime and size key)
    f, _ = flow(spec.cells()[0][1], 12345)
    assert len(calls) == 2 and f.submit.size == 99
