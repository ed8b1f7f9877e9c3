"""CSS-S: the shift heuristic (``docs/models/cyclic.md``, "CSS-S").

After the combination is chosen the unchosen alternatives are released. The chosen
windows, by increasing start (ties: priority order), each move to the earliest ``t >= 0``,
``t <=`` their current start, at which every one of their nodes is free on ``[t, t + len_k]``
of local load and of the other chosen windows (those already shifted at their new places).
Nodes, lengths and cost are kept.

Why the fixed-point iteration finds that t: with ``f_k(t)`` the earliest time ``>= t`` at
which node k is free for ``len_k``, no ``t' < max_k f_k(t)`` can work for every node, so
``t <- max_k f_k(t)`` from ``t = 0`` climbs to the earliest common time; it never passes the
current start, which is itself feasible.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from .occupancy import add_busy, group_by_node, next_free


@kernel
def _shift(ptr, fs, fe, start, nodes, node_len, order):
    N = start.shape[0]
    node_count = ptr.shape[0] - 1
    cap = N + 1
    busy_start = np.empty((node_count, cap), np.float64)
    busy_end = np.empty((node_count, cap), np.float64)
    busy_job = np.empty((node_count, cap), np.int64)
    busy_count = np.zeros(node_count, np.int64)
    for j in range(N):
        if np.isnan(start[j]):
            continue
        for c in range(nodes.shape[1]):
            k = nodes[j, c]
            if k < 0:
                break
            busy_job[k, busy_count[k]] = j
            add_busy(busy_start, busy_end, busy_count, k, start[j], start[j] + node_len[j, k])
    new_start = start.copy()
    for p in range(order.shape[0]):
        j = order[p]
        # take j's own intervals out while it looks for its new place
        for c in range(nodes.shape[1]):
            k = nodes[j, c]
            if k < 0:
                break
            for q in range(busy_count[k]):
                if busy_job[k, q] == j:
                    busy_start[k, q] = np.inf
                    busy_end[k, q] = np.inf
        t = 0.0
        while True:
            T = t
            for c in range(nodes.shape[1]):
                k = nodes[j, c]
                if k < 0:
                    break
                T = max(T, next_free(ptr, fs, fe, k, t, node_len[j, k], busy_start, busy_end, busy_count))
            if T == t or T > start[j]:
                break
            t = T
        if t > start[j]:     # cannot happen: the current place is free (guard against rounding)
            t = start[j]
        new_start[j] = t
        for c in range(nodes.shape[1]):
            k = nodes[j, c]
            if k < 0:
                break
            for q in range(busy_count[k]):
                if busy_job[k, q] == j:
                    busy_start[k, q] = t
                    busy_end[k, q] = t + node_len[j, k]
    return new_start


def shift_plan(slots: tuple[np.ndarray, np.ndarray, np.ndarray], start: np.ndarray, nodes: np.ndarray,
               node_len: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """New starts of the chosen windows (NaN stays NaN) on the environment's ``slots``.

    ``priority``: job ids in priority order (ties of equal starts go to the earlier one).
    """
    ptr, fs, fe = group_by_node(*slots, node_len.shape[1])
    rank = np.empty(len(start), np.int64)
    rank[priority] = np.arange(len(priority))
    scheduled = np.flatnonzero(~np.isnan(start))
    order = scheduled[np.lexsort((rank[scheduled], start[scheduled]))]
    return _shift(ptr, fs, fe, start, nodes, node_len, order.astype(np.int64))
