"""Ctrl-C stops a run at once, whatever its workers are doing: with 4 workers in the middle
of replications that would take ten minutes, the run says "stopping" and exits 130 long
before they could have finished, its replication processes killed and its lock gone; a
second Ctrl-C during that clean-up changes nothing, and a Ctrl-C that arrives while a
group of batches is being appended to the journal waits until the record is whole."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.execution import child
from schedsweep.pipeline.store import journal, zarrstore as store_mod

REPO = Path(__file__).resolve().parents[1]
SLEEPING = """
name = "sleeping"
workload = "tests.sleeping_workload"
replications = 2
seed = 3
[params]
customers = 100
warmup = 10
marker_dir = "{markers}"
sleep = 600.0
[sweep]
arrival_rate = [0.2, 0.3, 0.4, 0.5]
[run]
task_timeout = 3600
"""
MM1 = """
name = "quick"
workload = "mm1"
replications = 12
seed = 5
[params]
customers = 200
warmup = 20
[sweep]
arrival_rate = [0.3, 0.6]
"""


def _gone(pid: int) -> bool:
    """Whether the process has ended (no longer exists, or only as a zombie not yet reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def _wait_for(condition, what: str, limit: float = 300.0) -> None:
    """Wait until ``condition()`` holds (a state reached, not a time measured); fail after ``limit`` s."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_ctrl_c_with_4_workers_in_long_replications_stops_at_once(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    spec = tmp_path / "sleeping.toml"
    spec.write_text(SLEEPING.format(markers=markers))
    store = tmp_path / "s.zarr"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)])))
    proc = subprocess.Popen([sys.executable, "-m", "schedsweep", "run", str(spec), "--store", str(store),
                             "--workers", "4", "--batch-size", "1", "--no-progress"],
                            cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: len(list(markers.iterdir())) == 4 or proc.poll() is not None,
                  "4 replication processes in a replication")
        assert proc.poll() is None, proc.communicate()[1]
        pids = [int(p.name) for p in markers.iterdir()]
        proc.send_signal(signal.SIGINT)
        # each replication sleeps 600 s: a run that waited for one would outlast this timeout
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = err.strip().splitlines()
    assert proc.returncode == 130, err
    assert lines[-2] == "schedsweep: stopping (SIGINT): the running tasks are killed, what is stored is kept", lines
    assert lines[-1] == "schedsweep: interrupted (SIGINT); run the same command again to resume"
    assert "Traceback" not in err
    _wait_for(lambda: all(_gone(pid) for pid in pids), "the killed replication processes to end", 60.0)
    assert not store.with_name(store.name + ".lock").exists()


def test_a_second_ctrl_c_and_one_during_a_journal_append_leave_no_lock_and_no_torn_record(tmp_path, capsys,
                                                                                          monkeypatch):
    spec = tmp_path / "quick.toml"
    spec.write_text(MM1)
    store = tmp_path / "s.zarr"
    sent = []

    def point() -> None:  # between the two halves of a journal record: Ctrl-C, as by a user
        if sys._getframe(1).f_code.co_name == "append" and not sent:
            sent.append("append")
            os.kill(os.getpid(), signal.SIGINT)

    stop_all = child.stop_all

    def stop_all_twice() -> None:  # and again while the interrupted run kills its tasks
        sent.append("clean-up")
        os.kill(os.getpid(), signal.SIGINT)
        stop_all()

    monkeypatch.setattr(store_mod, "fault_point", point)
    monkeypatch.setattr(child, "stop_all", stop_all_twice)
    argv = ["run", str(spec), "--store", str(store), "--workers", "1", "--batch-size", "3", "--no-progress"]
    before = signal.getsignal(signal.SIGINT)
    assert cli.main(argv) == 130
    assert sent == ["append", "clean-up"]
    assert signal.getsignal(signal.SIGINT) == before  # the run's handler is gone with the run
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "schedsweep: interrupted (SIGINT); run the same command again to resume", err
    assert sum("stopping (SIGINT)" in line for line in err) == 1  # the second Ctrl-C was ignored
    assert not store.with_name(store.name + ".lock").exists()
    spec_ = pipeline.spec.sweep.load(spec)
    order = journal.layout([(m.name, m.shape) for m in pipeline.spec.sweep.workload_of(spec_).METRICS])
    entries, torn = journal.read(store / journal.NAME, order)
    assert entries and torn == 0, (torn, (store / journal.NAME).exists(), err)  # the record the Ctrl-C arrived in is whole
    monkeypatch.setattr(store_mod, "fault_point", lambda: None)
    assert cli.main(argv) == 0
    ref = pipeline.run(spec, tmp_path / "ref.zarr", workers=0, batch_size=3, progress=False)
    keep = ["mean_wait", "status", "reason", "seed"]
    xr.testing.assert_identical(pipeline.open_store(store)[keep].load().drop_attrs(),
                                pipeline.open_store(ref)[keep].load().drop_attrs())


def test_a_stopping_run_silences_dask_loggers_that_have_levels_of_their_own():
    """Dask's configuration sets ``distributed.client`` to warning; after the stop line none of
    Dask's loggers, children with a level of their own included, writes a word (a scheduler
    killed with its batch job otherwise gives the client's 30-line ERROR traceback)."""
    import io
    import logging

    import distributed  # noqa: F401  (its configuration gives the children their levels)

    names = ("distributed", "dask_jobqueue", "tornado",
             "distributed.client", "distributed.comm.tcp", "distributed.scheduler", "tornado.application")
    loggers = {n: logging.getLogger(n) for n in names}
    # every logger's level, not only these: the silencing reaches all of Dask's, and the tests
    # that follow in this process must hear them as before
    before = {lg: lg.level for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)}
    assert loggers["distributed.client"].level != logging.NOTSET, \
        "distributed no longer gives the client logger a level of its own: the case this guards is gone"
    heard = io.StringIO()
    catch = logging.StreamHandler(heard)
    try:
        for lg in loggers.values():
            lg.addHandler(catch)
        cli._silence_dask()
        for lg in loggers.values():
            lg.error("Traceback (most recent call last): a broken connection")
        assert heard.getvalue() == ""
    finally:
        for lg in loggers.values():
            lg.removeHandler(catch)
        for lg, level in before.items():
            lg.setLevel(level)
