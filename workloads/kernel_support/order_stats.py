"""``numpy.percentile`` (method ``linear``) as a numba kernel that selects in place.

``numpy.percentile`` copies its input and runs an introselect for every index it needs; on
the ~98,000 waiting times of a desktop-grid replication that was 1.8 ms, 9% of the
replication. :func:`percentiles_inplace` finds the same order statistics by quickselect on
the caller's scratch buffer (no copy) and interpolates with numpy's own arithmetic, so the
values are equal bit for bit (``tests/test_order_stats.py`` compares them with numpy's on
random arrays, ties, infinities and NaN included).
"""
from __future__ import annotations

import numpy as np

from .jit import kernel


@kernel
def _move_min_to(a, lo, hi):
    """Put the smallest of ``a[lo:hi]`` at ``a[lo]`` (one scan: no partitioning needed)."""
    best = lo
    for i in range(lo + 1, hi):
        if a[i] < a[best]:
            best = i
    a[lo], a[best] = a[best], a[lo]


@kernel
def _select(a, lo, hi, k):
    """Reorder ``a[lo:hi]`` so that ``a[k]`` is its (k - lo)-th smallest value, with no larger
    value before it and no smaller one after it (quickselect, median-of-three pivot; a short
    range, or one that shrinks too slowly, is sorted instead: the worst case stays n log n)."""
    budget = 8
    size = hi - lo
    while size > 1:       # about 3 log2(n) rounds before the sort takes over
        budget += 3
        size >>= 1
    while hi - lo > 1:
        if k == lo:
            _move_min_to(a, lo, hi)
            return
        budget -= 1
        if hi - lo <= 16 or budget == 0:
            a[lo:hi].sort()
            return
        mid = lo + (hi - lo) // 2
        # median of a[lo], a[mid], a[hi - 1] as the pivot
        x, y, z = a[lo], a[mid], a[hi - 1]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
            if x > y:
                y = x
        pivot = y
        # Hoare partition: a[lo:j + 1] <= pivot <= a[j + 1:hi]
        i = lo - 1
        j = hi
        while True:
            i += 1
            while a[i] < pivot:
                i += 1
            j -= 1
            while a[j] > pivot:
                j -= 1
            if i >= j:
                break
            a[i], a[j] = a[j], a[i]
        if k <= j:
            hi = j + 1
        else:
            lo = j + 1


@kernel
def _bracket(a, n, low, high, buf):
    """One pass over ``a[:n]``: how many values are below ``low``, and the values in
    [``low``, ``high``] copied to ``buf`` (their count; -1 if more than ``buf`` holds but one).
    Branch-free: every value is written at the next free place, which only moves on for a
    value inside (a branch taken at random would cost more than the store)."""
    below = 0
    inside = 0
    last = buf.shape[0] - 1
    for i in range(n):
        x = a[i]
        below += np.int64(x < low)
        buf[inside] = x
        inside += np.int64(x >= low) & np.int64(x <= high)
        if inside == last:
            return below, -1
    return below, inside


@kernel
def _order_stats(a, n, ks, vals):
    """``vals[i]`` = the ``ks[i]``-th smallest of ``a[:n]`` (``ks`` ascending), ``a[:n]`` reordered."""
    lo = 0
    for i in range(ks.shape[0]):
        if ks[i] >= lo:
            _select(a, lo, n, ks[i])
            lo = ks[i] + 1
        vals[i] = a[ks[i]]


@kernel
def _sample_margin(k, n, m):
    """Four standard deviations (and 8) of the rank, in a sample of m of n values, of the k-th."""
    r = k / n
    return int(4.0 * np.sqrt(m * r * (1.0 - r))) + 8


@kernel
def _order_stats_sampled(a, n, ks, vals):
    """As :func:`_order_stats` without reordering ``a``, for large ``n``. Each pair of order
    statistics (``ks[2l]``, ``ks[2l + 1]``) is bracketed between two values of a sorted
    sample of ``a``, ranked some standard deviations below and above where the pair should
    fall, and selected among the values between them (one pass; a few percent of ``a``).
    The sample only steers the work: when a bracket misses (the count below it, or the
    count inside, says so) this returns False and the caller selects in all of ``a``."""
    m = 2048
    sample = np.empty(m)
    for j in range(m):
        sample[j] = a[(j * n) // m]
    sample.sort()
    buf = np.empty(n // 8 + 64)
    pair = np.empty(2, np.int64)
    for i in range(0, ks.shape[0], 2):
        p_lo = (ks[i] * m) // n - _sample_margin(ks[i], n, m)
        p_hi = (ks[i + 1] * m) // n + 1 + _sample_margin(ks[i + 1], n, m)
        low = sample[p_lo] if p_lo >= 0 else -np.inf
        high = sample[p_hi] if p_hi < m else np.inf
        below, inside = _bracket(a, n, low, high, buf)
        pair[0] = ks[i] - below
        pair[1] = ks[i + 1] - below
        if inside < 0 or pair[0] < 0 or pair[1] >= inside:
            return False
        _order_stats(buf, inside, pair, vals[i:i + 2])
    return True


@kernel
def percentiles_inplace(a, n, levels, out):
    """``out[l] = numpy.percentile(a[:n], levels[l])`` (method ``linear``); may reorder ``a[:n]``.

    The same steps as numpy: q = level / 100, virtual index (n - 1) q, the order statistics
    at its floor and the next index, and numpy's ``_lerp`` (``b - (b - a)(1 - g)`` when the
    weight g >= 0.5, else ``a + (b - a) g``). An index at or past n - 1 takes the largest value
    for both ends, as numpy's does. NaN anywhere makes every output NaN (numpy's rule); n = 0
    too. ``levels`` must be sorted ascending, in [0, 100]."""
    for i in range(n):
        if np.isnan(a[i]):
            out[:] = np.nan
            return
    if n == 0:
        out[:] = np.nan
        return
    nl = levels.shape[0]
    ks = np.empty(2 * nl, np.int64)     # the order statistics below and above each level
    gamma = np.empty(nl)
    for l in range(nl):
        virtual = np.float64(n - 1) * (levels[l] / 100.0)
        if virtual >= n - 1:
            prev = -1.0
            ks[2 * l] = n - 1
            ks[2 * l + 1] = n - 1
        else:
            prev = np.floor(virtual)
            ks[2 * l] = int(prev)
            ks[2 * l + 1] = int(prev) + 1
        gamma[l] = virtual - prev
    vals = np.empty(2 * nl)
    if n < 16384 or not _order_stats_sampled(a, n, ks, vals):
        _order_stats(a, n, ks, vals)
    for l in range(nl):
        va = vals[2 * l]
        vb = vals[2 * l + 1]
        diff = vb - va
        if gamma[l] >= 0.5:
            out[l] = vb - diff * (1.0 - gamma[l])
        else:
            out[l] = va + diff * gamma[l]
