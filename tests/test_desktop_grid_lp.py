"""desktop_grid allocation LP: lambda* against scipy's linprog and the pulp statement,
vertex zero counts, maximal support of the robust solution; the numba simplex
(``lp_solver = simplex``) against linprog and the HiGHS path."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_desktop_grid import solve_pulp
from scipy.optimize import linprog

from schedsweep.workloads import desktop_grid as dg
from schedsweep.workloads.desktop_grid.lp import AllocationLP, max_support, solve_states, z0


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


# --------------------------------------------------------------------------- numba simplex
def _state_sequence(rng, m, k):
    """k states over m machines: availability ~80%, CPU estimates in [0.3, 1]; -1 = down."""
    states = np.where(rng.random((k, m)) < 0.8, rng.uniform(0.3, 1.0, (k, m)), -1.0)
    for r in range(k):
        if not (states[r] >= 0).any():
            states[r, rng.integers(m)] = rng.uniform(0.3, 1.0)
    return states


def _assert_optimal_vertex(mu_eff, alpha, available, lam, delta, n_zeros, support, zero_tol=1e-7):
    """lambda* = linprog's; delta feasible, attains it; the zero count is that of delta."""
    ref = linprog_lambda(mu_eff, alpha, available)
    assert abs(lam - ref) <= 1e-9 * max(1.0, ref)
    assert (delta >= 0).all() and (delta.sum(axis=0) <= 1 + 1e-9).all()
    assert (delta[:, ~available] == 0).all()
    assert ((delta * mu_eff).sum(axis=1) >= lam * alpha * (1 - 1e-9)).all()
    eps = zero_tol * delta.max()
    assert (support == ((delta > eps) & available[None, :])).all()
    assert n_zeros == mu_eff.shape[0] * available.sum() - support.sum()
    assert n_zeros >= z0(mu_eff.shape[0], int(available.sum()))


@settings(max_examples=40, deadline=None)
@given(grids(grouped=True))
def test_simplex_matches_highs_and_linprog_on_state_sequences(case):
    """A warm-started sequence of states, one state per call: the simplex's lambda* equals
    linprog's and HiGHS's, its vertex is feasible and optimal, 'search' keeps exactly z0 zeros
    unless all tries ran. With no two proportional machines (unique optimum) both solvers
    return the same support and zero count, state by state (so the same random draws)."""
    mu, alpha, _, rng = case
    n, m = mu.shape
    states = _state_sequence(rng, m, 5)
    seed = int(rng.integers(2**32))
    fast = AllocationLP(mu, alpha, solver="simplex", rng=np.random.default_rng(seed))
    ref = AllocationLP(mu, alpha, solver="highs", rng=np.random.default_rng(seed))
    generic = np.unique(mu, axis=1).shape[1] == m
    for state in states:
        available = state >= 0
        a = np.where(available, state, 1.0)
        searched = fast.search_solves
        got = fast.solve(available, a)
        want = ref.solve(available, a)
        _assert_optimal_vertex(mu * a, alpha, available, got.lambda_star, got.delta, got.n_zeros, got.support)
        assert got.z0 == want.z0
        assert abs(got.lambda_star - want.lambda_star) <= 1e-9 * want.lambda_star
        if got.n_zeros > got.z0:
            assert fast.search_solves - searched == fast.tries     # gave up only after every try
        if generic:
            assert (got.support == want.support).all() and got.n_zeros == want.n_zeros


@settings(max_examples=40, deadline=None)
@given(grids())
def test_simplex_search_gives_exactly_z0_zeros_on_generic_instances(case):
    mu, alpha, available, rng = case
    n, m_av = mu.shape[0], int(available.sum())
    search = AllocationLP(mu, alpha, solver="simplex", rng=rng).solve(available)
    assert search.n_zeros == search.z0 == z0(n, m_av)
    accept = AllocationLP(mu, alpha, solver="simplex", degenerate="accept").solve(available)
    assert accept.n_zeros >= accept.z0


def test_simplex_one_call_equals_state_by_state_and_cold_solves():
    """solve_states over 60 states in one compiled call (a state with no machine included)
    gives, for every state, linprog's lambda* and an optimal vertex; and the same results as
    the same kernel called one state at a time."""
    rng = np.random.default_rng(7)
    mu = np.repeat(rng.gamma(1.0, 1.0, (4, 5)), 3, axis=1)       # groups: degenerate faces
    alpha = rng.uniform(0.5, 2.0, 4)
    states = _state_sequence(rng, 15, 60)
    states[17] = -1.0
    sol, counts = solve_states(mu, alpha, states, np.random.default_rng(1), keep_delta=True)
    one = AllocationLP(mu, alpha, solver="simplex", rng=np.random.default_rng(1))
    for k, state in enumerate(states):
        available = state >= 0
        a = np.where(available, state, 1.0)
        single = one.solve(available, a)
        assert sol.lambda_star[k] == single.lambda_star and (sol.delta[k] == single.delta).all()
        if k == 17:
            assert sol.lambda_star[k] == 0 and sol.elig[k].sum() == 0
            continue
        _assert_optimal_vertex(mu * a, alpha, available, sol.lambda_star[k], sol.delta[k],
                               sol.n_zeros[k], sol.elig[k].astype(bool))
    assert counts["solves"] == one.solves >= 59


def test_simplex_degenerate_two_identical_machines():
    """One class, two identical machines: lambda* = 2, both machines at delta = 1 (z0 = 0)."""
    sol = AllocationLP(np.array([[1.0, 1.0]]), np.array([1.0]), solver="simplex").solve()
    assert sol.lambda_star == pytest.approx(2.0, rel=1e-12) and sol.z0 == 0 and sol.n_zeros == 0
    assert np.allclose(sol.delta, 1.0)


def test_simplex_rejects_robust_and_unknown_solver():
    mu, alpha = np.ones((2, 3)), np.ones(2)
    with pytest.raises(ValueError, match="robust"):
        AllocationLP(mu, alpha, method="robust", solver="simplex")
    with pytest.raises(ValueError, match="lp_solver 'cplex'"):
        AllocationLP(mu, alpha, solver="cplex")


def test_lp_solvers_give_identical_replications_on_a_generic_system(tmp_path):
    """No two proportional machines (unique optimal vertices): lpas_dg with lp_solver simplex
    and highs gives the same replication, every non-timing metric equal (lambda* to
    rounding), with estimation errors so that CPU estimates change too."""
    rng = np.random.default_rng(11)
    mu = rng.gamma(2.0, 0.5, (3, 8)) + 0.05
    path = tmp_path / "rates.csv"
    np.savetxt(path, mu, delimiter=",")
    alpha = 0.6 * max_throughput_of(mu) * np.array([0.5, 0.3, 0.2])
    base = dg.default_params(system="custom", rates_file=str(path), alpha=tuple(alpha), policy="lpas_dg",
                             failures="exponential", fail_rate=0.05, down_mean=3.0, horizon=400.0,
                             estimation_error=0.3)
    seeds = np.array([3, 4], dtype=np.uint64)
    fast = dg.run_batch({**base, "lp_solver": "simplex"}, seeds)
    ref = dg.run_batch({**base, "lp_solver": "highs"}, seeds)
    assert (fast["lp_keys"] > 20).all()
    for metric in dg.METRICS:
        if metric.name == "lambda_star":      # two solvers: equal to rounding
            np.testing.assert_allclose(fast[metric.name], ref[metric.name], rtol=1e-12)
        elif not metric.timing:
            np.testing.assert_array_equal(fast[metric.name], ref[metric.name], err_msg=metric.name)


def max_throughput_of(mu):
    from schedsweep.workloads.desktop_grid.lp import max_throughput
    return max_throughput(mu, np.ones(mu.shape[0]) / mu.shape[0]) / mu.shape[0]


@settings(max_examples=25, deadline=None)
@given(grids(grouped=True), st.sampled_from([1e-9, 1e-5, 1e5, 1e9]))
def test_simplex_lambda_star_in_any_time_unit(case, scale):
    """Arrival rates times ``scale`` (another time unit for alpha): lambda* is linprog's for
    the unscaled rates divided by ``scale`` (linprog's absolute tolerances cannot solve the
    scaled LP itself), and the vertex stays feasible with at least z0 zeros."""
    mu, alpha, available, rng = case
    a = rng.uniform(0.1, 1.0, mu.shape[1])
    sol = AllocationLP(mu, alpha * scale, solver="simplex", rng=rng).solve(available, a)
    ref = linprog_lambda(mu * a, alpha, available) / scale
    assert abs(sol.lambda_star - ref) <= 1e-9 * ref
    d = sol.delta
    assert (d >= 0).all() and (d.sum(axis=0) <= 1 + 1e-9).all() and (d[:, ~available] == 0).all()
    assert ((d * mu * a).sum(axis=1) >= sol.lambda_star * alpha * scale * (1 - 1e-9)).all()
    assert sol.n_zeros >= sol.z0


def test_highs_banner_stays_off_stdout():
    """A fresh process that builds the HiGHS LP writes nothing, on stdout or stderr: highspy
    prints its banner from C++ to descriptor 1 in the constructor, which would corrupt a piped
    table, and a third party's banner is not ours to show."""
    import subprocess
    import sys
    code = ("import numpy as np\n"
            "from schedsweep.workloads.desktop_grid.lp import AllocationLP\n"
            "lp = AllocationLP(np.array([[1.0, 2.0]]), np.array([1.0]), solver='highs')\n"
            "lp.solve(np.array([True, True]), np.ones(2))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout == "" and "HiGHS" not in out.stderr
