"""Allocation policies: which nodes' cores a started job gets (topology-agnostic ones).

Polezhaev (PaVT 2010) names First Fit, Best Fit, Fastest Node First and Random First;
the source does not define them further, so the definitions below are *(our rule)*.
A job of ``n`` processes needs, per process, one core, ``mr`` KB of memory and ``dr`` KB
of disk; node i can take ``min(free cores, free mem // mr, free disk // dr)`` of them.

- ``first_fit``: nodes in id order, each filled with as many processes as it can take;
- ``best_fit``: if some node can take all remaining processes, the one that can take the
  fewest such (tightest fit, lowest id on ties) finishes the job; otherwise the node that
  can take the most (lowest id on ties) is filled, and so on;
- ``fastest_first``: nodes by speed descending (lowest id on ties), filled in turn;
- ``random_first``: nodes in a uniformly random order (drawn per allocation from the
  allocation stream), filled in turn.

Part 2 adds topology-aware policies here (node sorting, contiguous, paging, MBS, ...):
a new code, a name in :data:`NAMES` and a branch in :func:`choose`.
"""
from __future__ import annotations

import numpy as np

from numba.cpython.unsafe.numbers import trailing_zeros

from ..kernel_support.jit import kernel_without_refcount as kernel, inline_without_refcount as kernel_inline
from .choices import ALLOCATION_NAMES

FIRST_FIT, BEST_FIT, FASTEST_FIRST, RANDOM_FIRST = 0, 1, 2, 3
NAMES = ALLOCATION_NAMES
#: Policies whose scan follows a fixed node order (kept as a bitset of nodes with free cores).
ORDERED = (FIRST_FIT, FASTEST_FIRST)

def scan_state(policy: int, speed: np.ndarray, free_cores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(order, rank, bits)`` for :func:`choose`: the fixed scan order (rank -> node) of an
    ordered policy (identity otherwise), its inverse, and the bitset over ranks of the
    nodes with free cores."""
    p = speed.size
    if policy == FASTEST_FIRST:
        order = np.lexsort((np.arange(p), -speed)).astype(np.int64)
    else:
        order = np.arange(p, dtype=np.int64)
    rank = np.empty(p, np.int64)
    rank[order] = np.arange(p)
    bits = np.zeros((p + 63) // 64, np.uint64)
    on = rank[np.asarray(free_cores) > 0]
    np.bitwise_or.at(bits, on >> 6, np.left_shift(np.uint64(1), (on & 63).astype(np.uint64)))
    return order, rank, bits


@kernel_inline
def capacity(i: int, mr: float, dr: float, free_cores, free_mem, free_disk) -> int:
    """How many of the job's processes node i can take now."""
    k = free_cores[i]
    if mr > 0.0:
        k = min(k, int(free_mem[i] // mr))
    if dr > 0.0:
        k = min(k, int(free_disk[i] // dr))
    return k


@kernel
def uniform(state) -> float:
    """A uniform double in [0, 1) from a splitmix64 stream held in ``state[0]`` (uint64).

    The allocation stream of a replication is seeded with its substream seed; numba
    kernels keep no other random state.
    """
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel_inline
def bit_set(bits, rank: int, on: bool) -> None:
    """Mark node of rank ``rank`` as having free cores (on) or not."""
    w = rank >> 6
    b = np.uint64(1) << np.uint64(rank & 63)
    if on:
        bits[w] |= b
    else:
        bits[w] &= ~b


@kernel
def choose(policy: int, n: int, mr: float, dr: float, free_cores, free_mem, free_disk, speed,
           order, bits, perm, rng, out_node, out_k) -> int:
    """Choose nodes for ``n`` processes without changing any state.

    Writes the chosen nodes and their process counts to ``out_node[:m]``, ``out_k[:m]``
    and returns m, or -1 if the job does not fit now (nothing is drawn from ``rng`` then
    unless the policy is random_first). ``bits`` is the bitset over ranks of ``order`` of
    nodes with free cores (ordered policies); ``perm`` is scratch of size nodes; ``rng`` the
    allocation stream's state (see :func:`uniform`).
    """
    left = n
    m = 0
    if policy == FIRST_FIT or policy == FASTEST_FIRST:
        for w in range(bits.size):
            x = bits[w]
            while x != 0:
                r = (w << 6) + trailing_zeros(x)      # one tzcnt instruction
                x &= x - np.uint64(1)
                i = r if policy == FIRST_FIT else order[r]   # first fit: rank = node id
                k = capacity(i, mr, dr, free_cores, free_mem, free_disk)
                if k > 0:
                    k = min(k, left)
                    out_node[m] = i
                    out_k[m] = k
                    m += 1
                    left -= k
                    if left == 0:
                        return m
        return -1
    p = free_cores.size
    if policy == RANDOM_FIRST:
        for i in range(p):
            perm[i] = i
        for s in range(p):
            j = s + int(uniform(rng) * (p - s))
            i = perm[j]
            perm[j] = perm[s]
            perm[s] = i
            k = capacity(i, mr, dr, free_cores, free_mem, free_disk)
            if k > 0:
                k = min(k, left)
                out_node[m] = i
                out_k[m] = k
                m += 1
                left -= k
                if left == 0:
                    return m
        return -1
    # best fit
    for i in range(p):
        perm[i] = capacity(i, mr, dr, free_cores, free_mem, free_disk)
    total = 0
    for i in range(p):
        total += perm[i]
    if total < n:
        return -1
    while left > 0:
        tight = -1
        big = -1
        for i in range(p):
            c = perm[i]
            if c <= 0:
                continue
            if c >= left and (tight < 0 or c < perm[tight]):
                tight = i
            if big < 0 or c > perm[big]:
                big = i
        i = tight if tight >= 0 else big
        k = min(perm[i], left)
        out_node[m] = i
        out_k[m] = k
        m += 1
        left -= k
        perm[i] = 0
    return m
