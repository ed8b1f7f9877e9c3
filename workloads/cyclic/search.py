"""The one place where ``cyclic`` calls the AEP kernels of ``slot_selection``.

Everything else in this package goes through :func:`find_window` (one AEP scan inside a
numba kernel) and :func:`cut_spans` (remove windows from a slot list), so a change of the
slot-selection kernel's signature touches only this module.
"""
from __future__ import annotations

import numba
import numpy as np

from ..slot_selection.aep import (AMP, MIN_COST, MIN_FINISH, MIN_FINISH_EXACT, MIN_RUNTIME,
                                  MIN_RUNTIME_EXACT, _scan)

#: Kernel criterion code of each user criterion (start, runtime, finish, cost): the source's
#: greedy for runtime and finish (``frsm_search = source``) or the exact versions (``exact``).
USER_CRITERIA_SOURCE = np.array([AMP, MIN_RUNTIME, MIN_FINISH, MIN_COST], np.int64)
USER_CRITERIA_EXACT = np.array([AMP, MIN_RUNTIME_EXACT, MIN_FINISH_EXACT, MIN_COST], np.int64)
FIRST_FIT = AMP


@numba.njit(cache=True)
def find_window(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n, criterion):
    """One AEP scan on a sorted slot list: ``(found, start, nodes int64[n] ascending)``."""
    result = _scan(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n,
                   criterion, False, np.zeros((0, 1, 1)), 0)
    return result[0], result[1], result[2]


@numba.njit(cache=True)
def cut_spans(slot_node, slot_start, slot_end, nodes, start, lens):
    """The slot list with ``[start, start + lens[q]]`` removed on each node ``nodes[q]``.

    Each span must lie inside one slot of its node (what AEP returns); the pieces before and
    after, if of positive length, stay slots. Returns new arrays in scan order (start, node).
    """
    m = slot_node.shape[0]
    w = nodes.shape[0]
    out_n = np.empty(m + w, np.int64)
    out_s = np.empty(m + w, np.float64)
    out_e = np.empty(m + w, np.float64)
    c = 0
    for i in range(m):
        k = slot_node[i]
        hit = -1
        for q in range(w):
            if nodes[q] == k and slot_start[i] <= start and start < slot_end[i]:
                hit = q
                break
        if hit < 0:
            out_n[c], out_s[c], out_e[c] = k, slot_start[i], slot_end[i]
            c += 1
            continue
        if start > slot_start[i]:
            out_n[c], out_s[c], out_e[c] = k, slot_start[i], start
            c += 1
        after = start + lens[hit]
        if after < slot_end[i]:
            out_n[c], out_s[c], out_e[c] = k, after, slot_end[i]
            c += 1
    order = np.argsort(out_n[:c], kind="mergesort")
    order = order[np.argsort(out_s[:c][order], kind="mergesort")]
    return out_n[:c][order], out_s[:c][order], out_e[:c][order]
