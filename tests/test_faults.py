"""Fault injection: a replication that hangs, exits or segfaults is killed or caught,
narrowed to its own seed and recorded with its kind, and the rest of the sweep is kept;
with ``--workers 0`` the client survives; a run in which everything failed exits non-zero.

The faults come from tests/faulty_workload.py (mm1 with one marked seed); every kept
replication is compared with mm1 run directly on its seed. Time limits are small here
(``task_timeout``), so a hang costs one limit when it runs alone and two inside a batch.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import zarr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.base import seeding
from schedsweep.pipeline.store import zarrstore as store_mod
from tests import faulty_workload
from schedsweep.workloads import mm1

pytestmark = pytest.mark.timeout(180)  # a broken time limit fails the test instead of hanging the suite

# seconds. The timed call runs ~1 ms of mm1 after the child has imported it; but the first call
# in a fresh child (the one after a hang was killed) also loads mm1's kernel from numba's cache,
# which took over 1.5 s with three test processes on two cores.
TIMEOUT = 5.0
ROOT = 5
RATES = (0.5, 0.7)
MM1 = {"service_rate": 1.0, "customers": 200, "warmup": 20}
SPEC = """
name = "faults"
workload = "{workload}"
replications = {reps}
seed = 5
independent = ["arrival_rate"]
[params]
customers = 200
warmup = 20
{extra}
[sweep]
arrival_rate = [0.5, 0.7]
[run]
task_timeout = {timeout}
"""


@pytest.fixture(autouse=True, scope="module")
def _compiled_mm1():
    """Compile (or load) mm1's kernel here, so the children load it from numba's cache."""
    mm1.run_batch({"arrival_rate": 0.5, **MM1}, np.arange(1, 2, dtype=np.uint64))


KIND = {"hang": "timeout", "exit": "crashed", "segv": "crashed"}


def _spec(write_spec, reps: int, faults: dict[str, tuple[int, int]], name: str = "faulty.toml",
          extra: str = "") -> Path:
    """A spec in which replication ``rep`` of cell ``cell`` does ``fault``, for each item of ``faults``."""
    lines = [f"{fault}_key = {faulty_workload.key(seeding.replication_seed(ROOT, rep, (cell,)))}"
             for fault, (cell, rep) in faults.items()] + [extra]
    text = SPEC.format(workload="tests.faulty_workload", reps=reps, extra="\n".join(lines), timeout=TIMEOUT)
    return write_spec(text, name)


def _check_store(path: Path, faults: dict[str, tuple[int, int]]) -> dict[str, dict]:
    """Exactly the marked replications failed, each with its seed and kind; every other one
    equals mm1 run directly on its seed. Returns the failure records by fault."""
    ds = pipeline.open_store(path)
    status, wait = ds["status"].values, ds["mean_wait"].values
    seeds = ds["seed"].values  # (arrival_rate, replication): the dimension is independent
    bad = np.zeros(status.shape, bool)
    for cell, rep in faults.values():
        bad[cell, rep] = True
    np.testing.assert_array_equal(status, np.where(bad, store_mod.FAILED, store_mod.OK))
    for cell, rate in enumerate(RATES):
        direct = mm1.run_batch({"arrival_rate": rate, **MM1}, seeds[cell])["mean_wait"]
        np.testing.assert_array_equal(wait[cell][~bad[cell]], direct[~bad[cell]])
    assert np.isnan(wait[bad]).all()
    by_seed = {f["seed"]: f for f in _failures(path)}
    assert len(by_seed) == len(faults)
    records = {}
    for fault, (cell, rep) in faults.items():
        record = records[fault] = by_seed[int(seeds[cell, rep])]
        assert (record["kind"], record["replication"], record["cell"]) == \
            (KIND[fault], rep, {"arrival_rate": RATES[cell]})
    return records


def _failures(path: Path) -> list[dict]:
    from schedsweep.pipeline.store.zarrstore import read_failures

    return read_failures(path, current=False)


def test_hang_in_a_batch_is_killed_narrowed_to_its_seed_and_the_sweep_goes_on(write_spec, tmp_path):
    spec = _spec(write_spec, reps=4, faults={"hang": (1, 2)})
    path = pipeline.run(spec, tmp_path / "hang.zarr", workers=0, batch_size=4, progress=False)
    text = _check_store(path, {"hang": (1, 2)})["hang"]["traceback"]
    assert f"within {TIMEOUT:g} s" in text and "its batch of 4 had timed out first" in text


def test_exit_in_process_is_narrowed_and_summarised_and_the_client_survives(write_spec, tmp_path, capsys,
                                                                           monkeypatch):
    spec = _spec(write_spec, reps=6, faults={"exit": (0, 4)})
    store = tmp_path / "exit.zarr"
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # as on a terminal: the progress bar shows
    code = cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--batch-size", "3",
                     "--task-timeout", "60"])
    # This process ran the sweep (os._exit took only the child); one replication failed: exit 3.
    assert code == cli.EXIT_SOME_FAILED
    record = _check_store(store, {"exit": (0, 4)})["exit"]
    assert "exit code 3" in record["traceback"]
    err = capsys.readouterr().err
    seed = record["seed"]
    assert f"1 of 12 replications failed in this run (1 crashed); seeds: {seed} (crashed, replication 4" in err
    assert f"schedsweep show {store} --failures" in err
    assert "faults: 100%" in err and "12/12" in err and "cells 2/2" in err  # the bar, done, with its ETA field
    assert "<00:00" in err


@pytest.mark.parametrize("cluster", ["local", "dask"])
def test_faults_in_pilot_and_batches_on_a_local_cluster_from_a_script_without_main_guard(write_spec, tmp_path,
                                                                                          cluster):
    # Without --batch-size the pilot runs replication 0 of each cell alone first: in cell 0
    # it hangs, so that cell's other replications go to batches, where replication 3
    # segfaults. Cell 1's replication 4 exits, in a pilot part or a batch. On a Dask
    # cluster its replication 1 also kills the worker process once (a node failure), after
    # the cluster has started; locally the replications' parent is the client itself.
    faults = {"hang": (0, 0), "segv": (0, 3), "exit": (1, 4)}
    marker = tmp_path / "worker-killed"
    kill = {"kill_parent": (1, 1)} if cluster == "dask" else {}
    spec = _spec(write_spec, reps=6, faults={**faults, **kill}, extra=f'marker = "{marker}"')
    store = tmp_path / "cluster.zarr"
    script = tmp_path / "sweep.py"
    # No `if __name__ == "__main__":`: spawned workers that re-ran this file would start
    # the sweep again (and print "ran" again) or fail to start.
    script.write_text(textwrap.dedent(f"""\
        from schedsweep import pipeline
        path = pipeline.run({str(spec)!r}, {str(store)!r}, workers=2, cluster={cluster!r}, progress=False)
        print("ran", path)
    """))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=150)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"ran {store}"]
    if kill:
        assert marker.exists(), "no worker was killed: that part tested nothing"
    records = _check_store(store, faults)  # the killed worker's replications were rerun elsewhere, none lost
    assert "its batch" not in records["hang"]["traceback"]  # timed out alone, in the pilot
    assert "SIGSEGV" in records["segv"]["traceback"] and "exit code 3" in records["exit"]["traceback"]


def test_cell_that_always_hangs_costs_four_limits_per_batch_and_exits_non_zero(write_spec, tmp_path, capsys):
    # Every call hangs, so no legitimate work races the very small limit.
    limit = 0.3
    text = SPEC.format(workload="tests.faulty_workload", reps=5, extra="hang_all = true", timeout=limit)
    spec = write_spec(text.replace("arrival_rate = [0.5, 0.7]", "arrival_rate = [0.5]"), "all-hang.toml")
    store = tmp_path / "all-hang.zarr"
    code = cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--batch-size", "5",
                     "--no-progress"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_ALL_FAILED != 0
    assert "5 of 5 replications failed in this run (5 timeout)" in err
    assert f"every replication of this run failed (5); see: schedsweep show {store} --failures" in err
    assert (pipeline.open_store(store)["status"].values == store_mod.FAILED).all()
    texts = {f["replication"]: f["traceback"] for f in _failures(store)}
    assert sorted(texts) == list(range(5)) and all(f["kind"] == "timeout" for f in _failures(store))
    # The batch, then replications 0-2 alone, timed out; 3 and 4 were not waited for.
    assert all(f"within {limit:g} s" in texts[r] for r in range(3))
    assert all(texts[r].startswith("not run alone: the 3 replications before it") for r in (3, 4))


def test_default_time_limit_is_twenty_pilot_batches_but_at_least_fifteen_minutes():
    from types import SimpleNamespace

    from schedsweep.pipeline.execution.execute import Batch, _Runner

    piloted = SimpleNamespace(task_timeout=None, seconds_per_rep=np.array([1e-3, 0.5, np.nan]))
    assert _Runner.timeout_for(piloted, Batch((0,), 0, 100)) == 900.0  # 20 x 0.1 s, raised to the floor
    assert _Runner.timeout_for(piloted, Batch((1,), 0, 100)) == 1000.0  # 20 x 50 s
    assert _Runner.timeout_for(piloted, Batch((2,), 0, 100)) == 3600.0  # no estimate for this cell
    assert _Runner.timeout_for(SimpleNamespace(task_timeout=None), Batch((1,), 0, 100)) == 3600.0  # no pilot
    given = SimpleNamespace(task_timeout=7.5, seconds_per_rep=piloted.seconds_per_rep)
    assert _Runner.timeout_for(given, Batch((1,), 0, 100)) == 7.5


def test_child_process_protocol_stays_in_step():
    import signal
    import time

    from schedsweep.pipeline.execution import child

    class Interrupt(Exception):
        pass

    def interrupt(*_):
        raise Interrupt

    # A call interrupted while the child works (as by Ctrl-C): its late answer (None) must
    # never be read by the next call, so that child is not used again.
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Interrupt):
            child.call(time.sleep, 0.6, timeout=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert child.call(abs, -3, timeout=30) == 3
    first = child._local.child.proc.pid
    assert child.call(abs, -4, timeout=30) == 4 and child._local.child.proc.pid == first  # kept warm
    # A child that left for idleness as a call arrived is replaced, not reported as a crash.
    with pytest.raises(child.ChildError, match="ended twice"):
        child.call(os._exit, child.IDLE_EXIT_CODE, timeout=30)
    with pytest.raises(child.ChildDied, match="exit code 3"):
        child.call(os._exit, 3, timeout=30)
    # A child started under another environment is stopped at the start of the next run.
    assert child.call(abs, -5, timeout=30) == 5
    started = child._local.child.proc.pid
    os.environ["SCHEDSWEEP_TEST_SETTING"] = "1"
    try:
        child.drop_stale()
        assert child.call(abs, -6, timeout=30) == 6 and child._local.child.proc.pid != started
    finally:
        del os.environ["SCHEDSWEEP_TEST_SETTING"]
        child.close_all()
