"""Machine availability timeline and the policy's CPU estimates, drawn before the run.

Up and down periods do not depend on the policy, so they are drawn up front from the
machine stream (vectorised), merged into one change list sorted by (time, machine), and
the kernel walks it with a pointer. The same list gives every available set (and every
set of CPU estimates) the run will see, so the LP can be solved per distinct key before
the kernel starts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ..kernel_support.jit import kernel


@dataclass
class Timeline:
    """Availability changes of all machines in ``[0, horizon]``, in event order."""

    time: np.ndarray        # (C,) float: when
    machine: np.ndarray     # (C,) int64: which machine
    up: np.ndarray          # (C,) bool: True = becomes available (repair)
    period: np.ndarray      # (C,) int64: index of the up period that starts (repairs), else -1
    next_same: np.ndarray   # (C,) float: the machine's next change after this one (inf if none)
    next_down0: np.ndarray  # (M,) float: first failure of each machine (inf if none)

    @property
    def n_periods(self) -> np.ndarray:
        """Up periods per machine, the initial one included."""
        m = self.next_down0.shape[0]
        return 1 + np.bincount(self.machine[self.up], minlength=m)


def empty_timeline(m: int) -> Timeline:
    z = np.zeros(0)
    return Timeline(z, np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64), z,
                    np.full(m, np.inf))


def draw_timeline(rng: np.random.Generator, m: int, horizon: float, failures: str,
                  fail_rate: float, down_mean: float, weibull_shape: float = 0.7,
                  weibull_scales: np.ndarray | None = None) -> Timeline:
    """Alternating up/down periods per machine, all machines up at time 0.

    ``failures``: ``none``; ``exponential`` (up ~ Exp(rate ``fail_rate``), down ~ Exp(mean
    ``down_mean``)); ``weibull`` (up ~ ``weibull_scales[j]`` * Weibull(``weibull_shape``),
    down = ``down_mean``, constant). Draws come in blocks of (M, b) ups then (M, b) downs.
    """
    if failures == "none":
        return empty_timeline(m)
    if failures == "exponential":
        cycle = 1.0 / fail_rate + down_mean
    elif failures == "weibull":
        from math import gamma
        cycle = float(np.min(weibull_scales)) * gamma(1 + 1 / weibull_shape) + down_mean
    else:
        raise ValueError(f"failures {failures!r}: allowed 'none', 'exponential', 'weibull'")
    block = int(np.ceil(1.2 * horizon / cycle)) + 4
    ups, downs = [], []
    total = np.zeros(m)
    while True:
        if failures == "exponential":
            u = rng.exponential(1.0 / fail_rate, (m, block))
            d = rng.exponential(down_mean, (m, block))
        else:
            u = rng.weibull(weibull_shape, (m, block)) * weibull_scales[:, None]
            d = np.full((m, block), float(down_mean))
        ups.append(u)
        downs.append(d)
        total += (u + d).sum(axis=1)
        if (total > horizon).all():
            break
    up_len = np.concatenate(ups, axis=1)
    down_len = np.concatenate(downs, axis=1)
    k = up_len.shape[1]
    # change times: fail_k = sum(up_0..k) + sum(down_0..k-1); repair_k = fail_k + down_k
    both = np.empty((m, 2 * k))
    both[:, 0::2], both[:, 1::2] = up_len, down_len
    t = np.cumsum(both, axis=1)
    next_down0 = t[:, 0].copy()
    is_up = np.tile(np.array([False, True]), k)
    period = np.tile(np.arange(1, k + 1)[:, None], (1, 2)).ravel()   # repair k starts up period k
    nxt = np.concatenate([t[:, 1:], np.full((m, 1), np.inf)], axis=1)
    keep = t <= horizon
    mach = np.broadcast_to(np.arange(m)[:, None], t.shape)
    time, mach, nxt = t[keep], mach[keep], nxt[keep]
    up = np.broadcast_to(is_up, t.shape)[keep]
    per = np.broadcast_to(period, t.shape)[keep]
    order = np.lexsort((mach, time))
    return Timeline(time[order], mach[order].astype(np.int64), up[order],
                    np.where(up[order], per[order], -1).astype(np.int64), nxt[order], next_down0)


def estimated_views(rng: np.random.Generator, a_base: np.ndarray, timeline: Timeline,
                    error: float) -> tuple[np.ndarray, np.ndarray]:
    """The policy's CPU estimate ``a' = clip(a (1 + E), 0, 1)``, ``E ~ U[-error, error]``,
    drawn for every up period (the initial one included) whether or not ``error`` is 0.
    Returns ``(view0 (M,), view per change (C,))`` (repairs carry the new estimate)."""
    m = a_base.shape[0]
    k = int(timeline.n_periods.max())
    e = rng.uniform(-1.0, 1.0, (m, k)) * error
    views = np.clip(a_base[:, None] * (1.0 + e), 0.0, 1.0)
    per = np.maximum(timeline.period, 0)
    chg_view = np.where(timeline.up, views[timeline.machine, per], 0.0)
    return views[:, 0].copy(), chg_view


def lp_keys(timeline: Timeline, view0: np.ndarray, chg_view: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (available set, estimates) states, numbered by first occurrence.

    Returns ``(key per change (C,), states (K, M))`` where a state holds the estimate of
    each available machine and -1 for an unavailable one; key 0 is the initial state.
    """
    c, m = timeline.time.shape[0], view0.shape[0]
    idx = np.zeros((c + 1, m), np.int64)                 # row of the last change of each machine
    rows = np.arange(1, c + 1)
    idx[rows, timeline.machine] = rows
    np.maximum.accumulate(idx, axis=0, out=idx)
    # value of machine j after row r: the value set by change idx[r, j] (row 0 = initial)
    values = np.concatenate([[np.nan], np.where(timeline.up, chg_view, -1.0)])
    states = np.where(idx == 0, view0[None, :], values[idx])
    key, first_rows = _first_occurrence_keys(states)
    return key[1:], states[first_rows]


def _first_occurrence_keys(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Number the distinct rows of ``states`` by first occurrence: (key per row, first row of
    each key). Rows are grouped by a 64-bit hash of their bytes, a 1-D sort instead of the
    lexicographic row sort of ``np.unique(axis=0)`` (50× faster at 80,000 rows); a hash
    collision between different rows is detected and falls back to the row sort."""
    states = np.ascontiguousarray(states)
    hashes = _row_hashes(states.view(np.uint64))
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    if not np.array_equal(states, states[first[inverse]]):
        _, first, inverse = np.unique(states, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse].astype(np.int64), first[order]


@kernel
def _row_hashes(bits: np.ndarray) -> np.ndarray:
    """FNV-1a-style 64-bit hash of each row's words (wrap-around arithmetic)."""
    out = np.empty(bits.shape[0], np.uint64)
    prime = np.uint64(1099511628211)
    for r in range(bits.shape[0]):
        h = np.uint64(14695981039346656037)
        for c in range(bits.shape[1]):
            h = (h ^ bits[r, c]) * prime
            h ^= h >> np.uint64(29)
        out[r] = h
    return out
