"""Free time per node: the environment's slots minus VO jobs' busy intervals (numba helpers).

Shared by the shift heuristic and the backfilling simulator. A node's free time is the
union of its slots (the gaps between local tasks); VO jobs occupy half-open intervals
``[start, end)`` stored per node in ``busy_start[k, :busy_count[k]]`` / ``busy_end``.
Everything here is time in the units of the interval.
"""
from __future__ import annotations

import numpy as np
from ..kernel_support.jit import kernel


@kernel
def group_by_node(slot_node, slot_start, slot_end, nodes):
    """Slots grouped by node, each node's slots in time order: ``(ptr int64[nodes+1], start, end)``."""
    m = slot_node.shape[0]
    ptr = np.zeros(nodes + 1, np.int64)
    for i in range(m):
        ptr[slot_node[i] + 1] += 1
    for k in range(nodes):
        ptr[k + 1] += ptr[k]
    fill = ptr[:-1].copy()
    fs = np.empty(m, np.float64)
    fe = np.empty(m, np.float64)
    order = np.argsort(slot_start, kind="mergesort")
    for p in range(m):
        i = order[p]
        k = slot_node[i]
        fs[fill[k]] = slot_start[i]
        fe[fill[k]] = slot_end[i]
        fill[k] += 1
    return ptr, fs, fe


@kernel
def next_free(ptr, fs, fe, k, t, length, busy_start, busy_end, busy_count):
    """Earliest ``s >= t`` with ``[s, s + length]`` inside one slot of node k and clear of
    its busy intervals; ``inf`` if there is none before the end of the interval."""
    for p in range(ptr[k], ptr[k + 1]):
        b = fe[p]
        if b - length < t:
            continue
        s = max(fs[p], t)
        while s + length <= b:
            moved = False
            for q in range(busy_count[k]):
                if busy_start[k, q] < s + length and s < busy_end[k, q]:
                    s = busy_end[k, q]
                    moved = True
            if not moved:
                return s
    return np.inf


@kernel
def add_busy(busy_start, busy_end, busy_count, k, start, end):
    """Mark ``[start, end)`` busy on node k."""
    c = busy_count[k]
    busy_start[k, c] = start
    busy_end[k, c] = end
    busy_count[k] = c + 1
