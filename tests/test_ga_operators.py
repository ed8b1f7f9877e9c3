"""ga: every individual after every operator is a consistent, mask-respecting schedule."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from naive_ga import check_schedule, naive_objective, naive_tau, naive_timing, unit_lists
from test_ga_model import small_problem
from schedsweep.workloads.ga.islands import GASettings, _context, _scratch, init_island, island_epoch
from schedsweep.workloads.ga.model import respects_mask
from schedsweep.workloads.ga.operators import crossover, mutate, random_swaps

OBJECTIVES = ("gmean", "makespan", "weighted_completion")


def assert_valid(problem, body, header):
    """Mask respected, and if the chromosome can be timed, the schedule is consistent."""
    assert respects_mask(body, header, problem.arrays())
    timing = naive_timing(problem, body, header)
    assert timing is not None, "inconsistent chromosome kept"
    assert check_schedule(problem, body, header, *timing) == []


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), parallel=st.booleans(), objective=st.sampled_from(OBJECTIVES))
def test_initial_population_and_evolution_stay_consistent(seed, parallel, objective):
    problem = small_problem(seed, parallel)
    s = GASettings(population=8, pc=0.7, pm=0.2, init_mutations=6, objective=objective, docking="tau_first")
    rng = np.random.default_rng(seed)
    state = init_island(problem, s, rng)
    for body, header in zip(state.bodies, state.headers):
        assert_valid(problem, body, header)
    state, hist_tau, hist_fit = island_epoch(state, problem, s, 5, None)
    for body, header, t, f in zip(state.bodies, state.headers, state.taus, state.fits):
        assert_valid(problem, body, header)
        start, _ = naive_timing(problem, body, header)
        # stored fitness is the chromosome's own (tau, objective)
        assert t == pytest.approx(naive_tau(problem, body, header, start), abs=1e-9)
        assert f == pytest.approx(naive_objective(problem, body, header, objective), rel=1e-9)
    # elitism: the best never gets worse
    pairs = list(zip(hist_tau, hist_fit))
    assert all(pairs[i + 1] <= pairs[i] for i in range(len(pairs) - 1))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), parallel=st.booleans())
def test_crossover_and_mutation_keep_mask_and_processes(seed, parallel):
    problem = small_problem(seed, parallel)
    s = GASettings(population=6, init_mutations=10)
    rng = np.random.default_rng(seed)
    pop = init_island(problem, s, rng)
    P = problem.arrays()
    ctx = _context(problem)
    scratch = _scratch(problem)
    n_procs = problem.n_procs
    for a in range(s.population):
        b = (a + 1) % s.population
        body, header = np.empty_like(pop.bodies[a]), np.empty_like(pop.headers[a])
        crossover(pop.bodies[a], pop.headers[a], pop.bodies[b], pop.headers[b], P, rng, body, header, scratch)
        # the child always holds every process once and respects the mask; when it can be
        # timed (the GA keeps it only then), it is a consistent schedule
        assert sorted(body) == list(range(n_procs)) and header.sum() == n_procs
        assert respects_mask(body, header, P)
        timing = naive_timing(problem, body, header)
        if timing is not None:
            assert check_schedule(problem, body, header, *timing) == []
        before = unit_lists(pop.bodies[a], pop.headers[a])
        body, header = pop.bodies[a].copy(), pop.headers[a].copy()
        mutate(body, header, P, 0.5, rng, *ctx, scratch)
        if not parallel:  # gene swaps keep the header (parallel: compaction may move jobs)
            np.testing.assert_array_equal(header, pop.headers[a])
            assert sorted(map(sorted, unit_lists(body, header))) != [] and len(before) == len(header)
        assert_valid(problem, body, header)
        random_swaps(body, header, P, 10, rng, *ctx, scratch)
        assert_valid(problem, body, header)


def test_crossover_repair_backfills_a_parallel_job_into_a_gap():
    from schedsweep.workloads.ga.model import Problem
    from schedsweep.workloads.ga.operators import _backfill_missing

    # 4 units of speed 1 in one group. Kept: job 0 (2 wide, 10 long) on units 0-1 from 0,
    # job 1 (3 wide) on units 0-2 after it, so unit 2 idles over [0, 10) and unit 3 always.
    # Missing: job 2 (2 wide, 5 long): it fits the gap at 0 on units 2 and 3.
    problem = Problem(speed=np.ones(4), group=np.zeros(4, np.int64), ready=np.zeros(4), prev_end=np.full(4, np.nan),
                      width=np.array([2, 3, 2]), length=np.array([10.0, 4.0, 5.0]), prio=np.ones(3, np.int64),
                      pred=np.full(3, -1), mask=np.ones((3, 4), bool), arrival=np.zeros(3), period_end=0.0)
    unit_of = np.array([0, 1, 0, 1, 2, -1, -1])
    walk = np.array([0, 2, 1, 3, 4, 0, 0])
    body, header = np.zeros(7, np.int64), np.zeros(4, np.int64)
    assert _backfill_missing(problem.arrays(), unit_of, walk, 5, body, header)
    np.testing.assert_array_equal(header, [2, 2, 2, 1])
    np.testing.assert_array_equal(body, [0, 2, 1, 3, 5, 4, 6])
    start, dur = naive_timing(problem, body, header)
    np.testing.assert_array_equal(start, [0.0, 10.0, 0.0])
    # with a predecessor ending at 10, the gap is too early: job 2 goes after job 1 instead
    dep = dataclasses.replace(problem, pred=np.array([-1, 0, 1]))
    unit_of = np.array([0, 1, 0, 1, 2, -1, -1])
    assert _backfill_missing(dep.arrays(), unit_of, walk, 5, body, header)
    start, dur = naive_timing(dep, body, header)
    assert start[2] == 14.0
    assert check_schedule(dep, body, header, start, dur) == []


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_compaction_never_delays_a_job(seed):
    from schedsweep.workloads.ga.operators import compact_job

    problem = small_problem(seed, True)
    rng = np.random.default_rng(seed)
    pop = init_island(problem, GASettings(population=4, init_mutations=10), rng)
    scratch = _scratch(problem)
    moved = 0
    for body, header in zip(pop.bodies, pop.headers):
        body, header = body.copy(), header.copy()
        for j in range(problem.n_jobs):
            before, _ = naive_timing(problem, body, header)
            if compact_job(body, header, problem.arrays(), j, scratch):
                moved += 1
                after, dur = naive_timing(problem, body, header)
                assert after[j] < before[j] and np.all(after <= before)
                assert check_schedule(problem, body, header, after, dur) == []
            else:
                np.testing.assert_array_equal(naive_timing(problem, body, header)[0], before)


def test_compaction_moves_a_job_into_the_gap():
    from schedsweep.workloads.ga.model import Problem
    from schedsweep.workloads.ga.operators import compact_job

    # job 2 (2 wide, 5 long) sits after job 1 on units 2-3 though units 2-3 idle over [0, 10)
    problem = Problem(speed=np.ones(4), group=np.zeros(4, np.int64), ready=np.zeros(4), prev_end=np.full(4, np.nan),
                      width=np.array([2, 3, 2]), length=np.array([10.0, 4.0, 5.0]), prio=np.ones(3, np.int64),
                      pred=np.full(3, -1), mask=np.ones((3, 4), bool), arrival=np.zeros(3), period_end=0.0)
    body, header = np.array([0, 2, 1, 3, 4, 5, 6]), np.array([2, 2, 2, 1])
    assert naive_timing(problem, body, header)[0][2] == 14.0
    assert compact_job(body, header, problem.arrays(), 2, _scratch(problem))
    np.testing.assert_array_equal(naive_timing(problem, body, header)[0], [0.0, 10.0, 0.0])
