"""The task-length rule (``pipeline.execution.sizing.task_seconds``) on constructed pilot figures: tasks
long enough that the workers' results never keep the client or the scheduler busier than half
a core (both together when they share a process), short enough that a short sweep still gives
every worker several tasks; and the pilot of every route sizing its tasks by it, with the
route's costs and number of workers."""
from __future__ import annotations

import inspect

import pytest
from hypothesis import given, strategies as st

from schedsweep import pipeline
from schedsweep.pipeline.execution import executors, sizing
from schedsweep.pipeline.execution.sizing import PROCESS_SHARE, TASK_COST, TaskCost, task_seconds


def test_a_laptop_sweep_keeps_the_batch_target_or_spreads_a_short_sweep():
    # 2 workers, 6 cells x 1000 replications of 10 ms: 60 s of work, tasks of the 2 s target
    assert task_seconds(60.0, 2, 2.0, TASK_COST["local"]) == 2.0
    # 1.6 s of work on 2 workers: 8 tasks each of 0.1 s, not 2 s (no idle tail)
    assert task_seconds(1.6, 2, 2.0, TASK_COST["local"]) == pytest.approx(1.6 / 16)


def test_a_thousand_workers_get_tasks_the_client_can_take():
    # 10**5 replications of 0.1 s on 1,000 Slurm workers: the spread rule alone gave 1.25 s
    # tasks (800 tasks/s, 2.2 cores of client at 2.7 ms a task); the client's half core needs
    # at least 5.4 s (185 tasks/s), which is 1.85 rounds of the 10 s each worker has: one round of 10 s
    work, workers, cost = 1e5 * 0.1, 1000, TaskCost(client=2.7e-3, shared=True)
    assert work / (8 * workers) == 1.25
    t = task_seconds(work, workers, 2.0, cost)
    assert t == pytest.approx(10.0)
    assert workers / t * cost.client <= PROCESS_SHARE
    # ten times the work: 100 s each, 18 rounds of 5.56 s (not 18.5 rounds of 5.4 s)
    assert task_seconds(10 * work, workers, 2.0, cost) == pytest.approx(100 / 18)
    # a longer target asked for is kept where the sweep is long enough to spread over it
    assert task_seconds(1e8 * 0.1, workers, 20.0, cost) == 20.0


def test_the_scheduler_bounds_the_task_length_too_and_both_when_they_share_a_process():
    work, workers = 1e6 * 0.1, 1000  # 100 s per worker
    # the scheduler the busier of two processes: its cost sets the length (2 x 1000 x 3 ms = 6 s:
    # 16 rounds of 6.25 s)
    assert task_seconds(work, workers, 2.0, TaskCost(client=1e-3, scheduler=3e-3)) == pytest.approx(6.25)
    assert task_seconds(work, workers, 2.0, TaskCost(client=3e-3, scheduler=1e-3)) == pytest.approx(6.25)
    # in one process, one core carries both: 2 x 1000 x 4 ms = 8 s: 12 rounds of 8.33 s
    assert task_seconds(work, workers, 2.0, TaskCost(client=1e-3, scheduler=3e-3, shared=True)) \
        == pytest.approx(100 / 12)
    # so a scheduler out of the client's process allows shorter tasks for the same costs
    assert TaskCost(2e-3, 2e-3).busiest() == 2e-3 and TaskCost(2e-3, 2e-3, shared=True).busiest() == 4e-3


costs = st.builds(TaskCost, client=st.floats(0.0, 0.1), scheduler=st.floats(0.0, 0.1), shared=st.booleans())


@given(work=st.floats(1e-3, 1e9), workers=st.integers(1, 100_000), batch=st.floats(1e-3, 86_400), cost=costs)
def test_neither_client_nor_scheduler_takes_more_than_its_share(work, workers, batch, cost):
    t = task_seconds(work, workers, batch, cost)
    rate = workers / t  # tasks finished per second with every worker busy
    loads = [rate * (cost.client + cost.scheduler)] if cost.shared else [rate * cost.client, rate * cost.scheduler]
    assert all(load <= PROCESS_SHARE * (1 + 1e-9) for load in loads)
    # at least the target (or the spread of a short sweep) and the floor that puts the busiest
    # process at exactly its share; at most the whole rounds above them
    shortest = max(min(batch, max(work / (8 * workers), 1e-3)), workers * cost.busiest() / PROCESS_SHARE)
    assert t >= shortest * (1 - 1e-9)
    rounds = work / (workers * t)
    if work >= workers * shortest:  # a round or more: whole rounds, as many as fit
        assert rounds == pytest.approx(round(rounds), rel=1e-9)
        assert work / (workers * (round(rounds) + 1)) < shortest * (1 + 1e-9)
    else:  # less than one round: nothing to round
        assert t == shortest


def test_every_route_states_its_cost_per_task():
    assert executors.SerialExecutor.task_cost == TASK_COST["local"]
    with executors.ProcessExecutor(1) as pool:
        assert pool.task_cost == TASK_COST["local"]
    assert sizing.TASK_COST.keys() == {"local", "dask", "slurm"}
    assert not TASK_COST["dask"].shared and not TASK_COST["slurm"].shared  # the scheduler in a process of its own
    # an external scheduler (--scheduler, --scheduler-file) is costed as the Slurm route's
    assert inspect.signature(executors.DaskExecutor).parameters["task_cost"].default == TASK_COST["slurm"]


SPEC = """
name = "rule"
workload = "mm1"
replications = 8
seed = 5
[params]
customers = 300
warmup = 50
[sweep]
arrival_rate = [0.5, 0.6]
"""


@pytest.mark.parametrize("workers, route_cost, said", [(0, 0.75, "1.5 s"), (2, 0.3, "1.2 s")])
def test_the_pilot_sizes_tasks_by_the_rule_with_the_routes_cost_and_workers(write_spec, tmp_path, capsys,
                                                                            monkeypatch, workers, route_cost, said):
    # A tiny sweep (milliseconds of work) spreads to tasks of milliseconds; a route whose
    # client takes `route_cost` s per task lengthens them to 2 x workers x cost (1 worker for
    # workers=0: the serial route; 2 for the local processes).
    if workers == 0:
        monkeypatch.setattr(executors.SerialExecutor, "task_cost", TaskCost(client=route_cost))
    else:
        monkeypatch.setitem(sizing.TASK_COST, "local", TaskCost(client=route_cost))
    pipeline.run(write_spec(SPEC), tmp_path / "s.zarr", workers=workers, progress=False)
    assert f"tasks of about {said}" in capsys.readouterr().err
