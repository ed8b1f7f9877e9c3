"""The combination choice of the cyclic scheme by dynamic programming (``docs/models/cyclic.md``, CSS step 2).

Backward run over the jobs i = N ... 1 with ``Phi_{N+1} = 0``:
``Phi_i(g) = extr over s in S^i with g(s) <= g of [v(s) + Phi_{i+1}(g - g(s))]``,
answer ``Phi_1(g*)``. Quantities ``g`` run on integer levels of ``resolution`` units
*(our rule)*: each alternative's quantity is rounded up, the limit down.

Why the tables are short: at job i only levels reachable from ``G`` matter,
``[G - sum_{j<i} max g_j, G - sum_{j<i} min g_j]``; below ``sum_{j>=i} min g_j`` nothing is
feasible and above ``sum_{j>=i} max g_j`` the constraint no longer binds (Phi is constant).
So level i is stored on ``[L_i, U_i]`` with the query clamped to ``sum_{j>=i} max g_j``; the
width is at most the spread of the quantities, not the limit itself.

Ties keep the alternative found first (lower index).

Shared alternatives (``conflict`` given, *our rule* for the search): alternatives of different
jobs may overlap, so the step is no longer separable by jobs and ``choose`` runs an exact
depth-first branch and bound over the same integer levels instead of the DP: jobs in order,
alternatives in order, a partial combination is dropped when it conflicts (a chosen
alternative removes the slots it uses from the others), when its quantity plus the smallest
quantities still to come exceeds the limit, or when its value plus the best values still to
come cannot beat the best found. It returns the same optimum as the DP would over the
feasible combinations (and the DP's choice when nothing conflicts), unless it tries more than
``SEARCH_LIMIT`` partial combinations *(our rule)*: then the best combination found so far
(exact below the limit; the problem is a weighted independent-set search, exponential in the
worst case). The branch and bound starts from a first combination found by a feasibility search
(:func:`_feasible`: forward checking, the job with the fewest conflict-free alternatives left
first, each job's alternatives by best value first); without it the branch and bound, jobs in
priority order, often met no combination at all within its budget although one existed (on 40
default FRSM cycles: 38% flagged, all 40 feasible by an exact ILP). Before both, the same
search looks for a conflict-free combination of every job regardless of the limit, the
alternatives with the fewest conflicts first (then the smallest quantity); when it finds none,
the searches within the limit are skipped (when it proved there is none they cannot find one
either; when it stopped at ``ANY_LIMIT``, skipping them is our rule: running them to their caps
took most of a cycle's time) and jobs in priority order take their least-quantity alternative
conflicting with none taken before, a job with none left postponed (choice -1) *(our rule)*.
When no conflict-free combination meets the limit (flagged), the one of every job found first
is taken (the analogue of the DP's "smallest-quantity alternative of each job, flagged").
Why this order: against running the search of every job only after a flagged
search within the limit, with alternatives by smallest quantity, on 80 recorded calibrated
cycles (40 CSS min_time, 40 FRSM min_cost) the new order chose the same combination in 72,
flagged the same 26, postponed 119 jobs instead of 123 (the fewest-conflicts order finds
combinations the old order missed within ``FEASIBLE_LIMIT``), and took 8.1 instead of
18.7 CPU-s (same load); every unflagged combination is the same.

Made cheaper for the speed target (``benchmarks/calibration.md``, "The
combination step with shared alternatives: where the time goes"): :func:`_feasible` takes each
job's alternatives in an order sorted once per call instead of sorting at every depth (the same
tries in the same order, so the same results; 1.5x faster), and the search of every job runs
``ANY_PLAIN_LIMIT`` tries in the order above, then, if it has neither found nor ruled out a
combination, starts again with dom/wdeg failure weights (:func:`_feasible` ``weighted``) up to
``ANY_LIMIT``. On calls small enough that every search completes within ``ANY_PLAIN_LIMIT``
the choice is exactly the one before (``tests/test_cyclic_weighted.py``, against a brute-force
restatement of these rules). On 200 recorded calibrated calls (100 CSS, 100 FRSM, 24 nodes,
seeds 0-99; of the CSS calls the search of every job now rules out 34 instead of 21, finds a
combination in 64 instead of 59 and stops at its cap in 2 instead of 20) 187 choices are the
same; of the 13 others (all CSS), 5 place every job where the old search postponed 5-7 (2 of
them now within the limit), and 8
are flagged both times with every job placed (a different combination over the limit); 29
fewer jobs postponed, 2 fewer flagged, no unflagged choice different. The branch and bound's
bound table is stored on a band of levels (:func:`_bnb`; same results). CSS 5000-cycle point
395 -> 220 s, FRSM 133 -> 84 s (back to back, load 8-9). Profile of what is left (CSS, 100
calls): see ``benchmarks/cyclic.md``; every call of the calibrated setting runs
10^5-10^7 search tries whatever the order, and an exact MIP (HiGHS, clique constraints per node
and time) takes seconds per call, so the < 10 s target per 5000-cycle point stays out of reach.

Nogood cache, for the speed target (``benchmarks/calibration.md``, "Tried: a max-clique
colouring bound and a nogood cache"): the feasibility search within the limit records each
subproblem it proves empty (the open jobs' candidates, with the level left) and cuts it when met
again with no more level left (:func:`_feasible` ``memo_bits``; ``NOGOOD_BITS``, ``NOGOOD_DEPTH``
*our rule*). Exact: where the search without it completes, the same combination. On 100 recorded
CSS calls (24 nodes, seeds 0-99) it decides 14 of the 17 calls that ran to ``FEASIBLE_LIMIT``
(10 found, 4 proved none) and needs 2.2x fewer tries on the others; ``choose`` 4.48 -> 4.03 CPU-s,
flagged 53 -> 43 (those 10 calls now within the limit, every job placed as before), no other
choice different; FRSM (100 calls) 1.38 -> 1.37 CPU-s, flagged 7 -> 6. The search of every job
keeps none: with the failure weights it cut fewer tries there than it cost.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numba import types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from ..kernel_support.jit import inline_kernel, kernel
from .choices import STRATEGIES  # strategy -> (value v, constraint quantity g, maximise v?)


class Combination(NamedTuple):
    choice: np.ndarray  #: int64[J], index of the chosen alternative within each job's own list
    flagged: bool       #: no combination met the limit: each job's smallest-quantity alternative
    limit: float        #: g* (T* or B*), the limit in the quantity's units
    value: float        #: total v of the chosen combination


@kernel
def _dp(offsets, v, gq, G, maximize):
    """The DP on integer quantities ``gq`` and limit ``G``. Returns (choice, feasible)."""
    J = offsets.shape[0] - 1
    lo = np.empty(J, np.int64)
    hi = np.empty(J, np.int64)
    for i in range(J):
        lo[i] = gq[offsets[i]]
        hi[i] = gq[offsets[i]]
        for a in range(offsets[i], offsets[i + 1]):
            lo[i] = min(lo[i], gq[a])
            hi[i] = max(hi[i], gq[a])
    min_suf = np.zeros(J + 1, np.int64)
    max_suf = np.zeros(J + 1, np.int64)
    for i in range(J - 1, -1, -1):
        min_suf[i] = min_suf[i + 1] + lo[i]
        max_suf[i] = max_suf[i + 1] + hi[i]
    choice = np.zeros(J, np.int64)
    if J == 0:
        return choice, True
    if G < min_suf[0]:
        return choice, False
    # stored range of level i: [L[i], U[i]] (queries clamped to max_suf[i])
    L = np.empty(J + 1, np.int64)
    U = np.empty(J + 1, np.int64)
    pre_min = 0
    pre_max = 0
    for i in range(J):
        U[i] = min(G - pre_min, max_suf[i])
        L[i] = min(max(G - pre_max, min_suf[i]), max_suf[i])
        pre_min += lo[i]
        pre_max += hi[i]
    L[J] = 0
    U[J] = 0
    base = np.zeros(J + 1, np.int64)
    for i in range(J):
        base[i + 1] = base[i] + (U[i] - L[i] + 1)
    pick = np.empty(base[J], np.int64)
    worst = -np.inf if maximize else np.inf
    nxt = np.zeros(1, np.float64)      # Phi_{J} == 0 on its single level
    for i in range(J - 1, -1, -1):
        width = U[i] - L[i] + 1
        cur = np.full(width, worst)
        for g in range(L[i], U[i] + 1):
            best = worst
            arg = -1
            for a in range(offsets[i], offsets[i + 1]):
                h = g - gq[a]
                if h < min_suf[i + 1]:
                    continue
                h = min(h, max_suf[i + 1])
                val = v[a] + nxt[h - L[i + 1]]
                if (maximize and val > best) or (not maximize and val < best):
                    best = val
                    arg = a
            cur[g - L[i]] = best
            pick[base[i] + g - L[i]] = arg
        nxt = cur
    g = G
    for i in range(J):
        q = min(g, max_suf[i])
        a = pick[base[i] + q - L[i]]
        choice[i] = a - offsets[i]
        g = q - gq[a]
    return choice, True


@kernel
def _bnb(offsets, v, gq, G, maximize, conflict, J, limit, start=None):
    """Branch and bound over the first ``J`` jobs; returns (choice, found, best value, complete).

    ``limit``: most partial combinations tried; past it the search stops (complete False).
    ``start``: a feasible combination to beat (each job's index in its own list), or None.

    Bound: the DP table of the suffix without conflicts, ``tab[i, h]`` = best sign * v of jobs
    i.. with total level <= h (a relaxation, so the search stays exact). Stored on the band of
    levels the search can read (measured: the same values, 2-4x cheaper; building the full table
    had been most of the branch and bound's time at B* ~ 24 000 levels).
    """
    sign = 1.0 if maximize else -1.0          # maximise sign * v
    best_choice = np.full(J, -1, np.int64)
    if J == 0:
        return best_choice, True, 0.0, True
    lo = np.empty(J, np.int64)
    hi = np.empty(J, np.int64)
    for i in range(J):
        lo[i] = gq[offsets[i]]
        hi[i] = gq[offsets[i]]
        for a in range(offsets[i], offsets[i + 1]):
            lo[i] = min(lo[i], gq[a])
            hi[i] = max(hi[i], gq[a])
    pre_min = np.zeros(J + 1, np.int64)
    pre_max = np.zeros(J + 1, np.int64)
    for i in range(J):
        pre_min[i + 1] = pre_min[i] + lo[i]
        pre_max[i + 1] = pre_max[i] + hi[i]
    suf_max = np.zeros(J + 1, np.int64)
    for i in range(J - 1, -1, -1):
        suf_max[i] = suf_max[i + 1] + hi[i]
    G = min(G, pre_max[J])
    if G < 0:
        return best_choice, False, 0.0, True
    # the table at depth i is read only on the levels a partial combination can leave,
    # [G - pre_max[i], G - pre_min[i]] (and >= 0), and is constant above suf_max[i]: store that
    # band only (reads above it are clamped to its top), as the DP does
    L = np.empty(J + 1, np.int64)
    U = np.empty(J + 1, np.int64)
    base = np.zeros(J + 2, np.int64)
    for i in range(J + 1):
        L[i] = max(0, G - pre_max[i])
        U[i] = min(G - pre_min[i], suf_max[i])
        base[i + 1] = base[i] + max(0, U[i] - L[i] + 1)
    tab = np.full(base[J + 1], -np.inf)
    if U[J] >= L[J]:
        tab[base[J]] = 0.0
    for i in range(J - 1, -1, -1):
        for h in range(L[i], U[i] + 1):
            b = -np.inf
            for a in range(offsets[i], offsets[i + 1]):
                if gq[a] <= h:
                    q = min(h - gq[a], U[i + 1])
                    b = max(b, sign * v[a] + tab[base[i + 1] + q - L[i + 1]])
            tab[base[i] + h - L[i]] = b
    choice = np.zeros(J, np.int64)
    best = -np.inf
    found = False
    if start is not None:
        best = 0.0
        for p in range(J):
            best += sign * v[offsets[p] + start[p]]
            best_choice[p] = start[p]
        found = True
    pos = np.zeros(J + 1, np.int64)        # next alternative to try at depth i
    gsum = np.zeros(J + 1, np.int64)
    vsum = np.zeros(J + 1, np.float64)
    i = 0
    pos[0] = offsets[0]
    tried = 0
    while i >= 0:
        tried += 1
        if tried > limit:
            return best_choice, found, sign * best, False
        if pos[i] >= offsets[i + 1]:
            i -= 1
            if i >= 0:
                pos[i] += 1
            continue
        a = pos[i]
        rest = G - gsum[i] - gq[a]
        ok = rest >= 0
        if ok:
            bound = vsum[i] + sign * v[a] + tab[base[i + 1] + min(rest, U[i + 1]) - L[i + 1]]
            ok = bound > -np.inf and ((not found) or bound > best)
        if ok:
            for p in range(i):
                if conflict[choice[p], a]:
                    ok = False
                    break
        if not ok:
            pos[i] += 1
            continue
        choice[i] = a
        gsum[i + 1] = gsum[i] + gq[a]
        vsum[i + 1] = vsum[i] + sign * v[a]
        if i + 1 == J:
            if (not found) or vsum[J] > best:
                best = vsum[J]
                found = True
                for p in range(J):
                    best_choice[p] = choice[p] - offsets[p]
            pos[i] += 1
        else:
            i += 1
            pos[i] = offsets[i]
    return best_choice, found, sign * best, True


@intrinsic
def _popcount(typingctx, x):
    """Set bits of a uint64 (int64), as the CPU's one instruction (``llvm.ctpop``), inlined: the
    search counts a job's alternatives left at every choice it makes (against the shifts and masks
    of a kernel, about 4% less CPU on the recorded calls of ``benchmarks/cyclic.md``)."""
    if x != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        return builder.ctpop(args[0])

    return types.int64(types.uint64), codegen


@kernel
def _subproblem(open_bits, blk_d, S):
    """The open jobs' candidates at a depth (into ``S``) and their hash (uint64)."""
    h = np.uint64(0)
    for w in range(S.shape[0]):
        S[w] = open_bits[w] & ~blk_d[w]
        h = (h ^ S[w]) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return h


@kernel
def _same_row(keys, h, S):
    """Row ``h`` of ``keys`` equals ``S``."""
    for w in range(S.shape[0]):
        if keys[h, w] != S[w]:
            return False
    return True


@inline_kernel
def _left(alll, blk, d, w, s, lanemask, M):
    """Alternatives left at depth ``d`` of the job whose lane starts at bit ``s`` of word ``w``
    (M words: from word w). Rows indexed here, not passed as views: a view per call costs its
    reference counting."""
    if M == 1:
        return _popcount(((alll[w] & ~blk[d, w]) >> s) & lanemask)
    alive = 0
    for x in range(w, w + M):
        alive += _popcount(alll[x] & ~blk[d, x])
    return alive


@kernel
def _lanes(offsets, width):
    """The lane layout of a call of :func:`_feasible` whose jobs hold at most ``width``
    alternatives: ``(L, M, WL, lane_w, lane_s, pw, pb)``. Job i's alternatives, in their order,
    sit in a lane of ``L`` bits (the power of two >= ``width``, 2 ... 64) from bit ``lane_s[i]``
    of word ``lane_w[i]`` (``M`` = 1, ``64 / L`` lanes a word), or in ``M`` whole words from word
    ``lane_w[i]`` (``width`` > 64); alternative a is the bit ``pb[a]`` of word ``pw[a]``; ``WL``
    words in all."""
    J = offsets.shape[0] - 1
    M = 1
    L = 2
    while L < width and L < 64:
        L *= 2
    if width > 64:
        M = (width + 63) // 64
    per = 64 // L
    WL = (J + per - 1) // per if M == 1 else J * M
    lane_w = np.empty(J, np.int64)
    lane_s = np.zeros(J, np.uint64)
    for i in range(J):
        lane_w[i] = i // per if M == 1 else i * M
        if M == 1:
            lane_s[i] = np.uint64((i % per) * L)
    pw = np.empty(offsets[J], np.int64)
    pb = np.empty(offsets[J], np.uint64)
    for i in range(J):
        for a in range(offsets[i], offsets[i + 1]):
            loc = a - offsets[i]
            pw[a] = lane_w[i] + loc // 64
            pb[a] = np.uint64(1) << (lane_s[i] + np.uint64(loc % 64))
    return L, M, WL, lane_w, lane_s, pw, pb


@kernel
def _lane_masks(L):
    """``(low, high, lanemask)`` of lanes of ``L`` bits: the lowest and the highest bit of every
    lane of a word, and one lane's bits."""
    low = np.uint64(0)
    for s in range(0, 64, L):
        low |= np.uint64(1) << np.uint64(s)
    return low, low << np.uint64(L - 1), ~np.uint64(0) >> np.uint64(64 - L)


@inline_kernel
def _first_zero_lane(x, low, high, L):
    """The first (lowest) lane of ``L`` bits of the uint64 ``x`` that is zero, -1 if none.

    ``(x - low) & ~x & high`` is non-zero iff some lane is zero, and its lowest set bit is the top
    bit of the first zero lane (a lane's borrow only runs upwards, from a zero lane below it), so
    one word checks ``64 / L`` lanes at once."""
    t = (x - low) & ~x & high
    if t == np.uint64(0):
        return -1
    return np.int64(trailing_zeros(t)) // L     # the index of the lowest set bit, over the lane width


@kernel
def _feasible(offsets, key, gq, G, conflict, limit, weighted=False, memo_bits=0, memo_depth=0):
    """A conflict-free combination with total level <= ``G``: ``(choice, found, complete)``.

    Depth-first with forward checking: the next job is the one with the fewest alternatives
    left that conflict with none chosen (ties: priority order), its alternatives tried by
    ascending ``key``; a choice is undone at once when it leaves some job without an
    alternative or when its level plus the smallest levels of the jobs still open exceeds
    ``G``. Stops after ``limit`` choices tried (complete False). ``choice`` indexes each job's
    own list.

    ``weighted`` (dom/wdeg): each job carries a weight, 1 at first and raised by 1 each time a
    try leaves that job without an alternative (the first such job in priority order); the next
    job is then the one with the fewest alternatives left per weight (ties: priority order).
    Jobs that keep failing are taken early, which shortens the proofs that nothing exists and
    finds combinations sooner on the hard calls; still a complete search.

    Sets as bitsets (uint64 words): each job's alternatives, each alternative's conflicts, and
    per depth the conflicts of the choices above it; a choice is undone by going back a depth.
    Same tries in the same order as the counting version it replaced (identical results
    on 160 recorded calls, capped ones included, 1.5x faster).

    Lanes, for speed (:func:`_lanes`): job i's alternatives sit in a lane of ``L`` bits of its
    own (``L`` the power of two >= the widest job's count, 2 ... 64; lane i of word i // (64 / L)),
    so the forward check of a try ("does this choice leave some open job without an alternative,
    and which one first") is one carry trick per word for all jobs at once
    (:func:`_first_zero_lane`; a closed job's lane is kept non-zero by ``fill``) instead of a loop
    over the open jobs and their words; a job's alternatives left are one popcount of its lane,
    and unweighted the next job is chosen by an integer compare (the float compare-and-select
    chained through the best so far had been the costliest step). Past 64 alternatives a job gets
    whole words (``M`` per job) and the check loops over the jobs. The same tries in the same
    order, so the same results (``tests/test_cyclic_lanes.py``; identical on the 443 calls of 100
    CSS and 100 FRSM calibrated cycles, capped ones included): those calls 4.2-4.3 -> 3.3-3.5
    CPU-s (``benchmarks/cyclic.md``).

    Nogood cache (``memo_bits`` > 0): the subproblem left at a depth is the set
    of the open jobs' candidates (forward checking keeps one for each open job, so the set names
    the open jobs too); when the search proves one has no combination, it is recorded with the
    level left, and met again with no more level left it is cut at once. Direct-mapped by hash
    (2^``memo_bits`` slots, a new proof replaces another key), keys compared in full, so exact;
    only at depths 1 ... ``memo_depth``. Cutting only subtrees without a combination, it makes a
    subset of the same tries in the same order (unweighted: the same combination, where both
    complete; ``tests/test_cyclic_nogood.py``). Its keys and hashes stay on the packed layout
    (alternative a at bit a), so that which subproblem replaces which in the table, and so every
    result, is the same as before the lanes.
    """
    J = offsets.shape[0] - 1
    A = offsets[J]
    choice = np.full(J, -1, np.int64)
    if J == 0:
        return choice, True, True
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
        return choice, False, True
    one = np.uint64(1)
    zero = np.uint64(0)
    L, M, WL, lane_w, lane_s, pw, pb = _lanes(offsets, width)
    per = 64 // L                             # lanes per word (M == 1)
    confl = np.zeros((A, WL), np.uint64)
    alll = np.zeros(WL, np.uint64)            # every alternative
    for a in range(A):
        alll[pw[a]] |= pb[a]
        for b in range(A):
            if conflict[a, b]:
                confl[a, pw[b]] |= pb[b]
    low, high, lanemask = _lane_masks(L)
    fill = np.zeros(WL, np.uint64)            # the lowest bit of each lane not of an open job
    if M == 1:
        for k in range(J, WL * per):
            fill[k // per] |= one << np.uint64((k % per) * L)
    blk = np.zeros((J + 1, WL), np.uint64)    # conflicts of the choices above each depth
    # the nogood cache's packed layout (alternative a at bit a): open jobs' alternatives, conflicts
    memo = memo_bits > 0
    W = (A + 63) // 64 if memo else 1
    confb = np.zeros((A if memo else 1, W), np.uint64)
    jm = np.zeros((J if memo else 1, W), np.uint64)
    blko = np.zeros((J + 1 if memo else 1, W), np.uint64)
    open_bits = np.zeros(W, np.uint64)
    if memo:
        for a in range(A):
            open_bits[a >> 6] |= one << np.uint64(a & 63)
            for b in range(A):
                if conflict[a, b]:
                    confb[a, b >> 6] |= one << np.uint64(b & 63)
        for i in range(J):
            for a in range(offsets[i], offsets[i + 1]):
                jm[i, a >> 6] |= one << np.uint64(a & 63)
    weight = np.ones(J, np.float64)           # dom/wdeg failure weights
    # each job's alternatives by ascending key, ties by index (stable): the alternatives left at a
    # depth are taken in this order, so no sort per depth
    by_key = np.empty(A, np.int64)
    for i in range(J):          # insertion sort, stable (a job has a few alternatives)
        for p in range(offsets[i], offsets[i + 1]):
            q = p
            while q > offsets[i] and key[by_key[q - 1]] > key[p]:
                by_key[q] = by_key[q - 1]
                q -= 1
            by_key[q] = p
    open_ = np.ones(J, np.bool_)
    T = 1 << memo_bits if memo else 1
    mkeys = np.zeros((T, W), np.uint64)       # nogood cache: subproblems proved empty ...
    mleft = np.full(T, -1, np.int64)          # ... and the most level left they were proved at
    S = np.empty(W, np.uint64)
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
            return choice, True, True
        if entering and memo and 0 < d <= memo_depth:
            h = np.int64(_subproblem(open_bits, blko[d], S) >> np.uint64(64 - memo_bits))
            if mleft[h] >= G - gsum and _same_row(mkeys, h, S):
                d -= 1                # proved empty before with as much level left: back up
                entering = False
                continue
        if entering:
            # the job with the fewest alternatives left (per weight), the first on ties; the
            # unweighted count compared as an integer: the float compare-and-select chained
            # through ``best`` was the costliest part of the search (same choice)
            j = -1
            if weighted:
                best = np.inf
                for i in range(J):
                    if open_[i]:
                        score = _left(alll, blk, d, lane_w[i], lane_s[i], lanemask, M) / weight[i]
                        if score < best:
                            j = i
                            best = score
            else:
                fewest = width + 1
                for i in range(J):
                    if open_[i]:
                        alive = _left(alll, blk, d, lane_w[i], lane_s[i], lanemask, M)
                        if alive < fewest:
                            j = i
                            fewest = alive
            job_at[d] = j
            c = 0
            for p in range(offsets[j], offsets[j + 1]):
                a = by_key[p]
                if blk[d, pw[a]] & pb[a] == zero:
                    cand[d, c] = a
                    c += 1
            ncand[d] = c
            pos[d] = 0
            open_[j] = False
            if M == 1:
                fill[lane_w[j]] |= one << lane_s[j]
            if memo:
                for w in range(W):
                    open_bits[w] &= ~jm[j, w]
            rest -= mn[j]
            entering = False
        else:
            gsum -= gq[picked[d]]      # undo the choice at this depth, try the next
            picked[d] = -1
            pos[d] += 1
        j = job_at[d]
        went = False
        while pos[d] < ncand[d]:
            tried += 1
            if tried > limit:
                return choice, False, False
            a = cand[d, pos[d]]
            if gsum + gq[a] + rest > G:
                pos[d] += 1
                continue
            # forward check: blk[d + 1] = what the choice leaves blocked; k = the first open job,
            # in priority order, it leaves without an alternative (a closed job's lane is never
            # empty: fill)
            k = -1
            if M == 1:
                for w in range(WL):
                    nw = blk[d, w] | confl[a, w]
                    blk[d + 1, w] = nw
                    lane = _first_zero_lane((alll[w] & ~nw) | fill[w], low, high, L)
                    if lane >= 0:
                        k = w * per + lane
                        break
            else:
                for w in range(WL):
                    blk[d + 1, w] = blk[d, w] | confl[a, w]
                for i in range(J):
                    if k >= 0:
                        break
                    if open_[i]:
                        empty = True
                        for w in range(lane_w[i], lane_w[i] + M):
                            if alll[w] & ~blk[d + 1, w] != zero:
                                empty = False
                                break
                        if empty:
                            k = i
            if k >= 0:
                weight[k] += 1.0
                pos[d] += 1
                continue
            if memo and d + 1 <= memo_depth:
                for w in range(W):
                    blko[d + 1, w] = blko[d, w] | confb[a, w]
            picked[d] = a
            gsum += gq[a]
            went = True
            break
        if went:
            d += 1
            entering = True
            continue
        open_[j] = True          # no alternative of this job fits: back up one depth
        if M == 1:
            fill[lane_w[j]] &= ~(one << lane_s[j])
        if memo:
            for w in range(W):
                open_bits[w] |= jm[j, w]
        rest += mn[j]
        if memo and 0 < d <= memo_depth:    # the subproblem at this depth has none
            h = np.int64(_subproblem(open_bits, blko[d], S) >> np.uint64(64 - memo_bits))
            if not _same_row(mkeys, h, S):
                for w in range(W):
                    mkeys[h, w] = S[w]
                mleft[h] = G - gsum
            elif G - gsum > mleft[h]:
                mleft[h] = G - gsum
        d -= 1
        if d < 0:
            return choice, False, True


def levels(g: np.ndarray, resolution: float) -> np.ndarray:
    """Integer levels of quantities: rounded up."""
    return np.ceil(np.asarray(g, np.float64) / resolution).astype(np.int64)


def cycle_limit(offsets: np.ndarray, g: np.ndarray) -> float:
    """``g* = sum_i floor(sum_{s in S^i} g(s) / l_i)`` (source): T* or B*."""
    sums = np.add.reduceat(g, offsets[:-1]) if len(g) else np.zeros(0)
    return float(np.floor(sums / np.diff(offsets)).sum())


def prepared(offsets, v, g, resolution: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """Checked ``(offsets, v, g, limit g*, limit in levels G)`` of a combination step."""
    offsets = np.asarray(offsets, np.int64)
    if np.any(np.diff(offsets) < 1):
        raise ValueError("every job in the DP needs at least one alternative")
    if not resolution > 0:
        raise ValueError(f"dp_resolution must be > 0, got {resolution}")
    v = np.asarray(v, np.float64)
    g = np.asarray(g, np.float64)
    limit = cycle_limit(offsets, g)
    return offsets, v, g, limit, int(np.floor(limit / resolution))


def placed_value(offsets: np.ndarray, v: np.ndarray, choice: np.ndarray) -> float:
    """Total v of the chosen alternatives of the jobs placed (``choice`` -1: postponed)."""
    on = choice >= 0
    return float(v[offsets[:-1][on] + choice[on]].sum()) if len(choice) else 0.0


def choose(offsets: np.ndarray, v: np.ndarray, g: np.ndarray, maximize: bool,
           resolution: float = 1.0, conflict: np.ndarray | None = None) -> Combination:
    """Choose one alternative per job: extr sum v subject to sum g <= g* (every job has >= 1).

    ``conflict``: bool[A, A], alternatives that cannot both be chosen (shared alternatives);
    then the exact branch and bound (module docstring), and ``choice`` -1 marks a postponed job.
    """
    offsets, v, g, limit, G = prepared(offsets, v, g, resolution)
    if conflict is not None:
        return _choose_conflicts(offsets, v, g, bool(maximize), resolution, limit, G,
                                 np.asarray(conflict, np.bool_))
    choice, feasible = _dp(offsets, v, levels(g, resolution), G, bool(maximize))
    if not feasible:
        choice = np.array([int(np.argmin(g[offsets[i]:offsets[i + 1]])) for i in range(len(offsets) - 1)],
                          np.int64)
    return Combination(choice, not feasible, limit, placed_value(offsets, v, choice))


#: most partial combinations the branch and bound tries per combination step (our rule). With the
#: feasibility search's combination to beat, 2e5 is 10x faster than 2e7 (0.04 s against 0.39 s a
#: default FRSM cycle) and within 1.1% of its total cost on average (2.5% at most, 15 cycles).
SEARCH_LIMIT = 200_000
#: most choices the feasibility search (:func:`_feasible`) tries per call (our rule)
FEASIBLE_LIMIT = 1_000_000
#: most choices the search for any conflict-free combination of every job tries (our rule)
ANY_LIMIT = 1_000_000
#: the feasibility search within the limit keeps a nogood cache of 2^NOGOOD_BITS subproblems, at depths
#: 1 ... NOGOOD_DEPTH (:func:`_feasible`; our rule; 0 bits: none). Not in the search of every job: with
#: the failure weights it cut fewer tries there than it cost (benchmarks/calibration.md)
NOGOOD_BITS = 14
NOGOOD_DEPTH = 12
#: that search first runs this many tries unweighted (the plain order, as without weights), then starts again
#: weighted (:func:`_feasible`, dom/wdeg) up to ``ANY_LIMIT`` (our rule)
ANY_PLAIN_LIMIT = 10_000


@kernel
def _greedy(offsets, g, conflict):
    """Jobs in priority order each take their least-``g`` alternative (ties: the first) that
    conflicts with none taken before; -1: none left (postponed). Each job's own index. A kernel,
    not Python: it runs in about a third of the calibrated CSS calls, and its Python loops cost
    about 1 ms a call."""
    J = offsets.shape[0] - 1
    choice = np.full(J, -1, np.int64)
    taken = np.empty(J, np.int64)
    n = 0
    for i in range(J):
        order = np.argsort(g[offsets[i]:offsets[i + 1]], kind="mergesort")     # stable
        for p in range(order.shape[0]):
            a = offsets[i] + order[p]
            free = True
            for t in range(n):
                if conflict[a, taken[t]]:
                    free = False
                    break
            if free:
                taken[n] = a
                n += 1
                choice[i] = order[p]
                break
    return choice


def _choose_conflicts(offsets, v, g, maximize, resolution, limit, G, conflict) -> Combination:
    gq = levels(g, resolution)
    J = len(offsets) - 1
    # First: is there a conflict-free combination of every job at all (regardless of the limit)?
    # Alternatives with fewer conflicts first (then smaller quantity): they leave the other jobs
    # the most room. If none is found, the limit cannot be met either: skip the costly searches
    # within the limit (most of a cycle's time when they run to their caps).
    degree = conflict.sum(axis=1).astype(np.float64)
    loose = degree * (float(np.abs(g).max()) + 1.0) + g if len(g) else g
    anyway, exists, complete = _feasible(offsets, loose, gq, np.int64(gq.sum()), conflict, ANY_PLAIN_LIMIT,
                                         False, 0, 0)
    if not complete:    # a hard call: again with failure weights (dom/wdeg), which proves or finds sooner
        anyway, exists, _ = _feasible(offsets, loose, gq, np.int64(gq.sum()), conflict, ANY_LIMIT, True, 0, 0)
    found = False
    if exists:
        key = -v if maximize else v
        start, found, _ = _feasible(offsets, key, gq, G, conflict, FEASIBLE_LIMIT, False, NOGOOD_BITS, NOGOOD_DEPTH)
        choice, found, _, _ = _bnb(offsets, v, gq, G, maximize, conflict, J, SEARCH_LIMIT,
                                   start if found else None)
        if not found:       # over the limit: the conflict-free combination of every job found above
            choice = anyway
    else:               # greedy in priority order: least quantity not conflicting with earlier picks
        choice = _greedy(offsets, g, conflict)
    flagged = not found
    return Combination(choice, flagged, limit, placed_value(offsets, v, choice))


def strategy_arrays(strategy: str, time: np.ndarray, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(v, g, maximize)`` of a strategy given each alternative's time and cost."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    v_name, g_name, maximize = STRATEGIES[strategy]
    pick = {"time": time, "cost": cost}
    return pick[v_name], pick[g_name], maximize
