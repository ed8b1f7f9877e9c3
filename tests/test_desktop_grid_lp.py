"""desktop_grid allocation LP: lambda* against scipy's linprog and the pulp statement,
vertex zero counts, maximal support of the robust solution."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from workloads.desktop_grid.lp import AllocationLP, max_support, solve_pulp, z0


def linprog_lambda(mu, alpha, available):
    """max lambda by scipy.optimize.linprog (HiGHS via scipy), an independent statement."""
    up = np.flatnonzero(available)
    n, k = mu.shape[0], up.size
    c = np.zeros(n * k + 1)
    c[-1] = -1.0
    a_ub = np.zeros((n + k, n * k + 1))
    for i in range(n):
        a_ub[i, i * k:(i + 1) * k] = -mu[i, up]
        a_ub[i, -1] = alpha[i]
    for q in range(k):
        a_ub[n + q, q:n * k:k] = 1.0
    b_ub = np.r_[np.zeros(n), np.ones(k)]
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    assert res.status == 0
    return res.x[-1]


@st.composite
def grids(draw, grouped: bool = False):
    """Small random systems; ``grouped`` repeats machine columns (ties, non-unique optima)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 4))
    groups = draw(st.integers(1, 4))
    per = draw(st.integers(1, 3)) if grouped else 1
    rates = rng.gamma(1.0, 1.0, (n, groups)) + 0.01
    mu = np.repeat(rates, per, axis=1)
    alpha = rng.uniform(0.1, 2.0, n)
    m = mu.shape[1]
    available = rng.random(m) < 0.8
    if not available.any():
        available[rng.integers(m)] = True
    return mu, alpha, available, rng


@settings(max_examples=40, deadline=None)
@given(grids(grouped=True))
def test_lambda_star_equals_linprog_and_pulp(case):
    mu, alpha, available, _ = case
    sol = AllocationLP(mu, alpha).solve(available)
    ref = linprog_lambda(mu, alpha, available)
    assert abs(sol.lambda_star - ref) <= 1e-7 * max(1.0, ref)
    lam_pulp, _ = solve_pulp(mu, alpha, available)
    assert abs(lam_pulp - ref) <= 1e-7 * max(1.0, ref)
    # the solution is feasible and attains lambda*
    d = sol.delta
    assert (d >= 0).all() and (d.sum(axis=0) <= 1 + 1e-9).all() and (d[:, ~available] == 0).all()
    assert ((d * mu).sum(axis=1) >= sol.lambda_star * alpha * (1 - 1e-9)).all()


@settings(max_examples=40, deadline=None)
@given(grids())
def test_vertex_has_exactly_z0_zeros_on_generic_instances(case):
    """Random rates: 'search' gives exactly NM+1-N-M zeros; 'accept' at least that many."""
    mu, alpha, available, rng = case
    n, m_av = mu.shape[0], int(available.sum())
    search = AllocationLP(mu, alpha, degenerate="search", rng=rng).solve(available)
    assert search.z0 == z0(n, m_av) == n * m_av + 1 - n - m_av
    assert search.n_zeros == search.z0
    accept = AllocationLP(mu, alpha, degenerate="accept").solve(available)
    assert accept.n_zeros >= accept.z0


@settings(max_examples=25, deadline=None)
@given(grids(grouped=True))
def test_robust_support_is_the_maximal_support(case):
    """Interior point without crossover, thresholded = per-entry maximisation over the
    optimal face; it contains the vertex support. Complete support falls back to the vertex."""
    mu, alpha, available, rng = case
    robust_lp = AllocationLP(mu, alpha, method="robust", rng=rng)
    robust = robust_lp.solve(available)
    oracle = max_support(mu, alpha, available)
    vertex = AllocationLP(mu, alpha, rng=rng).solve(available)
    if robust_lp.robust_fallbacks:
        assert oracle[:, available].all()
        assert (robust.support == vertex.support).all()
    else:
        assert (robust.support == oracle).all()
        assert (robust.support >= vertex.support).all()


def test_degenerate_machine_rows_are_searched():
    """Two identical machines and one class: any split of lambda* is optimal; the vertex
    puts both machines at delta = 1 (z0 = 0 zeros), the robust support is complete and so
    falls back to it."""
    mu, alpha = np.array([[1.0, 1.0]]), np.array([1.0])
    lp = AllocationLP(mu, alpha, method="robust")
    sol = lp.solve()
    assert sol.lambda_star == 2.0 and sol.z0 == 0 and sol.n_zeros == 0
    assert lp.robust_fallbacks == 1


def test_warm_resolves_match_cold_solves():
    """Re-solving one model over a sequence of available sets gives the cold lambda*."""
    rng = np.random.default_rng(3)
    mu = np.repeat(rng.gamma(1.0, 1.0, (4, 6)), 4, axis=1)
    alpha = rng.uniform(0.5, 2.0, 4)
    warm = AllocationLP(mu, alpha)
    for _ in range(30):
        available = rng.random(24) < 0.7
        a = rng.uniform(0.3, 1.0, 24)
        got = warm.solve(available, a).lambda_star
        cold = AllocationLP(mu * a[None, :], alpha).solve(available).lambda_star
        assert abs(got - cold) <= 1e-9 * cold
