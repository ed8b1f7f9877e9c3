"""The one place where ``cyclic`` calls the AEP scan kernels (:mod:`workloads.slots.aep`,
shared with ``slot_selection``).

Everything else in this package goes through :func:`find_window` (one AEP scan inside a
numba kernel) and :func:`cut_spans` (remove windows from a slot list), so a change of a
scan kernel's signature touches only this module. A cached kernel here embeds the scan
kernels it calls, and numba checks only this file: ``kernel_support.numba_cache`` drops
every cache when any workload source changes.

:func:`first_fit` is AMP again, for the repeated first-fit searches of the alternatives
rounds, where it is most of a cycle's time. It returns AMP's window (a test checks it against
``aep_search(..., "amp")``) but does less work per step: (1) a step whose new slot is too
short cannot give AMP a window (the candidate set only lost members since the previous
step, so its n cheapest cost no less), and (2) a search may start evaluating at ``t_from``,
the start of the job's previous window: cutting only shrinks slots, so no step before it
can have a window now.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from ..slots.aep import scan_amp, scan_greedy, scan_min_cost, scan_runtime_exact
from ..slots.exactsum import sum_le

# criterion codes of :func:`find_window` (ours: the scan kernels are one per family)
AMP, MIN_COST, MIN_RUNTIME, MIN_RUNTIME_EXACT, MIN_FINISH, MIN_FINISH_EXACT = range(6)

#: Kernel criterion code of each user criterion (start, runtime, finish, cost): the source's
#: greedy for runtime and finish (``frsm_search = source``) or the exact versions (``exact``).
USER_CRITERIA_SOURCE = np.array([AMP, MIN_RUNTIME, MIN_FINISH, MIN_COST], np.int64)
USER_CRITERIA_EXACT = np.array([AMP, MIN_RUNTIME_EXACT, MIN_FINISH_EXACT, MIN_COST], np.int64)
FIRST_FIT = AMP


@kernel
def find_window(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n, criterion):
    """One AEP scan on a sorted slot list: ``(found, start, nodes int64[n] ascending)``."""
    if criterion == AMP:
        result = scan_amp(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n)
    elif criterion == MIN_COST:
        result = scan_min_cost(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n)
    elif criterion == MIN_RUNTIME_EXACT or criterion == MIN_FINISH_EXACT:
        result = scan_runtime_exact(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget,
                                    n, criterion == MIN_FINISH_EXACT)
    else:   # MIN_RUNTIME, MIN_FINISH: the source's greedy with the "swap" budget test
        result = scan_greedy(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n,
                             criterion == MIN_FINISH, np.bool_(False))  # not the literal: one compile
    return result[0], result[1], result[2]


@kernel
def first_fit(slot_node, slot_start, slot_end, node_len, node_cost, cost_order, node_mask, budget, n,
              t_from, cand_end, W, vals):
    """AMP's window from step time ``t_from`` on: ``(found, start, nodes int64[n] ascending)``.

    ``cost_order``: node ids by (slot cost, id); ``cand_end``, ``W``, ``vals``: scratch of
    sizes nodes, n, n. Valid only if no step before ``t_from`` has a window.
    """
    m = slot_node.shape[0]
    nodes = node_len.shape[0]
    for k in range(nodes):
        cand_end[k] = -np.inf
    full = True          # the first evaluated step looks at every candidate
    for i in range(m):
        k = slot_node[i]
        t = slot_start[i]
        if not node_mask[k]:
            continue
        cand_end[k] = slot_end[i]
        if t < t_from:
            continue
        if not full and cand_end[k] - t < node_len[k]:
            continue
        full = False
        c = 0
        approx = 0.0
        for p in range(nodes):
            j = cost_order[p]
            if cand_end[j] - t >= node_len[j]:
                W[c] = j
                vals[c] = node_cost[j]
                approx += node_cost[j]
                c += 1
                if c == n:
                    break
        if c == n and sum_le(vals, n, approx, budget):
            return True, t, np.sort(W[:n])
    return False, np.nan, np.empty(0, np.int64)


@kernel
def cut_spans(slot_node, slot_start, slot_end, nodes, start, lens):
    """The slot list with ``[start, start + lens[q]]`` removed on each node ``nodes[q]``.

    Each span must lie inside one slot of its node (what AEP returns); the pieces before and
    after, if of positive length, stay slots. Returns new arrays in scan order (start, node).

    Why no sort: the piece before keeps its slot's (start, node) key and place; only the
    pieces after (at most one per node) are new, and they are merged in.
    """
    m = slot_node.shape[0]
    w = nodes.shape[0]
    keep_n = np.empty(m, np.int64)
    keep_s = np.empty(m, np.float64)
    keep_e = np.empty(m, np.float64)
    add_n = np.empty(w, np.int64)
    add_s = np.empty(w, np.float64)
    add_e = np.empty(w, np.float64)
    top = 0
    for q in range(w):
        top = max(top, nodes[q])
    span_of = np.full(top + 1, -1, np.int64)     # node -> its span (q), -1: not in the window
    for q in range(w):
        span_of[nodes[q]] = q
    c = 0
    a = 0
    for i in range(m):
        k = slot_node[i]
        hit = span_of[k] if k <= top else -1
        if hit >= 0 and not (slot_start[i] <= start and start < slot_end[i]):
            hit = -1
        if hit < 0:
            keep_n[c], keep_s[c], keep_e[c] = k, slot_start[i], slot_end[i]
            c += 1
            continue
        if start > slot_start[i]:
            keep_n[c], keep_s[c], keep_e[c] = k, slot_start[i], start
            c += 1
        after = start + lens[hit]
        if after < slot_end[i]:
            # insertion sort of the few new pieces by (start, node)
            p = a
            while p > 0 and (add_s[p - 1] > after or (add_s[p - 1] == after and add_n[p - 1] > k)):
                add_n[p], add_s[p], add_e[p] = add_n[p - 1], add_s[p - 1], add_e[p - 1]
                p -= 1
            add_n[p], add_s[p], add_e[p] = k, after, slot_end[i]
            a += 1
    out_n = np.empty(c + a, np.int64)
    out_s = np.empty(c + a, np.float64)
    out_e = np.empty(c + a, np.float64)
    i = 0
    p = 0
    for o in range(c + a):
        if p < a and (i == c or add_s[p] < keep_s[i] or (add_s[p] == keep_s[i] and add_n[p] < keep_n[i])):
            out_n[o], out_s[o], out_e[o] = add_n[p], add_s[p], add_e[p]
            p += 1
        else:
            out_n[o], out_s[o], out_e[o] = keep_n[i], keep_s[i], keep_e[i]
            i += 1
    return out_n, out_s, out_e
