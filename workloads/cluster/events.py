"""Event kinds, their priorities and the event heap of every cluster kernel.

One 4-ary heap (half the depth of a binary one) ordered by (time, priority, sequence),
in plain arrays so numba kernels can use it: ``time`` (float64, s), ``key`` (int64 =
priority << 48 | sequence << 3 | kind, see :func:`key`) and ``data`` (int64 payload: a
job, device or link). The sequence number is a counter kept by the caller, so events at
equal time and priority come out in insertion order and every run is reproducible
(SimPy's rule); the kind rides in the key's low bits, below the sequence, so it never
changes the order. Part 1 (``simulator``) and the network (``network``, ``spmd``) use
the same heap. A new event kind is a new constant here, its priority in
:data:`PRIORITY`, and a branch in the simulator's dispatch.

Job arrivals are not pushed: they come from a sorted array merged in front of the heap,
which is the same order as pushing them with priority 1 (the lowest) and cheaper.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel as allocating, inline_without_refcount as kernel_inline

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
_PRIO_SHIFT = np.int64(48)
_SEQ_SHIFT = np.int64(3)
_KIND = np.int64(7)


@kernel_inline
def key(prio: int, seq: int, kind: int) -> int:
    """An event's ordering key: priority, then sequence (< 2**45); the kind (< 8) rides below."""
    return (prio << _PRIO_SHIFT) | (seq << _SEQ_SHIFT) | kind


@kernel_inline
def key_kind(k: int) -> int:
    return k & _KIND


@kernel_inline
def key_priority(k: int) -> int:
    return k >> _PRIO_SHIFT


@kernel_inline
def _less(t1: float, k1: int, t2: float, k2: int) -> bool:
    return t1 < t2 or (t1 == t2 and k1 < k2)


@allocating
def heap_new(capacity: int):
    """Empty heap arrays (time, key, data) of the given capacity."""
    capacity = max(capacity, 4)
    return np.empty(capacity, np.float64), np.empty(capacity, np.int64), np.empty(capacity, np.int64)


@allocating
def heap_grow(ht, hk, hd):
    """Arrays of twice the capacity holding the same events (call when full)."""
    n = ht.size
    t2, k2, d2 = heap_new(2 * n)
    for i in range(n):    # a loop, not slice assignment: no broadcast check, whose error path costs compile time
        t2[i] = ht[i]
        k2[i] = hk[i]
        d2[i] = hd[i]
    return t2, k2, d2


@kernel_inline
def push(ht, hk, hd, size: int, time: float, k: int, data: int) -> int:
    """Push an event with key ``k`` (capacity must allow it); returns the new size."""
    i = size
    while i > 0:
        parent = (i - 1) >> 2
        if _less(time, k, ht[parent], hk[parent]):
            ht[i] = ht[parent]
            hk[i] = hk[parent]
            hd[i] = hd[parent]
            i = parent
        else:
            break
    ht[i] = time
    hk[i] = k
    hd[i] = data
    return size + 1


@kernel_inline
def pop(ht, hk, hd, size: int):
    """Remove the first event; returns (time, key, data, new size). size must be > 0."""
    t0, k0, d0 = ht[0], hk[0], hd[0]
    n = size - 1
    if n > 0:
        t, k, d = ht[n], hk[n], hd[n]
        i = 0
        while True:
            c = 4 * i + 1
            if c >= n:
                break
            last = min(c + 4, n)
            for x in range(c + 1, last):
                if _less(ht[x], hk[x], ht[c], hk[c]):
                    c = x
            if _less(ht[c], hk[c], t, k):
                ht[i] = ht[c]
                hk[i] = hk[c]
                hd[i] = hd[c]
                i = c
            else:
                break
        ht[i] = t
        hk[i] = k
        hd[i] = d
    return t0, k0, d0, n


@kernel_inline
def push_kind(heap, ctr, size_slot: int, seq_slot: int, time: float, kind: int, data: int) -> None:
    """Push an event of ``kind`` with its spec priority, counting size and sequence in
    ``ctr[size_slot]`` and ``ctr[seq_slot]``."""
    ht, hk, hd = heap
    ctr[size_slot] = push(ht, hk, hd, ctr[size_slot], time, key(PRIORITY[kind], ctr[seq_slot], kind), data)
    ctr[seq_slot] += 1
