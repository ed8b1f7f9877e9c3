"""The AEP kernels against the naive oracles of ``naive_slot_selection`` on small random environments."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_slot_selection as naive
from schedsweep.workloads.slot_selection.csa import csa_search
from schedsweep.workloads.slots.aep import aep_search, cut_window, draw_uniforms
from schedsweep.workloads.slots.environment import generate_environment, job_on_nodes

EXACT = ("amp", "alp", "min_cost", "min_runtime_exact", "min_finish_exact", "min_proc_time_exact")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def instances(draw):
    """A small environment and a job: few nodes, short interval, integer or real perf, ties likely."""
    seed = draw(st.integers(0, 2**32 - 1))
    nodes = draw(st.integers(2, 7))
    n = draw(st.integers(1, min(3, nodes)))
    perf_integer = draw(st.booleans())
    sigma = draw(st.sampled_from([0.0, 0.2]))
    gamma = draw(st.sampled_from([1.0, 1.5, 2.0]))
    interval = draw(st.sampled_from([150.0, 300.0]))
    env = generate_environment(np.random.default_rng(seed), nodes=nodes, interval=interval,
                               perf_integer=perf_integer, price_sigma=sigma, price_exponent=gamma,
                               local_task_min=10.0, local_task_max=60.0)
    T = draw(st.sampled_from([20.0, 40.0, 80.0]))
    node_len, node_cost = job_on_nodes(env, T, 2.0)
    # budgets from "barely anything" to "everything", through the mean window cost n * p_ref * T
    budget = n * 2.0 * T * draw(st.sampled_from([0.3, 0.8, 1.0, 1.2, 3.0, 100.0]))
    if draw(st.booleans()) and sigma == 0.0:
        budget = float(math.fsum(sorted(node_cost)[:n]))   # exactly the cheapest: ties at the limit
    mask = None
    if draw(st.booleans()):
        mask = np.array(draw(st.lists(st.booleans(), min_size=nodes, max_size=nodes)))
    return env, node_len, node_cost, budget, n, mask, T, seed


def _arrays(env):
    return env.slot_node, env.slot_start, env.slot_end


def _kernel(inst, algorithm, **kw):
    env, node_len, node_cost, budget, n, mask, T, _ = inst
    return aep_search(*_arrays(env), node_len, node_cost, budget, n, algorithm, mask, job_runtime=T, **kw)


def _oracle(inst, algorithm, **kw):
    env, node_len, node_cost, budget, n, mask, T, _ = inst
    return naive.scan(_arrays(env), node_len, node_cost, budget, n, algorithm, mask, job_runtime=T, **kw)


def _same(window, expected):
    if expected is None:
        return not window.found
    return window.found and window.start == expected[0] and tuple(window.nodes) == expected[1]


def _feasible(window, env, node_len, node_cost, budget, n, mask):
    """Distinct nodes, each used slot on its node contains [t_w, t_w + len_k], cost <= budget."""
    assert len(set(window.nodes.tolist())) == n
    for k, s in zip(window.nodes, window.slots):
        assert env.slot_node[s] == k
        assert env.slot_start[s] <= window.start
        assert not (env.slot_end[s] - window.start < node_len[k])
        assert mask is None or mask[k]
    assert window.cost == math.fsum(node_cost[window.nodes]) <= budget
    assert window.runtime == node_len[window.nodes].max()
    assert window.proc_time == math.fsum(node_len[window.nodes])


@SETTINGS
@given(instances(), st.sampled_from(EXACT))
def test_exact_algorithms_equal_the_literal_scan(inst, algorithm):
    assert _same(_kernel(inst, algorithm), _oracle(inst, algorithm))


@SETTINGS
@given(instances(), st.sampled_from(("swap", "literal")), st.sampled_from(("min_runtime", "min_finish")))
def test_source_greedy_equals_the_literal_greedy(inst, test, algorithm):
    assert _same(_kernel(inst, algorithm, greedy_budget_test=test),
                 _oracle(inst, algorithm, greedy_budget_test=test))


@SETTINGS
@given(instances(), st.integers(0, 2))
def test_random_window_equals_the_literal_draw(inst, retries):
    env, *_ = inst
    n = inst[4]
    u = draw_uniforms(np.random.default_rng(inst[-1] + 1), env.slots, n, retries)
    assert _same(_kernel(inst, "min_proc_time", uniforms=u, random_window_retries=retries),
                 _oracle(inst, "min_proc_time", uniforms=u, retries=retries))


@SETTINGS
@given(instances())
def test_optima_equal_brute_force_over_all_windows(inst):
    """Scan-free brute force: every feasible window at every slot start."""
    env, node_len, node_cost, budget, n, mask, T, _ = inst
    windows = naive.all_windows(_arrays(env), node_len, node_cost, budget, n, mask)
    results = {a: _kernel(inst, a) for a in
               ("amp", "min_cost", "min_runtime_exact", "min_finish_exact", "min_proc_time_exact")}
    if not windows:
        assert not any(w.found for w in results.values())
        return
    assert results["amp"].start == min(t for t, _ in windows)
    assert results["min_cost"].cost == min(naive.cost_of(s, node_cost) for _, s in windows)
    assert results["min_runtime_exact"].runtime == min(naive.runtime_of(s, node_len) for _, s in windows)
    assert results["min_finish_exact"].finish == min(t + naive.runtime_of(s, node_len) for t, s in windows)
    assert results["min_proc_time_exact"].proc_time == min(naive.proc_of(s, node_len) for _, s in windows)


@SETTINGS
@given(instances(), st.sampled_from(("swap", "literal")))
def test_every_window_is_feasible_and_greedy_never_beats_exact(inst, test):
    env, node_len, node_cost, budget, n, mask, T, seed = inst
    u = draw_uniforms(np.random.default_rng(seed), env.slots, n)
    found = {}
    for a in EXACT + ("min_runtime", "min_finish", "min_proc_time"):
        w = _kernel(inst, a, greedy_budget_test=test, uniforms=u if a == "min_proc_time" else None)
        if w.found:
            _feasible(w, env, node_len, node_cost, budget if a != "alp" else math.inf, n, mask)
        found[a] = w
    if found["min_runtime"].found:
        assert found["min_runtime_exact"].runtime <= found["min_runtime"].runtime
    if found["min_finish"].found:
        assert found["min_finish_exact"].finish <= found["min_finish"].finish
    if found["min_proc_time"].found:
        assert found["min_proc_time_exact"].proc_time <= found["min_proc_time"].proc_time
    # any window found implies the exact searches found one; amp is the earliest of all
    if any(w.found for a, w in found.items() if a != "alp"):
        assert found["amp"].found
        assert all(found["amp"].start <= w.start for a, w in found.items() if w.found and a != "alp")


@SETTINGS
@given(instances())
def test_alp_windows_meet_the_local_limit(inst):
    env, node_len, node_cost, budget, n, mask, T, _ = inst
    w = _kernel(inst, "alp")
    if w.found:
        assert (node_cost[w.nodes] <= budget / n).all()
    u = _kernel(inst, "alp", alp_limit="unit_price")
    assert _same(u, _oracle(inst, "alp", alp_limit="unit_price"))
    if u.found:
        assert (node_cost[u.nodes] / node_len[u.nodes] <= budget / (n * T)).all()


@SETTINGS
@given(instances())
def test_csa_equals_repeated_amp_with_cutting_and_alternatives_are_disjoint(inst):
    env, node_len, node_cost, budget, n, mask, T, _ = inst
    alt = csa_search(*_arrays(env), node_len, node_cost, budget, n, mask)
    expected = naive.csa(_arrays(env), node_len, node_cost, budget, n, mask)
    assert [(s, tuple(k)) for s, k in zip(alt.start.tolist(), alt.nodes.tolist())] == expected
    # pairwise disjoint in time on each node, and never on local load: inside an original slot
    for a in range(alt.count):
        for k in alt.nodes[a]:
            a0, a1 = alt.start[a], alt.start[a] + node_len[k]
            on_node = (env.slot_node == k) & (env.slot_start <= a0) & (env.slot_end >= a1)
            assert on_node.any()
            for b in range(a):
                if k in alt.nodes[b]:
                    b0, b1 = alt.start[b], alt.start[b] + node_len[k]
                    assert a1 <= b0 or b1 <= a0
        assert alt.cost[a] <= budget


@SETTINGS
@given(instances())
def test_slow_csa_with_cut_window_gives_the_same_alternatives(inst):
    """The public cut_window + aep_search loop (what cyclic uses) agrees with the CSA kernel."""
    env, node_len, node_cost, budget, n, mask, T, _ = inst
    arrays = _arrays(env)
    starts = []
    while True:
        w = aep_search(*arrays, node_len, node_cost, budget, n, "amp", mask)
        if not w.found:
            break
        starts.append((w.start, tuple(w.nodes)))
        arrays = cut_window(*arrays, w.slots, w.start, node_len)
    alt = csa_search(*_arrays(env), node_len, node_cost, budget, n, mask)
    assert starts == [(s, tuple(k)) for s, k in zip(alt.start.tolist(), alt.nodes.tolist())]


def test_unit_cost_when_gamma_one_and_no_deviation():
    """With gamma = 1 and price_sigma = 0 every slot costs p_ref * T, whatever the node's speed."""
    env = generate_environment(np.random.default_rng(7), nodes=50, price_sigma=0.0, price_exponent=1.0)
    node_len, node_cost = job_on_nodes(env, 150.0, 2.0)
    np.testing.assert_allclose(node_cost, 300.0, rtol=1e-15)


def test_bad_arguments_are_refused_with_the_name():
    env = generate_environment(np.random.default_rng(1), nodes=5)
    node_len, node_cost = job_on_nodes(env, 150.0, 2.0)
    with pytest.raises(ValueError, match="algorithm"):
        aep_search(*_arrays(env), node_len, node_cost, 1500.0, 2, "fastest")
    with pytest.raises(ValueError, match="uniforms"):
        aep_search(*_arrays(env), node_len, node_cost, 1500.0, 2, "min_proc_time")
