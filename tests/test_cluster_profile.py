"""The free-core profile of conservative backfilling against a brute-force step function:
canonical form after every change, what ``add`` says it left untouched, the lazily
extended prefix maximum and the earliest fit."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from schedsweep.workloads.cluster import profile

TOTAL = 8
HORIZON = 40


def free_at(pt, pf, meta, x: float) -> int:
    """Free cores at time x, read off the steps one by one."""
    k = meta[0]
    while k + 1 < meta[1] and pt[k + 1] <= x:
        k += 1
    return int(pf[k])


def breakpoints(pt, meta, lo: float, hi: float) -> list[float]:
    return [lo] + [float(t) for t in pt[meta[0]:meta[1]] if lo < t < hi]


def brute_max_before(pt, pf, meta, x: float) -> int:
    if x <= pt[meta[0]]:
        return -1
    return max(free_at(pt, pf, meta, t) for t in breakpoints(pt, meta, pt[meta[0]], x))


def brute_earliest(pt, pf, meta, now: float, n: int, d: float, limit: float) -> float:
    """Try now and every step start after it, in time order; check each step the window
    [s, min(s + d, limit)) touches."""
    for s in breakpoints(pt, meta, now, limit):
        if s >= limit:
            break
        end = min(s + d, limit)
        if all(free_at(pt, pf, meta, t) >= n for t in breakpoints(pt, meta, s, end)):
            return s
    return limit


def check_canonical(pt, pf, meta) -> None:
    live_t, live_f = pt[meta[0]:meta[1]], pf[meta[0]:meta[1]]
    assert np.all(np.diff(live_t) > 0), "step starts must strictly increase"
    assert np.all(np.diff(live_f) != 0), "neighbouring steps must differ (canonical)"


changes = st.lists(st.tuples(st.integers(0, HORIZON), st.integers(1, 12), st.integers(-4, 2)),
                   min_size=1, max_size=25)


@settings(max_examples=150, deadline=None)
@given(changes=changes, now=st.integers(0, 10))
def test_add_keeps_the_function_and_reports_what_it_left_untouched(changes, now):
    pt, pf, meta = profile.new(2 * len(changes) + 8, TOTAL)
    profile.prune(pt, pf, meta, float(now))
    grid = np.full(HORIZON + 20, TOTAL)          # free cores on [t, t + 1), brute force
    for a, length, delta in changes:
        a = max(a, now)
        before_t, before_f = pt.copy(), pf.copy()
        i = profile.add(pt, pf, meta, float(a), float(a + length), delta)
        grid[a:a + length] += delta
        check_canonical(pt, pf, meta)
        assert meta[0] <= i <= meta[1]
        assert np.array_equal(pt[meta[0]:i], before_t[meta[0]:i])
        assert np.array_equal(pf[meta[0]:i], before_f[meta[0]:i])
        for t in range(now, grid.size):
            assert free_at(pt, pf, meta, t + 0.5) == grid[t]


@settings(max_examples=150, deadline=None)
@given(changes=changes, queries=st.lists(st.integers(1, 2 * HORIZON + 2), min_size=1, max_size=12),
       now=st.integers(0, 10))
def test_lazy_prefix_maximum_equals_the_brute_maximum(changes, queries, now):
    """Interleave changes and queries as a compression pass does: pv starts at the first
    live step and is lowered to what each add returns. Free cores stay >= 0, as in a
    schedule (changes that would go below are left out)."""
    pt, pf, meta = profile.new(2 * len(changes) + 8, TOTAL)
    profile.prune(pt, pf, meta, float(now))
    pm = np.zeros(pt.size, np.int64)
    pv = meta[0]
    grid = np.full(HORIZON + 20, TOTAL)
    for a, length, delta in changes:
        a = max(a, now)
        if np.any(grid[a:a + length] + delta < 0):
            continue
        grid[a:a + length] += delta
        pv = min(pv, profile.add(pt, pf, meta, float(a), float(a + length), delta))
        for x2 in queries:                    # unsorted: some covered by pm, some extend it
            x = x2 / 2.0
            got, pv = profile.max_free_before(pt, pf, meta, pm, pv, x)
            assert got == brute_max_before(pt, pf, meta, x), (x, pt[meta[0]:meta[1]], pf[meta[0]:meta[1]])
            assert meta[0] <= pv <= meta[1]


@settings(max_examples=600, deadline=None)
@given(changes=changes, now=st.integers(0, 10), n=st.integers(1, TOTAL), d=st.integers(1, 15),
       limit=st.one_of(st.just(np.inf), st.integers(0, HORIZON + 10)), later=st.integers(0, 5))
def test_earliest_is_the_first_fitting_start(changes, now, n, d, limit, later):
    pt, pf, meta = profile.new(2 * len(changes) + 8, TOTAL)
    for a, length, delta in changes:
        profile.add(pt, pf, meta, float(a), float(a + length), delta)
    profile.prune(pt, pf, meta, float(now))
    check_canonical(pt, pf, meta)
    for t in (float(now), now + later + 0.5):    # at the first live step, and inside the profile
        got = profile.earliest(pt, pf, meta, t, n, float(d), float(limit))
        assert got == brute_earliest(pt, pf, meta, t, n, float(d), float(limit))
