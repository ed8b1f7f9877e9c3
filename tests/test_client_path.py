"""The client's per-task and per-sweep costs: what the cheaper
paths rely on. The speed itself is measured in benchmarks/ (bench_tasks, bench_small);
here we check the behaviour each shortcut must keep."""
from __future__ import annotations

import functools
import os
import subprocess
import sys

import numpy as np
import pytest

from schedsweep.pipeline.execution import child, tasks
from schedsweep.pipeline.execution.executors import open_executor

CALLS = 0  # in the child process: how often bump() ran there


def bump() -> int:
    global CALLS
    CALLS += 1
    return CALLS


def test_call_once_runs_once_per_replication_process_and_again_in_a_new_one():
    try:
        child.call_once(bump, timeout=30)
        child.call_once(bump, timeout=30)  # this child already ran it: not sent
        assert child.call(bump, timeout=30) == 2
        with pytest.raises(child.ChildDied):
            child.call(os._exit, 3, timeout=30)
        child.call_once(bump, timeout=30)  # a new child has not: sent again
        assert child.call(bump, timeout=30) == 2
    finally:
        child.close_all()


def test_a_warm_up_that_fails_leaves_the_error_to_the_first_task():
    # The warm-up imports the workload in each worker's replication process before any task;
    # when that fails it must say nothing and break nothing: the task reports it as before.
    warm = functools.partial(tasks.warm, "no_such_workload_here")
    mm1 = {"arrival_rate": 0.5, "service_rate": 1.0, "customers": 100, "warmup": 10}
    seeds = np.arange(2, dtype=np.uint64)
    with open_executor(workers=2, warm=warm) as pool:
        futures = pool.submit_many(tasks.run_isolated, [("no_such_workload_here", {}, seeds, 30.0),
                                                        ("mm1", mm1, seeds, 30.0)], ["bad", "good"])
        groups = [f for group in pool.completed_groups() for f in group]
        assert sorted(f.key for f in groups) == ["bad", "good"]
        bad, good = futures
        assert bad.status == "error" and "no_such_workload_here" in pool.error_text(bad)
        assert good.status == "finished" and not good.result()["failed"]
    child.close_all()


def test_starting_a_run_loads_no_zarr_before_the_replication_processes_start():
    # execute imports the store module, which imports zarr only where it is used: so the
    # children start while the client imports zarr, not after it.
    code = "import sys\nimport schedsweep.pipeline.execution.execute\nprint('zarr' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
