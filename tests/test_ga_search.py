"""ga: the search reaches brute-force optima, islands agree in one process and on Dask,
continuous planning docks, and run_batch is reproducible."""
from __future__ import annotations

import numpy as np
import pytest

import schedsweep.workloads.ga as ga
from naive_ga import brute_force, check_schedule, naive_objective, unit_lists
from schedsweep.workloads._contract import defaults
from schedsweep.workloads.ga.instance import InstanceSettings, make_instance, period_problem
from schedsweep.workloads.ga.islands import GASettings, run_islands
from schedsweep.workloads.ga.model import Problem
from schedsweep.workloads.ga.planning import plan


def one_unit(seed: int, n: int, with_dependency: bool) -> Problem:
    rng = np.random.default_rng(seed)
    pred = np.full(n, -1)
    if with_dependency:
        pred[n - 1] = rng.integers(0, n - 1)
    return Problem(speed=np.array([1.3]), group=np.array([0]), ready=np.array([10.0]), prev_end=np.array([4.0]),
                   width=np.ones(n, np.int64), length=rng.uniform(10, 100, n), prio=rng.integers(1, 4, n),
                   pred=pred, mask=np.ones((n, 1), bool), arrival=np.zeros(n), period_end=10.0)


SEARCH = GASettings(population=30, pm=0.15, stall_generations=150, max_generations=1000, migration_interval=25)


@pytest.mark.parametrize("seed,with_dependency", [(1, False), (2, True), (3, False)])
def test_one_unit_ga_finds_brute_force_optimum_of_source_objective(seed, with_dependency):
    problem = one_unit(seed, 7, with_dependency)
    best_tau, best_f = brute_force(problem, "gmean")
    res = run_islands(problem, SEARCH, [np.random.default_rng(seed)])
    assert res.tau == pytest.approx(best_tau)
    assert res.fitness == pytest.approx(best_f, rel=1e-12)
    assert naive_objective(problem, res.body, res.header, "gmean") == pytest.approx(best_f, rel=1e-12)


def test_one_unit_weighted_completion_reaches_wspt():
    problem = one_unit(7, 8, False)
    dur = problem.length / problem.speed[0]
    wspt = np.argsort(dur / problem.prio, kind="stable")  # Smith's rule
    optimum = naive_objective(problem, wspt, np.array([8]), "weighted_completion")
    res = run_islands(problem, GASettings(**{**SEARCH.__dict__, "objective": "weighted_completion"}),
                      [np.random.default_rng(7)])
    assert res.fitness == pytest.approx(optimum, rel=1e-12)


def small_instance(seed: int, parallel: bool):
    s = InstanceSettings(units=6, groups=2, density=2.0, periods=3, parallel=parallel, width_high=3, dep_prob=0.2)
    return make_instance(s, np.random.default_rng(seed))


@pytest.mark.parametrize("method", ["ga", "backfill", "fcfs"])
@pytest.mark.parametrize("parallel", [False, True])
def test_planning_docks_every_period(method, parallel):
    inst = small_instance(11, parallel)
    settings = GASettings(population=10, pm=0.05, max_generations=30, migration_interval=10, islands=2)
    res = plan(inst, method, settings, [np.random.default_rng(1), np.random.default_rng(2)], keep=True)
    assert len(res.schedules) >= 2
    last_end = np.full(inst.speed.shape[0], -np.inf)   # end of every earlier slot on each unit
    for sched in res.schedules:
        pr = sched.problem
        assert check_schedule(pr, sched.body, sched.header, sched.start, sched.dur) == []
        for m, procs in enumerate(unit_lists(sched.body, sched.header)):
            for u in procs:
                j = pr.proc_job[u]
                assert sched.start[j] >= pr.period_end
                assert sched.start[j] >= last_end[m]
        for m, procs in enumerate(unit_lists(sched.body, sched.header)):
            for u in procs:
                j = pr.proc_job[u]
                last_end[m] = max(last_end[m], sched.start[j] + sched.dur[j])


def test_returned_schedule_has_the_least_gap_in_its_final_population():
    inst = small_instance(5, False)
    unit_end = np.array([30.0, np.nan, 80.0, 55.0, np.nan, 10.0])
    problem, _ = period_problem(inst, 1, unit_end)
    for docking in ("tau_first", "idle_genes_only"):
        s = GASettings(population=12, pm=0.1, islands=2, max_generations=40, migration_interval=10, docking=docking)
        res = run_islands(problem, s, [np.random.default_rng(3), np.random.default_rng(4)])
        if docking == "tau_first":
            assert res.tau <= res.final_taus.min()
            assert res.tau > 0   # the gap is real here: two units idle before the period end
            assert (res.tau, res.fitness) == min(zip(res.final_taus, res.final_fits))
        else:
            assert res.tau == 0.0 and res.fitness == res.final_fits.min()


def test_islands_in_process_and_on_dask_are_identical():
    distributed = pytest.importorskip("distributed")
    from schedsweep.workloads.ga.dask_islands import run_islands_dask

    inst = small_instance(21, True)
    problem, _ = period_problem(inst, 0, np.full(6, np.nan))
    s = GASettings(population=8, pm=0.05, islands=3, migration_interval=4, migrants=2, max_generations=12,
                   stall_generations=100)
    seeds = [11, 12, 13]
    local = run_islands(problem, s, [np.random.default_rng(x) for x in seeds])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = run_islands_dask(problem, s, [np.random.default_rng(x) for x in seeds], client=client)
    # run_batch with island_execution = "dask" inside a sweep: tests/test_ga_parallel.py
    np.testing.assert_array_equal(local.body, remote.body)
    np.testing.assert_array_equal(local.header, remote.header)
    np.testing.assert_array_equal(local.hist_fit, remote.hist_fit)
    np.testing.assert_array_equal(local.hist_tau, remote.hist_tau)
    np.testing.assert_array_equal(local.final_fits, remote.final_fits)
    np.testing.assert_array_equal(local.counters, remote.counters)
    assert local.generations == remote.generations == 12
    assert [r.bit_generator.state for r in local.rngs] == [r.bit_generator.state for r in remote.rngs]
    assert local.counters[0] > 3 * 8   # the islands did evolve (evaluations beyond the initial ones)


def test_migration_changes_the_run():
    inst = small_instance(21, False)
    problem, _ = period_problem(inst, 0, np.full(6, np.nan))
    base = dict(population=8, pm=0.05, islands=3, migration_interval=4, max_generations=12)
    a = run_islands(problem, GASettings(**base, migrants=2), [np.random.default_rng(x) for x in (1, 2, 3)])
    b = run_islands(problem, GASettings(**base, migrants=0), [np.random.default_rng(x) for x in (1, 2, 3)])
    assert not np.array_equal(a.final_fits, b.final_fits)


def small_params(**kw):
    p = defaults(ga.PARAMS)
    p.update(units=8, groups=2, density=1.5, periods=2, population=10, max_generations=20, migration_interval=10,
             stall_generations=10, width_high=4)
    p.update(kw)
    return p


@pytest.mark.parametrize("algorithm", ["ga", "backfill", "fcfs"])
def test_run_batch_reproducible_in_any_batch_split(algorithm):
    params = small_params(algorithm=algorithm, parallel=algorithm == "backfill", islands=2)
    seeds = np.array([5, 6, 7], np.uint64)
    whole = ga.run_batch(params, seeds)
    parts = [ga.run_batch(params, seeds[:1]), ga.run_batch(params, seeds[1:])]
    timing = {m.name for m in ga.METRICS if m.timing}
    for name, values in whole.items():
        if name in timing:
            continue
        np.testing.assert_array_equal(values, np.concatenate([p[name] for p in parts]), err_msg=name)
    assert np.all(whole["reason"] == 0)
    assert np.isnan(whole["generations"]).all() == (algorithm != "ga")
    assert np.all(np.isfinite(whole["objective_value"]))


def test_same_instance_for_every_algorithm_and_island_count():
    seeds = np.array([9], np.uint64)
    runs = [ga.run_batch(small_params(algorithm=a, islands=k), seeds) for a, k in
            [("ga", 1), ("ga", 3), ("fcfs", 1), ("backfill", 2)]]
    assert len({(r["jobs"][0], r["processes"][0]) for r in runs}) == 1


def test_check_params_names_the_parameters():
    p = small_params(parallel=True, width_high=9, migrants=10, groups=9)
    errors = " ".join(ga.check_params(p))
    for name in ("width_high", "migrants", "groups"):
        assert name in errors
    assert ga.check_params(small_params()) == []
