"""``numpy.percentile`` (method ``linear``), the same values, from a few percent of the data.

``numpy.percentile`` copies its input and partitions all of it around every index it needs;
on the ~98,000 waiting times of a desktop-grid replication that was 1.7 ms, 9% of the
replication. :func:`percentiles` finds the same order statistics by bracketing each pair of
them between two values of a sample, counting the values below the bracket and partitioning
only the few percent inside it, then interpolates with numpy's own arithmetic: equal bit for
bit (``tests/test_order_stats.py`` compares with numpy on random arrays, ties, infinities
and NaN): 0.8 ms. Plain numpy on purpose: the same selection as a numba kernel took 0.55 ms
but added 3.3 CPU-s to a cold compilation (the desktop-grid spec's is near its 30 CPU-s
target).
"""
from __future__ import annotations

import numpy as np

_SAMPLE = 2048          # sample size of the brackets
_SAMPLED_FROM = 16_384  # below this, one partition of a copy (as numpy does)


def percentiles(values: np.ndarray, levels) -> np.ndarray:
    """``numpy.percentile(values, levels)`` for a 1-D float array, ``levels`` ascending in [0, 100].

    numpy's steps: q = level / 100, virtual index (n - 1) q, the order statistics at its floor
    and the next index (both the largest value when the index is n - 1 or more), and numpy's
    ``_lerp``: ``b - (b - a)(1 - g)`` when the weight g >= 0.5, else ``a + (b - a) g``. NaN
    anywhere gives NaN for every level (numpy's rule); so does an empty array."""
    values = np.asarray(values, float)
    n = values.size
    if n == 0 or np.isnan(values).any():
        return np.full(len(levels), np.nan)
    ks, gamma = [], []
    for level in levels:
        virtual = (n - 1) * (float(level) / 100.0)
        prev = -1.0 if virtual >= n - 1 else float(np.floor(virtual))
        k = n - 1 if prev < 0 else int(prev)
        ks += [k, min(k + 1, n - 1)]
        gamma.append(virtual - prev)
    stats = _sampled_order_stats(values, ks) if n >= _SAMPLED_FROM else None
    if stats is None:
        stats = np.partition(values, np.unique(ks))[ks]
    out = np.empty(len(gamma))
    for l, g in enumerate(gamma):
        a, b = stats[2 * l], stats[2 * l + 1]
        diff = b - a
        out[l] = b - diff * (1.0 - g) if g >= 0.5 else a + diff * g
    return out


def _sampled_order_stats(values: np.ndarray, ks: list[int]) -> np.ndarray | None:
    """The ``ks[i]``-th smallest of ``values``, pair by pair (``ks[2l]``, ``ks[2l + 1]``), or None
    when a bracket misses. Each pair lies between two order statistics of a sample of 2,048
    values, ranked four standard deviations (and 8) below and above where the pair should
    fall; the count below the bracket says whether it holds the pair."""
    n = values.size
    m = _SAMPLE
    sample = values[(np.arange(m) * n) // m]
    ranks = []
    for i in range(0, len(ks), 2):
        ranks += [ks[i] * m // n - _margin(ks[i], n, m), ks[i + 1] * m // n + 1 + _margin(ks[i + 1], n, m)]
    clipped = np.clip(ranks, 0, m - 1)
    at_rank = np.partition(sample, np.unique(clipped))[clipped]
    out = np.empty(len(ks))
    for i in range(0, len(ks), 2):
        low = at_rank[i] if ranks[i] >= 0 else -np.inf
        high = at_rank[i + 1] if ranks[i + 1] < m else np.inf
        below = np.count_nonzero(values < low)
        inside = values[(values >= low) & (values <= high)]
        k0, k1 = ks[i] - below, ks[i + 1] - below
        if k0 < 0 or k1 >= inside.size:
            return None
        out[i:i + 2] = np.partition(inside, [k0, k1])[[k0, k1]]
    return out


def _margin(k: int, n: int, m: int) -> int:
    """Four standard deviations (and 8) of the rank, in a sample of m of n values, of the k-th."""
    r = k / n
    return int(4.0 * np.sqrt(m * r * (1.0 - r))) + 8
