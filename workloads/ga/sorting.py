"""The sorts of the ga kernels: one stable argsort of float64 keys and an in-place sort of
small int64 arrays, shared by every kernel that sorts.

Compile time: numba's ``np.argsort``/``np.sort`` are generated, generic
implementations (merge sort and quicksort, each a tree of helper functions) compiled per
element type, and their code is optimised again by LLVM inside every kernel that calls
them; these two kernels are a few loops each. They give exactly numpy's results:
:func:`argsort` is ``np.argsort(keys, kind="mergesort")`` (stable, NaN last), and
``keys[argsort(keys)]`` is ``np.sort(keys)`` (``tests/test_ga_sorting.py``).
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel

RUN = 16   # runs sorted by insertion before merging (most GA sorts are shorter)


@kernel
def argsort(keys):
    """Indices that sort ``keys`` (float64) ascending; equal keys keep their order, NaN last.

    Bottom-up merge sort over runs of ``RUN`` sorted by insertion: O(n log n)."""
    n = keys.shape[0]
    idx = np.empty(n, np.int64)
    for i in range(n):
        idx[i] = i
    for lo in range(0, n, RUN):
        for i in range(lo + 1, min(lo + RUN, n)):
            v = idx[i]
            k = keys[v]
            j = i - 1
            # k < keys[idx[j]], NaN greater than every number
            while j >= lo and (k < keys[idx[j]] or (keys[idx[j]] != keys[idx[j]] and k == k)):
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = v
    if n <= RUN:
        return idx
    src = idx
    dst = np.empty(n, np.int64)
    width = RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for k in range(lo, hi):
                # the right run's head goes first only if strictly smaller (stability)
                if i < mid and (j >= hi or not (keys[src[j]] < keys[src[i]]
                                                or (keys[src[i]] != keys[src[i]] and keys[src[j]] == keys[src[j]]))):
                    dst[k] = src[i]
                    i += 1
                else:
                    dst[k] = src[j]
                    j += 1
        src, dst = dst, src
        width *= 2
    return src


@kernel
def sort_ints(a):
    """Sort the int64 array ``a`` in place by insertion (the GA sorts a few unit indices)."""
    for i in range(1, a.shape[0]):
        v = a[i]
        j = i - 1
        while j >= 0 and v < a[j]:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@kernel
def wth_smallest_in_group(x, group, g, usable, w, scratch):
    """The ``w``-th smallest ``x[m]`` over the units m of group ``g`` with ``usable[m]``, or
    +inf when fewer than ``w`` qualify (``scratch``: room for a group's values).

    Loops, not boolean-mask indexing: a few times less code to compile."""
    n = 0
    for m in range(group.shape[0]):
        if group[m] == g and usable[m]:
            scratch[n] = x[m]
            n += 1
    if n < w:
        return np.inf
    return scratch[argsort(scratch[:n])[w - 1]]
