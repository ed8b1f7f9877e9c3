"""Event kinds, their priorities and a binary heap ordered by (time, priority, sequence).

The heap lives in plain arrays so numba kernels can use it: ``time`` (float64, s),
``key`` (int64 = priority << 48 | sequence number), ``kind`` (int64) and ``data``
(int64 payload, e.g. a job or packet index). The sequence number is a counter kept by
the caller, so events at equal time and priority come out in insertion order and every
run is reproducible (SimPy's rule). A new event kind is a new constant here, its
priority in :data:`PRIORITY`, and a branch in the simulator's dispatch.

Job arrivals are not pushed: they come from a sorted array merged in front of the heap,
which is the same order as pushing them with priority 1 (the lowest) and cheaper.
"""
from __future__ import annotations

import numba
import numpy as np

from ._jit import kernel, kernel_inline

# Event kinds (spec priorities: 1 arrival, 2 link end, 3 routing end, 4 computation end,
# 5 start of a scheduled job). KILL is the scheduler's forced end of computation at the
# user's estimate, so it takes the computation-end priority.
ARRIVAL = 1
LINK_END = 2        # part 2: end of a packet's transmission on a link
ROUTING_END = 3     # part 2: end of a packet's routing on a device
COMPUTE_END = 4
JOB_START = 5
KILL = 6

PRIORITY = np.array([0, 1, 2, 3, 4, 5, 4], dtype=np.int64)  # indexed by kind
_SHIFT = np.int64(1) << np.int64(48)


@kernel_inline
def _less(t1: float, k1: int, t2: float, k2: int) -> bool:
    return t1 < t2 or (t1 == t2 and k1 < k2)


@numba.njit(cache=True)
def heap_new(capacity: int):
    """Empty heap arrays (time, key, kind, data) of the given capacity."""
    capacity = max(capacity, 4)
    return (np.empty(capacity, np.float64), np.empty(capacity, np.int64),
            np.empty(capacity, np.int64), np.empty(capacity, np.int64))


@numba.njit(cache=True)
def heap_grow(ht, hk, hkind, hd):
    """Arrays of twice the capacity holding the same events (call when full)."""
    n = ht.size
    t2, k2, kind2, d2 = heap_new(2 * n)
    t2[:n] = ht
    k2[:n] = hk
    kind2[:n] = hkind
    d2[:n] = hd
    return t2, k2, kind2, d2


@kernel_inline
def heap_push(ht, hk, hkind, hd, size: int, time: float, kind: int, seq: int, data: int) -> int:
    """Push an event (capacity must allow it); returns the new size."""
    key = PRIORITY[kind] * _SHIFT + seq
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if _less(time, key, ht[parent], hk[parent]):
            ht[i] = ht[parent]
            hk[i] = hk[parent]
            hkind[i] = hkind[parent]
            hd[i] = hd[parent]
            i = parent
        else:
            break
    ht[i] = time
    hk[i] = key
    hkind[i] = kind
    hd[i] = data
    return size + 1


@kernel_inline
def heap_pop(ht, hk, hkind, hd, size: int):
    """Remove the first event; returns (time, kind, data, new size). size must be > 0."""
    t0, kind0, d0 = ht[0], hkind[0], hd[0]
    size -= 1
    if size > 0:
        t, k, kd, d = ht[size], hk[size], hkind[size], hd[size]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and _less(ht[c + 1], hk[c + 1], ht[c], hk[c]):
                c += 1
            if _less(ht[c], hk[c], t, k):
                ht[i] = ht[c]
                hk[i] = hk[c]
                hkind[i] = hkind[c]
                hd[i] = hd[c]
                i = c
            else:
                break
        ht[i] = t
        hk[i] = k
        hkind[i] = kd
        hd[i] = d
    return t0, kind0, d0, size
