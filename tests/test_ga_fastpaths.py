"""ga: the fast paths for problems of non-parallel jobs without dependencies give exactly
(bit for bit) what the general code gives."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from test_ga_model import small_problem
from schedsweep.workloads.ga.crossover import _crossover_general, _crossover_simple
from schedsweep.workloads.ga.islands import GASettings, _context, _scratch, init_island
from schedsweep.workloads.ga.objectives import OBJECTIVES
from schedsweep.workloads.ga.operators import _mutate_from, _mutate_simple, evaluate, evaluate_simple


def simple_problem(seed: int):
    problem = small_problem(seed, parallel=False, dep_prob=0.0)
    assert problem.arrays()[11]   # non-parallel, no dependencies: the fast paths apply
    return problem


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_simple_crossover_is_the_general_one_for_every_cut(seed):
    problem = simple_problem(seed)
    P = problem.arrays()
    pop = init_island(problem, GASettings(population=6, init_mutations=10), np.random.default_rng(seed))
    C = problem.n_units
    s1, s2 = _scratch(problem), _scratch(problem)
    for a in range(6):
        b = (a + 1) % 6
        for c1 in range(C):
            for c2 in range(c1 + 1, C + 1):
                want_b, want_h = np.full_like(pop.bodies[a], -7), np.full_like(pop.headers[a], -7)
                got_b, got_h = np.full_like(pop.bodies[a], -9), np.full_like(pop.headers[a], -9)
                _crossover_general(pop.bodies[a], pop.headers[a], pop.bodies[b], pop.headers[b], P, c1, c2,
                                   want_b, want_h, s1)
                _crossover_simple(pop.bodies[a], pop.headers[a], pop.bodies[b], pop.headers[b], P[0], P[2], P[5],
                                  P[8], P[12], c1, c2, got_b, got_h, s2[2], s2[9], s2[10], s2[11])
                np.testing.assert_array_equal(got_b, want_b)
                np.testing.assert_array_equal(got_h, want_h)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), use_tau=st.booleans())
def test_simple_evaluation_is_the_general_one(seed, use_tau):
    problem = simple_problem(seed)
    P = problem.arrays()
    pop = init_island(problem, GASettings(population=6, init_mutations=10), np.random.default_rng(seed))
    s1, s2 = _scratch(problem), _scratch(problem)
    for body, header in zip(pop.bodies, pop.headers):
        for k in range(len(OBJECTIVES)):
            want = evaluate(body, header, P, k, use_tau, problem.period_end, s1)
            got = evaluate_simple(body, header, P, k, use_tau, problem.period_end, s2)
            assert got == want   # exact floats, not approximately


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), pm=st.sampled_from([0.05, 0.3, 0.9]))
def test_simple_mutation_is_the_general_one(seed, pm):
    problem = simple_problem(seed)
    P = problem.arrays()
    ctx = _context(problem)
    pop = init_island(problem, GASettings(population=6, init_mutations=10), np.random.default_rng(seed))
    for i in range(6):
        for a in range(problem.n_procs):
            r1, r2 = np.random.default_rng([seed, i, a]), np.random.default_rng([seed, i, a])
            want_b, want_h = pop.bodies[i].copy(), pop.headers[i].copy()
            got_b, got_h = pop.bodies[i].copy(), pop.headers[i].copy()
            n1 = _mutate_from(want_b, want_h, P, pm, r1, *ctx, _scratch(problem), a)
            n2 = _mutate_simple(got_b, got_h, pm, r2, P[8], a, np.empty(problem.n_procs, np.int64))
            assert n1 == n2
            np.testing.assert_array_equal(got_b, want_b)
            np.testing.assert_array_equal(got_h, want_h)
            assert r1.random() == r2.random()   # the same number of draws
