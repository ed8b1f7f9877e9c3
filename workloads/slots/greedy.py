"""The source's heuristic steps: the greedy minimum-runtime window and the random window.

Both run on the whole candidate list at every scan step (they are not monotone in the
candidate set, so the "windows containing the new slot" shortcut of the exact criteria
does not apply).
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from .candidates import valid, window_values
from .exactsum import sum_le, sum_lt


@kernel
def greedy_runtime(cost_order, cand_end, node_len, node_cost, t, n, budget, literal, W, vals):
    """The source's greedy minimum-runtime window on the whole candidate list.

    Returns its runtime, or +inf when the step has no window (fewer than n candidates, or
    the n cheapest over budget). ``W`` receives the window's nodes.
    """
    c = 0
    for p in range(cost_order.shape[0]):
        j = cost_order[p]
        if not valid(j, cand_end, node_len, t):
            continue
        if c < n:
            W[c] = j
            c += 1
            if c == n and not sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
                return np.inf
            continue
        # y: the slot of W with the largest len (ties: higher cost, then higher node id)
        y = 0
        for q in range(1, n):
            a, b = W[q], W[y]
            if node_len[a] > node_len[b] or (node_len[a] == node_len[b] and (
                    node_cost[a] > node_cost[b] or (node_cost[a] == node_cost[b] and a > b))):
                y = q
        if not node_len[j] < node_len[W[y]]:
            continue
        approx = window_values(W, n, node_cost, vals)
        if literal:
            vals[n] = node_cost[j]
            ok = sum_lt(vals, n + 1, approx + node_cost[j], budget)
        else:
            vals[y] = node_cost[j]
            ok = sum_le(vals, n, approx - node_cost[W[y]] + node_cost[j], budget)
        if ok:
            W[y] = j
    if c < n:
        return np.inf
    runtime = 0.0
    for q in range(n):
        runtime = max(runtime, node_len[W[q]])
    return runtime



@kernel
def random_window(cand_end, node_len, node_cost, t, n, budget, u, retries, cands, W, vals):
    """The source's simplified ``min_proc_time`` step: one uniformly drawn n-subset.

    Candidates are listed in node-id order; the subset is a partial Fisher-Yates shuffle
    driven by ``u[r, j]`` (draw j of try r). Returns True if a drawn subset fits the budget.
    """
    C = 0
    for j in range(node_len.shape[0]):
        if valid(j, cand_end, node_len, t):
            cands[C] = j
            C += 1
    if C < n:
        return False
    for r in range(retries + 1):
        perm = cands[:C].copy()
        for j in range(n):
            q = j + int(u[r, j] * (C - j))
            if q >= C:        # u rounds up to 1.0 only in the last bit; stay in range
                q = C - 1
            perm[j], perm[q] = perm[q], perm[j]
        W[:n] = perm[:n]
        if sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
            return True
    return False

