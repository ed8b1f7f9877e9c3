"""ga: time to solution against a fixed target quality.

The target of a period is the final best of one island with the same settings on the same
problem; it must be the same for every island count P and isolation period I_m, the count
must be the first generation whose best reaches it, and runs stopped by the generation cap
are counted."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import schedsweep.workloads.ga as ga
from naive_ga import brute_force
from test_ga_search import one_unit, small_instance
from schedsweep.workloads._contract import defaults
from schedsweep.workloads.ga.islands import GASettings, IslandResult, generations_to_target, run_islands
from schedsweep.workloads.ga.planning import plan


def naive_first_reaching(hist_tau, hist_fit, t, f, objective, within=0.01):
    for g, (ht, hf) in enumerate(zip(hist_tau, hist_fit)):
        near = hf - f <= np.log1p(within) if objective == "gmean" else hf <= f + within * abs(f)
        if ht < t or (ht == t and near):
            return g
    return -1


def _result(hist_tau, hist_fit) -> IslandResult:
    n = len(hist_tau)
    return IslandResult(body=np.zeros(1), header=np.zeros(1), tau=hist_tau[-1], fitness=hist_fit[-1],
                        hist_tau=np.asarray(hist_tau, float), hist_fit=np.asarray(hist_fit, float), generations=n - 1,
                        counters=np.zeros(4, np.int64), rngs=[], final_taus=np.zeros(1), final_fits=np.zeros(1))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(-5, 5)), min_size=1, max_size=40),
       st.integers(0, 3), st.floats(-5, 5), st.sampled_from(["gmean", "makespan"]))
def test_generations_to_target_is_the_first_generation_reaching_it(steps, t, f, objective):
    # a best-so-far history: lexicographically non-increasing (tau, fitness)
    hist, best = [], (np.inf, np.inf)
    for step in steps:
        best = min(best, (float(step[0]), step[1]))
        hist.append(best)
    taus, fits = [h[0] for h in hist], [h[1] for h in hist]
    got = generations_to_target(_result(taus, fits), float(t), f, objective)
    assert got == naive_first_reaching(taus, fits, float(t), f, objective)


def test_on_a_tiny_instance_the_target_is_the_optimum_and_two_islands_are_timed_to_it():
    problem = one_unit(2, 7, True)
    optimum = brute_force(problem, "gmean")
    s = GASettings(population=30, pm=0.15, stall_generations=150, max_generations=1000, migration_interval=25)
    one = run_islands(problem, s, [np.random.default_rng(2)])
    assert (one.hist_tau[-1], one.hist_fit[-1]) == pytest.approx(optimum, rel=1e-12)   # the reference reaches it
    two = run_islands(problem, GASettings(**{**s.__dict__, "islands": 2}),
                      [np.random.default_rng(2), np.random.default_rng(9)])
    g = generations_to_target(two, one.hist_tau[-1], one.hist_fit[-1], "gmean")
    assert g == naive_first_reaching(two.hist_tau, two.hist_fit, one.hist_tau[-1], one.hist_fit[-1], "gmean") >= 0


def test_the_target_is_the_same_for_every_island_count_and_isolation_period():
    inst = small_instance(11, False)
    base = dict(population=10, pm=0.05, max_generations=400, stall_generations=40)

    def targets(P, Im):
        s = GASettings(**base, islands=P, migration_interval=Im)
        res = plan(inst, "ga", s, [np.random.default_rng(k) for k in range(P)])
        return res.targets[0], res

    (t1, one) = targets(1, 50)
    for P, Im in ((1, 10), (2, 10), (3, 25), (4, 50)):
        t, res = targets(P, Im)
        assert t == t1   # the first period's problem is the same: so is its target
        assert res.generations_to_solution >= 0
    # with one island the target is the run's own final best: T_1 is the measure of before
    assert one.generations_to_solution == one.generations_to_own_final


def test_capped_periods_are_counted_and_a_missed_target_is_nan_with_its_reason():
    params = {**defaults(ga.PARAMS), "units": 6, "groups": 2, "density": 2.0, "population": 10,
              "islands": 2, "migration_interval": 5}
    seeds = np.arange(3, dtype=np.uint64)
    capped = ga.run_batch({**params, "max_generations": 5}, seeds)
    free = ga.run_batch({**params, "max_generations": 100_000}, seeds)
    assert (capped["capped_periods"] == 3).all()   # every period stopped at 5 generations
    assert (free["capped_periods"] == 0).all()     # stalled first
    for out in (capped, free):
        missed = out["reason"] == 2
        assert np.isnan(out["time_to_solution"][missed]).all()
        assert np.isfinite(out["time_to_solution"][~missed]).all()
        assert np.array_equal(out["time_to_solution"][~missed], 10 * out["generations_to_solution"][~missed])
