"""Comparison baselines with the resource mask (source): FCFS and the source's Backfill.

Both return a chromosome ``(body, header)`` and their own timing ``(start, dur)``.
With ``randomize`` (used for the GA's initial population, our rule) ties are broken at
random from ``rng``; otherwise by lowest index. Every unit starts at ``ready[m]`` (its
idle gene), so docking holds by construction.
"""
from __future__ import annotations

import numpy as np
from numba.np.random.random_methods import random_interval

from ..kernel_support.jit import inline_kernel, kernel
from .model import Problem, body_from_units
from .sorting import argsort, sort_ints, wth_smallest_in_group


@inline_kernel
def _shuffle(x, rng):
    """``rng.shuffle(x)`` for a 1-D array: numba's own implementation (the same draws, by
    ``random_interval``, and the same swaps), without the n-dimensional machinery
    (``swapaxes``, ``transpose``, string formatting of errors) that made numba's
    ``shuffle`` cost about 3 CPU-s to compile."""
    for i in range(x.shape[0] - 1, 0, -1):
        j = np.intp(random_interval(rng.bit_generator, i))
        if i != j:
            x[i], x[j] = x[j], x[i]


@inline_kernel
def _pick(cands, n, randomize, rng):
    """One of the first ``n`` candidates: the first, or a uniform one."""
    if randomize and n > 1:
        return cands[rng.integers(0, n)]
    return cands[0]


@kernel
def _fastest(units, n, w, speed):
    """The ``w`` fastest of the first ``n`` units (ties: lower index), sorted by index."""
    key = np.empty(n)
    for i in range(n):
        key[i] = -speed[units[i]]
    order = argsort(key)
    chosen = np.empty(w, np.int64)
    for i in range(w):
        chosen[i] = units[order[i]]
    sort_ints(chosen)
    return chosen


@kernel
def fcfs_kernel(P, randomize, rng):
    """Jobs in arrival order; each starts as soon as enough allowed units are free.

    Non-parallel: the allowed unit free earliest. Parallel: the group where ``w`` allowed
    units are free earliest; of the allowed units free by then, the ``w`` fastest.
    """
    speed, group, ready, prev_end, width, length, prio, pred, mask, proc_job, job_first, _, anywhere = P
    C = speed.shape[0]
    J = width.shape[0]
    N = proc_job.shape[0]
    free = ready.copy()
    start = np.zeros(J)
    dur = np.zeros(J)
    unit_of = np.zeros(N, np.int64)
    seq = np.zeros(N, np.int64)
    n_groups = group.max() + 1
    cands = np.empty(max(C, n_groups), np.int64)
    fr = np.empty(C)
    avail = np.empty(C, np.int64)
    for j in range(J):
        earliest = -np.inf
        if pred[j] >= 0:
            earliest = start[pred[j]] + dur[pred[j]]
        w = width[j]
        if w == 1:
            best = np.inf
            for m in range(C):
                if mask[j, m]:
                    best = min(best, max(free[m], earliest))
            n = np.int64(0)   # not a literal 0, which would make numba compile _pick twice
            for m in range(C):
                if mask[j, m] and max(free[m], earliest) == best:
                    cands[n] = m
                    n += 1
            m = _pick(cands, n, randomize, rng)
            units = np.array([m])
            t = best
        else:
            tg = np.full(n_groups, np.inf)
            for g in range(n_groups):   # the w-th earliest free unit of each group
                tg[g] = max(wth_smallest_in_group(free, group, g, mask[j], w, fr), earliest)
            t = tg.min()
            n = np.int64(0)
            for g in range(n_groups):
                if tg[g] == t:
                    cands[n] = g
                    n += 1
            g = _pick(cands, n, randomize, rng)
            n = np.int64(0)   # not a literal 0: numba would compile _fastest twice
            for m in range(C):
                if group[m] == g and mask[j, m] and free[m] <= t:
                    avail[n] = m
                    n += 1
            units = _fastest(avail, n, w, speed)
        mink = np.inf
        for m in units:
            mink = min(mink, speed[m])
        start[j] = t
        dur[j] = length[j] / mink
        for i in range(w):
            u = job_first[j] + i
            unit_of[u] = units[i]
            seq[u] = j
            free[units[i]] = t + dur[j]
    body, header = body_from_units(unit_of, seq, C)
    return body, header, start, dur


@kernel
def backfill_kernel(P, randomize, rng):
    """The source's Backfill: widest window first, the job that fits it best.

    A window = the units of one group free from the same time. Windows are tried widest
    first (ties: earlier start, then lower group; random with ``randomize``); the job
    placed is the one needing the most units <= the window's allowed width whose
    predecessor has ended by the window's start (ties: longer, then earlier arrival),
    on the fastest allowed units of the window. If no job fits any window, the units
    free earliest wait until the next free time.
    """
    speed, group, ready, prev_end, width, length, prio, pred, mask, proc_job, job_first, _, anywhere = P
    C = speed.shape[0]
    J = width.shape[0]
    N = proc_job.shape[0]
    free = ready.copy()
    start = np.zeros(J)
    dur = np.zeros(J)
    placed = np.zeros(J, np.bool_)
    unit_of = np.zeros(N, np.int64)
    seq = np.zeros(N, np.int64)
    order_seq = 0
    remaining = J
    win_g = np.empty(C, np.int64)
    win_t = np.empty(C)
    win_w = np.empty(C, np.int64)
    key = np.empty(C)
    prev = np.empty(C, np.int64)
    in_win = np.empty(C, np.bool_)
    avail = np.empty(C, np.int64)
    while remaining > 0:
        # windows: distinct (group, free time)
        nw = 0
        for m in range(C):
            found = False
            for k in range(nw):
                if win_g[k] == group[m] and win_t[k] == free[m]:
                    win_w[k] += 1
                    found = True
                    break
            if not found:
                win_g[nw] = group[m]
                win_t[nw] = free[m]
                win_w[nw] = 1
                nw += 1
        # sort by width desc, start asc, group asc (stable lexsort by hand)
        for k in range(nw):
            key[k] = win_g[k]   # (small integers: exact as floats)
        order = argsort(key[:nw])
        for k in range(nw):
            key[k] = win_t[order[k]]
        by = argsort(key[:nw])
        for k in range(nw):
            prev[k] = order[by[k]]
        for k in range(nw):
            key[k] = -win_w[prev[k]]
        by = argsort(key[:nw])
        order = np.empty(nw, np.int64)
        for k in range(nw):
            order[k] = prev[by[k]]
        if randomize:
            # shuffle among windows of equal width and start
            i = 0
            while i < nw:
                k = i
                while k + 1 < nw and win_w[order[k + 1]] == win_w[order[i]] and win_t[order[k + 1]] == win_t[order[i]]:
                    k += 1
                if k > i:
                    _shuffle(order[i:k + 1], rng)
                i = k + 1
        done = False
        for oi in range(nw):
            k = order[oi]
            g, t = win_g[k], win_t[k]
            for m in range(C):
                in_win[m] = group[m] == g and free[m] == t
            best = -1
            for j in range(J):
                if placed[j]:
                    continue
                p = pred[j]
                if p >= 0 and (not placed[p] or start[p] + dur[p] > t):
                    continue
                n_ok = 0
                for m in range(C):
                    if in_win[m] and mask[j, m]:
                        n_ok += 1
                if n_ok < width[j]:
                    continue
                if best < 0 or width[j] > width[best] or (width[j] == width[best] and length[j] > length[best]):
                    best = j
            if best < 0:
                continue
            j = best
            n = np.int64(0)   # not a literal 0: numba would compile _fastest twice
            for m in range(C):
                if in_win[m] and mask[j, m]:
                    avail[n] = m
                    n += 1
            units = _fastest(avail, n, width[j], speed)
            mink = np.inf
            for m in units:
                mink = min(mink, speed[m])
            start[j] = t
            dur[j] = length[j] / mink
            for i in range(width[j]):
                u = job_first[j] + i
                unit_of[u] = units[i]
                seq[u] = order_seq
                free[units[i]] = t + dur[j]
            order_seq += 1
            placed[j] = True
            remaining -= 1
            done = True
            break
        if not done:
            tmin = free.min()
            tnext = np.inf
            for m in range(C):
                if free[m] > tmin:
                    tnext = min(tnext, free[m])
            if tnext == np.inf:
                raise ValueError("backfill: a job fits no group (check the resource mask)")
            for m in range(C):
                if free[m] == tmin:
                    free[m] = tnext
    body, header = body_from_units(unit_of, seq, C)
    return body, header, start, dur


def fcfs(problem: Problem, rng: np.random.Generator | None = None):
    """FCFS schedule ``(body, header, start, dur)``; ``rng`` breaks ties at random."""
    return fcfs_kernel(problem.arrays(), rng is not None, rng if rng is not None else np.random.default_rng(0))


def backfill(problem: Problem, rng: np.random.Generator | None = None):
    """The source's Backfill ``(body, header, start, dur)``; ``rng`` breaks ties at random."""
    return backfill_kernel(problem.arrays(), rng is not None, rng if rng is not None else np.random.default_rng(0))


BASELINES = {"fcfs": fcfs, "backfill": backfill}
