"""Correctly rounded sums and the comparisons built on them, for numba kernels.

Why: a window's cost and processor time are sums of per-slot values, and two windows with
the same values in a different order would otherwise get sums differing in the last bit.
Every algorithm here (and the naive oracle in ``tests/``, through ``math.fsum``) compares
windows by the correctly rounded sum, which does not depend on the order of the terms;
kernels keep a cheap running sum and compute the exact one only when the cheap sum is
too close to the threshold to decide.
"""
from __future__ import annotations

import numpy as np
from ..kernel_support.jit import inline_kernel, kernel

#: Relative margin within which a running (inexact) sum cannot decide a comparison.
_MARGIN = 1e-10


@kernel
def fsum(values: np.ndarray, k: int) -> float:
    """``math.fsum(values[:k])``: Shewchuk's exact partials, CPython's final rounding."""
    partials = np.empty(k + 1, np.float64)
    n_part = 0
    for idx in range(k):
        x = values[idx]
        i = 0
        for j in range(n_part):
            y = partials[j]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[i] = lo
                i += 1
            x = hi
        partials[i] = x
        n_part = i + 1
    # sum the partials from the top, with CPython's correction of half-way cases
    hi = 0.0
    if n_part > 0:
        n_part -= 1
        hi = partials[n_part]
        lo = 0.0
        while n_part > 0:
            x = hi
            n_part -= 1
            y = partials[n_part]
            hi = x + y
            yr = hi - x
            lo = y - yr
            if lo != 0.0:
                break
        if n_part > 0 and ((lo < 0.0 and partials[n_part - 1] < 0.0) or
                           (lo > 0.0 and partials[n_part - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            yr = x - hi
            if y == yr:
                hi = x
    return hi


@inline_kernel
def sum_le(values: np.ndarray, k: int, approx: float, bound: float) -> bool:
    """``fsum(values[:k]) <= bound``, deciding on ``approx`` (a running sum) when it is clear."""
    tol = _MARGIN * abs(approx) + 1e-300
    if approx <= bound - tol:
        return True
    if approx > bound + tol:
        return False
    return fsum(values, k) <= bound


@inline_kernel
def sum_lt(values: np.ndarray, k: int, approx: float, bound: float) -> bool:
    """``fsum(values[:k]) < bound``, deciding on ``approx`` when it is clear."""
    tol = _MARGIN * abs(approx) + 1e-300
    if approx < bound - tol:
        return True
    if approx >= bound + tol:
        return False
    return fsum(values, k) < bound
