"""How min_runtime and min_finish differ, and the tie rules they share (docs/models/slot_selection.md, "AEP scan").

Why do MinRuntime and MinFinish cost the same on the TY experiment? These tests
pin down the spec's semantics the answer rests on (benchmarks/calibration.md, slot selection):
both run the same greedy at every step, so they can differ only when min_runtime finds a
strictly shorter window at a later step; the best-so-far changes only on a strict
improvement (ties keep the earlier window, whatever its cost); the greedy's longest slot y
breaks length ties by higher cost.
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_slot_selection as naive
from schedsweep.workloads.slots.aep import aep_search
from schedsweep.workloads.slots.environment import generate_environment, job_on_nodes
from schedsweep.workloads.slots.greedy import greedy_runtime

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def environments(draw):
    """Small environments with integer performances (equal lengths, hence runtime ties, are common)."""
    seed = draw(st.integers(0, 2**32 - 1))
    nodes = draw(st.integers(3, 8))
    n = draw(st.integers(1, 3))
    env = generate_environment(np.random.default_rng(seed), nodes=nodes, interval=300.0, perf_integer=True,
                               price_sigma=draw(st.sampled_from([0.0, 0.2])),
                               price_exponent=draw(st.sampled_from([1.0, 1.1, 1.5])),
                               local_task_min=10.0, local_task_max=60.0)
    T = draw(st.sampled_from([20.0, 40.0]))
    node_len, node_cost = job_on_nodes(env, T, 2.0)
    budget = n * 2.0 * T * draw(st.sampled_from([0.8, 1.0, 1.2, 3.0]))
    return env, node_len, node_cost, budget, n


def _search(inst, algorithm, **kw):
    env, node_len, node_cost, budget, n = inst
    return aep_search(env.slot_node, env.slot_start, env.slot_end, node_len, node_cost, budget, n, algorithm, **kw)


@SETTINGS
@given(environments(), st.sampled_from(("swap", "literal", "exact")))
def test_min_runtime_is_min_finish_unless_a_later_step_is_strictly_shorter(inst, test):
    """Same window, or min_runtime's is strictly shorter, starts no earlier and finishes no earlier.

    Both keep the first step reaching their optimum over the same per-step windows, so a
    min_runtime window from an earlier step than min_finish's would also have been min_finish's.
    """
    if test == "exact":
        mr, mf = _search(inst, "min_runtime_exact"), _search(inst, "min_finish_exact")
    else:
        mr = _search(inst, "min_runtime", greedy_budget_test=test)
        mf = _search(inst, "min_finish", greedy_budget_test=test)
    assert mr.found == mf.found
    if not mr.found:
        return
    same = mr.start == mf.start and tuple(mr.nodes) == tuple(mf.nodes)
    if not same:
        assert mr.runtime < mf.runtime
        assert mr.start >= mf.start
        assert mr.finish >= mf.finish
    assert mf.finish <= mr.finish and mr.runtime <= mf.runtime


def _hand_built(slots, node_len, node_cost):
    """Slot arrays (sorted by start, then node) from ``[(node, start, end), ...]``."""
    slots = sorted(slots, key=lambda s: (s[1], s[0]))
    return (np.array([s[0] for s in slots], np.int64), np.array([s[1] for s in slots], float),
            np.array([s[2] for s in slots], float), np.asarray(node_len, float), np.asarray(node_cost, float))


def test_equal_runtime_later_and_cheaper_window_does_not_replace_the_earlier():
    """Strict improvement: nodes 2, 3 at t = 30 give the same runtime at a fifth of the cost; kept: 0, 1 at t = 0.

    Node 4 (length 5, its one slot too short) keeps the scan from stopping early at runtime 10."""
    arrays = _hand_built([(0, 0, 20), (1, 0, 20), (2, 30, 50), (3, 30, 50), (4, 0, 3)],
                         [10, 10, 10, 10, 5], [5, 5, 1, 1, 1])
    for algorithm in ("min_runtime", "min_runtime_exact", "min_finish", "min_finish_exact"):
        w = aep_search(*arrays, 100.0, 2, algorithm)
        assert (w.start, tuple(w.nodes), w.cost) == (0.0, (0, 1), 10.0), algorithm
    assert naive.scan(arrays[:3], arrays[3], arrays[4], 100.0, 2, "min_runtime") == (0.0, (0, 1))


def test_min_runtime_takes_a_later_shorter_window_min_finish_the_earlier():
    """Nodes 2, 3 (length 5) free from t = 30: runtime 5 < 10, finish 35 > 10."""
    arrays = _hand_built([(0, 0, 20), (1, 0, 20), (2, 30, 50), (3, 30, 50)], [10, 10, 5, 5], [1, 1, 2, 2])
    mr = aep_search(*arrays, 100.0, 2, "min_runtime")
    mf = aep_search(*arrays, 100.0, 2, "min_finish")
    assert (mr.start, tuple(mr.nodes), mr.runtime) == (30.0, (2, 3), 5.0)
    assert (mf.start, tuple(mf.nodes), mf.finish) == (0.0, (0, 1), 10.0)


def test_greedy_swaps_out_the_costlier_of_two_equally_long_slots():
    """W = {0 (cost 1), 1 (cost 2)}, both length 10: x = 2 (length 5, cost 3) replaces node 1 (the
    costlier); then x = 3 (length 5, cost 4) cannot replace node 0 within the budget. Swapping
    out the cheaper of the two first would end at {1, 2}. (One scan step: the greedy itself, as
    the scan's strict improvement would keep an earlier step's equally long window.)"""
    node_len, node_cost = np.array([10.0, 10.0, 5.0, 5.0]), np.array([1.0, 2.0, 3.0, 4.0])
    cost_order = np.argsort(node_cost, kind="mergesort")
    cand_end = np.full(4, 50.0)
    # swap: cost(W) - cost(y) + cost(x) <= S: 3 - 2 + 3 = 4 <= 6, then 4 - 1 + 4 = 7 > 6
    # literal: cost(W) + cost(x) < S: 3 + 3 < 6.5, then 4 + 4 >= 6.5
    for test, budget in (("swap", 6.0), ("literal", 6.5)):
        W, vals = np.empty(3, np.int64), np.empty(3)
        runtime = greedy_runtime(cost_order, cand_end, node_len, node_cost, 0.0, 2, budget, test == "literal", W, vals)
        assert (runtime, sorted(W[:2].tolist())) == (10.0, [0, 2]), test
        assert naive.greedy_runtime_window({k: k for k in range(4)}, 2, node_len, node_cost, budget, test) == [0, 2]
