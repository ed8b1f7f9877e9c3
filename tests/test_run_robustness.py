"""A run that meets trouble ends in a known state: a frozen Dask worker is retired and its
batches rerun elsewhere; exit codes say whether replications failed; a full disk, a
read-only store, SIGTERM and SIGHUP end in one line with the lock removed; sweeps too
large for the machine are refused before they start."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import store as store_mod

SPEC = """
name = "robust"
workload = "mm1"
replications = 20
seed = 91
[params]
customers = 2000
[sweep]
arrival_rate = [0.4, 0.6]
"""
DATA = ["mean_wait", "mean_time_in_system", "status", "reason", "seed"]


def _data(path: Path) -> xr.Dataset:
    """The data and coordinates of a store, without run provenance (times, batch sizes)."""
    ds = pipeline.open_store(path)[DATA].load()
    ds.attrs = {}
    return ds


def test_frozen_dask_worker_is_retired_and_nothing_is_lost(write_spec, tmp_path, capfd):
    marker = tmp_path / "frozen-pid"
    frozen = write_spec(SPEC.replace('workload = "mm1"', 'workload = "tests.freezing_workload"')
                        .replace("[params]", f'[params]\nmarker = "{marker}"\nfreeze_at_seed_mod = 5'), "frozen.toml")
    try:
        got = _data(pipeline.run(frozen, tmp_path / "frozen.zarr", workers=2, cluster="dask", batch_size=4,
                                 task_timeout=3.0, progress=False))
    finally:
        if marker.exists():  # the stopped worker, if the nanny has not killed it already
            try:
                os.kill(int(marker.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert marker.exists(), "no worker was frozen: the test did not test anything"
    assert "sent no heartbeat" in capfd.readouterr().err
    want = _data(pipeline.run(write_spec(SPEC), tmp_path / "ref.zarr", workers=0, progress=False))
    assert (want["status"] == store_mod.OK).all()
    xr.testing.assert_identical(got, want)
