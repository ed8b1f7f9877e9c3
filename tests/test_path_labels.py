"""A path parameter's file is named by its label and its content, never by where it lies:
the store's coordinates, identity, attributes and exports hold the label (the file's name as
written, or a catalogue name) and the file's SHA-256; a copy of the project at another path,
or the trace at another place, resumes, grows and merges the same store; a file whose bytes
changed is refused in one line with both hashes; ``--sel`` takes the value as written; a
store made before labels still opens, and resumes at the place it was made."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import export as export_mod, zarrstore as store_mod
from schedsweep.pipeline.spec.sweep import SpecError, load, parse, path_label

SPEC = """
name = "labels"
workload = "cluster"
replications = {R}
seed = 5
[params]
source = "swf"
queue = "easy"
[sweep]
trace = {TRACES}
"""
DATA = ["makespan", "mean_wait", "status", "reason", "seed"]


def _swf(path: Path, seed: int, n: int = 40) -> Path:
    """A small SWF log of ``n`` jobs on 4 processors, busy enough that jobs queue."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.integers(0, 30, n))
    lines = ["; Version: 2.2", "; MaxProcs: 4"]
    for j in range(n):
        run, procs = int(rng.integers(5, 200)), int(rng.integers(1, 5))
        lines.append(f"{j + 1} {submit[j]} -1 {run} {procs} -1 -1 {procs} {run + int(rng.integers(0, 50))} "
                     "-1 1 1 1 -1 -1 -1 -1 -1")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _project(root: Path, traces: list[str], r: int = 2, where: str = "traces", name: str = "s.toml") -> Path:
    """A project folder: the traces under ``where`` and the spec ``jobs/NAME`` naming them."""
    for k, trace in enumerate(["kth-w00.swf", "ctc.swf", "sdsc.swf"]):
        _swf(root / where / trace, k)
    text = SPEC.replace("{R}", str(r)).replace("{TRACES}", json.dumps([f"../{where}/{t}" for t in traces]))
    (root / "jobs").mkdir(parents=True, exist_ok=True)
    (root / "jobs" / name).write_text(text)
    return root / "jobs" / name


def _run(spec: Path, store: Path) -> Path:
    return pipeline.run(spec, store, workers=0, progress=False)


def _data(path: Path) -> xr.Dataset:
    ds = pipeline.open_store(path)[DATA].load()
    ds.attrs = {}
    return ds


def _texts(store: Path) -> list[tuple[str, str]]:
    """(file, text) of every zarr.json of a store, and its attributes as read by xarray."""
    out = [(str(p), p.read_text()) for p in store.rglob("zarr.json")]
    out.append(("attrs", json.dumps(pipeline.open_store(store).attrs, default=str)))
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_labels_are_file_names_and_no_absolute_path_enters_the_store_or_an_export(tmp_path, capsys):
    spec = _project(tmp_path / "a", ["kth-w00.swf", "ctc.swf"])
    store = _run(spec, tmp_path / "a" / "results" / "s.zarr")
    ds = pipeline.open_store(store)
    assert list(ds["trace"].values) == ["kth-w00.swf", "ctc.swf"]
    assert not any("/" in str(v) for v in ds["trace"].values)
    files = ds.attrs["files"]
    assert files == {"ctc.swf": {"sha256": _sha(tmp_path / "a/traces/ctc.swf"), "written": ["../traces/ctc.swf"]},
                     "kth-w00.swf": {"sha256": _sha(tmp_path / "a/traces/kth-w00.swf"),
                                     "written": ["../traces/kth-w00.swf"]}}
    assert ds.attrs["spec_path"] == "../jobs/s.toml"  # from the folder that holds the store
    for where, text in _texts(store):
        assert str(tmp_path) not in text, where
    for fmt in ("csv", "netcdf"):
        data = export_mod.export(store, fmt).read_bytes()
        assert str(tmp_path).encode() not in data
        assert b"kth-w00.swf" in data
    from schedsweep.pipeline.read.report import write_report

    html = write_report(store, tmp_path / "r.html", figure_format="svg").read_text()
    assert str(tmp_path) not in html and "kth-w00.swf" in html


def test_the_workload_gets_the_resolved_file(tmp_path):
    spec = load(_project(tmp_path, ["kth-w00.swf"]))
    assert spec.dims[0].values == ("kth-w00.swf",)
    assert spec.cell_params((0,))["trace"] == str((tmp_path / "traces" / "kth-w00.swf").resolve())
    assert spec.params["trace"] == ""  # not set: stays as it is


def test_a_copy_elsewhere_resumes_with_nothing_to_do_grows_and_merges(tmp_path, capsys):
    a = tmp_path / "a"
    store = _run(_project(a, ["kth-w00.swf", "ctc.swf"]), a / "results" / "s.zarr")
    before = _data(store)
    b = tmp_path / "elsewhere" / "b"
    shutil.copytree(a, b)
    seconds = pipeline.open_store(store)["cell_seconds"].values
    capsys.readouterr()
    copied = _run(b / "jobs" / "s.toml", b / "results" / "s.zarr")
    assert "2 of 2 replications done" in capsys.readouterr().err  # whole traces: each cell run once
    xr.testing.assert_identical(_data(copied), before)
    np.testing.assert_array_equal(pipeline.open_store(copied)["cell_seconds"].values, seconds)  # nothing ran
    # `run STORE` finds the copy's own spec and traces (named from the store's folder)
    assert cli.main(["run", str(copied), "--workers", "0"]) == 0
    assert "2 of 2 replications done" in capsys.readouterr().err  # whole traces: each cell run once
    np.testing.assert_array_equal(pipeline.open_store(copied)["cell_seconds"].values, seconds)
    # the trace moved to another place in the copy: the same store, by label and content
    shutil.move(b / "traces", b / "data")
    (b / "jobs" / "s.toml").write_text((b / "jobs" / "s.toml").read_text().replace("../traces/", "../data/"))
    xr.testing.assert_identical(_data(_run(b / "jobs" / "s.toml", copied)), before)
    # grows there: one more replication and one more trace give what a fresh run of the larger spec gives
    grown_spec = _project(b, ["kth-w00.swf", "ctc.swf", "sdsc.swf"], r=3, where="data")
    grown = _run(grown_spec, copied)
    fresh = _run(_project(tmp_path / "c", ["kth-w00.swf", "ctc.swf", "sdsc.swf"], r=3), tmp_path / "c" / "s.zarr")
    xr.testing.assert_identical(_data(grown), _data(fresh))
    assert set(pipeline.open_store(grown).attrs["files"]) == {"kth-w00.swf", "ctc.swf", "sdsc.swf"}
    # merges: one half run in the first folder, the other in the copy with its trace elsewhere
    half_a = _run(_project(a, ["kth-w00.swf", "ctc.swf"], r=3, name="h.toml"), a / "results" / "half.zarr")
    half_b = _run(_project(b, ["sdsc.swf"], r=3, where="data", name="h.toml"), b / "results" / "half.zarr")
    merged = tmp_path / "m.zarr"
    assert cli.main(["merge", str(half_a), str(half_b), "-o", str(merged)]) == 0
    xr.testing.assert_identical(_data(merged), _data(fresh))
    for where, text in _texts(merged):
        assert str(tmp_path) not in text, where
    # and the merged store resumes from the whole spec with nothing to do
    xr.testing.assert_identical(_data(_run(grown_spec, merged)), _data(fresh))


def test_a_changed_trace_is_refused_with_both_hashes(tmp_path, capsys):
    spec = _project(tmp_path, ["kth-w00.swf", "ctc.swf"])
    store = _run(spec, tmp_path / "s.zarr")
    trace = tmp_path / "traces" / "kth-w00.swf"
    old = _sha(trace)
    _swf(trace, 99)
    new = _sha(trace)
    with pytest.raises(store_mod.StoreError) as err:
        _run(spec, store)
    message = str(err.value)
    assert "\n" not in message and "'kth-w00.swf'" in message and old in message and new in message
    assert message.index(old) < message.index(new)
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0"]) == 2
    assert new in capsys.readouterr().err


FIXED = """
name = "fixed"
workload = "cluster"
replications = 2
seed = 5
[params]
source = "swf"
trace = "kth-w00.swf"
[sweep]
queue = {QUEUES}
"""


def test_merging_stores_that_ran_different_files_of_one_name_is_refused(tmp_path):
    stores = []
    for name, queues, seed in (("a", ["fcfs"], 0), ("b", ["easy"], 0), ("c", ["easy"], 3)):
        _swf(tmp_path / name / "kth-w00.swf", seed)
        (tmp_path / name / "s.toml").write_text(FIXED.replace("{QUEUES}", json.dumps(queues)))
        stores.append(_run(tmp_path / name / "s.toml", tmp_path / name / "s.zarr"))
    a, b, c = stores
    merged = export_mod.merge([a, b], tmp_path / "ab.zarr")  # one file in two places: merged
    assert list(pipeline.open_store(merged)["queue"].values) == ["fcfs", "easy"]
    with pytest.raises(store_mod.StoreError) as err:
        export_mod.merge([a, c], tmp_path / "ac.zarr")
    message = str(err.value)
    assert "\n" not in message and "'kth-w00.swf'" in message
    assert _sha(tmp_path / "a/kth-w00.swf") in message and _sha(tmp_path / "c/kth-w00.swf") in message
    assert not (tmp_path / "ac.zarr").exists()


def test_sel_takes_the_value_as_written(tmp_path, capsys):
    spec = _project(tmp_path, ["kth-w00.swf", "ctc.swf"])
    store = _run(spec, tmp_path / "s.zarr")
    shown = []
    for value in ("kth-w00.swf", "../traces/kth-w00.swf", "./../traces/kth-w00.swf"):
        capsys.readouterr()
        assert cli.main(["table", str(store), "--sel", f"trace={value}", "--metric", "makespan"]) == 0
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1] == shown[2]
    capsys.readouterr()
    assert cli.main(["table", str(store), "--paired", "trace=../traces/kth-w00.swf", "--metric", "makespan"]) == 0
    table = capsys.readouterr().out
    assert "ctc.swf" in table and str(tmp_path) not in table
    assert cli.main(["table", str(store), "--sel", "trace=traces/other.swf"]) == 2
    assert "kth-w00.swf, ctc.swf" in capsys.readouterr().err
    # gantt reads the spec back from the store (named from its folder) and takes the value as written too
    out = tmp_path / "g.png"
    assert cli.main(["gantt", str(store), "--sel", "trace=../traces/ctc.swf", "-o", str(out)]) == 0
    assert out.stat().st_size > 0


def test_two_files_of_one_name_are_refused_in_one_line(tmp_path):
    _swf(tmp_path / "a" / "kth.swf", 1)
    _swf(tmp_path / "b" / "kth.swf", 2)
    text = SPEC.replace("{R}", "1").replace("{TRACES}", '["a/kth.swf", "b/kth.swf"]')
    with pytest.raises(SpecError) as err:
        parse(text, "s.toml", tmp_path)
    assert "\n" not in str(err.value) and "'a/kth.swf'" in str(err.value) and "'b/kth.swf'" in str(err.value)
    _swf(tmp_path / "b" / "kth.swf", 1)  # the same bytes: one file, so a repeated value
    with pytest.raises(SpecError, match="repeated values"):
        parse(text, "s.toml", tmp_path)
    spec = parse(SPEC.replace("{R}", "1").replace("{TRACES}", '["a/kth.swf"]'), "s.toml", tmp_path)
    assert spec.dims[0].values == ("kth.swf",)


def test_label_rule():
    assert path_label("pwa:KTH-SP2-1996-2.1-cln") == "KTH-SP2-1996-2.1-cln"
    assert path_label("../../traces/kth-w00.swf") == "kth-w00.swf"
    assert path_label("/data/logs/CTC-SP2-1996-3.1-cln.swf.gz") == "CTC-SP2-1996-3.1-cln.swf.gz"


def test_other_path_parameters_are_labelled_too(tmp_path):
    rates = tmp_path / "inputs" / "rates.csv"
    rates.parent.mkdir()
    rates.write_text("1.0,0.5\n0.5,1.0\n")
    spec = parse('workload = "desktop_grid"\nreplications = 1\nseed = 1\n[params]\nsystem = "custom"\n'
                 'alpha = [0.3, 0.3]\nrates_file = "inputs/rates.csv"\n', "s.toml", tmp_path)
    assert spec.params["rates_file"] == "rates.csv"
    assert spec.cell_params(())["rates_file"] == str(rates.resolve())
    assert spec.path_hashes() == {"rates.csv": _sha(rates)}
    assert str(tmp_path) not in spec.identity()


def test_failure_texts_name_files_by_label(tmp_path):
    spec = load(_project(tmp_path, ["kth-w00.swf"]))
    resolved = spec.files["kth-w00.swf"].resolved
    text = f'Traceback:\n  File "x.py"\nValueError: {resolved} line 3: bad record'
    assert store_mod.without_machine_paths(text, spec) == 'Traceback:\n  File "x.py"\nValueError: kth-w00.swf line 3: bad record'


def _make_legacy(store: Path, spec_path: Path) -> None:
    """Turn a store into one as schedsweep wrote it before labels: absolute paths as the
    trace coordinate and in the identity, no ``files``, the spec's path as given."""
    spec = load(spec_path)
    group = store_mod.open_group(store, "r+")
    group["trace"][...] = np.array([spec.files[v].resolved for v in spec.dims[0].values], dtype=object)
    attrs = store_mod.attrs_of(group)
    attrs.pop("files")
    attrs.pop("spec_path_from")
    attrs.update(spec_identity=spec.legacy_identity(), spec_path=str(spec_path), store_format=2)
    group.attrs.clear()
    store_mod.update_attrs(group, **attrs)
    store_mod.consolidate(store)


def test_a_store_made_before_labels_opens_and_resumes_where_it_was_made(tmp_path, capsys):
    spec = _project(tmp_path / "a", ["kth-w00.swf", "ctc.swf"])
    store = _run(spec, tmp_path / "a" / "s.zarr")
    before = _data(store)
    _make_legacy(store, spec)
    old = pipeline.open_store(store)
    absolute = [str((tmp_path / "a" / "traces" / t).resolve()) for t in ("kth-w00.swf", "ctc.swf")]
    assert list(old["trace"].values) == absolute  # read as before
    capsys.readouterr()
    assert cli.main(["table", str(store), "--sel", f"trace={absolute[0]}", "--metric", "makespan"]) == 0
    # a copy elsewhere cannot prove it ran the same files (no hash was kept): refused
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    with pytest.raises(store_mod.StoreError, match="different spec"):
        _run(tmp_path / "b" / "jobs" / "s.toml", tmp_path / "b" / "s.zarr")
    # a spec naming only some of its files leaves it as it was (then refused as a different spec)
    (tmp_path / "a" / "jobs" / "one.toml").write_text(spec.read_text().replace(', "../traces/ctc.swf"', ""))
    with pytest.raises(store_mod.StoreError, match="different spec"):
        _run(tmp_path / "a" / "jobs" / "one.toml", store)
    assert list(pipeline.open_store(store)["trace"].values) == absolute
    # at the place it was made it resumes, nothing to run, and is brought to labels
    resumed = _run(spec, store)
    xr.testing.assert_identical(_data(resumed), before)
    ds = pipeline.open_store(resumed)
    assert list(ds["trace"].values) == ["kth-w00.swf", "ctc.swf"]
    assert set(ds.attrs["files"]) == {"kth-w00.swf", "ctc.swf"}
    assert json.loads(ds.attrs["spec_identity"]) == json.loads(load(spec).identity())


def test_record_where_takes_the_value_as_written(tmp_path):
    path = _project(tmp_path, ["kth-w00.swf", "ctc.swf"])
    text = path.read_text() + '[record]\nreplications = [0]\nwhere = { trace = "../traces/ctc.swf" }\n'
    spec = parse(text, str(path), path.parent)
    assert spec.record["where"] == {"trace": "ctc.swf"}
    with pytest.raises(SpecError, match="not a value of a sweep dimension"):
        parse(text.replace('trace = "../traces/ctc.swf"', 'trace = "../traces/sdsc.swf"'), str(path), path.parent)


def test_reference_points_name_a_file_as_written(tmp_path):
    from schedsweep.pipeline.spec.reference import of_store

    path = _project(tmp_path, ["kth-w00.swf", "ctc.swf"])
    text = path.read_text() + ('[[reference.value]]\nmetric = "makespan"\nwhere = { trace = "../traces/ctc.swf" }\n'
                               'value = 1.0\n[[reference.claim]]\ntext = "t"\nkind = "ratio_at_least"\n'
                               'metric = "makespan"\nalong = "trace"\na = "../traces/ctc.swf"\nb = "kth-w00.swf"\n')
    spec = parse(text, str(path), path.parent)  # checked against the labels, as the store's coordinates
    ds = xr.Dataset(coords={"trace": list(spec.dims[0].values)},  # a store's coordinates are the labels
                    attrs={"spec_text": spec.text, "files": store_mod.files_attr(spec)})
    ref = of_store(ds)
    assert ref.values[0].where == {"trace": "ctc.swf"}
    assert (ref.claims[0].a, ref.claims[0].b) == ("ctc.swf", "kth-w00.swf")
