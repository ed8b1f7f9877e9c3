"""Free cores over time as a step function, for conservative backfilling (numba).

Step k holds ``pf[k]`` free cores on ``[pt[k], pt[k+1])``; the last step lasts forever.
Live steps are ``[p0, S)`` with ``pt[p0] <= now``; ``meta = [p0, S]``. The profile is
kept canonical (no two neighbours with equal free cores), so its size is the number of
real changes. Capacity: every window adds at most two steps, so 2 × jobs + 4 suffices.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel as allocating, kernel_without_refcount as kernel


@allocating
def new(capacity: int, total: int):
    pt = np.zeros(capacity, np.float64)
    pf = np.zeros(capacity, np.int64)
    pf[0] = total
    meta = np.array([0, 1], np.int64)
    return pt, pf, meta


@kernel
def find(pt, p0: int, s: int, x: float) -> int:
    """Index of the step containing x (largest k with pt[k] <= x; p0 if x < pt[p0])."""
    lo, hi = p0, s
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if pt[mid] <= x:
            lo = mid
        else:
            hi = mid
    return lo


@kernel
def _insert(pt, pf, meta, k: int, t: float, f: int) -> None:
    s = meta[1]
    for i in range(s, k, -1):
        pt[i] = pt[i - 1]
        pf[i] = pf[i - 1]
    pt[k] = t
    pf[k] = f
    meta[1] = s + 1


@kernel
def _delete(pt, pf, meta, k: int) -> None:
    s = meta[1]
    for i in range(k, s - 1):
        pt[i] = pt[i + 1]
        pf[i] = pf[i + 1]
    meta[1] = s - 1


@kernel
def _point(pt, pf, meta, lo: int, x: float) -> int:
    """Index of a step starting at x (split from its step if needed; pt[lo] <= x)."""
    k = find(pt, lo, meta[1], x)
    if pt[k] == x:
        return k
    _insert(pt, pf, meta, k + 1, x, pf[k])
    return k + 1


@kernel
def add(pt, pf, meta, a: float, b: float, delta: int) -> int:
    """Add ``delta`` free cores on [a, b) (a >= pt[p0]); keeps the profile canonical.

    Returns the index of the first step that changed: the steps before it keep their
    index and value (what a prefix maximum computed before the change still covers)."""
    if not b > a:
        return meta[1]
    i = _point(pt, pf, meta, meta[0], a)
    j = _point(pt, pf, meta, i, b)        # b > a = pt[i]
    for k in range(i, j):
        pf[k] += delta
    # merge at j first so that index i stays valid
    if j < meta[1] and pf[j] == pf[j - 1]:
        _delete(pt, pf, meta, j)
    if i > meta[0] and pf[i] == pf[i - 1]:
        _delete(pt, pf, meta, i)
    return i


@kernel
def prune(pt, pf, meta, now: float) -> None:
    """Forget the steps that ended by ``now``; the first live step starts at now."""
    k = find(pt, meta[0], meta[1], now)
    meta[0] = k
    pt[k] = now
    if k > pt.size // 4 and k > 64:   # compact so inserts at the tail keep room
        s = meta[1]
        for i in range(s - k):
            pt[i] = pt[k + i]
            pf[i] = pf[k + i]
        meta[0] = 0
        meta[1] = s - k


@kernel
def earliest(pt, pf, meta, now: float, n: int, d: float, limit: float) -> float:
    """Earliest start s in [now, limit) with >= n free cores over [s, min(s + d, limit)).

    Returns ``limit`` if there is none. With ``limit = inf`` this is the earliest fit of a
    new window; with ``limit`` = a job's own reservation (its window still in the
    profile) it asks whether the job can move earlier: the part of a window past its own
    reservation always fits, since the job fits there.
    """
    p0, s = meta[0], meta[1]
    # after prune(now) the first live step starts at now (steps strictly increase)
    k = p0 if now <= pt[p0] else find(pt, p0, s, now)
    start = now
    while True:
        if start >= limit:
            return limit
        endcap = min(start + d, limit)
        q = k
        while q < s and pt[q] < endcap and pf[q] >= n:
            q += 1
        if q == s or pt[q] >= endcap:
            return start
        k = q + 1
        if k >= s:
            return limit
        start = pt[k]


@kernel
def max_free_before(pt, pf, meta, pm, pv: int, x: float):
    """Max free cores over [pt[p0], x) (-1 if x <= pt[p0]), for pruning jobs that cannot
    move, and the new ``pv``.

    ``pm[k]`` is the max of ``pf[p0..k]``, valid for k < pv (start a pass with pv = p0 and
    lower it to what :func:`add` returns after each change). It is extended only as far as
    x needs, so a pass that keeps moving jobs near its start does not rescan the whole
    profile after each move."""
    p0, s = meta[0], meta[1]
    if x <= pt[p0]:
        return -1, pv
    if pv > p0 and pt[pv - 1] >= x:    # covered: the step before the first with pt >= x
        return pm[p0 + np.searchsorted(pt[p0:pv - 1], x) - 1], pv
    k = pv
    best = pm[k - 1] if k > p0 else -1
    while k < s and pt[k] < x:
        if pf[k] > best:
            best = pf[k]
        pm[k] = best
        k += 1
    return best, k
