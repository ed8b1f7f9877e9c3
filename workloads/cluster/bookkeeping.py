"""Simulator state and the bookkeeping of starting and ending jobs (numba).

Part 1 models computation only: a job on nodes I runs ``tau / min_{i in I} s_i`` and is
killed at ``t / min s_i`` if that is shorter (:func:`started` pushes the right event).

State is plain arrays grouped in tuples (built by ``simulator.new_state``):
- ``nd``: per node cores, memory, disk (KB), speed, free cores/memory/disk, and the
  allocation scan order, its bitset and scratch;
- ``jb``: per job submit (s), cores n, memory and disk per process (KB), estimate t and
  computation tau (s, unit speed);
- ``out``: per job start, end (s), killed (0/1), distinct nodes used, min node speed,
  guaranteed start (first EASY shadow or first conservative reservation, NaN if none),
  estimated end, planned end (conservative profile window end), masked clock at start;
- ``ctr``: int64 counters (see the I_* constants); ``acc``: per-node integrals of used
  cores, memory and disk over delta-masked time (added when a job ends).
"""
from __future__ import annotations

import numpy as np

from numba.cpython.unsafe.numbers import trailing_zeros

from ..kernel_support.jit import kernel_without_refcount as kernel, inline_without_refcount as kernel_inline
from .choices import CL_MASKS, QUEUE_NAMES  # handed on from here too

from . import allocation, events, profile

# ctr slots
(I_HSIZE, I_SEQ, I_CURSOR, I_R, I_Q, I_FREE, I_COMPRESS, I_ARRIVED, I_STARTED, I_UNPLACEABLE, I_QH,
 I_QT, I_RVER, I_SH_HEAD, I_SH_VER, I_SH_EXTRA, I_DUE, I_PASS_HEAD, I_PASS_VER, I_SCAN_END, I_BY_COUNT) = range(21)
N_CTR = 21
# clk slots: masked clocks and integrals
C_TPREV, C_MDELTA, C_MSIGMA, C_CLACC, C_SPEEDFREE, C_DELTA, C_SIGMA, C_SHADOW, C_SMIN, C_SMAX, C_WAKE = range(11)
N_CLK = 11

FCFS, MPFS_SCAN, EASY, CONSERVATIVE = 0, 1, 2, 3     # codes: indices of QUEUE_NAMES


# ---------------------------------------------------------------- metric integrals
@kernel_inline
def _advance_clocks(t: float, clk) -> None:
    """Account [t_prev, t) with the state recorded after the previous scheduling pass."""
    dt = t - clk[C_TPREV]
    if dt > 0.0:
        if clk[C_DELTA] > 0.0:
            clk[C_MDELTA] += dt
        if clk[C_SIGMA] > 0.0:
            clk[C_MSIGMA] += dt
            clk[C_CLACC] += dt * clk[C_SPEEDFREE]
    clk[C_TPREV] = t


@kernel_inline
def _record_state(ctr, clk, total_cores: int, cl_mask: int) -> None:
    """delta and sigma masks of the state after this time's events and pass."""
    busy = ctr[I_Q] > 0
    clk[C_DELTA] = 1.0 if busy else 0.0
    if cl_mask == 0:
        clk[C_SIGMA] = 1.0 if (busy and ctr[I_FREE] < total_cores) else 0.0
    else:
        clk[C_SIGMA] = clk[C_DELTA]


# ---------------------------------------------------------------- running set (EASY)
@kernel_inline
def _running_insert(run_end, run_nj, ctr, end: float, n: int, j: int) -> None:
    """Insert job j (n cores) into the running list kept sorted by estimated end (ties:
    insertion order). Entries pack ``n << 32 | j``, so a move is two words, not three.

    An insertion-sort step from the tail, not a binary search: the list is short (tens of
    jobs) and the search's unpredictable branches cost more than the moves it saves."""
    k = ctr[I_R]
    while k > 0 and run_end[k - 1] > end:
        run_end[k] = run_end[k - 1]
        run_nj[k] = run_nj[k - 1]
        k -= 1
    run_end[k] = end
    run_nj[k] = (n << 32) | j
    ctr[I_R] += 1


@kernel_inline
def _running_remove(run_end, run_nj, ctr, end: float, n: int, j: int) -> None:
    r = ctr[I_R]
    lo, hi = 0, r
    while lo < hi:
        mid = (lo + hi) >> 1
        if run_end[mid] < end:
            lo = mid + 1
        else:
            hi = mid
    k = lo
    v = (n << 32) | j
    while run_nj[k] != v:
        k += 1
    for i in range(k, r - 1):
        run_end[i] = run_end[i + 1]
        run_nj[i] = run_nj[i + 1]
    ctr[I_R] = r - 1


# ---------------------------------------------------------------- start / finish
# A start is two steps: take the nodes (``take_chosen`` or ``take_in_order``), then
# ``started``. The passes call ``queue_policies.start_chosen`` / ``start_in_order``, the
# two places these are inlined: numba inlines at the IR level, so every extra copy costs
# compile time, and a job starts only once, so the call costs little.
@kernel_inline
def take_chosen(j: int, m: int, cand_node, cand_k, nd, jb, alloc, ctr, clk):
    """Give job j the chosen nodes ``cand_node[:m]`` (``cand_k`` processes each); returns
    (m, slowest node's speed, speed-weighted free cores) for :func:`started`."""
    speed, fc, fm, fdk, order_rank, bits = nd[3], nd[4], nd[5], nd[6], nd[8], nd[9]
    mr, dr = jb[2][j], jb[3][j]
    alloc_ptr, alloc_node, alloc_k = alloc
    ptr = ctr[I_CURSOR]
    alloc_ptr[j] = ptr
    smin = np.inf
    speed_free = clk[C_SPEEDFREE]     # a local: the loop's stores go to node arrays only
    for a in range(m):
        i = cand_node[a]
        k = cand_k[a]
        fc[i] -= k
        if mr != 0.0:
            fm[i] -= k * mr
        if dr != 0.0:
            fdk[i] -= k * dr
        if fc[i] == 0:
            allocation.bit_set(bits, order_rank[i], False)
        speed_free -= speed[i] * k
        alloc_node[ptr + a] = i
        alloc_k[ptr + a] = k
        if speed[i] < smin:
            smin = speed[i]
    return m, smin, speed_free


@kernel_inline
def take_in_order(j: int, alloc_policy: int, nd, jb, alloc, ctr, clk):
    """Give job j the nodes ``allocation.choose`` would choose, choosing and taking them in
    one pass over the bitset of nodes with free cores; returns as :func:`take_chosen`.

    Only for an ordered policy (first_fit, fastest_first) and jobs with no memory or disk
    per process (``ctr[I_BY_COUNT]``), where a job fits exactly when its cores are free:
    the caller has checked ``n <= ctr[I_FREE]``. The scan is ``choose``'s, written again
    on purpose: skipping the candidate arrays saves a write and a read per node of every
    start."""
    speed, fc, order, bits = nd[3], nd[4], nd[7], nd[9]
    alloc_ptr, alloc_node, alloc_k = alloc
    ptr = ctr[I_CURSOR]
    alloc_ptr[j] = ptr
    left = jb[1][j]
    m = 0
    smin = np.inf
    speed_free = clk[C_SPEEDFREE]
    w = 0
    while left > 0:
        x = bits[w]
        while x != 0 and left > 0:
            r = (w << 6) + trailing_zeros(x)
            i = r if alloc_policy == allocation.FIRST_FIT else order[r]   # first fit: rank = node id
            fi = fc[i]                # > 0: the bit is set
            k = min(fi, left)
            fc[i] = fi - k
            if k == fi:               # node full: clear its bit
                x &= x - np.uint64(1)
            left -= k
            speed_free -= speed[i] * k
            alloc_node[ptr + m] = i
            alloc_k[ptr + m] = k
            m += 1
            if speed[i] < smin:
                smin = speed[i]
        bits[w] = x
        w += 1
    return m, smin, speed_free


@kernel_inline
def started(j: int, now: float, taken, jb, out, run, heap, ctr, clk, prof, policy_q: int) -> None:
    """The bookkeeping of job j's start at ``now`` once it holds ``alloc_node[ptr:ptr + m]``
    (``ptr = ctr[I_CURSOR]``; ``taken = (m, smin, speed_free)`` from a ``take_*``): times,
    its end or kill event, the queue policy's plan."""
    m, smin, speed_free = taken
    n, est, tau = jb[1][j], jb[4][j], jb[5][j]
    clk[C_SPEEDFREE] = speed_free
    ctr[I_CURSOR] += m
    ctr[I_FREE] -= n
    ctr[I_STARTED] += 1
    ctr[I_RVER] += 1
    start, end, killed, nused, sminv, _bound, est_end, plan_end, mstart = out
    start[j] = now
    mstart[j] = clk[C_MDELTA]
    nused[j] = m
    sminv[j] = smin
    real = tau / smin
    lim = est / smin
    est_end[j] = now + lim
    if real <= lim:
        events.push_kind(heap, ctr, I_HSIZE, I_SEQ, now + real, events.COMPUTE_END, j)
    else:
        events.push_kind(heap, ctr, I_HSIZE, I_SEQ, now + lim, events.KILL, j)
    if policy_q == EASY:
        run_end, run_nj = run
        _running_insert(run_end, run_nj, ctr, now + lim, n, j)
    elif policy_q == CONSERVATIVE:
        pt, pf, meta, _pm = prof
        if now + lim < plan_end[j]:      # faster nodes than planned: give the tail back
            profile.add(pt, pf, meta, now + lim, plan_end[j], n)
            plan_end[j] = now + lim
            ctr[I_COMPRESS] = 1


@kernel_inline
def finish_job(j: int, now: float, was_killed: bool, nd, jb, out, alloc, run, ctr, acc, clk, prof,
               policy_q: int) -> None:
    """Job j's processes end (or are killed) at ``now``: free its resources."""
    speed, fc, fm, fdk, order_rank, bits = nd[3], nd[4], nd[5], nd[6], nd[8], nd[9]
    n, mr, dr = jb[1][j], jb[2][j], jb[3][j]
    alloc_ptr, alloc_node, alloc_k = alloc
    start, end, killed, nused, _smin, _bound, est_end, plan_end, mstart = out
    acc_u, acc_m, acc_d = acc[1], acc[2], acc[3]
    dm = clk[C_MDELTA] - mstart[j]
    ptr = alloc_ptr[j]
    speed_free = clk[C_SPEEDFREE]
    for a in range(nused[j]):
        i = alloc_node[ptr + a]
        k = alloc_k[ptr + a]
        # node i held k processes over masked time dm: add their cores, memory and disk
        acc_u[i] += k * dm
        if mr != 0.0:
            acc_m[i] += k * mr * dm
            fm[i] += k * mr
        if dr != 0.0:
            acc_d[i] += k * dr * dm
            fdk[i] += k * dr
        if fc[i] == 0:
            allocation.bit_set(bits, order_rank[i], True)
        fc[i] += k
        speed_free += speed[i] * k
    clk[C_SPEEDFREE] = speed_free
    ctr[I_FREE] += n
    ctr[I_RVER] += 1
    end[j] = now
    killed[j] = 1 if was_killed else 0
    if policy_q == EASY:
        run_end, run_nj = run
        _running_remove(run_end, run_nj, ctr, est_end[j], n, j)
    elif policy_q == CONSERVATIVE:
        pt, pf, meta, _pm = prof
        if now < plan_end[j]:            # ended before its estimate: compress the queue
            profile.add(pt, pf, meta, now, plan_end[j], n)
            ctr[I_COMPRESS] = 1


@kernel
def finish(j: int, now: float, was_killed: bool, nd, jb, out, alloc, run, ctr, acc, clk, prof,
           policy_q: int) -> None:
    """:func:`finish_job` as a call: one compiled copy for the event loops (a job ends once,
    so the call costs little), except conservative's part-1 loop, which inlines it (the
    call was measured to halve it on KTH-SP2). Pass a computed bool, not the literal True
    or False: each literal would compile a copy."""
    finish_job(j, now, was_killed, nd, jb, out, alloc, run, ctr, acc, clk, prof, policy_q)
