"""``schedsweep stores``: the catalogue of a folder of stores of several workloads, with a
damaged, a running, an interrupted, a merged and an old-format (format 1) one among them;
filters, formats, and that it reads metadata only (no chunk, no xarray, no numba)."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedsweep import pipeline, workloads
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.base.errors import QueryError
from schedsweep.pipeline.execution.execute import provenance, status_counts
from schedsweep.pipeline.store.export import merge
from schedsweep.pipeline.spec.sweep import parse
from schedsweep.pipeline.read.stores import catalogue, describe, find, render

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden"
MM1 = """name = "{name}"
workload = "mm1"
replications = {reps}
seed = 3
[params]
customers = 200
warmup = 10
[sweep]
arrival_rate = {rates}
"""


def _run_mm1(folder: Path, name: str, rates: str = "[0.3, 0.5]", reps: int = 4) -> Path:
    spec = folder / f"{name}.toml"
    spec.write_text(MM1.format(name=name, reps=reps, rates=rates))
    path = folder / f"{name}.zarr"
    pipeline.run(spec, path, workers=0, batch_size=2, progress=False)
    return path


def _written(path: Path, workload: str, text: str, failed_first: bool = False, flush: bool = True):
    """A store of ``workload`` made and written through the Writer (no model run): every
    replication of the first cell written, the first one failed if asked."""
    spec = parse(f'name = "{path.stem}"\nworkload = "{workload}"\n{text}')
    module = workloads.get(workload)
    store_mod.create(path, spec, module, 2, provenance(spec, module))
    writer = store_mod.Writer(path, spec, module)
    n = spec.replications
    out = {m.name: np.ones((n, *m.shape)) for m in module.METRICS}
    out["reason"] = np.zeros(n, np.int8)
    cell = (0,) * len(spec.dims)
    writer.write_batch(cell, 0, writer.seeds(cell, 0, n), out, {0: "boom"} if failed_first else {}, 0.0)
    if flush:
        writer.flush()
    return writer, spec


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    _run_mm1(root, "low", "[0.3, 0.5]")
    _run_mm1(root, "high", "[0.7, 0.9]")
    (root / "cluster").mkdir()
    _written(root / "cluster" / "cl.zarr", "cluster", "replications = 3\nseed = 1\n[sweep]\nload = [0.5, 0.7, 0.9]\n",
             failed_first=True)
    _written(root / "dg.zarr", "desktop_grid", "replications = 2\nseed = 1\n")
    shutil.copytree(GOLDEN / "store-format1", root / "old.zarr")
    broken = root / "broken.zarr"
    shutil.copytree(root / "low.zarr", broken)
    (broken / "mean_wait" / "zarr.json").unlink()
    (root / "unreadable.zarr").mkdir()
    (root / "unreadable.zarr" / "zarr.json").write_text("{ not json")
    _written(root / "stopped.zarr", "mm1", "replications = 4\nseed = 1\n[sweep]\narrival_rate = [0.3, 0.5]\n",
             flush=False)  # a run killed before compacting: its batches are in the journal only
    merge([root / "low.zarr", root / "high.zarr"], root / "merged" / "both.zarr")
    (root / ".low.zarr.schedsweep-build-1").mkdir()  # a build's leftover: hidden, not listed
    return root


def _by_name(infos):
    return {Path(i.path).name: i for i in infos}


def test_every_store_in_the_folder_is_found_once_recursively_and_hidden_builds_are_not(folder):
    found = sorted(str(p.relative_to(folder)) for p in find([folder, folder / "low.zarr"]))
    assert found == sorted(["broken.zarr", "cluster/cl.zarr", "dg.zarr", "high.zarr", "low.zarr",
                            "merged/both.zarr", "old.zarr", "stopped.zarr", "unreadable.zarr"])


def test_completeness_equals_the_status_counts_of_each_store(folder):
    infos = _by_name(catalogue([folder]))
    for name in ("low.zarr", "high.zarr", "cl.zarr", "dg.zarr", "old.zarr", "both.zarr"):
        path = Path(infos[name].path)
        assert infos[name].counts == status_counts(path), name
    assert infos["low.zarr"].state == "ok" and infos["low.zarr"].counted == "recorded"
    assert infos["both.zarr"].counted.startswith("read from status")  # a merge records no counts of its own
    assert infos["both.zarr"].merged_from == 2 and infos["both.zarr"].dims == {"arrival_rate": 4}
    assert infos["cl.zarr"].state == "failed" and infos["cl.zarr"].counts["failed"] == 1
    assert infos["cl.zarr"].counts["not run"] == 2 * 3  # the other two cells
    assert infos["dg.zarr"].state == "ok" and infos["dg.zarr"].dims == {}
    assert infos["old.zarr"].store_format == 1 and infos["old.zarr"].state == "ok"
    assert infos["old.zarr"].counts["ok"] == 12 and infos["old.zarr"].replications == 6


def test_damage_the_metadata_shows_is_named(folder):
    infos = _by_name(catalogue([folder]))
    assert infos["broken.zarr"].state == "damaged" and "mean_wait" in infos["broken.zarr"].problem
    assert infos["unreadable.zarr"].state == "damaged" and "zarr.json" in infos["unreadable.zarr"].problem


def test_an_interrupted_run_counts_its_journal_and_a_running_one_says_running(folder):
    info = describe(folder / "stopped.zarr")
    assert info.state == "interrupted"
    assert info.counts == {"not run": 4, "ok": 4, "no result": 0, "failed": 0}  # the journal's 4 ok on top
    assert status_counts(folder / "stopped.zarr")["ok"] == 0  # the arrays alone do not have them yet
    with store_mod.locked(folder / "stopped.zarr"):
        assert describe(folder / "stopped.zarr").state == "running"


def test_recorded_counts_are_read_without_any_chunk(tmp_path):
    path = _run_mm1(tmp_path, "s")
    expected = status_counts(path)
    for chunk in (path / "status").rglob("c/*"):  # the status data gone: only the metadata can answer
        if chunk.is_file():
            chunk.unlink()
    info = describe(path)
    assert info.counted == "recorded" and info.counts == expected and info.state == "ok"


def test_a_run_voids_the_recorded_counts_while_it_writes(tmp_path):
    path = _run_mm1(tmp_path, "s", reps=4)
    spec = tmp_path / "s.toml"
    spec.write_text(MM1.format(name="s", reps=6, rates="[0.3, 0.5]"))
    writer_attrs = []
    real_flush = store_mod.Writer.flush

    def flush(self):  # what a reader sees in the middle of the growing run
        writer_attrs.append(self.attrs().get("status_counts"))
        real_flush(self)

    store_mod.Writer.flush = flush
    try:
        pipeline.run(spec, path, workers=0, batch_size=2, progress=False)
    finally:
        store_mod.Writer.flush = real_flush
    assert writer_attrs == [None]
    assert describe(path).counts == status_counts(path) == {"not run": 0, "ok": 12, "no result": 0, "failed": 0}


def test_bytes_and_files_are_those_on_disk_and_provenance_is_the_stores(folder):
    info = describe(folder / "low.zarr")
    files = [p for p in (folder / "low.zarr").rglob("*") if p.is_file()]
    assert info.files == len(files) and info.bytes == sum(p.stat().st_size for p in files)
    attrs = json.loads((folder / "low.zarr" / "zarr.json").read_text())["attributes"]
    assert info.code == json.loads(attrs["code"][len("json:"):])["hash"][:12]
    assert info.git_commit == attrs["git_commit"] and info.created == attrs["created"]
    assert info.updated == attrs["last_run_ended"] and info.schedsweep_version == pipeline.__version__
    assert info.spec_file == "low.toml" and info.coords == {"arrival_rate": [0.3, 0.5]}


def test_filters_by_workload_coordinate_and_parameter(folder):
    names = lambda **k: sorted(Path(i.path).name for i in catalogue([folder], **k))  # noqa: E731
    assert names(workload="cluster") == ["cl.zarr"]
    assert names(where=["arrival_rate=0.9"]) == ["both.zarr", "high.zarr"]
    assert names(where=["arrival_rate=0.3", "customers=200"]) == ["both.zarr", "broken.zarr", "low.zarr", "old.zarr"]
    assert names(where=["warmup=20"]) == ["old.zarr"]
    assert names(workload="mm1", where=["load=0.5"]) == []
    with pytest.raises(QueryError, match="no store listed has a parameter or sweep dimension 'nope'"):
        catalogue([folder], where=["nope=1"])
    with pytest.raises(QueryError, match="KEY=VALUE"):
        catalogue([folder], where=["arrival_rate"])


def test_the_formats_hold_the_same_rows(folder):
    infos = catalogue([folder])
    rows = list(csv.DictReader(io.StringIO(render(infos, "csv", folder))))
    assert [r["store"] for r in rows] == [str(Path(i.path).relative_to(folder)) for i in infos]
    low = next(r for r in rows if r["store"] == "low.zarr")
    assert low["dimensions"] == "arrival_rate[2]" and low["replications"] == "4" and low["workload"] == "mm1"
    assert low["completeness"] == "ok (8/8 done)"
    assert json.loads(render(infos, "json"))[0]["path"] == infos[0].path
    markdown = render(infos, "markdown").splitlines()
    assert len(markdown) == 2 + len(infos) and markdown[0].startswith("| store | spec | workload")
    text = render(infos, "text").splitlines()
    assert len(text) == 2 + len(infos) and text[-1].startswith(f"{len(infos)} store(s)")


def test_the_verb_loads_neither_numba_nor_xarray_nor_zarr_for_recorded_stores(tmp_path):
    _run_mm1(tmp_path, "a")
    code = ("import sys\nfrom schedsweep.pipeline import cli\n"
            f"assert cli.main(['stores', {str(tmp_path)!r}, '--format', 'csv']) == 0\n"
            "print('MODULES', *sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'xarray', 'zarr', 'pandas')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "a.zarr" in out
    assert out.strip().splitlines()[-1] == "MODULES"


def test_the_cli_refuses_a_missing_folder_in_one_line(tmp_path, capsys):
    assert cli.main(["stores", str(tmp_path / "nowhere")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nowhere: no such file or folder" in err[0]
