"""The store never loses or touches what is not ours: kills at chosen instants (creation
included) resume to the uninterrupted result, non-store paths are refused untouched, the
lock sees through symlinks, failure records stay out of the root metadata, and a store
made by other model code is not resumed silently."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import zarrstore as store_mod
from tests.faultinject import killed_at

SPEC = """
name = "safety"
workload = "mm1"
replications = 12
seed = 5
[params]
customers = 400
warmup = 20
[sweep]
arrival_rate = [0.3, 0.6]
"""
DATA = ["mean_wait", "mean_time_in_system", "status", "reason", "seed"]


def _data(path: Path) -> xr.Dataset:
    ds = pipeline.open_store(path)[DATA].load()
    ds.attrs = {}
    return ds


def _tree(path: Path) -> dict[str, str]:
    """Every file under ``path`` with a hash of its bytes (what 'untouched' means)."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def _killed_run(spec: Path, store: Path, at: int) -> bool:
    """The sweep run with batches of 3, killed at fault point ``at`` (False: it ended first)."""
    return killed_at(at, lambda: pipeline.run(spec, store, workers=0, batch_size=3, progress=False))


def test_kills_at_twenty_instants_resume_to_the_uninterrupted_result(write_spec, tmp_path):
    spec = write_spec(SPEC.replace("replications = 12", "replications = 24"))  # 16 batches of 3
    ref = _data(pipeline.run(spec, tmp_path / "ref.zarr", workers=0, batch_size=3, progress=False))
    # Fault points of a fresh run: 1 before the build, 2 after it (before the rename),
    # 3 after the rename, then two per batch (data written; status written).
    for at in (1, 2, 3):
        store = tmp_path / f"create{at}.zarr"
        assert _killed_run(spec, store, at)
        assert store_mod.is_complete(store) == (at == 3)  # no store, or a complete one
        assert not store_mod._builds(store) or at == 2
        xr.testing.assert_identical(ref, _data(pipeline.run(spec, store, workers=0, batch_size=3, progress=False)))
        assert not store_mod._builds(store)
    # One store killed again and again (17 runs, 16 batches to do), every resumed run stopped
    # at another instant: between a batch's data and its status (odd points), after a status.
    store = tmp_path / "chain.zarr"
    for at in (5, 2, 3, 1, 2, 4, 1, 2, 3, 2, 1, 4, 2, 1, 2, 3, 2):  # the first run creates (points 1-3)
        assert _killed_run(spec, store, at)
        assert store_mod.is_complete(store)
    xr.testing.assert_identical(ref, _data(pipeline.run(spec, store, workers=0, progress=False)))


def test_a_folder_that_is_not_a_store_is_refused_and_untouched(write_spec, tmp_path, capsys):
    spec = write_spec(SPEC)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my thesis")
    for name in ("a.zarr", "b.zarr"):
        pipeline.run(spec, folder / name, workers=0, batch_size=12, progress=False)
    before = _tree(folder)
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--store", str(folder), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a schedsweep store" in err[0] and str(folder) in err[0]
    assert _tree(folder) == before
    a_file = tmp_path / "results.txt"
    a_file.write_text("keep me")
    with pytest.raises(store_mod.StoreError, match="is a file"):
        pipeline.run(spec, a_file, workers=0, progress=False)
    assert a_file.read_text() == "keep me"
    empty = tmp_path / "empty.zarr"  # an empty folder holds nothing to lose: it becomes the store
    empty.mkdir()
    assert store_mod.is_complete(pipeline.run(spec, empty, workers=0, batch_size=12, progress=False))


def test_a_second_run_through_a_symlink_is_refused(write_spec, tmp_path):
    spec = write_spec(SPEC)
    real = tmp_path / "real.zarr"
    link = tmp_path / "link.zarr"
    pipeline.run(spec, real, workers=0, batch_size=12, progress=False)
    link.symlink_to(real)
    with store_mod.locked(real):
        with pytest.raises(store_mod.StoreError, match="being written by another"):
            with store_mod.locked(link):
                pass
    # A run through the link resumes the real store (nothing left to run).
    assert pipeline.run(spec, link, workers=0, progress=False) == link


def test_ten_thousand_failures_keep_the_root_metadata_small(tmp_path, write_spec):
    spec = write_spec(SPEC)
    path = pipeline.run(spec, tmp_path / "f.zarr", workers=0, batch_size=12, progress=False)
    size_before = (path / "zarr.json").stat().st_size
    writer = store_mod.Writer(path, pipeline.spec.sweep.load(spec), pipeline.spec.sweep.workload_of(pipeline.spec.sweep.load(spec)))
    trace = "Traceback (most recent call last):\n" + "  frame\n" * 40
    for start in range(0, 10_000, 100):
        writer.add_failures([{"cell": {"arrival_rate": 0.3}, "replication": i % 12, "seed": i, "kind": "error",
                              "traceback": trace} for i in range(start, start + 100)])
    assert (path / "zarr.json").stat().st_size == size_before
    records = store_mod.read_failures(path, current=False)
    assert [r["seed"] for r in records] == list(range(10_000))
    # None of these replications is marked failed in the store: none is current.
    assert store_mod.read_failures(path) == []
    xr.open_zarr(path, consolidated=False)  # the failures group is not a data variable
    assert "failures" not in pipeline.open_store(path).data_vars


def test_show_failures_forgets_what_a_retry_filled(tmp_path, write_spec, capsys):
    spec = write_spec(SPEC.replace("workload = \"mm1\"", "workload = \"tests.flaky_workload\"")
                      .replace("[params]", "[params]\nfail_every = 3"))
    path = pipeline.run(spec, tmp_path / "r.zarr", workers=0, batch_size=12, progress=False)
    failed = store_mod.read_failures(path)
    assert failed and all(r["seed"] % 3 == 0 for r in failed)
    # Mark one failed replication as since filled (as a --retry-failed run that succeeded would).
    import zarr

    status = zarr.open_group(path, mode="r+")["status"]
    rates = [0.3, 0.6]
    first = failed[0]
    index = (rates.index(first["cell"]["arrival_rate"]), first["replication"])
    status[index] = store_mod.OK
    now = store_mod.read_failures(path)
    key = lambda r: (r["cell"]["arrival_rate"], r["replication"])  # noqa: E731 - seeds repeat across cells (CRN)
    assert sorted(map(key, now)) == sorted(map(key, failed[1:]))
    capsys.readouterr()
    assert cli.main(["show", str(path), "--failures"]) == 0
    headers = [line for line in capsys.readouterr().out.splitlines() if line.startswith("---")]
    assert headers == [f"--- cell {r['cell']} replication {r['replication']} seed {r['seed']}" for r in now]


def test_changed_model_code_is_refused_unless_allowed(tmp_path, write_spec, monkeypatch, capsys):
    pkg = tmp_path / "mymodels"
    pkg.mkdir()
    mm1_source = Path(pipeline.__file__).parent.parent.joinpath("workloads", "mm1.py").read_text()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("FACTOR = 1.0\n")
    (pkg / "queue.py").write_text(mm1_source.replace("from ._", "from schedsweep.workloads._")
                                  + "\nfrom .helpers import FACTOR\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = write_spec(SPEC.replace('workload = "mm1"', 'workload = "mymodels.queue"').replace("replications = 12",
                                                                                            "replications = 6"))
    store = tmp_path / "u.zarr"
    pipeline.run(spec, store, workers=0, batch_size=6, progress=False)
    code = pipeline.open_store(store).attrs["code"]
    assert {"mymodels/queue.py", "mymodels/helpers.py", "mymodels/__init__.py"} <= set(code["files"])
    assert "numpy" in code["dependencies"]
    (pkg / "helpers.py").write_text("FACTOR = 2.0\n")  # an imported helper of the model changes
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "mymodels/helpers.py" in err[0] and "--allow-changed-code" in err[0]
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--no-progress",
                     "--allow-changed-code"]) == 0
    changes = pipeline.open_store(store).attrs["code_changes"]
    assert len(changes) == 1 and changes[0]["changed"] == ["mymodels/helpers.py"]
    # Accepted once, the new code resumes without the flag; a further change is refused again.
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--no-progress"]) == 0
    (pkg / "queue.py").write_text((pkg / "queue.py").read_text() + "\n# edited\n")
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--no-progress"]) == 2
    assert "mymodels/queue.py" in capsys.readouterr().err


@pytest.mark.parametrize("kw", [dict(workers=-1), dict(workers=1.5), dict(batch_size=0), dict(batch_size=-5),
                                dict(batch_seconds=0), dict(batch_seconds=float("nan")), dict(workers=True)])
def test_the_python_api_refuses_bad_options_before_anything_runs(write_spec, tmp_path, kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        pipeline.run(write_spec(SPEC), tmp_path / "o.zarr", progress=False, **kw)
    assert not (tmp_path / "o.zarr").exists()


def test_code_identity_takes_the_named_submodules_of_a_package(tmp_path, monkeypatch):
    """``from pkg import mod`` makes the model of pkg's __init__ and mod, not of all of pkg
    (a GA store stays resumable after an edit of the report code); a name the __init__
    loads lazily (module ``__getattr__``) counts the whole package, which may import anything."""
    import importlib

    from schedsweep.pipeline.base.codehash import code_files

    root = tmp_path / "idpkg"
    (root / "tools").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "tools" / "__init__.py").write_text("")
    (root / "tools" / "used.py").write_text("X = 1\n")
    (root / "tools" / "unused.py").write_text("Y = 1\n")
    (root / "lazy").mkdir()
    (root / "lazy" / "__init__.py").write_text("def __getattr__(name):\n    import importlib\n"
                                                "    return importlib.import_module('.other', __name__)\n")
    (root / "lazy" / "other.py").write_text("Z = 1\n")
    (root / "model.py").write_text("from idpkg.tools import used\n")
    (root / "whole.py").write_text("import idpkg.tools\n")
    (root / "lazyuser.py").write_text("from idpkg.lazy import Z\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    files = lambda name: set(code_files(importlib.import_module(name))[0])  # noqa: E731
    assert files("idpkg.model") == {"idpkg/__init__.py", "idpkg/model.py", "idpkg/tools/__init__.py",
                                    "idpkg/tools/used.py"}
    assert "idpkg/tools/unused.py" in files("idpkg.whole")
    assert "idpkg/lazy/other.py" in files("idpkg.lazyuser")
    ga = set(code_files(importlib.import_module("schedsweep.workloads.ga"))[0])
    assert "schedsweep/pipeline/execution/subtasks.py" in ga and "schedsweep/pipeline/read/report.py" not in ga
