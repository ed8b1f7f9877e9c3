"""The task-length rule (``pipeline.execution.sizing.task_seconds``) on constructed pilot figures: tasks
long enough that the workers' results never keep the client or scheduler busier than half a
core, short enough that a short sweep still gives every worker several tasks."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from schedsweep.pipeline.execution import executors, sizing
from schedsweep.pipeline.execution.sizing import CLIENT_SHARE, TASK_COST, task_seconds


def test_a_laptop_sweep_keeps_the_batch_target_or_spreads_a_short_sweep():
    # 2 workers, 6 cells x 1000 replications of 10 ms: 60 s of work, tasks of the 2 s target
    assert task_seconds(60.0, 2, 2.0, TASK_COST["local"]) == 2.0
    # 1.6 s of work on 2 workers: 8 tasks each of 0.1 s, not 2 s (no idle tail)
    assert task_seconds(1.6, 2, 2.0, TASK_COST["local"]) == pytest.approx(1.6 / 16)


def test_a_thousand_workers_get_tasks_the_client_can_take():
    # 10**5 replications of 0.1 s on 1,000 Slurm workers: the spread rule alone gave 1.25 s
    # tasks (800 tasks/s, 2.2 cores of client at 2.7 ms a task); now 5.4 s (185 tasks/s, half a core)
    work, workers, cost = 1e5 * 0.1, 1000, TASK_COST["slurm"]
    assert work / (8 * workers) == 1.25
    t = task_seconds(work, workers, 2.0, cost)
    assert t == pytest.approx(2 * workers * cost) and t == pytest.approx(5.4)
    assert workers / t * cost == pytest.approx(CLIENT_SHARE)
    # a longer target asked for is kept where the sweep is long enough to spread over it
    assert task_seconds(1e8 * 0.1, workers, 20.0, cost) == 20.0


@given(work=st.floats(1e-3, 1e9), workers=st.integers(1, 100_000), batch=st.floats(1e-3, 86_400),
       route=st.sampled_from(sorted(TASK_COST)))
def test_the_client_never_takes_more_than_its_share(work, workers, batch, route):
    t = task_seconds(work, workers, batch, TASK_COST[route])
    assert workers / t * TASK_COST[route] <= CLIENT_SHARE * (1 + 1e-12)
    # never longer than needed: the target, the spread of a short sweep, or the client's floor
    assert t <= max(batch, 2 * workers * TASK_COST[route] / (2 * CLIENT_SHARE)) * (1 + 1e-12)


def test_every_route_states_its_cost_per_task():
    assert executors.SerialExecutor.task_cost == TASK_COST["local"]
    with executors.ProcessExecutor(1) as pool:
        assert pool.task_cost == TASK_COST["local"]
    assert sizing.TASK_COST.keys() == {"local", "dask", "slurm"}
