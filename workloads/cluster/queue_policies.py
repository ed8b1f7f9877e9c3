"""Queue policies: which waiting jobs start at a scheduling pass (numba).

- ``fcfs``: start the queue head while it fits *(our rule)*;
- ``mpfs_scan``: queue ordered by requested cores, descending (ties by arrival); every
  job that fits now starts;
- ``easy``: start the head while it fits; then the head's shadow time is the first
  estimated end of a running job at which it fits (every job ending at that instant
  counted), ``extra`` the cores left over then; a later job starts now if it fits now
  and either ends by its estimate before the shadow time or uses at most ``extra``
  cores (which it then uses up);
- ``conservative``: every waiting job holds a reservation in the free-core profile,
  taken at arrival at its earliest fit; when capacity is given back early (a job ended
  before its estimate) the queue is compressed in FCFS order, each job moving to its
  earliest fit, never later; a job starts when its reservation time comes.

Backfilling plans with the user's estimate, and completions use the real time. Planned
durations on heterogeneous nodes *(our rule)*: EASY uses ``t / min s`` over the nodes
the allocator gives the job now (the only time it decides); conservative plans every
reservation with ``t / s_slowest`` (slowest node of the cluster), which never under-
estimates, so no reservation is ever delayed; at the start the unused tail is given
back and the queue compressed. With homogeneous speed 1 both are simply ``t``.

Each pass takes the same state tuples as ``bookkeeping.started``. The queue array
``q[ctr[I_QH]:ctr[I_QT]]`` holds the waiting jobs in queue order as entries
``cores << 32 | job`` (:func:`entry`), so a scan tests a job's size without touching the
job arrays, with :data:`HOLE` (larger than any size) where a job has started
(``ctr[I_Q]`` live ones); a scan that stops early (no free core left) then costs only
what it scanned, and :func:`compact` squeezes the holes out now and then.
"""
from __future__ import annotations

import numpy as np

from . import allocation, events, profile
from ..kernel_support.jit import kernel_without_refcount as kernel, inline_without_refcount as kernel_inline
from .bookkeeping import (
    C_SHADOW, C_SMAX, C_SMIN, C_WAKE, I_ARRIVED, I_BY_COUNT, I_COMPRESS, I_DUE, I_FREE, I_HSIZE, I_PASS_HEAD,
    I_PASS_VER, I_Q, I_QH, I_QT, I_R, I_RVER, I_SCAN_END, I_SEQ, I_SH_EXTRA, I_SH_HEAD, I_SH_VER, I_UNPLACEABLE,
    started, take_chosen, take_in_order)


#: A started job's place in the queue; its "size" (``HOLE >> 32``) exceeds any cluster.
HOLE = np.int64(1) << np.int64(62)
_JOB = np.int64(0xFFFFFFFF)


@kernel_inline
def entry(n: int, j: int) -> int:
    """The queue entry of job j of n cores (jobs and cores below 2**30)."""
    return (n << 32) | j


@kernel_inline
def _try_fit(j, jb, nd, ctr, alloc_policy, rng, cand_node, cand_k) -> int:
    n = jb[1][j]
    if n > ctr[I_FREE]:
        return -1
    return allocation.choose(alloc_policy, n, jb[2][j], jb[3][j], nd[4], nd[5], nd[6], nd[3],
                             nd[7], nd[9], nd[10], rng, cand_node, cand_k)


@kernel
def start_in_order(j, now, alloc_policy, nd, jb, out, alloc, run, heap, ctr, clk, prof, policy_q) -> None:
    """Start job j now on the nodes ``take_in_order`` takes (the caller has checked that
    its cores are free, ``ctr[I_BY_COUNT]`` set).

    A call, not inlined: a job starts once, so the call costs little, while every
    inlined copy of the start's bookkeeping costs seconds of compile time in each pass
    and loop that holds one."""
    started(j, now, take_in_order(j, alloc_policy, nd, jb, alloc, ctr, clk), jb, out, run, heap, ctr, clk, prof,
            policy_q)


@kernel
def start_chosen(j, m, now, nd, jb, out, alloc, run, heap, ctr, clk, prof, cand_node, cand_k, policy_q) -> None:
    """Start job j now on the m nodes ``allocation.choose`` wrote to ``cand_node`` /
    ``cand_k`` (a call, as :func:`start_in_order`)."""
    started(j, now, take_chosen(j, m, cand_node, cand_k, nd, jb, alloc, ctr, clk), jb, out, run, heap, ctr, clk,
            prof, policy_q)


@kernel_inline
def _try_start(j, now, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, cand_node, cand_k, rng, alloc_policy,
               policy_q) -> bool:
    """Start job j now if the allocation policy finds it room; whether it started."""
    if ctr[I_BY_COUNT]:   # fits exactly when its cores are free (see simulator.new_state)
        if jb[1][j] > ctr[I_FREE]:
            return False
        start_in_order(j, now, alloc_policy, nd, jb, out, alloc, run, heap, ctr, clk, prof, policy_q)
    else:
        m = _try_fit(j, jb, nd, ctr, alloc_policy, rng, cand_node, cand_k)
        if m < 0:
            return False
        start_chosen(j, m, now, nd, jb, out, alloc, run, heap, ctr, clk, prof, cand_node, cand_k, policy_q)
    return True


@kernel
def compact(q, ctr) -> None:
    """Remove the holes of started jobs; the live jobs keep their order."""
    w = ctr[I_QH]
    for k in range(ctr[I_QH], ctr[I_QT]):
        if q[k] != HOLE:
            q[w] = q[k]
            w += 1
    ctr[I_QT] = w


@kernel_inline
def _maybe_compact(q, ctr) -> None:
    if ctr[I_QT] - ctr[I_QH] > 2 * ctr[I_Q] + 64:
        compact(q, ctr)


@kernel_inline
def _start_heads(now, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, cand_node, cand_k, rng, alloc_policy,
                 policy_q) -> int:
    """Start the queue head while it fits; returns the first job left (-1: queue empty)."""
    while ctr[I_QH] < ctr[I_QT]:
        v = q[ctr[I_QH]]
        if v != HOLE:
            j = v & _JOB
            if not _try_start(j, now, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, cand_node, cand_k, rng,
                              alloc_policy, policy_q):
                return j
            ctr[I_Q] -= 1
        ctr[I_QH] += 1
    return -1


@kernel
def fcfs_pass(now, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k,
              rng, alloc_policy, policy_q) -> None:
    _start_heads(now, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, cand_node, cand_k, rng, alloc_policy,
                 policy_q)


@kernel
def scan_pass(now, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k,
              rng, alloc_policy, policy_q) -> None:
    """Start every job that fits, in queue order (MPFS scan when q is MPFS-ordered).

    Leaves the queue without holes (MPFS inserts by binary search)."""
    w = ctr[I_QH]
    for k in range(ctr[I_QH], ctr[I_QT]):
        v = q[k]
        if v == HOLE:
            continue
        j = v & _JOB
        if ctr[I_FREE] > 0 and _try_start(j, now, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, cand_node,
                                          cand_k, rng, alloc_policy, policy_q):
            ctr[I_Q] -= 1
        else:
            q[w] = v
            w += 1
    ctr[I_QT] = w


@kernel
def _min_speed(speed, cand_node, m) -> float:
    s = np.inf
    for a in range(m):
        if speed[cand_node[a]] < s:
            s = speed[cand_node[a]]
    return s


@kernel_inline
def _end_easy_pass(q, ctr, head: int) -> None:
    """Remember the state a pass ended in (see :func:`_first_to_scan`)."""
    _maybe_compact(q, ctr)
    ctr[I_PASS_HEAD] = head
    ctr[I_PASS_VER] = ctr[I_RVER]
    ctr[I_SCAN_END] = ctr[I_QT]


@kernel_inline
def _first_to_scan(head: int, ctr, clk, alloc_policy: int) -> int:
    """Queue position where EASY's backfill scan starts.

    Normally right after the head. But if no job started or ended since the last pass
    (only arrivals happened) and the head is the same, every job the last pass scanned
    failed against a state at least as generous as now's (free cores and ``extra`` only
    fell during that pass, the shadow is the same and ``now`` is later), so only the new
    arrivals at the tail need a look. This needs the fit test to be monotone and draw
    nothing: homogeneous speeds (else a smaller free set may give faster nodes) and no
    random_first (it draws at every try).
    """
    k0 = ctr[I_QH] + 1
    if (ctr[I_PASS_HEAD] == head and ctr[I_PASS_VER] == ctr[I_RVER] and clk[C_SMIN] == clk[C_SMAX]
            and alloc_policy != allocation.RANDOM_FIRST and ctr[I_SCAN_END] > k0):
        k0 = ctr[I_SCAN_END]
    return k0


@kernel_inline
def _next_fitting(q, k: int, qt: int, free: int) -> int:
    """The first queue position from k on whose job asks for at most ``free`` cores
    (never a hole), or qt. One comparison per entry: entries order by size first."""
    limit = (free + 1) << 32
    while k < qt and q[k] >= limit:
        k += 1
    return k


@kernel_inline
def _shadow(head: int, jb, run, ctr, clk):
    """(shadow time, extra cores) of the head: the first estimated end at which it fits,
    every job ending at that instant counted. Cached while the head, the running set and
    the free cores (``I_RVER``) stay the same."""
    if ctr[I_SH_HEAD] == head and ctr[I_SH_VER] == ctr[I_RVER]:
        return clk[C_SHADOW], ctr[I_SH_EXTRA]
    run_end, run_nj = run
    need = jb[1][head]
    avail = ctr[I_FREE]
    shadow = np.inf
    extra = 0
    r = ctr[I_R]
    for k in range(r):
        avail += run_nj[k] >> 32
        if avail >= need and (k + 1 == r or run_end[k + 1] != run_end[k]):
            shadow = run_end[k]
            extra = avail - need
            break
    ctr[I_SH_HEAD] = head
    ctr[I_SH_VER] = ctr[I_RVER]
    ctr[I_SH_EXTRA] = extra
    clk[C_SHADOW] = shadow
    return shadow, extra


@kernel_inline
def easy_pass(now, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k,
              rng, alloc_policy, policy_q) -> None:
    head = _start_heads(now, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, cand_node, cand_k, rng,
                        alloc_policy, policy_q)
    if head < 0:
        _end_easy_pass(q, ctr, head)
        return
    bound = out[5]
    if ctr[I_FREE] == 0 and not np.isnan(bound[head]):
        _end_easy_pass(q, ctr, head)
        return                    # nothing can backfill, and the head's guarantee is recorded
    if np.isnan(bound[head]):
        bound[head] = _shadow(head, jb, run, ctr, clk)[0]
    est = jb[4]
    speed = nd[3]
    have_shadow = False
    shadow = np.inf
    extra = 0
    k = _first_to_scan(head, ctr, clk, alloc_policy)
    qt = ctr[I_QT]
    while ctr[I_FREE] > 0:        # else nothing more can start
        k = _next_fitting(q, k, qt, ctr[I_FREE])
        if k == qt:
            break
        at = k
        k += 1
        n = q[at] >> 32
        if not have_shadow:       # wanted only once some job fits the free cores
            shadow, extra = _shadow(head, jb, run, ctr, clk)
            have_shadow = True
        j = q[at] & _JOB
        e = est[j] / clk[C_SMAX]  # on the fastest nodes: a lower bound, exact if all are equal
        if n > extra and now + e > shadow:
            continue              # would end after the shadow even on the fastest nodes
        if clk[C_SMIN] == clk[C_SMAX] and ctr[I_BY_COUNT]:
            # fits (n <= free cores) and, e being exact, ends by the shadow or fits extra
            start_in_order(j, now, alloc_policy, nd, jb, out, alloc, run, heap, ctr, clk, prof, policy_q)
        else:
            m = _try_fit(j, jb, nd, ctr, alloc_policy, rng, cand_node, cand_k)
            if m < 0:
                continue
            if clk[C_SMIN] != clk[C_SMAX]:
                e = est[j] / _min_speed(speed, cand_node, m)
                if now + e > shadow and n > extra:
                    continue      # on these nodes it would delay the head
            start_chosen(j, m, now, nd, jb, out, alloc, run, heap, ctr, clk, prof, cand_node, cand_k, policy_q)
        if now + e > shadow:
            extra -= n
        q[at] = HOLE
        ctr[I_Q] -= 1
    _end_easy_pass(q, ctr, head)


@kernel
def _reserve(j, s, now, jb, out, heap, ctr, clk, prof, res, dplan, wake_heap: bool) -> int:
    """Reserve [s, s + planned duration) for job j; returns what ``profile.add`` does.

    The wake-up at s (if s is later than now) is a JOB_START event on the heap when
    ``wake_heap`` (the network's loop; a moved reservation leaves its old wake-up
    stale there), else ``clk[C_WAKE]`` = the earliest reservation after now (part 1's
    loops: see :func:`start_due`)."""
    pt, pf, meta, _pm = prof
    changed = profile.add(pt, pf, meta, s, s + dplan[j], -jb[1][j])
    res[j] = s
    out[7][j] = s + dplan[j]
    if s == now:
        ctr[I_DUE] += 1
    if np.isnan(out[5][j]):
        out[5][j] = s
    if s > now:
        if wake_heap:
            events.push_kind(heap, ctr, I_HSIZE, I_SEQ, s, events.JOB_START, j)
        elif s < clk[C_WAKE]:
            clk[C_WAKE] = s
    return changed


@kernel
def start_due(now, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k,
              rng, alloc_policy, policy_q) -> None:
    """Start, in queue order, the jobs whose reservation time is now (if any is due),
    and set ``clk[C_WAKE]`` to the earliest reservation after now of the jobs left.

    That keeps ``clk[C_WAKE]`` exact for part 1's loops: a reservation only ever moves
    earlier (``_reserve`` lowers the wake-up to it) and a job leaves the queue only
    here, so the earliest reservation rises only here. When nothing is due it is
    unchanged."""
    if ctr[I_DUE] == 0:
        return
    ctr[I_DUE] = 0
    wake = np.inf
    for k in range(ctr[I_QH], ctr[I_QT]):
        j = q[k] & _JOB
        if q[k] != HOLE:
            r = res[j]
            if r == now:
                if _try_start(j, now, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, cand_node, cand_k, rng,
                              alloc_policy, policy_q):
                    q[k] = HOLE
                    ctr[I_Q] -= 1
                else:   # only possible if memory/disk bind, which check_params forbids
                    ctr[I_UNPLACEABLE] += 1
            elif r > now and r < wake:
                wake = r
    clk[C_WAKE] = wake
    while ctr[I_QH] < ctr[I_QT] and q[ctr[I_QH]] == HOLE:
        ctr[I_QH] += 1
    _maybe_compact(q, ctr)


@kernel_inline
def conservative_plan(now, q, jb, out, heap, ctr, clk, prof, res, dplan, wake_heap: bool) -> None:
    """Conservative backfilling's reservations at ``now`` (the pass without its starts;
    ``wake_heap`` as in :func:`_reserve`)."""
    pt, pf, meta, pm = prof
    profile.prune(pt, pf, meta, now)
    if ctr[I_COMPRESS] != 0:
        ctr[I_COMPRESS] = 0
        pv = meta[0]                        # pm (prefix max of free cores) valid below pv
        for k in range(ctr[I_QH], ctr[I_QT]):
            if q[k] == HOLE:
                continue
            j = q[k] & _JOB
            r = res[j]
            n = jb[1][j]
            if np.isnan(r):                 # arrived now: first placement
                pv = min(pv, _reserve(j, profile.earliest(pt, pf, meta, now, n, dplan[j], np.inf), now, jb, out,
                                      heap, ctr, clk, prof, res, dplan, wake_heap))
                continue
            if r <= now:
                continue                    # cannot move earlier than now
            most, pv = profile.max_free_before(pt, pf, meta, pm, pv, r)
            if most < n:
                continue                    # never n free cores before r: cannot move
            s = profile.earliest(pt, pf, meta, now, n, dplan[j], r)
            if s < r:
                pv = min(pv, profile.add(pt, pf, meta, r, r + dplan[j], n))
                pv = min(pv, _reserve(j, s, now, jb, out, heap, ctr, clk, prof, res, dplan, wake_heap))
    else:
        for k in range(ctr[I_QT] - ctr[I_ARRIVED], ctr[I_QT]):   # this time's arrivals, at the tail
            j = q[k] & _JOB
            _reserve(j, profile.earliest(pt, pf, meta, now, jb[1][j], dplan[j], np.inf), now, jb, out, heap, ctr,
                     clk, prof, res, dplan, wake_heap)
