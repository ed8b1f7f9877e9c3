"""Plain-Python oracles for the ``cyclic`` workload: obvious, slow, no numba.

- :func:`brute_dp`: the best combination by enumerating every one.
- :func:`naive_alternatives`: the literal rounds procedure with the public
  ``aep_search`` and ``cut_window`` of ``workloads.slots`` (shared with slot selection).
- :func:`naive_shift`: CSS-S by trying every candidate time in increasing order.
- :func:`naive_backfill`: backfilling by trying every candidate time (``now``, slot starts,
  busy ends) in increasing order at every event.
- :func:`check_windows`: the plan invariants (n distinct nodes, inside slots, no overlaps).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from schedsweep.workloads.slots.aep import aep_search, cut_window

EPS = 1e-9


# ---------------------------------------------------------------- DP

def brute_dp(offsets, v, g, maximize, resolution=1.0):
    """``(best value or None, feasible)`` over all combinations with sum ceil(g/res) <= floor(g*/res)."""
    J = len(offsets) - 1
    limit = sum(math.floor(sum(g[offsets[i]:offsets[i + 1]]) / (offsets[i + 1] - offsets[i])) for i in range(J))
    G = math.floor(limit / resolution)
    best = None
    for combo in itertools.product(*[range(offsets[i], offsets[i + 1]) for i in range(J)]):
        if sum(math.ceil(g[a] / resolution) for a in combo) > G:
            continue
        value = sum(v[a] for a in combo)
        if best is None or (value > best if maximize else value < best):
            best = value
    return best, best is not None, limit


# ---------------------------------------------------------------- alternatives

def naive_alternatives(slots, jobs, node_len, node_cost, budget, n, algorithms, cap):
    """Rounds in priority order, one ``aep_search`` per job and round, cutting each window out."""
    sn, ss, se = slots
    found = {j: [] for j in jobs}
    searching = {j: True for j in jobs}
    new = True
    while new:
        new = False
        for j in jobs:
            if not searching[j] or len(found[j]) >= cap:
                continue
            w = aep_search(sn, ss, se, np.ascontiguousarray(node_len[j]), np.ascontiguousarray(node_cost[j]),
                           float(budget[j]), int(n[j]), algorithms[j])
            if not w.found:
                searching[j] = False
                continue
            found[j].append((w.start, tuple(int(k) for k in w.nodes)))
            sn, ss, se = cut_window(sn, ss, se, w.slots, w.start, np.ascontiguousarray(node_len[j]))
            new = True
    return found


# ---------------------------------------------------------------- occupancy helpers

def node_slots(env):
    """{node: [(start, end), ...]} of the environment's slots."""
    out = {k: [] for k in range(len(env.perf))}
    for k, a, b in zip(env.slot_node, env.slot_start, env.slot_end):
        out[int(k)].append((float(a), float(b)))
    return out


def _inside(slots_k, s, length):
    return any(a <= s and s + length <= b for a, b in slots_k)


def _clear(busy_k, s, length):
    return all(not (c < s + length and s < d) for c, d in busy_k)


def check_windows(env, start, nodes, node_len, n, lengths_factor=None):
    """Assert the plan invariants; returns the number of windows checked."""
    slots = node_slots(env)
    busy = {k: [] for k in slots}
    count = 0
    for j in range(len(start)):
        if np.isnan(start[j]):
            assert np.all(nodes[j] < 0)
            continue
        ks = [int(k) for k in nodes[j] if k >= 0]
        assert len(ks) == n[j] and len(set(ks)) == n[j], (j, ks, n[j])
        factor = 1.0 if lengths_factor is None else lengths_factor[j]
        for k in ks:
            length = node_len[j, k] * factor
            assert start[j] >= -EPS
            assert any(a - EPS <= start[j] and start[j] + length <= b + EPS for a, b in slots[k]), \
                f"job {j} overlaps local load on node {k}"
            for c, d in busy[k]:
                assert not (c < start[j] + length - EPS and start[j] < d - EPS), f"job {j} overlaps on node {k}"
            busy[k].append((start[j], start[j] + length))
        count += 1
    return count


# ---------------------------------------------------------------- shift

def naive_shift(env, start, nodes, node_len, priority):
    slots = node_slots(env)
    rank = {int(j): r for r, j in enumerate(priority)}
    start = start.copy()
    windows = {j: [int(k) for k in nodes[j] if k >= 0] for j in range(len(start)) if not np.isnan(start[j])}
    order = sorted(windows, key=lambda j: (start[j], rank[j]))
    for j in order:
        def busy(k):
            return [(start[i], start[i] + node_len[i, k]) for i in windows if i != j and k in windows[i]]
        cands = {0.0}
        for k in windows[j]:
            cands |= {a for a, _ in slots[k]} | {d for _, d in busy(k)}
        for t in sorted(c for c in cands if c <= start[j]):
            if all(_inside(slots[k], t, node_len[j, k]) and _clear(busy(k), t, node_len[j, k])
                   for k in windows[j]):
                start[j] = t
                break
    return start


# ---------------------------------------------------------------- backfilling

def naive_backfill(env, queue, node_len, node_cost, budget, n, rho, easy=False, enforce=False,
                   fixed_start=None, fixed_nodes=None):
    """Backfilling as the spec words it; returns ``(start, nodes)`` like the kernel."""
    N, nodes_count = node_len.shape
    slots = node_slots(env)
    slot_starts = sorted({a for k in slots for a, _ in slots[k]})
    start = np.full(N, np.nan)
    job_nodes = np.full((N, max(1, int(max(n)))), -1, np.int64)
    committed = {}
    if fixed_start is not None:
        for j in range(N):
            if not np.isnan(fixed_start[j]):
                committed[j] = (float(fixed_start[j]), [int(k) for k in fixed_nodes[j] if k >= 0])
    waiting = [int(j) for j in queue]
    now = 0.0
    while True:
        busy = {k: [] for k in range(nodes_count)}
        for j, (s, ks) in committed.items():
            for k in ks:
                actual = s + rho[j] * node_len[j, k]
                busy[k].append((s, actual if actual <= now else s + node_len[j, k]))
        reservations = {}
        head = False
        for j in list(waiting):
            t, ks = _naive_earliest(j, now, slots, busy, node_len, node_cost, budget, n, enforce)
            if t is None:
                continue
            if t == now:
                waiting.remove(j)
                committed[j] = (now, ks)
            elif easy and head:
                continue
            else:
                head = True
                reservations[j] = t
            for k in ks:
                busy[k].append((t, t + node_len[j, k]))
        nxt = math.inf
        for j, (s, ks) in committed.items():
            for k in ks:
                e = s + rho[j] * node_len[j, k]
                if e > now:
                    nxt = min(nxt, e)
        for t in reservations.values():
            nxt = min(nxt, t)
        if easy:
            later = [a for a in slot_starts if a > now]
            if later:
                nxt = min(nxt, later[0])
        if nxt == math.inf:
            break
        now = nxt
    for j, (s, ks) in committed.items():
        start[j] = s
        job_nodes[j, :len(ks)] = sorted(ks)
    return start, job_nodes


def _naive_earliest(j, now, slots, busy, node_len, node_cost, budget, n, enforce):
    cands = {now} | {a for k in slots for a, _ in slots[k] if a > now} | \
            {d for k in busy for _, d in busy[k] if d > now}
    for t in sorted(cands):
        free = [k for k in sorted(slots) if _inside(slots[k], t, node_len[j, k])
                and _clear(busy[k], t, node_len[j, k])]
        if len(free) < n[j]:
            continue
        if not enforce:
            return t, free[:n[j]]
        cheapest = sorted(free, key=lambda k: (node_cost[j, k], k))[:n[j]]
        if sum(node_cost[j, k] for k in cheapest) <= budget[j]:
            return t, sorted(cheapest)
    return None, []
