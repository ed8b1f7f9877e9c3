"""End to end: identical stores under every execution mode, resume after SIGKILL,
failures recorded with seed and traceback, stores refused for other specs or while locked."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline.base import seeding
from schedsweep.pipeline.store import zarrstore as store_mod

SPEC = """
name = "repro"
workload = "mm1"
replications = 23
seed = 77
independent = ["service_rate"]
[params]
customers = 3000
warmup = 200
[sweep]
arrival_rate = [0.4, 0.6]
[[zip]]
service_rate = [1.0, 2.0]
warmup = [100, 300]
"""
DATA = ["mean_wait", "mean_time_in_system", "status", "reason", "seed"]


def _data(path: Path) -> xr.Dataset:
    """The data and coordinates of a store, without run provenance (times, batch sizes)."""
    ds = pipeline.open_store(path)[DATA].load()
    ds.attrs = {}
    return ds


def test_identical_stores_serial_cluster_and_batch_sizes(write_spec, tmp_path):
    spec = write_spec(SPEC.replace("warmup = 200\n", ""))
    ref = _data(pipeline.run(spec, tmp_path / "serial.zarr", workers=0, progress=False))
    assert (ref["status"] == store_mod.OK).all()
    for size in (1, 5, 23):
        other = _data(pipeline.run(spec, tmp_path / f"b{size}.zarr", workers=0, batch_size=size, progress=False))
        xr.testing.assert_identical(ref, other)
    cluster = _data(pipeline.run(spec, tmp_path / "cluster.zarr", workers=2, batch_size=4, progress=False))
    xr.testing.assert_identical(ref, cluster)
    dask = _data(pipeline.run(spec, tmp_path / "dask.zarr", workers=2, cluster="dask", progress=False))
    xr.testing.assert_identical(ref, dask)   # Dask LocalCluster, pilot-sized batches, results as they finish


def test_common_random_numbers_and_independent_dims(write_spec, tmp_path):
    spec = write_spec(SPEC.replace("warmup = 200\n", ""))
    ds = pipeline.open_store(pipeline.run(spec, tmp_path / "s.zarr", workers=0, progress=False))
    # Seeds depend on the replication and on the independent dim only.
    assert ds["seed"].dims == ("service_rate", "replication")
    s = ds["seed"].values
    assert len(np.unique(s)) == s.size
    assert s[1, 3] == seeding.replication_seed(77, 3, (1,))
    # The two arrival rates of one replication share their random numbers: with the same
    # service draws, a higher arrival rate can only lengthen waits, replication by replication.
    w = ds["mean_wait"].values
    assert (w[1] >= w[0]).all()


def test_resume_after_sigkill_equals_uninterrupted(write_spec, tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDSWEEP_COMPACT_SECONDS", "0.2")  # the run's status on disk as it goes
    text = SPEC.replace("replications = 23", "replications = 400").replace("customers = 3000", "customers = 60000")
    text = text.replace("warmup = 200\n", "")
    spec = write_spec(text)
    store = tmp_path / "killed.zarr"
    cmd = [sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(spec), "--store", str(store), "--workers", "0",
           "--batch-size", "10", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        done = 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                done = _done_count(store)
            except Exception:  # noqa: BLE001 - the store may be half-created while we look
                done = 0
            if done >= 200:
                break
        assert proc.poll() is None, "the run finished before it could be killed; make it longer"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    partial = _data(store)["status"].values
    assert 0 < (partial != 0).sum() < partial.size
    pipeline.run(spec, store, workers=0, progress=False)
    resumed = _data(store)
    full = _data(pipeline.run(spec, tmp_path / "full.zarr", workers=0, progress=False))
    assert (resumed["status"] == store_mod.OK).all()
    xr.testing.assert_identical(resumed, full)


def _done_count(store: Path) -> int:
    import zarr

    return int((zarr.open_group(store, mode="r")["status"][...] != 0).sum())


def test_failing_seeds_are_recorded_and_the_rest_kept(write_spec, tmp_path):
    text = SPEC.replace('workload = "mm1"', 'workload = "tests.flaky_workload"').replace("warmup = 200\n", "")
    text = text.replace("[params]", "[params]\nfail_every = 3")
    flaky = pipeline.open_store(pipeline.run(write_spec(text, "flaky.toml"), tmp_path / "f.zarr", workers=0,
                                             progress=False))
    good = pipeline.open_store(pipeline.run(write_spec(SPEC.replace("warmup = 200\n", ""), "good.toml"),
                                            tmp_path / "g.zarr", workers=0, progress=False))
    seeds = flaky["seed"].broadcast_like(flaky["status"]).values
    status = flaky["status"].values
    bad = seeds % 3 == 0
    assert bad.any() and (~bad).any()
    assert (status[bad] == store_mod.FAILED).all() and (status[~bad] == store_mod.OK).all()
    assert np.isnan(flaky["mean_wait"].values[bad]).all()
    np.testing.assert_array_equal(flaky["mean_wait"].values[~bad], good["mean_wait"].values[~bad])
    failures = store_mod.read_failures(tmp_path / "f.zarr")
    assert len(failures) == bad.sum()
    for f in failures:
        assert f["seed"] % 3 == 0
        assert f"deliberate failure for seed {f['seed']}" in f["traceback"] and "Traceback" in f["traceback"]


def test_other_spec_and_locked_store_are_refused(write_spec, tmp_path):
    text = SPEC.replace("warmup = 200\n", "")
    store = pipeline.run(write_spec(text), tmp_path / "s.zarr", workers=0, progress=False)
    other = write_spec(text.replace("seed = 77", "seed = 78"), "other.toml")
    with pytest.raises(pipeline.StoreError, match="different spec.*seed"):
        pipeline.run(other, store, workers=0, progress=False)
    with store_mod.locked(Path(store)):
        out = subprocess.run([sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(tmp_path / "spec.toml"),
                              "--store", str(store), "--workers", "0"], capture_output=True, text=True)
    assert out.returncode == 2 and "being written by another schedsweep run" in out.stderr
    # A finished store rerun with the same spec computes nothing and changes nothing.
    before = _data(store)
    pipeline.run(write_spec(text), store, workers=0, progress=False)
    xr.testing.assert_identical(before, _data(store))


def test_worker_death_loses_nothing(write_spec, tmp_path):
    marker = tmp_path / "died"
    text = SPEC.replace('workload = "mm1"', 'workload = "tests.dying_workload"').replace("warmup = 200\n", "")
    text = text.replace("[params]", f'[params]\nmarker = "{marker}"\ndie_at_seed_mod = 2')
    dying = _data(pipeline.run(write_spec(text, "dying.toml"), tmp_path / "d.zarr", workers=2, batch_size=6,
                               progress=False))
    assert marker.exists(), "no worker died: the test did not test anything"
    good = _data(pipeline.run(write_spec(SPEC.replace("warmup = 200\n", ""), "good.toml"), tmp_path / "g.zarr",
                              workers=0, progress=False))
    xr.testing.assert_identical(dying, good)
