"""Conflict-free combination search with a greedy-colouring bound (a measured experiment for
the speed target; not used by the workload: ``benchmarks/calibration.md``, "Tried: a max-clique
colouring bound and a nogood cache"). The nogood cache below is the one ``dp._feasible`` now
keeps in the search within the limit; here it also counts the tries for the harness.

The search for one alternative per job, no two in conflict (``dp._feasible``), is the search
for a J-clique in the J-partite compatibility graph (alternatives of different jobs that do
not conflict). Max-clique branch and bound (Tomita's MCQ/MCS, San Segundo's BBMC) prunes a node
when the chosen vertices plus the number of colours of a greedy colouring of the candidates
are fewer than the clique size sought: a colour class is an independent set of the
compatibility graph (alternatives pairwise in conflict or of one job), and a clique takes at
most one vertex of each class. With one class per job this is forward checking (every open
job keeps an alternative); it prunes more only when alternatives of different jobs that
pairwise conflict share a class, so that fewer classes than open jobs cover every candidate.

:func:`_coloured` is ``dp._feasible`` (same job order, same alternative order, same forward
checking and limit bound) with that bound added after each try that forward checking keeps
(``colour`` 1: the number of classes of a greedy colouring in index order; 2: the same classes
and a matching of the open jobs to distinct classes holding one of their candidates, a Hall
bound; 3: the matching over a first-fit colouring in order of falling conflict degree). A valid
bound only removes subtrees without a combination, so with ``weighted`` False the search makes a
subset of ``_feasible``'s tries in the same order and, where both complete, returns the same
combination (``tests/test_cyclic_clique.py``). ``depth``: the bound only at fewer jobs chosen.

The nogood cache (``memo_bits`` > 0, the quick look at nogood recording): a subproblem is the set
of the open jobs' candidates (the open jobs are the jobs with one), and it is recorded, with the
level left, when the search proves it has no combination; met again with no more level left, it
is cut at once. Direct-mapped (2^``memo_bits`` slots, a new proof replaces a different key),
keys compared in full, so it is exact; ``memo_depth``: only at that many jobs chosen or fewer.
"""
from __future__ import annotations

import numba
import numpy as np

from schedsweep.workloads.cyclic.dp import _popcount


@numba.njit(cache=True)
def _low_bit(x):
    """Index of the lowest set bit of a non-zero uint64."""
    return _popcount((x & (~x + np.uint64(1))) - np.uint64(1))


@numba.njit(cache=True)
def _colours_below(U, same, m):
    """Greedy sequential colouring of the vertex set ``U`` (bitset, consumed): True when it
    needs fewer than ``m`` colours. ``same[v]``: the vertices not adjacent to ``v`` in the
    compatibility graph (its conflicts and its job's alternatives)."""
    W = U.shape[0]
    Q = np.empty(W, np.uint64)
    k = 0
    while True:
        w0 = -1
        for w in range(W):
            if U[w] != np.uint64(0):
                w0 = w
                break
        if w0 < 0:
            return k < m
        k += 1
        if k >= m:
            return False
        for w in range(W):
            Q[w] = U[w]
        w = w0
        while w < W:
            if Q[w] == np.uint64(0):
                w += 1
                continue
            v = w * 64 + _low_bit(Q[w])
            bit = np.uint64(1) << np.uint64(v & 63)
            U[w] &= ~bit
            for x in range(W):
                Q[x] &= same[v, x]
            Q[w] &= ~bit


@numba.njit(cache=True)
def _augment(j, adj, seen, owner):
    """Kuhn's augmenting path from job ``j`` (``adj[j]``: bitmask of its classes)."""
    x = adj[j] & ~seen[0]
    while x != np.uint64(0):
        c = _low_bit(x)
        bit = np.uint64(1) << np.uint64(c)
        x &= ~bit
        seen[0] |= bit
        if owner[c] < 0 or _augment(owner[c], adj, seen, owner):
            owner[c] = j
            return True
    return False


@numba.njit(cache=True)
def _hall_short(U, same, jobs, m, jm, wlo, whi, cls):
    """Greedy colouring of ``U`` (consumed) into classes ``cls``, then the jobs ``jobs[:m]``
    matched to distinct classes each holding one of their candidates: True when fewer than
    ``m`` jobs can be matched (no clique takes every job then). Classes past 64: no prune."""
    W = U.shape[0]
    Q = np.empty(W, np.uint64)
    k = 0
    while True:
        w0 = -1
        for w in range(W):
            if U[w] != np.uint64(0):
                w0 = w
                break
        if w0 < 0:
            break
        if k >= 64:
            return False
        for w in range(W):
            Q[w] = U[w]
            cls[k, w] = np.uint64(0)
        w = w0
        while w < W:
            if Q[w] == np.uint64(0):
                w += 1
                continue
            v = w * 64 + _low_bit(Q[w])
            bit = np.uint64(1) << np.uint64(v & 63)
            U[w] &= ~bit
            cls[k, w] |= bit
            for x in range(W):
                Q[x] &= same[v, x]
            Q[w] &= ~bit
        k += 1
    return _matched_short(k, m, jobs, jm, wlo, whi, cls)


@numba.njit(cache=True)
def _matched_short(k, m, jobs, jm, wlo, whi, cls):
    """True when fewer than ``m`` jobs match distinct classes among ``cls[:k]``."""
    if k < m:
        return True
    adj = np.zeros(m, np.uint64)
    for t in range(m):
        i = jobs[t]
        for c in range(k):
            for w in range(wlo[i], whi[i] + 1):
                if jm[i, w] & cls[c, w] != np.uint64(0):
                    adj[t] |= np.uint64(1) << np.uint64(c)
                    break
    owner = np.full(64, -1, np.int64)
    seen = np.zeros(1, np.uint64)
    for t in range(m):
        seen[0] = np.uint64(0)
        if not _augment(t, adj, seen, owner):
            return True
    return False


@numba.njit(cache=True)
def _hall_first_fit(U, same, order, jobs, m, jm, wlo, whi, cls):
    """First-fit colouring of ``U`` in vertex ``order`` (each vertex joins the first class all of
    whose members it is not adjacent to), then the matching of ``_hall_short``."""
    W = U.shape[0]
    k = 0
    for v in order:
        w = v >> 6
        bit = np.uint64(1) << np.uint64(v & 63)
        if U[w] & bit == np.uint64(0):
            continue
        c = 0
        while c < k:
            fits = True
            for x in range(W):
                if cls[c, x] & ~same[v, x] != np.uint64(0):
                    fits = False
                    break
            if fits:
                break
            c += 1
        if c == k:
            if k >= 64:
                return False
            for x in range(W):
                cls[k, x] = np.uint64(0)
            k += 1
        cls[c, w] |= bit
    return _matched_short(k, m, jobs, jm, wlo, whi, cls)


@numba.njit(cache=True)
def _state(open_bits, blk_d, S):
    """The subproblem left at a depth: the candidates of the open jobs (into ``S``; the open jobs
    are the jobs with a candidate, forward checking keeps one for each), and its hash.
    ``open_bits``: every alternative of the open jobs."""
    h = np.uint64(0)
    for w in range(S.shape[0]):
        S[w] = open_bits[w] & ~blk_d[w]
        h = (h ^ S[w]) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return h


@numba.njit(cache=True)
def _coloured(offsets, key, gq, G, conflict, limit, weighted=False, colour=1, depth=1 << 30, memo_bits=0, memo_depth=1 << 30):
    """``dp._feasible`` with the colouring bound: ``(choice, found, complete, tries)``.

    ``colour`` False: exactly ``dp._feasible`` (the same tries), with the tries counted."""
    J = offsets.shape[0] - 1
    A = offsets[J]
    choice = np.full(J, -1, np.int64)
    if J == 0:
        return choice, True, True, 0
    mn = np.empty(J, np.int64)
    width = 1
    rest = 0
    for i in range(J):
        mn[i] = gq[offsets[i]]
        for a in range(offsets[i], offsets[i + 1]):
            mn[i] = min(mn[i], gq[a])
        width = max(width, offsets[i + 1] - offsets[i])
        rest += mn[i]
    if rest > G:
        return choice, False, True, 0
    W = (A + 63) // 64
    one = np.uint64(1)
    confb = np.zeros((A, W), np.uint64)
    for a in range(A):
        for b in range(A):
            if conflict[a, b]:
                confb[a, b >> 6] |= one << np.uint64(b & 63)
    jm = np.zeros((J, W), np.uint64)
    wlo = np.empty(J, np.int64)
    whi = np.empty(J, np.int64)
    for i in range(J):
        wlo[i] = offsets[i] >> 6
        whi[i] = (offsets[i + 1] - 1) >> 6
        for a in range(offsets[i], offsets[i + 1]):
            jm[i, a >> 6] |= one << np.uint64(a & 63)
    same = np.empty((A, W), np.uint64)
    for i in range(J):
        for a in range(offsets[i], offsets[i + 1]):
            for w in range(W):
                same[a, w] = confb[a, w] | jm[i, w]
    U = np.empty(W, np.uint64)
    cls = np.empty((64, W), np.uint64)
    deg = np.zeros(A, np.int64)
    for a in range(A):
        for b in range(A):
            if conflict[a, b]:
                deg[a] += 1
    order = np.argsort(-deg, kind="mergesort")
    jobs = np.empty(J, np.int64)
    # nogood cache (memo_bits > 0): subproblems proved to have no combination, each with the most
    # level left at which it was proved (it has none with less either); direct-mapped by hash
    T = 1 << memo_bits if memo_bits > 0 else 1
    mkeys = np.zeros((T, W), np.uint64)
    mleft = np.full(T, -1, np.int64)
    S = np.empty(W, np.uint64)
    hits = 0
    blk = np.zeros((J + 1, W), np.uint64)
    new = np.empty(W, np.uint64)
    weight = np.ones(J, np.float64)
    by_key = np.empty(A, np.int64)
    for i in range(J):
        srt = np.argsort(key[offsets[i]:offsets[i + 1]], kind="mergesort")
        for p in range(offsets[i + 1] - offsets[i]):
            by_key[offsets[i] + p] = offsets[i] + srt[p]
    open_ = np.ones(J, np.bool_)
    open_bits = np.zeros(W, np.uint64)
    for i in range(J):
        for w in range(W):
            open_bits[w] |= jm[i, w]
    job_at = np.full(J, -1, np.int64)
    cand = np.empty((J, width), np.int64)
    ncand = np.zeros(J, np.int64)
    pos = np.zeros(J, np.int64)
    picked = np.full(J, -1, np.int64)
    gsum = 0
    d = 0
    entering = True
    tried = 0
    while True:
        if d == J:
            for e in range(J):
                choice[job_at[e]] = picked[e] - offsets[job_at[e]]
            return choice, True, True, tried
        if entering and memo_bits > 0 and 0 < d <= memo_depth:
            h = np.int64(_state(open_bits, blk[d], S) >> np.uint64(64 - memo_bits))
            if mleft[h] >= G - gsum:
                same_state = True
                for w in range(W):
                    if mkeys[h, w] != S[w]:
                        same_state = False
                        break
                if same_state:        # a subproblem already proved empty: back up at once
                    hits += 1
                    d -= 1
                    entering = False
                    continue
        if entering:
            j = -1
            best = 0.0
            for i in range(J):
                if not open_[i]:
                    continue
                alive = 0
                for w in range(wlo[i], whi[i] + 1):
                    alive += _popcount(jm[i, w] & ~blk[d, w])
                score = alive / weight[i] if weighted else float(alive)
                if j < 0 or score < best:
                    j = i
                    best = score
            job_at[d] = j
            c = 0
            for p in range(offsets[j], offsets[j + 1]):
                a = by_key[p]
                if blk[d, a >> 6] & (one << np.uint64(a & 63)) == np.uint64(0):
                    cand[d, c] = a
                    c += 1
            ncand[d] = c
            pos[d] = 0
            open_[j] = False
            for w in range(wlo[j], whi[j] + 1):
                open_bits[w] &= ~jm[j, w]
            rest -= mn[j]
            entering = False
        else:
            gsum -= gq[picked[d]]
            picked[d] = -1
            pos[d] += 1
        j = job_at[d]
        went = False
        while pos[d] < ncand[d]:
            tried += 1
            if tried > limit:
                return choice, False, False, tried - 1
            a = cand[d, pos[d]]
            if gsum + gq[a] + rest > G:
                pos[d] += 1
                continue
            for w in range(W):
                new[w] = blk[d, w] | confb[a, w]
            ok = True
            m = 0
            for k in range(J):
                if not open_[k]:
                    continue
                jobs[m] = k
                m += 1
                empty = True
                for w in range(wlo[k], whi[k] + 1):
                    if jm[k, w] & ~new[w] != np.uint64(0):
                        empty = False
                        break
                if empty:
                    ok = False
                    weight[k] += 1.0
                    break
            if ok and colour and m > 1 and d < depth:
                for w in range(W):
                    U[w] = np.uint64(0)
                for k in range(J):
                    if open_[k]:
                        for w in range(wlo[k], whi[k] + 1):
                            U[w] |= jm[k, w] & ~new[w]
                if colour == 1:
                    if _colours_below(U, same, m):
                        ok = False
                elif colour == 2:
                    if _hall_short(U, same, jobs, m, jm, wlo, whi, cls):
                        ok = False
                elif _hall_first_fit(U, same, order, jobs, m, jm, wlo, whi, cls):
                    ok = False
            if not ok:
                pos[d] += 1
                continue
            for w in range(W):
                blk[d + 1, w] = new[w]
            picked[d] = a
            gsum += gq[a]
            went = True
            break
        if went:
            d += 1
            entering = True
            continue
        open_[j] = True
        for w in range(wlo[j], whi[j] + 1):
            open_bits[w] |= jm[j, w]
        rest += mn[j]
        if memo_bits > 0 and 0 < d <= memo_depth:
            h = np.int64(_state(open_bits, blk[d], S) >> np.uint64(64 - memo_bits))
            same_state = True
            for w in range(W):
                if mkeys[h, w] != S[w]:
                    same_state = False
                    break
            if same_state:
                mleft[h] = max(mleft[h], G - gsum)
            else:
                for w in range(W):
                    mkeys[h, w] = S[w]
                mleft[h] = G - gsum
        d -= 1
        if d < 0:
            return choice, False, True, tried
