"""The exact step searches (ours): minimum runtime and minimum processor time under the budget.

Both look only at windows containing the node whose slot the scan just added (see
:mod:`.aep` for why that is enough) and return the best such window below a bound (the
best-so-far), ties to lower cost, then lower sorted node ids.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from .candidates import ids_less, valid, window_values
from .exactsum import fsum, sum_le


@kernel
def exact_runtime_with(i_node, len_order, cand_end, node_len, node_cost, t, n, budget, bound,
                        offset, W, vals):
    """Minimum runtime R of a window containing node ``i_node`` with ``offset + R < bound``.

    Among the windows of that runtime, the cheapest (n - 1 cheapest others of len <= R).
    Returns R (``W`` holds the window) or +inf when there is none below the bound.
    """
    len_i = node_len[i_node]
    k = n - 1
    c = 0          # nodes in the buffer W[0:c], kept sorted by (cost, id)
    nodes = len_order.shape[0]
    p = 0
    while p < nodes:
        R = max(node_len[len_order[p]], len_i)
        if not offset + R < bound:
            break
        while p < nodes and node_len[len_order[p]] <= R:
            j = len_order[p]
            p += 1
            if j == i_node or not valid(j, cand_end, node_len, t) or k == 0:
                continue
            # insert j into the sorted buffer of the k cheapest so far
            if c == k and not (node_cost[j] < node_cost[W[c - 1]] or
                               (node_cost[j] == node_cost[W[c - 1]] and j < W[c - 1])):
                continue
            q = c if c < k else k - 1
            while q > 0 and (node_cost[W[q - 1]] > node_cost[j] or
                             (node_cost[W[q - 1]] == node_cost[j] and W[q - 1] > j)):
                W[q] = W[q - 1]
                q -= 1
            W[q] = j
            if c < k:
                c += 1
        if c == k:
            W[k] = i_node
            if sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
                return R
    return np.inf


@kernel
def exact_proc_time_with(i_node, len_order, cand_end, node_len, node_cost, t, n, budget, best_prev,
                          gnode, gstart, gsize, glen, smc, take, lvl_k, lvl_proc, lvl_cost, inc, inc_val,
                          W, vals, sa, sb):
    """Minimum processor time of a window containing ``i_node`` below ``best_prev``.

    Returns True and the window in ``inc`` if there is one.
    """
    G = np.int64(0)  # not the literal 0: _pt_search would be compiled for Literal[int](0) as well
    m = 0
    last_len = -1.0
    for p in range(len_order.shape[0]):
        j = len_order[p]
        if j == i_node or not valid(j, cand_end, node_len, t):
            continue
        if G == 0 or node_len[j] != last_len:
            gstart[G] = m
            gsize[G] = 0
            glen[G] = node_len[j]
            last_len = node_len[j]
            G += 1
        gnode[m] = j
        gsize[G - 1] += 1
        m += 1
    if m < n - 1:
        return False
    # cheapest member of groups g.. (each group is sorted by cost)
    running = np.inf
    for g in range(G - 1, -1, -1):
        running = min(running, node_cost[gnode[gstart[g]]])
        smc[g] = running
    inc_val[0] = best_prev
    inc_val[1] = np.inf
    inc_val[2] = 0.0
    take[:G + 1] = 0
    _pt_search(G, gstart, gsize, glen, gnode, smc, node_len, node_cost, budget, i_node, n, best_prev,
               take, lvl_k, lvl_proc, lvl_cost, inc, inc_val, W, vals, sa, sb)
    return inc_val[2] > 0



@kernel
def _pt_search(G, gstart, gsize, glen, gnode, suffix_min_cost, node_len, node_cost, budget, i_node, n,
               best_prev, take, lvl_k, lvl_proc, lvl_cost, inc, inc_val, W, vals, sa, sb):
    """Branch and bound over groups of equal slot length for ``min_proc_time_exact``.

    Group g (ascending len) contributes its ``take[g]`` cheapest members (within a group of
    equal length the cheapest are always the best choice). Level g of the depth-first
    search holds what is still to choose (``lvl_k``) and the running processor time and
    cost of the choice so far. The incumbent ``inc`` with ``inc_val = (proc, cost, found)``
    is the best window of the step by (processor time, cost, sorted node ids); it must beat
    ``best_prev`` strictly. Iterative, because numba cannot cache recursive functions.
    """
    tol = 1e-10
    g = np.int64(0)  # not the literal 0: _pt_leaf would be compiled for Literal[int](0) as well
    lvl_k[0] = n - 1
    lvl_proc[0] = node_len[i_node]
    lvl_cost[0] = node_cost[i_node]
    entering = True
    while g >= 0:
        if entering:
            entering = False
            k_left = lvl_k[g]
            if k_left == 0:
                _pt_leaf(g, gstart, gnode, node_len, node_cost, budget, i_node, n, best_prev, take,
                         inc, inc_val, W, vals, sa, sb)
                g -= 1
                continue
            if g == G or lvl_cost[g] + k_left * suffix_min_cost[g] > budget + tol * abs(budget) + 1e-300:
                g -= 1
                continue
            # lower bound: the k_left shortest slots of the groups still open
            bound = lvl_proc[g]
            need = k_left
            h = g
            while need > 0 and h < G:
                q = min(need, gsize[h])
                bound += q * glen[h]
                need -= q
                h += 1
            limit = inc_val[0] if inc_val[2] > 0 else best_prev
            if need > 0 or bound > limit + tol * abs(bound) + 1e-300:
                g -= 1
                continue
            take[g] = min(k_left, gsize[g]) + 1     # the loop below tries counts from high to low
        take[g] -= 1
        if take[g] < 0:
            take[g] = 0
            g -= 1
            continue
        c = take[g]
        add_cost = 0.0
        for q in range(c):
            add_cost += node_cost[gnode[gstart[g] + q]]
        lvl_k[g + 1] = lvl_k[g] - c
        lvl_proc[g + 1] = lvl_proc[g] + c * glen[g]
        lvl_cost[g + 1] = lvl_cost[g] + add_cost
        g += 1
        entering = True


@kernel
def _pt_leaf(g, gstart, gnode, node_len, node_cost, budget, i_node, n, best_prev, take, inc, inc_val,
             W, vals, sa, sb):
    """Evaluate the complete choice ``take[0:g]`` (plus ``i_node``) against the incumbent."""
    c = 0
    W[c] = i_node
    c += 1
    for h in range(g):
        for q in range(take[h]):
            W[c] = gnode[gstart[h] + q]
            c += 1
    if not sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
        return
    cost_exact = fsum(vals, n)
    window_values(W, n, node_len, vals)
    proc_exact = fsum(vals, n)
    if not proc_exact < best_prev:
        return
    if inc_val[2] > 0 and (proc_exact > inc_val[0] or (proc_exact == inc_val[0] and (
            cost_exact > inc_val[1] or (cost_exact == inc_val[1] and not ids_less(W, inc, n, sa, sb))))):
        return
    inc[:n] = W[:n]
    inc_val[0] = proc_exact
    inc_val[1] = cost_exact
    inc_val[2] = 1.0
