"""Shared alternatives: alternatives of different jobs may share slots and the
combination step keeps only conflict-free combinations (``docs/models/cyclic.md`` CSS steps 1-2)."""
from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_cycdef import cross_job
from schedsweep.workloads.cyclic.dp import STRATEGIES, choose, cycle_limit, strategy_arrays


def _brute(offsets, v, g, maximize, conflict, resolution=1.0):
    """Best value over combinations that meet the limit and have no conflicting pair (None: none)."""
    J = len(offsets) - 1
    G = math.floor(cycle_limit(offsets, g) / resolution)
    best = None
    for combo in itertools.product(*[range(offsets[i], offsets[i + 1]) for i in range(J)]):
        if sum(math.ceil(g[a] / resolution) for a in combo) > G:
            continue
        if any(conflict[a, b] for a, b in itertools.combinations(combo, 2)):
            continue
        value = sum(v[a] for a in combo)
        if best is None or (value > best if maximize else value < best):
            best = value
    return best


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.data(), st.sampled_from(sorted(STRATEGIES)))
def test_search_equals_brute_force_with_conflicts(sizes, data, strategy):
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    A = int(offsets[-1])
    time = np.array(data.draw(st.lists(st.integers(1, 40).map(float), min_size=A, max_size=A)))
    cost = np.array(data.draw(st.lists(st.integers(1, 40).map(float), min_size=A, max_size=A)))
    bits = data.draw(st.lists(st.booleans(), min_size=A * A, max_size=A * A))
    conflict = np.array(bits).reshape(A, A)
    conflict = cross_job(conflict, sizes)
    v, g, maximize = strategy_arrays(strategy, time, cost)
    combo = choose(offsets, v, g, maximize, conflict=conflict)
    chosen = [offsets[i] + c for i, c in enumerate(combo.choice) if c >= 0]
    # invariant: never two conflicting alternatives
    assert not any(conflict[a, b] for a, b in itertools.combinations(chosen, 2))
    best = _brute(offsets, v, g, maximize, conflict)
    assert combo.flagged == (best is None)
    if best is not None:
        assert len(chosen) == len(sizes)
        assert math.isclose(combo.value, best, rel_tol=1e-12, abs_tol=1e-9)
    # no conflicts at all: exactly the DP's choice
    if not conflict.any():
        plain = choose(offsets, v, g, maximize)
        assert list(plain.choice) == list(combo.choice) and plain.flagged == combo.flagged


def _windows(alts, node_len, rows):
    """(node, start, end) of every task of the alternatives ``rows``."""
    out = []
    owner = np.repeat(np.arange(len(alts.jobs)), np.diff(alts.offsets))
    for a in rows:
        j = alts.jobs[owner[a]]
        for k in alts.nodes[a][alts.nodes[a] >= 0]:
            out.append((int(k), alts.start[a], alts.start[a] + node_len[j, k]))
    return out


def _fits(tasks, slots):
    """No node used twice at a time, every task inside a free slot."""
    sn, ss, se = slots
    for (k1, s1, e1), (k2, s2, e2) in itertools.combinations(tasks, 2):
        if k1 == k2 and s1 < e2 and s2 < e1:
            return False
    return all(np.any((sn == k) & (ss <= s + 1e-9) & (se >= e - 1e-9)) for k, s, e in tasks)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(sorted(STRATEGIES)))
def test_shared_workload_batches_feasible_and_optimal(seed, strategy):
    """Real small batches (6 nodes, 4 jobs, up to 3 alternatives each) with shared alternatives."""
    from schedsweep.workloads._contract import defaults, substreams
    from schedsweep.workloads.cyclic import PARAMS
    from schedsweep.workloads.cyclic.alternatives import conflicts, find_alternatives
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
    slots = (env.slot_node, env.slot_start, env.slot_end)
    alts, _ = find_alternatives(*slots, np.arange(4), node_len, node_cost, batch.budget, batch.slots,
                                np.full(4, FIRST_FIT, np.int64), 3, shared=True)
    counts = np.diff(alts.offsets)
    for q in range(4):      # one job's own alternatives are disjoint and each fits the slots
        assert _fits(_windows(alts, node_len, range(alts.offsets[q], alts.offsets[q + 1])), slots)
    if not (counts > 0).any():
        return
    rows = np.concatenate([np.arange(alts.offsets[q], alts.offsets[q + 1]) for q in np.flatnonzero(counts)])
    offsets = np.concatenate(([0], np.cumsum(counts[counts > 0])))
    # the conflict matrix agrees with the slot check of every pair
    conflict = conflicts(alts, node_len)[np.ix_(rows, rows)]
    for x, y in itertools.combinations(range(len(rows)), 2):
        if not conflict[x, y]:
            assert _fits(_windows(alts, node_len, [rows[x], rows[y]]), slots)
    v, g, maximize = strategy_arrays(strategy, alternative_time(alts, "proc_time")[rows], alts.cost[rows])
    combo = choose(offsets, v, g, maximize, conflict=conflict)
    chosen = [rows[offsets[i] + c] for i, c in enumerate(combo.choice) if c >= 0]
    assert _fits(_windows(alts, node_len, chosen), slots)
    best = _brute(offsets, v, g, maximize, conflict)
    assert combo.flagged == (best is None)
    if best is not None:
        assert math.isclose(combo.value, best, rel_tol=1e-12, abs_tol=1e-9)


def test_shared_css_cycle_runs_and_finds_more_alternatives():
    from schedsweep.workloads._contract import defaults
    from schedsweep.workloads.cyclic import PARAMS
    from schedsweep.workloads.cyclic.cycle import run_cycle

    p = defaults(PARAMS)
    p.update(nodes=12, jobs=8, method="css", job_slots_min=1, job_slots_max=5)
    plain = [run_cycle({**p, "shared_alternatives": False}, s) for s in range(5)]
    shared = [run_cycle({**p, "shared_alternatives": True}, s) for s in range(5)]
    assert sum(c.plan.alternatives.sum() for c in shared) > sum(c.plan.alternatives.sum() for c in plain)
    for c in shared:         # the plan never uses a node twice at a time
        tasks = [(int(k), c.plan.start[j], c.plan.start[j] + c.node_len[j, k])
                 for j in range(len(c.plan.start)) if not np.isnan(c.plan.start[j])
                 for k in c.plan.nodes[j][c.plan.nodes[j] >= 0]]
        assert _fits(tasks, (c.env.slot_node, c.env.slot_start, c.env.slot_end))
