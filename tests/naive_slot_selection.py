"""Slow, obvious oracles for the slot-selection algorithms (plain Python, no numba).

Two independent views:

* :func:`scan` follows the spec's AEP scan literally and, at every step, enumerates every
  n-subset of the candidates (``itertools.combinations``), picking the best by the
  criterion, then cost, then sorted node ids, and keeping it only on a strict improvement;
* :func:`all_windows` ignores the scan: every start time that is a slot start, every
  n-subset of nodes whose slots contain the window. Its optima are what any correct scan
  must reach.

Sums are ``math.fsum`` (correctly rounded), as in the kernels.
"""
from __future__ import annotations

import math
from itertools import combinations

import numpy as np


def candidates_by_step(slot_node, slot_start, slot_end, node_len, mask):
    """Per scan step: ``(t_w, {node: slot index})`` of the valid candidates after the step."""
    cand: dict[int, int] = {}
    for i in range(len(slot_node)):
        k, t = int(slot_node[i]), float(slot_start[i])
        if mask[k]:
            cand[k] = i
        cand = {j: s for j, s in cand.items() if not (slot_end[s] - t < node_len[j])}
        yield i, t, dict(cand)


def cost_of(nodes, node_cost) -> float:
    return math.fsum(float(node_cost[k]) for k in nodes)


def proc_of(nodes, node_len) -> float:
    return math.fsum(float(node_len[k]) for k in nodes)


def runtime_of(nodes, node_len) -> float:
    return max(float(node_len[k]) for k in nodes)


def _best_subset(cands, n, key, node_cost, budget):
    """Among the n-subsets of ``cands`` within budget, the one minimising (key, cost, sorted ids)."""
    best = None
    for sub in combinations(sorted(cands), n):
        cost = cost_of(sub, node_cost)
        if not cost <= budget:
            continue
        rank = (key(sub), cost, sub)
        if best is None or rank < best:
            best = rank
    return best


def scan(env_arrays, node_len, node_cost, budget, n, algorithm, mask=None,
         greedy_budget_test="swap", uniforms=None, retries=0, job_runtime=None, alp_limit="slot_cost"):
    """The spec's scan for ``algorithm``: ``(start, sorted node tuple)`` or ``None``."""
    slot_node, slot_start, slot_end = env_arrays
    nodes = len(node_len)
    mask = np.ones(nodes, bool) if mask is None else np.asarray(mask, bool)
    if algorithm == "alp":
        if alp_limit == "slot_cost":
            mask = mask & np.array([node_cost[k] <= budget / n for k in range(nodes)])
        else:
            mask = mask & np.array([node_cost[k] / node_len[k] <= budget / (n * job_runtime)
                                    for k in range(nodes)])
        budget = math.inf
    best_value, best_window = math.inf, None
    for i, t, cand in candidates_by_step(slot_node, slot_start, slot_end, node_len, mask):
        if len(cand) < n:
            continue
        if algorithm in ("amp", "alp"):
            sub = _best_subset(cand, n, lambda s: 0.0, node_cost, budget)
            if sub is not None:
                return t, sub[2]
            continue
        if algorithm in ("min_runtime", "min_finish"):
            window = greedy_runtime_window(cand, n, node_len, node_cost, budget, greedy_budget_test)
            value = None if window is None else runtime_of(window, node_len)
        elif algorithm == "min_proc_time":
            window = random_window(cand, n, node_cost, budget, uniforms[i], retries)
            value = None if window is None else proc_of(window, node_len)
        else:
            key = {"min_cost": lambda s: cost_of(s, node_cost),
                   "min_runtime_exact": lambda s: runtime_of(s, node_len),
                   "min_finish_exact": lambda s: runtime_of(s, node_len),
                   "min_proc_time_exact": lambda s: proc_of(s, node_len)}[algorithm]
            sub = _best_subset(cand, n, key, node_cost, budget)
            window, value = (None, None) if sub is None else (sub[2], sub[0])
        if window is None:
            continue
        if algorithm in ("min_finish", "min_finish_exact"):
            value = t + value
        if value < best_value:
            best_value, best_window = value, (t, tuple(sorted(window)))
    return best_window


def greedy_runtime_window(cand, n, node_len, node_cost, budget, test="swap"):
    """The source's greedy, literally: n cheapest, then swap out the longest while affordable."""
    order = sorted(cand, key=lambda k: (node_cost[k], k))
    W = order[:n]
    if cost_of(W, node_cost) > budget:
        return None
    for x in order[n:]:
        y = max(W, key=lambda k: (node_len[k], node_cost[k], k))
        if not node_len[x] < node_len[y]:
            continue
        if test == "swap":
            ok = cost_of([k for k in W if k != y] + [x], node_cost) <= budget
        else:
            ok = cost_of(W + [x], node_cost) < budget
        if ok:
            W = [k for k in W if k != y] + [x]
    return W


def random_window(cand, n, node_cost, budget, u, retries):
    """One uniform n-subset by partial Fisher-Yates over the candidates in node-id order."""
    base = sorted(cand)
    for r in range(retries + 1):
        perm = list(base)
        for j in range(n):
            q = min(j + int(u[r, j] * (len(perm) - j)), len(perm) - 1)
            perm[j], perm[q] = perm[q], perm[j]
        if cost_of(perm[:n], node_cost) <= budget:
            return perm[:n]
    return None


def all_windows(env_arrays, node_len, node_cost, budget, n, mask=None):
    """Every feasible window ``(start, nodes)`` whose start is a slot start."""
    slot_node, slot_start, slot_end = env_arrays
    nodes = len(node_len)
    mask = np.ones(nodes, bool) if mask is None else np.asarray(mask, bool)
    out = []
    for t in sorted(set(float(s) for s in slot_start)):
        fits = sorted({int(slot_node[i]) for i in range(len(slot_node))
                       if mask[slot_node[i]] and slot_start[i] <= t
                       and not (slot_end[i] - t < node_len[slot_node[i]])})
        for sub in combinations(fits, n):
            if cost_of(sub, node_cost) <= budget:
                out.append((t, sub))
    return out


def csa(env_arrays, node_len, node_cost, budget, n, mask=None):
    """CSA literally: AMP, cut the window out of the slot list, repeat until no window."""
    slot_node, slot_start, slot_end = (list(a) for a in env_arrays)
    alternatives = []
    while True:
        found = scan((np.array(slot_node, dtype=np.int64), np.array(slot_start, dtype=float),
                      np.array(slot_end, dtype=float)), node_len, node_cost, budget, n, "amp", mask)
        if found is None:
            return alternatives
        t, window = found
        alternatives.append(found)
        pieces = []
        for k, a, b in zip(slot_node, slot_start, slot_end):
            if k in window and a <= t and not (b - t < node_len[k]):
                if a < t:
                    pieces.append((k, a, t))
                if t + node_len[k] < b:
                    pieces.append((k, t + node_len[k], b))
            else:
                pieces.append((k, a, b))
        pieces.sort(key=lambda p: (p[1], p[0]))
        slot_node = [p[0] for p in pieces]
        slot_start = [p[1] for p in pieces]
        slot_end = [p[2] for p in pieces]
