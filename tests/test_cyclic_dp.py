"""The DP combination choice against brute force over all combinations (``docs/models/cyclic.md``, CSS step 2)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import naive_cyclic as naive
from schedsweep.workloads.cyclic.dp import STRATEGIES, choose, cycle_limit, levels, strategy_arrays

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def batches(draw):
    """Alternatives of 1..5 jobs, 1..4 each, with times and costs (integers or reals)."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    A = int(offsets[-1])
    real = draw(st.booleans())
    value = st.floats(1.0, 300.0) if real else st.integers(1, 60).map(float)
    time = np.array(draw(st.lists(value, min_size=A, max_size=A)))
    cost = np.array(draw(st.lists(value, min_size=A, max_size=A)))
    resolution = draw(st.sampled_from([1.0, 0.5, 7.0]))
    return offsets, time, cost, resolution


@SETTINGS
@given(batches(), st.sampled_from(sorted(STRATEGIES)))
def test_dp_equals_brute_force(batch, strategy):
    offsets, time, cost, resolution = batch
    v, g, maximize = strategy_arrays(strategy, time, cost)
    combo = choose(offsets, v, g, maximize, resolution)
    best, feasible, limit = naive.brute_dp(offsets, v, g, maximize, resolution)
    assert combo.limit == limit
    assert combo.flagged == (not feasible)
    chosen = offsets[:-1] + combo.choice
    assert np.all((combo.choice >= 0) & (chosen < offsets[1:]))
    if feasible:
        assert math.isclose(combo.value, best, rel_tol=1e-12, abs_tol=1e-9)
        # the chosen combination meets its limit, on levels and in real units
        assert levels(g[chosen], resolution).sum() <= math.floor(limit / resolution)
        assert g[chosen].sum() <= limit + 1e-9
    else:
        # flagged: each job's smallest-quantity alternative
        for i in range(len(offsets) - 1):
            assert g[chosen[i]] == g[offsets[i]:offsets[i + 1]].min()


def test_limit_is_sum_of_floored_means():
    offsets = np.array([0, 2, 5])
    g = np.array([10.0, 11.0, 3.0, 4.0, 4.5])
    assert cycle_limit(offsets, g) == math.floor(10.5) + math.floor(11.5 / 3)


def test_flagged_when_rounding_up_breaks_every_combination():
    # every alternative 10.5 -> level 11, limit floor(10.5) = 10 per job: nothing fits
    offsets = np.array([0, 2, 3])
    g = np.array([10.5, 10.5, 10.5])
    combo = choose(offsets, np.array([1.0, 2.0, 3.0]), g, True)
    assert combo.flagged and list(combo.choice) == [0, 0]


def test_rejects_jobs_without_alternatives_and_bad_resolution():
    with pytest.raises(ValueError, match="at least one alternative"):
        choose(np.array([0, 0, 1]), np.ones(1), np.ones(1), False)
    with pytest.raises(ValueError, match="dp_resolution"):
        choose(np.array([0, 1]), np.ones(1), np.ones(1), False, resolution=0.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(sorted(STRATEGIES)),
       st.sampled_from(["proc_time", "runtime", "finish"]))
def test_dp_equals_brute_force_on_workload_batches(seed, strategy, dp_time):
    """Alternatives of a real small batch (6 nodes, 4 jobs, up to 3 alternatives each)."""
    from schedsweep.workloads._contract import defaults, substreams
    from schedsweep.workloads.cyclic import PARAMS
    from schedsweep.workloads.cyclic.alternatives import find_alternatives
    from schedsweep.workloads.cyclic.batch import job_matrices
    from schedsweep.workloads.cyclic.cycle import batch_of, environment_of
    from schedsweep.workloads.cyclic.frsm import alternative_time
    from schedsweep.workloads.cyclic.search import FIRST_FIT

    p = defaults(PARAMS)
    p.update(nodes=6, jobs=4, interval=300.0, job_slots_min=1, job_slots_max=5)
    env_rng, batch_rng, crit_rng, rho_rng = substreams(seed, 4)
    env = environment_of(p, env_rng)
    batch = batch_of(p, batch_rng, crit_rng, rho_rng)
    node_len, node_cost = job_matrices(batch, env.perf, env.price, p["perf_min"])
    alts, _ = find_alternatives(env.slot_node, env.slot_start, env.slot_end, np.arange(4), node_len, node_cost,
                                batch.budget, batch.slots, np.full(4, FIRST_FIT, np.int64), 3)
    counts = np.diff(alts.offsets)
    if not (counts > 0).any():
        return
    rows = np.concatenate([np.arange(alts.offsets[q], alts.offsets[q + 1]) for q in np.flatnonzero(counts)])
    offsets = np.concatenate(([0], np.cumsum(counts[counts > 0])))
    v, g, maximize = strategy_arrays(strategy, alternative_time(alts, dp_time)[rows], alts.cost[rows])
    combo = choose(offsets, v, g, maximize)
    best, feasible, limit = naive.brute_dp(offsets, v, g, maximize)
    assert combo.flagged == (not feasible)
    if feasible:
        assert math.isclose(combo.value, best, rel_tol=1e-12, abs_tol=1e-9)
        assert g[offsets[:-1] + combo.choice].sum() <= limit + 1e-9
