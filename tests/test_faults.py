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

import pipeline
from pipeline import cli, seeding, store as store_mod
from tests import faulty_workload
from workloads import mm1

pytestmark = pytest.mark.timeout(180)  # a broken time limit fails the test instead of hanging the suite

TIMEOUT = 2.0  # seconds; the timed call runs ~1 ms of mm1 after the child has imported it
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


def _spec(write_spec, reps: int, fault: str, cell: int, rep: int, **extra: object) -> tuple[Path, int]:
    """A spec whose replication ``rep`` of cell ``cell`` misbehaves; returns it and that seed."""
    seed = int(seeding.replication_seed(ROOT, rep, (cell,)))
    lines = [f'fault = "{fault}"', f"fault_key = {faulty_workload.key(seed)}"]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    text = SPEC.format(workload="tests.faulty_workload", reps=reps, extra="\n".join(lines), timeout=TIMEOUT)
    return write_spec(text, f"{fault}.toml"), seed


def _check_store(path: Path, bad: tuple[int, int], kind: str) -> dict:
    """Only replication ``bad`` (cell, rep) failed, with ``kind``; every other equals mm1 on its seed.

    Returns the one failure record.
    """
    ds = pipeline.open_store(path)
    status, wait = ds["status"].values, ds["mean_wait"].values
    seeds = ds["seed"].values  # (arrival_rate, replication): the dimension is independent
    expected = np.full(status.shape, store_mod.OK)
    expected[bad] = store_mod.FAILED
    np.testing.assert_array_equal(status, expected)
    for cell, rate in enumerate(RATES):
        direct = mm1.run_batch({"arrival_rate": rate, **MM1}, seeds[cell])["mean_wait"]
        keep = np.arange(status.shape[1]) != bad[1] if cell == bad[0] else slice(None)
        np.testing.assert_array_equal(wait[cell][keep], direct[keep])
    assert np.isnan(wait[bad])
    failures = _failures(path)
    assert len(failures) == 1
    record = failures[0]
    assert record["kind"] == kind
    assert record["seed"] == int(seeds[bad]) and record["replication"] == bad[1]
    assert record["cell"] == {"arrival_rate": RATES[bad[0]]}
    return record


def _failures(path: Path) -> list[dict]:
    return list(zarr.open_group(path, mode="r").attrs.get("failures", []))


def test_hang_in_a_batch_is_killed_narrowed_to_its_seed_and_the_sweep_goes_on(write_spec, tmp_path):
    spec, seed = _spec(write_spec, reps=4, fault="hang", cell=1, rep=2)
    path = pipeline.run(spec, tmp_path / "hang.zarr", workers=0, batch_size=4, progress=False)
    record = _check_store(path, (1, 2), "timeout")
    assert f"within {TIMEOUT:g} s" in record["traceback"] and "after its batch of 4" in record["traceback"]


def test_hang_in_the_pilot_is_timed_out_and_the_store_written(write_spec, tmp_path):
    # Without --batch-size the pilot runs replication 0 of its cells alone first: that one hangs.
    spec, seed = _spec(write_spec, reps=3, fault="hang", cell=0, rep=0)
    path = pipeline.run(spec, tmp_path / "pilot.zarr", workers=0, progress=False)
    record = _check_store(path, (0, 0), "timeout")
    assert "after its batch" not in record["traceback"]


def test_exit_in_process_is_narrowed_and_summarised_and_the_client_survives(write_spec, tmp_path, capsys):
    spec, seed = _spec(write_spec, reps=6, fault="exit", cell=0, rep=4)
    store = tmp_path / "exit.zarr"
    code = cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--batch-size", "3",
                     "--no-progress", "--task-timeout", "60"])
    assert code == 0  # this process ran the sweep: os._exit took only the child
    record = _check_store(store, (0, 4), "crashed")
    assert "exit code 3" in record["traceback"]
    err = capsys.readouterr().err
    assert f"1 of 12 replications failed in this run (1 crashed); seeds: {seed} (crashed, replication 4" in err
    assert f"schedsweep show {store} --failures" in err


def test_segfault_on_a_local_cluster_from_a_script_without_main_guard(write_spec, tmp_path):
    spec, seed = _spec(write_spec, reps=6, fault="segfault", cell=1, rep=1)
    store = tmp_path / "segv.zarr"
    script = tmp_path / "sweep.py"
    # No `if __name__ == "__main__":`: spawned workers that re-ran this file would start
    # the sweep again (and print "ran" again) or fail to start.
    script.write_text(textwrap.dedent(f"""\
        import pipeline
        path = pipeline.run({str(spec)!r}, {str(store)!r}, workers=2, batch_size=3, progress=False)
        print("ran", path)
    """))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=150)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"ran {store}"]
    record = _check_store(store, (1, 1), "crashed")
    assert "SIGSEGV" in record["traceback"]


def test_run_in_which_every_replication_failed_exits_non_zero(write_spec, tmp_path, capsys):
    spec = write_spec(SPEC.format(workload="tests.flaky_workload", reps=3, extra="fail_every = 1", timeout=60),
                      "flaky.toml")
    store = tmp_path / "all-failed.zarr"
    code = cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--batch-size", "2",
                     "--no-progress"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_ALL_FAILED != 0
    assert "6 of 6 replications failed in this run (6 error)" in err
    assert f"every replication of this run failed (6); see: schedsweep show {store} --failures" in err
    assert (pipeline.open_store(store)["status"].values == store_mod.FAILED).all()
