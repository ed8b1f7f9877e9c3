"""Candidate bookkeeping shared by the AEP kernels (``aep``, ``greedy``, ``exact``, slot_selection's ``csa``).

During a scan each node has at most one candidate slot, kept as ``cand_end[node]`` (its
end; ``-inf`` when none): the scan adds a slot at its start and the candidate is valid at
time ``t`` while ``end - t >= len_k`` (the spec's drop rule, evaluated lazily). A slot's
cost depends only on its node, so the order of nodes by slot cost (or by length) is fixed
for a whole scan.
"""
from __future__ import annotations

import numpy as np
from ..kernel_support.jit import inline_kernel, kernel


@kernel
def node_orders(node_len: np.ndarray, node_cost: np.ndarray):
    """Node ids in slot cost order (cost, id) and in length order (len, cost, id)."""
    cost_order = np.argsort(node_cost, kind="mergesort")
    len_order = cost_order[np.argsort(node_len[cost_order], kind="mergesort")]
    return cost_order, len_order


@inline_kernel
def valid(j, cand_end, node_len, t):
    # the spec's drop rule: a candidate stays while end - t_w >= len_k
    return cand_end[j] - t >= node_len[j]


@inline_kernel
def cheapest(cost_order, cand_end, node_len, t, k, skip, out):
    """The first ``k`` valid candidates in slot cost order (excluding node ``skip``) into ``out``.

    Returns how many were found (``< k`` when there are not enough candidates).
    """
    c = 0
    if k == 0:
        return 0
    for p in range(cost_order.shape[0]):
        j = cost_order[p]
        if j != skip and valid(j, cand_end, node_len, t):
            out[c] = j
            c += 1
            if c == k:
                break
    return c


@inline_kernel
def cheapest_within(cost_order, cand_end, node_len, node_cost, t, k, skip, total, bound, out):
    """:func:`cheapest`, given up as soon as the window cannot stay within ``bound``.

    ``total`` is the cost already in the window; the search stops when it plus ``k - c``
    times the next node's cost exceeds ``bound`` (later nodes cost no less, so none can fit).
    Returns how many were found.
    """
    c = 0
    if k == 0:
        return 0
    for p in range(cost_order.shape[0]):
        j = cost_order[p]
        if total + (k - c) * node_cost[j] > bound:
            break
        if j != skip and valid(j, cand_end, node_len, t):
            out[c] = j
            total += node_cost[j]
            c += 1
            if c == k:
                break
    return c


@inline_kernel
def window_values(nodes, k, node_val, vals):
    """Copy the per-node values of the window's nodes into ``vals``; return their running sum."""
    s = 0.0
    for q in range(k):
        v = node_val[nodes[q]]
        vals[q] = v
        s += v
    return s


@kernel
def ids_less(a, b, n, scratch_a, scratch_b):
    """Sorted node ids of window ``a`` lexicographically below those of ``b``."""
    scratch_a[:n] = np.sort(a[:n])
    scratch_b[:n] = np.sort(b[:n])
    for q in range(n):
        if scratch_a[q] != scratch_b[q]:
            return scratch_a[q] < scratch_b[q]
    return False

