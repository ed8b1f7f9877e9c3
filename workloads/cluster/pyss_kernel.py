"""pyss-compatible scheduling (``shared/spec/cluster.md``, "Literature-compatible semantics").

A separate kernel, compiled only by specs with ``semantics = "pyss"``: the default
kernel (``simulator.py``) is untouched. The machine is a pool of ``total`` interchangeable
processors (pyss's model; ``check_params`` admits only clusters where that is exact).

Rules (as the plain reference ``tests/naive_pyss.py``):
- events one at a time: submissions (in queue order) before terminations at equal times,
  terminations in the order their jobs started; a job's start only schedules its
  termination, so starts need no event of their own here;
- after a submission a pass only if the new job fits now; after every termination a pass;
- the capacity snapshot holds each running job as ``[start, start + estimate)`` (and, in
  conservative, each waiting job's reservation): an estimated end is free capacity from
  then on, even before that job's termination at the same instant is handled;
- FCFS: start from the head while the head fits; EASY: then reserve the head at its
  earliest start and start each later job that fits now beside that reservation;
  conservative: reserve each job at submission at its earliest start; after a
  termination move every waiting job, in queue order, to its earliest start (one pass).

Capacity questions rebuild a step profile from the snapshot (O(R log R), R intervals);
a pass rebuilds it only after it changed.
"""
from __future__ import annotations

import numpy as np

from ._jit import allocating, kernel

# functions that allocate (argsort, the state arrays) need numba's reference counting
jit = allocating

FCFS, EASY, CONSERVATIVE = 0, 1, 2
NAMES = ("fcfs", "easy", "conservative")


@jit
def _profile(now, act, na, s, e, p, total, tt, dd, T, F) -> int:
    """Boundaries ``T[:k]`` (T[0] = now) and free processors ``F[i]`` on ``[T[i], T[i+1])``
    of the snapshot intervals ``act[:na]`` from ``now`` on; returns k."""
    m = 1
    tt[0] = now
    dd[0] = 0
    for i in range(na):
        j = act[i]
        if e[j] > now:
            tt[m] = max(s[j], now)
            dd[m] = -p[j]
            tt[m + 1] = e[j]
            dd[m + 1] = p[j]
            m += 2
    order = np.argsort(tt[:m], kind="mergesort")
    k = 0
    free = total
    i = 0
    while i < m:
        t = tt[order[i]]
        while i < m and tt[order[i]] == t:
            free += dd[order[i]]
            i += 1
        T[k] = t
        F[k] = free
        k += 1
    return k


@kernel
def _fits_at(T, F, k, i, procs, dur) -> bool:
    t1 = T[i] + dur
    for m in range(i, k):
        if T[m] >= t1:
            break
        if F[m] < procs:
            return False
    return True


@kernel
def _earliest(T, F, k, procs, dur) -> float:
    for i in range(k):
        if _fits_at(T, F, k, i, procs, dur):
            return T[i]
    return np.inf


@kernel
def _heap_push(ht, hj, n, t, j) -> int:
    """Termination heap keyed by (time, push order): push order kept by a stable sift."""
    i = n
    ht[i] = t
    hj[i] = j
    while i > 0:
        par = (i - 1) >> 1
        if ht[par] > ht[i] or (ht[par] == ht[i] and hj[par] >> 32 > hj[i] >> 32):
            ht[par], ht[i] = ht[i], ht[par]
            hj[par], hj[i] = hj[i], hj[par]
            i = par
        else:
            break
    return n + 1


@kernel
def _heap_pop(ht, hj, n) -> int:
    n -= 1
    ht[0] = ht[n]
    hj[0] = hj[n]
    i = 0
    while True:
        lo = 2 * i + 1
        if lo >= n:
            break
        c = lo
        if lo + 1 < n and (ht[lo + 1] < ht[lo] or (ht[lo + 1] == ht[lo] and hj[lo + 1] >> 32 < hj[lo] >> 32)):
            c = lo + 1
        if ht[c] < ht[i] or (ht[c] == ht[i] and hj[c] >> 32 < hj[i] >> 32):
            ht[c], ht[i] = ht[i], ht[c]
            hj[c], hj[i] = hj[i], hj[c]
            i = c
        else:
            break
    return n


@jit
def simulate_pyss(submit, run, procs, est, total: int, policy: int):
    """Start times (s) of every job of a flow in queue order, under pyss's rules.

    ``run`` <= ``est`` for every job (pyss's conversion cuts a job at its request)."""
    nj = submit.size
    start = np.empty(nj)
    start[:] = np.nan
    s = np.zeros(nj)            # snapshot interval of job j: [s, e) on p processors
    e = np.zeros(nj)
    p = procs.astype(np.int64)
    act = np.zeros(nj + 1, np.int64)   # jobs with an interval; pos[j] its index, -1 none
    pos = -np.ones(nj + 1, np.int64)
    na = 0
    wait = np.zeros(nj, np.int64)      # waiting jobs in queue order
    nw = 0
    ht = np.zeros(nj + 1)
    hj = np.zeros(nj + 1, np.int64)    # push order << 32 | job
    nh = 0
    seq = 0
    tt = np.zeros(2 * nj + 3)
    dd = np.zeros(2 * nj + 3, np.int64)
    T = np.zeros(2 * nj + 3)
    F = np.zeros(2 * nj + 3, np.int64)
    ia = 0
    while ia < nj or nh > 0:
        if ia < nj and (nh == 0 or submit[ia] <= ht[0]):
            now = submit[ia]
            j = ia
            ia += 1
            wait[nw] = j
            nw += 1
            k = _profile(now, act, na, s, e, p, total, tt, dd, T, F)
            if policy == CONSERVATIVE:
                t = _earliest(T, F, k, p[j], est[j])
                s[j] = t
                e[j] = t + est[j]
                act[na] = j
                pos[j] = na
                na += 1
                if t == now:
                    start[j] = now
                    nh = _heap_push(ht, hj, nh, now + run[j], (seq << 32) | j)
                    seq += 1
                    nw -= 1
                continue
            if not _fits_at(T, F, k, 0, p[j], est[j]):
                continue
        else:
            now = ht[0]
            j = hj[0] & 0xFFFFFFFF
            nh = _heap_pop(ht, hj, nh)
            i = pos[j]                  # remove j's interval
            na -= 1
            act[i] = act[na]
            pos[act[i]] = i
            pos[j] = -1
        # the scheduling pass
        if policy == CONSERVATIVE:
            w = 0
            for r in range(nw):
                j = wait[r]
                if s[j] > now:
                    i = pos[j]
                    na -= 1
                    act[i] = act[na]
                    pos[act[i]] = i
                    k = _profile(now, act, na, s, e, p, total, tt, dd, T, F)
                    t = _earliest(T, F, k, p[j], est[j])
                    s[j] = t
                    e[j] = t + est[j]
                    act[na] = j
                    pos[j] = na
                    na += 1
                if s[j] == now:
                    start[j] = now
                    nh = _heap_push(ht, hj, nh, now + run[j], (seq << 32) | j)
                    seq += 1
                else:
                    wait[w] = j
                    w += 1
            nw = w
            continue
        k = _profile(now, act, na, s, e, p, total, tt, dd, T, F)
        h = 0                           # FCFS part: the head while it fits
        while h < nw and _fits_at(T, F, k, 0, p[wait[h]], est[wait[h]]):
            j = wait[h]
            start[j] = now
            s[j] = now
            e[j] = now + est[j]
            act[na] = j
            pos[j] = na
            na += 1
            nh = _heap_push(ht, hj, nh, now + run[j], (seq << 32) | j)
            seq += 1
            h += 1
            k = _profile(now, act, na, s, e, p, total, tt, dd, T, F)
        for r in range(h, nw):
            wait[r - h] = wait[r]
        nw -= h
        if policy == EASY and nw > 1:
            hd = wait[0]
            t = _earliest(T, F, k, p[hd], est[hd])
            s[hd] = t
            e[hd] = t + est[hd]
            act[na] = hd
            pos[hd] = na
            na += 1
            k = _profile(now, act, na, s, e, p, total, tt, dd, T, F)
            w = 1
            for r in range(1, nw):
                j = wait[r]
                if _fits_at(T, F, k, 0, p[j], est[j]):
                    start[j] = now
                    s[j] = now
                    e[j] = now + est[j]
                    act[na] = j
                    pos[j] = na
                    na += 1
                    nh = _heap_push(ht, hj, nh, now + run[j], (seq << 32) | j)
                    seq += 1
                    k = _profile(now, act, na, s, e, p, total, tt, dd, T, F)
                else:
                    wait[w] = j
                    w += 1
            nw = w
            i = pos[hd]                 # the head's reservation is not kept
            na -= 1
            act[i] = act[na]
            pos[act[i]] = i
            pos[hd] = -1
    return start


def schedule_flow(f, queue: str, cl_mask: str = "queue_nonempty_and_not_all_idle"):
    """Simulate a ``Flow`` (``workloads.cluster``) under pyss's rules; a ``simulator.Result``.

    Jobs cut at their request by pyss's conversion (``f.cut``) count as killed. Per-node
    integrals do not exist in a processor pool: ``node_core_util`` holds the pool's
    time-averaged busy fraction on every node (so ``utilization`` and ``cluster_loss``
    are exact on identical nodes; ``run_batch`` reports the variances NaN), memory and
    disk utilisations are NaN, ``nodes_used`` is the core count on single-core nodes and
    NaN otherwise; ``bound`` (guaranteed starts) is NaN.
    """
    from .simulator import Result

    if queue not in NAMES:
        raise ValueError(f"queue {queue!r}: semantics 'pyss' supports {', '.join(NAMES)}")
    submit = np.ascontiguousarray(f.submit, np.float64)
    run = np.ascontiguousarray(f.tau, np.float64)
    est = np.ascontiguousarray(f.estimate, np.float64)
    n = np.ascontiguousarray(f.cores_req, np.int64)
    if np.any(run > est):
        raise ValueError("semantics 'pyss': every run time must be <= its estimate (pyss's conversion cuts them)")
    total = int(np.sum(f.node_cores))
    nj = submit.size
    start = simulate_pyss(submit, run, n, est, total, NAMES.index(queue)) if nj else np.zeros(0)
    end = start + run
    cut = getattr(f, "cut", None)
    killed = (np.zeros(nj, np.int8) if cut is None else np.asarray(cut, np.int8))
    masked, sigma_t, busy_int, free_int = _integrals(submit, start, end, n, total, cl_mask)
    p = int(np.size(f.node_cores))
    u = np.full(p, busy_int / (masked * total)) if masked > 0 else np.full(p, np.nan)
    single = bool(np.all(np.asarray(f.node_cores) == 1))
    nan = np.full(p, np.nan)
    return Result(start=start, end=end, killed=killed, nodes_used=n.astype(np.float64) if single else np.full(nj, np.nan),
                  min_speed=np.ones(nj), bound=np.full(nj, np.nan), node_core_util=u, node_mem_util=nan,
                  node_disk_util=nan.copy(), masked_time=masked, sigma_time=sigma_t, cl_integral=free_int,
                  unplaceable=0, alloc_ptr=np.zeros(nj, np.int64), alloc_node=np.zeros(0, np.int64),
                  alloc_k=np.zeros(0, np.int64))


def _integrals(submit, start, end, n, total, cl_mask):
    """Time integrals of the step functions after all events of each time (spec
    "Metrics", ``cl_mask`` as there): masked time (queue non-empty), sigma time (queue
    non-empty and not all idle), busy processor-seconds over the masked time, free
    processor-seconds over the sigma time (identical unit-speed processors)."""
    nj = submit.size
    if nj == 0:
        return 0.0, 0.0, 0.0, 0.0
    t = np.concatenate((submit, start, end))
    dq = np.concatenate((np.ones(nj), -np.ones(nj), np.zeros(nj)))
    db = np.concatenate((np.zeros(nj), n, -n)).astype(np.float64)
    order = np.argsort(t, kind="stable")
    t, q, b = t[order], np.cumsum(dq[order]), np.cumsum(db[order])
    last = np.r_[t[1:] != t[:-1], True]          # the state after every event of a time
    t, q, b = t[last], q[last], b[last]
    dt = np.diff(t)
    q, b = q[:-1], b[:-1]
    delta = q > 0
    sigma = delta if cl_mask == "queue_nonempty" else delta & (b > 0)
    return (float(np.sum(dt * delta)), float(np.sum(dt * sigma)), float(np.sum(b * dt * delta)),
            float(np.sum((total - b) * dt * sigma)))
