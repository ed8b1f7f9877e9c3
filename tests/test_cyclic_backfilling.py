"""Backfilling against local load: the kernel against the plain-Python oracle, the
conservative guarantees, ample resources, and a hand-checked scenario."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import naive_cyclic as naive
from schedsweep.workloads._contract import defaults, substreams
from schedsweep.workloads.cyclic import PARAMS, run_cycle
from schedsweep.workloads.cyclic.backfilling import backfill
from schedsweep.workloads.cyclic.batch import job_matrices
from schedsweep.workloads.cyclic.cycle import batch_of, environment_of
from schedsweep.workloads.slots.environment import Environment

SETTINGS = settings(max_examples=30, deadline=None)


@st.composite
def cases(draw):
    p = defaults(PARAMS)
    p.update(nodes=draw(st.integers(1, 7)), interval=300.0, jobs=draw(st.integers(1, 8)),
             job_slots_min=1, job_slots_max=draw(st.integers(1, 4)))
    env_rng, batch_rng, crit_rng, rho_rng = substreams(draw(st.integers(0, 2**32 - 1)), 4)
    env = environment_of(p, env_rng)
    batch = batch_of(p, batch_rng, crit_rng, rho_rng)
    node_len, node_cost = job_matrices(batch, env.perf, env.price, p["perf_min"])
    return env, batch, node_len, node_cost


def _slots(env):
    return env.slot_node, env.slot_start, env.slot_end


@SETTINGS
@given(cases(), st.booleans(), st.booleans(), st.booleans(), st.integers(0, 3))
def test_kernel_equals_oracle(case, easy, enforce, actual, fixed_count):
    env, batch, node_len, node_cost = case
    N = batch.size
    rho = batch.rho if actual else np.ones(N)
    order = np.arange(N)
    # the first jobs as fixed windows (as CSS+BF gives them): their conservative plan
    fixed = min(fixed_count, N)
    fixed_start = np.full(N, np.nan)
    fixed_nodes = np.full((N, int(batch.slots.max())), -1, np.int64)
    if fixed:
        pre = backfill(_slots(env), order[:fixed], node_len, node_cost, batch.budget, batch.slots, np.ones(N))
        fixed_start[:fixed], fixed_nodes[:fixed] = pre.start[:fixed], pre.nodes[:fixed]
    queue = order[fixed:]
    variant = "easy" if easy else "conservative"
    got = backfill(_slots(env), queue, node_len, node_cost, batch.budget, batch.slots, rho, variant=variant,
                   bf_budget="enforce" if enforce else "ignore", fixed_start=fixed_start, fixed_nodes=fixed_nodes)
    start, nodes = naive.naive_backfill(env, queue, node_len, node_cost, batch.budget, batch.slots, rho,
                                        easy=easy, enforce=enforce, fixed_start=fixed_start, fixed_nodes=fixed_nodes)
    assert np.array_equal(got.start, start, equal_nan=True)
    assert np.array_equal(got.nodes, nodes)
    naive.check_windows(env, got.start, got.nodes, node_len, batch.slots, rho)
    if enforce:
        for j in queue[~np.isnan(got.start[queue])]:
            ks = got.nodes[j][got.nodes[j] >= 0]
            assert node_cost[j, ks].sum() <= batch.budget[j] * (1 + 1e-12)


@SETTINGS
@given(cases())
def test_conservative_never_delays_an_earlier_job(case):
    """Adding lower-priority jobs never changes the plan of the higher-priority ones."""
    env, batch, node_len, node_cost = case
    N = batch.size
    full = backfill(_slots(env), np.arange(N), node_len, node_cost, batch.budget, batch.slots, np.ones(N))
    for m in range(1, N):
        prefix = backfill(_slots(env), np.arange(m), node_len, node_cost, batch.budget, batch.slots, np.ones(N))
        assert np.array_equal(prefix.start[:m], full.start[:m], equal_nan=True)
        assert np.array_equal(prefix.nodes[:m], full.nodes[:m])


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["conservative", "easy"]), st.booleans())
def test_ample_nodes_start_every_job_at_zero(seed, variant, actual):
    p = defaults(PARAMS)
    p.update(nodes=100, jobs=20, local_load_min=0.0, local_load_max=0.0, method="bf", bf_variant=variant,
             job_slots_min=1, job_slots_max=5)      # at most 100 slots in all: every job fits at 0
    if not actual:
        p.update(runtime_factor_min=1.0)
    cycle = run_cycle(p, seed)
    assert cycle.batch.slots.sum() <= 100
    assert np.all(cycle.plan.start == 0.0)
    assert np.all(cycle.actual_start == 0.0)


def _hand_environment():
    """3 nodes of performance 2 (= p_ref: len = T), interval 100; node 2 has a local task on [0, 20]."""
    perf = np.full(3, 2.0)
    return Environment(perf, np.full(3, 2.0), np.zeros(3), np.array([0, 1, 2]), np.array([0.0, 0.0, 20.0]),
                       np.array([100.0, 100.0, 100.0]), 100.0)


@pytest.mark.parametrize("variant", ["conservative", "easy"])
def test_hand_checked_scenario(variant):
    env = _hand_environment()
    T = np.array([50.0, 30.0, 20.0, 10.0])
    n = np.array([2, 2, 1, 3])
    node_len = np.repeat(T[:, None], 3, axis=1)
    node_cost = 2.0 * node_len
    budget = np.full(4, 1e9)
    slots = _slots(env)
    # plan: J0 at 0 on {0,1}; J1 needs 2 nodes, nodes 0, 1 free at 50; J2 backfills node 2 at 20
    # (after the local task); J3 needs all 3: nodes 0, 1 free from 80 (J1 ends), node 2 from 40
    plan = backfill(slots, np.arange(4), node_len, node_cost, budget, n, np.ones(4), variant=variant)
    assert list(plan.start) == [0.0, 50.0, 20.0, 80.0]
    assert [list(r[r >= 0]) for r in plan.nodes] == [[0, 1], [0, 1], [2], [0, 1, 2]]
    if variant == "easy":
        return
    # J0 runs half its reservation and frees nodes 0, 1 at 25: J1 moves up to 25 (ends 55),
    # and J3 to 55 (node 2 free from 40)
    rho = np.array([0.5, 1.0, 1.0, 1.0])
    actual = backfill(slots, np.arange(4), node_len, node_cost, budget, n, rho, variant=variant)
    assert list(actual.start) == [0.0, 25.0, 20.0, 55.0]


def test_a_job_that_never_fits_is_postponed():
    env = _hand_environment()
    node_len = np.array([[120.0] * 3, [10.0] * 3])
    out = backfill(_slots(env), np.arange(2), node_len, 2 * node_len, np.full(2, 1e9), np.array([1, 4]),
                   np.ones(2))
    assert np.isnan(out.start).all() and np.all(out.nodes < 0)


def test_rejects_unknown_variant():
    env = _hand_environment()
    with pytest.raises(ValueError, match="bf_variant"):
        backfill(_slots(env), np.arange(1), np.ones((1, 3)), np.ones((1, 3)), np.ones(1), np.ones(1, np.int64),
                 np.ones(1), variant="aggressive")
