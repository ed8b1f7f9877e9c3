"""A run that meets trouble ends in a known state: a frozen Dask worker is retired and its
batches rerun elsewhere; exit codes say whether replications failed; a full disk, a
read-only store, SIGTERM and SIGHUP end in one line with the lock removed; sweeps too
large for the machine are refused before they start."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask
import distributed  # noqa: F401 - its config defaults loaded before dask.config.set changes one
import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.execution import sizing
from schedsweep.pipeline.spec import limits
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.execution.execute import status_counts
from tests.test_pipeline_run import _data

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


def _run_with_a_frozen_worker(write_spec, tmp_path: Path, **where) -> xr.Dataset:
    """SPEC run on Dask (``where``: the cluster) while one worker is stopped (SIGSTOP) at its
    first batch holding a seed divisible by 5 and never continued; the store's data."""
    marker = tmp_path / "frozen-pid"
    frozen = write_spec(SPEC.replace('workload = "mm1"', 'workload = "tests.freezing_workload"')
                        .replace("[params]", f'[params]\nmarker = "{marker}"\nfreeze_at_seed_mod = 5'), "frozen.toml")
    try:  # a worker silent for 1 s is retired (Dask waits at least 10 heartbeats: 5 s with 2 workers)
        with dask.config.set({"distributed.scheduler.worker-ttl": "1s"}):
            got = _data(pipeline.run(frozen, tmp_path / "frozen.zarr", batch_size=4, task_timeout=120.0,
                                     progress=False, **where))
    finally:
        if marker.exists():  # the stopped worker, if its nanny has not killed it already
            try:
                os.kill(int(marker.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert marker.exists(), "no worker was frozen: the test did not test anything"
    return got


def test_frozen_dask_worker_is_retired_and_nothing_is_lost(write_spec, tmp_path, capfd):
    got = _run_with_a_frozen_worker(write_spec, tmp_path, workers=2, cluster="dask")
    assert "sent no heartbeat" in capfd.readouterr().err
    want = _data(pipeline.run(write_spec(SPEC), tmp_path / "ref.zarr", workers=0, progress=False))
    assert (want["status"] == store_mod.OK).all()
    xr.testing.assert_identical(got, want)


@pytest.mark.parametrize("task_timeout, ttl, silence", [(None, None, 300.0), (7.0, None, 7.0), (None, "1m", 60.0),
                                                      (7.0, "1m", 7.0), (90.0, "1m", 60.0)])
def test_worker_silence_is_the_task_timeout_or_dask_ttl_if_shorter(task_timeout, ttl, silence):
    from dask.utils import parse_timedelta

    from schedsweep.pipeline.execution.executors import _retire_silent_workers

    with dask.config.set({"distributed.scheduler.worker-ttl": ttl}), _retire_silent_workers(task_timeout):
        assert parse_timedelta(dask.config.get("distributed.scheduler.worker-ttl")) == silence


def _run_cli(*args: str) -> int:
    """``schedsweep run`` in this process, tasks in its replication process, batches of 10 (no pilot)."""
    size = [] if "--batch-size" in args else ["--batch-size", "10"]
    return cli.main(["run", *map(str, args), "--workers", "0", "--no-progress", *size])


def _lock(store: Path) -> Path:
    return store.with_name(store.name + ".lock")


def test_exit_codes_say_whether_replications_failed(write_spec, tmp_path, capsys):
    flaky = SPEC.replace('workload = "mm1"', 'workload = "tests.flaky_workload"')
    some = write_spec(flaky.replace("[params]", "[params]\nfail_every = 3"), "some.toml")
    store = tmp_path / "some.zarr"
    assert _run_cli(some, "--store", store) == cli.EXIT_SOME_FAILED
    counts = status_counts(store)
    assert counts["failed"] > 0 and counts["ok"] > 0
    assert _run_cli(some, "--store", store) == cli.EXIT_SOME_FAILED  # nothing left to run: the store still has failures
    every = write_spec(flaky.replace("[params]", "[params]\nfail_every = 1"), "every.toml")
    assert _run_cli(every, "--store", tmp_path / "every.zarr") == cli.EXIT_ALL_FAILED
    # A refused run (a store of another spec) is a usage error and leaves no lock behind.
    capsys.readouterr()
    assert _run_cli(write_spec(SPEC.replace("seed = 91", "seed = 92"), "other.toml"), "--store", store) == 2
    assert "different spec" in capsys.readouterr().err
    assert not any(p.name.endswith(".lock") for p in tmp_path.iterdir())


def test_set_with_a_line_break_is_refused_in_one_line(write_spec, tmp_path, capsys):
    spec = write_spec(SPEC)
    assert _run_cli(spec, "--store", tmp_path / "s.zarr", "--set", "replications=5\nseed=3") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line break" in err and "replications=5\\nseed=3" in err
    assert not (tmp_path / "s.zarr").exists()


def _at_store_write(caller: str, action):
    """A stand-in for ``store.fault_point`` (called at every step of every store write) that
    calls ``action()`` the first time it is called from the store function ``caller``: a fault
    at a chosen instant, not a timed one. Chosen by place, not by count: how many batches one
    write carries depends on how fast they finish, so the n-th point of a run is not always there.

    ``write_batches``: just after a group of batches is whole in the journal (a fresh run
    always gets there); ``compact``: while the journal is copied into the arrays (a run
    resumed after the first always does, at its start)."""
    calls = []

    def point() -> None:
        if sys._getframe(1).f_code.co_name == caller and not calls:
            calls.append(1)
            action()

    return point


def test_full_disk_is_one_line_and_the_same_command_resumes(write_spec, tmp_path, capsys, monkeypatch):
    spec = write_spec(SPEC)
    store = tmp_path / "full.zarr"

    def full() -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(store / "status"))

    # The store made, then a first group of batches in the journal.
    monkeypatch.setattr(store_mod, "fault_point", _at_store_write("write_batches", full))
    assert _run_cli(spec, "--store", store, "--batch-size", "5") == cli.EXIT_UNWRITABLE
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("schedsweep: error: cannot write ") and str(store / "status") in err
    assert "No space left" in err and "same command" in err
    assert not _lock(store).exists()
    monkeypatch.setattr(store_mod, "fault_point", lambda: None)
    assert _run_cli(spec, "--store", store, "--batch-size", "5") == 0  # every replication ok: exit 0
    ref = tmp_path / "ref.zarr"
    assert _run_cli(spec, "--store", ref) == 0
    xr.testing.assert_identical(_data(store), _data(ref))


def test_read_only_store_is_one_line(write_spec, tmp_path):
    flaky = write_spec(SPEC.replace('workload = "mm1"', 'workload = "tests.flaky_workload"')
                       .replace("[params]", "[params]\nfail_every = 3"))
    store = tmp_path / "ro.zarr"
    assert _run_cli(flaky, "--store", store) == cli.EXIT_SOME_FAILED
    before = status_counts(store)
    run = [sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(flaky), "--store", str(store),
           "--workers", "0", "--no-progress", "--retry-failed"]
    if os.geteuid() == 0:  # root writes through permissions: a read-only bind mount in a mount namespace
        cmd = ["unshare", "-m", "sh", "-c", f'mount --bind -o ro "$0" "$0" && exec "$@"', str(store), *run]
    else:
        cmd = run
        for folder, _, files in os.walk(store):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                os.chmod(name, os.stat(name).st_mode & 0o555)
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == cli.EXIT_UNWRITABLE, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("schedsweep: error: cannot write ") and str(store) in last
    assert ("Read-only file system" if os.geteuid() == 0 else "Permission denied") in last
    assert "give --store a folder you can write" in out.stderr and "Traceback" not in out.stderr
    assert not _lock(store).exists()
    assert status_counts(store) == before


def test_sigterm_and_sighup_stop_in_one_line_without_a_lock(write_spec, tmp_path, capsys, monkeypatch, request):
    spec = write_spec(SPEC)
    store = tmp_path / "stopped.zarr"
    # The second run resumes the first: stopped after its first group of batches, then while
    # the resumed run copies that group into the arrays.
    # The tests themselves may run under nohup (SIGHUP ignored, which a run keeps: the case
    # below); a terminal's default is what this part is about.
    inherited = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    request.addfinalizer(lambda: signal.signal(signal.SIGHUP, inherited))
    for signum, where in ((signal.SIGTERM, "write_batches"), (signal.SIGHUP, "compact")):
        # As a batch system's stop: the signal reaches the run's process while it writes its store.
        monkeypatch.setattr(store_mod, "fault_point", _at_store_write(where, lambda: os.kill(os.getpid(), signum)))
        before = signal.getsignal(signum)
        assert _run_cli(spec, "--store", store, "--batch-size", "5") == 128 + signum
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1] == f"schedsweep: interrupted ({signal.Signals(signum).name}); run the same command again to resume"
        assert not _lock(store).exists()
        assert signal.getsignal(signum) == before  # the run's handler is gone with the run
    monkeypatch.setattr(store_mod, "fault_point", lambda: None)
    assert _run_cli(spec, "--store", store, "--batch-size", "5") == 0
    # Under nohup (SIGHUP ignored) a hangup stays ignored: that run goes on to the end, and
    # the store stopped twice and resumed equals it.
    hangups = []
    monkeypatch.setattr(store_mod, "fault_point", _at_store_write("write_batches", lambda: hangups.append(
        os.kill(os.getpid(), signal.SIGHUP))))
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert _run_cli(spec, "--store", tmp_path / "nohup.zarr", "--batch-size", "5") == 0
    finally:
        signal.signal(signal.SIGHUP, before)
    assert hangups, "no hangup was sent: the nohup case tested nothing"
    xr.testing.assert_identical(_data(store), _data(tmp_path / "nohup.zarr"))


def test_size_guard_refuses_before_building_cells(write_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(limits, "available_memory", lambda: 8 * 10 ** 9)
    values = lambda start, n: "[" + ", ".join(str(start + k) for k in range(n)) + "]"  # noqa: E731
    text = SPEC.replace("[params]\ncustomers = 2000\n", "").replace(
        "arrival_rate = [0.4, 0.6]", f"customers = {values(1000, 100)}\nwarmup = {values(0, 100)}\n"
                                     f"arrival_rate = {[0.1 + k / 1000 for k in range(100)]}")
    # 10**6 cells x 20 replications: 2 GB + 0.32 GB in the client, within half of 8 GB, not of 4 GB.
    assert limits.client_bytes(10 ** 6, 20) == 10 ** 6 * limits.CELL_BYTES + 2 * 10 ** 7 * limits.RUN_BYTES
    limits.check_client_memory("s.toml", 10 ** 6, 20)
    monkeypatch.setattr(limits, "available_memory", lambda: 4 * 10 ** 9)
    with pytest.raises(pipeline.SpecError, match="s.toml: 1,000,000 cells x 20 replications needs about 2.32 GB"):
        limits.check_client_memory("s.toml", 10 ** 6, 20)
    monkeypatch.setattr(limits, "available_memory", lambda: 8 * 10 ** 9)
    big = write_spec(text.replace("replications = 20", "replications = 1000"), "big.toml")
    # 10**6 cells x 1000: 2 GB + 16 GB, more than 4 GB: refused when the spec is read, before any store.
    assert _run_cli(big, "--store", tmp_path / "big.zarr", "--dry-run") == 2
    err = capsys.readouterr().err
    assert "1,000,000 cells x 1,000 replications needs about 18 GB" in err and "8 GB available" in err
    assert not (tmp_path / "big.zarr").exists() and not list(tmp_path.glob("*.lock"))


def test_dry_run_and_show_spec_count_what_the_run_makes(write_spec, tmp_path, capsys):
    spec = write_spec(SPEC)
    store = tmp_path / "s.zarr"
    assert _run_cli(spec, "--store", store, "--batch-size", "6", "--dry-run") == 0
    lines = capsys.readouterr().out.splitlines()
    assert not store.exists() and not _lock(store).exists()
    assert "cells:       2" in lines and "runs:        40 (2 cells x 20 replications)" in lines
    loaded = pipeline.spec.sweep.load(spec)
    module = pipeline.spec.sweep.workload_of(loaded)
    layout = sizing.store_layout(loaded, module, 6)
    files, nbytes = sizing.files_and_bytes(layout)
    assert f"store files: about {files:,}" in lines
    assert f"store bytes: at most {limits.gb(nbytes)} (uncompressed)" in lines
    assert _run_cli(spec, "--store", store, "--batch-size", "6") == 0
    # The finished store holds the files its layout says, array by array and in all.
    names = [m.name for m in module.METRICS] + ["status", "reason", "seed"]
    for name, array in zip(names, layout):
        on_disk = [p for p in (store / name).rglob("*") if p.is_file() and p.name != "zarr.json"]
        assert len(on_disk) == sizing.files_and_bytes([array])[0] - 2, name  # minus the root's and its zarr.json
    assert sum(p.is_file() for p in store.rglob("*")) == files
    assert cli.main(["show", str(spec)]) == 0
    assert "cells:       2" in capsys.readouterr().out


def test_dry_run_states_the_run_time_estimate(write_spec, tmp_path, capsys):
    """Without a pilot anywhere the estimate is unknown; once a store holds its pilot's rates, a
    dry run of it gives the whole sweep's time from them, as `schedsweep jobs` does."""
    import numpy

    from schedsweep.pipeline.read import catalogue

    spec = write_spec(SPEC)
    store = tmp_path / "s.zarr"
    assert _run_cli(spec, "--store", store, "--dry-run") == 0
    assert f"run time:    {catalogue.UNKNOWN}" in capsys.readouterr().out.splitlines()
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--no-progress"]) == 0  # piloted
    capsys.readouterr()
    assert _run_cli(store, "--dry-run") == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("run time:")]
    rate = numpy.asarray(pipeline.open_store(store).attrs["pilot_seconds_per_rep"], dtype=float)
    seconds = float(rate.sum()) * 20 / catalogue.cores()
    assert line == f"run time:    ~{catalogue.format_duration(seconds)} of computing on {catalogue.cores()} cores, " \
                   f"plus start-up (pilot rate from {store})"


def test_files_and_bytes_count_blocks_with_edges_whole():
    layout = [sizing.ArrayLayout((2, 20), (1, 6), 8), sizing.ArrayLayout((5,), (5,), 1)]
    # 2 x ceil(20 / 6) = 8 blocks of 6 float64, and one block of 5 bytes; a metadata file each and the root's
    assert sizing.files_and_bytes(layout) == (1 + (1 + 8) + (1 + 1), 8 * 6 * 8 + 5)


@pytest.mark.slurm
@pytest.mark.timeout(400)
def test_frozen_worker_on_slurm_is_retired_and_nothing_is_lost(write_spec, tmp_path, capfd):
    from tests.test_slurm_cluster import _profile, require_slurm

    require_slurm()
    # The worker inside a Slurm job stops; its nanny (in the same job) kills and restarts it.
    options = {"profile": str(_profile(tmp_path, 2, 2)), "jobs": 2}
    got = _run_with_a_frozen_worker(write_spec, tmp_path, cluster="slurm", slurm_options=options)
    assert "sent no heartbeat" in capfd.readouterr().err
    want = _data(pipeline.run(write_spec(SPEC), tmp_path / "ref.zarr", workers=0, progress=False))
    xr.testing.assert_identical(got, want)
