"""pyss-compatible scheduling (``docs/models/cluster.md``, "Literature-compatible semantics").

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

The snapshot is one step profile of free processors (``profile.py``, the conservative
profile of the textbook kernel), changed in place by each start, termination and
reservation: a capacity question scans only the steps it needs.
"""
from __future__ import annotations

import numpy as np

from . import events, profile
from ..kernel_support.jit import kernel as allocating, kernel_without_refcount as kernel

# functions that allocate (argsort, the state arrays) need numba's reference counting
jit = allocating

FCFS, EASY, CONSERVATIVE = 0, 1, 2
NAMES = ("fcfs", "easy", "conservative")


@kernel
def _fits_now(pt, pf, meta, now: float, n: int, d: float) -> bool:
    """Whether ``n`` processors are free over ``[now, now + d)`` (the profile pruned to now)."""
    t1 = now + d
    s = meta[1]
    q = meta[0]
    while q < s and pt[q] < t1:
        if pf[q] < n:
            return False
        q += 1
    return True


@jit
def simulate_pyss(submit, run, procs, est, total: int, policy: int):
    """Start times (s) of every job of a flow in queue order, under pyss's rules.

    ``run`` <= ``est`` for every job (pyss's conversion guarantees it). The snapshot is
    kept as a step profile of free processors (``profile.py``): a start takes the job's
    processors on ``[now, now + est)``, a termination gives back what is left of that
    window, a conservative reservation takes ``[s, s + est)`` until the job moves. Without
    reservations (FCFS, and EASY outside its backfill step) every window in the profile
    started by now, so the free processors never decrease from now on and a job fits its
    whole window exactly when it fits now (one comparison)."""
    nj = submit.size
    start = np.empty(nj)
    start[:] = np.nan
    s = np.zeros(nj)                   # conservative: job j's reservation starts at s[j]
    p = procs.astype(np.int64)
    wait = np.zeros(nj, np.int64)      # waiting jobs in queue order: wait[w0:w0 + nw]
    w0 = 0                             # (a job is appended once: w0 + nw <= nj)
    nw = 0
    # terminations on the event heap of events.py: by time, then push order (seq), job as data
    # (names apart from events.push's own: numba's inliner confuses equal names)
    term_t, term_k, term_j = np.zeros(nj + 1), np.zeros(nj + 1, np.int64), np.zeros(nj + 1, np.int64)
    nh = 0
    seq = 0
    # live steps <= 2 (intervals + 1) + 1, dead ones <= capacity / 4 or 64 before prune compacts
    pt, pf, meta = profile.new(4 * nj + 80, total)
    ia = 0
    while ia < nj or nh > 0:
        if ia < nj and (nh == 0 or submit[ia] <= term_t[0]):
            now = submit[ia]
            j = ia
            ia += 1
            profile.prune(pt, pf, meta, now)
            wait[w0 + nw] = j
            nw += 1
            if policy == CONSERVATIVE:
                t = profile.earliest(pt, pf, meta, now, p[j], est[j], np.inf)
                s[j] = t
                profile.add(pt, pf, meta, t, t + est[j], -p[j])
                if t == now:
                    start[j] = now
                    nh = events.push(term_t, term_k, term_j, nh, now + run[j], seq, j)
                    seq += 1
                    nw -= 1
                continue
            if pf[meta[0]] < p[j]:      # no reservation in the profile: free only grows from now
                continue
        else:
            now, _, j, nh = events.pop(term_t, term_k, term_j, nh)
            profile.prune(pt, pf, meta, now)
            end = start[j] + est[j]     # the rest of j's window is free again
            if end > now:
                profile.add(pt, pf, meta, now, end, p[j])
        # the scheduling pass
        if policy == CONSERVATIVE:
            w = 0
            for r in range(w0, w0 + nw):
                j = wait[r]
                if s[j] > now:
                    # its earliest start with its own window taken out is the earliest
                    # before s[j] with its window left in, where only [t, s[j]) is asked
                    # (the part past s[j] always fits: the window holds p[j] there), or
                    # s[j]: so a job that cannot move costs no two profile changes
                    t = profile.earliest(pt, pf, meta, now, p[j], est[j], s[j])
                    if t < s[j]:
                        profile.add(pt, pf, meta, s[j], s[j] + est[j], p[j])
                        s[j] = t
                        profile.add(pt, pf, meta, t, t + est[j], -p[j])
                if s[j] == now:
                    start[j] = now
                    nh = events.push(term_t, term_k, term_j, nh, now + run[j], seq, j)
                    seq += 1
                else:
                    wait[w0 + w] = j
                    w += 1
            nw = w
            continue
        # FCFS part: the head while it fits. Only running jobs are in the profile here, so
        # the free processors never decrease from now on: fitting now is fitting the window.
        h = 0
        while h < nw and pf[meta[0]] >= p[wait[w0 + h]]:
            j = wait[w0 + h]
            start[j] = now
            profile.add(pt, pf, meta, now, now + est[j], -p[j])
            nh = events.push(term_t, term_k, term_j, nh, now + run[j], seq, j)
            seq += 1
            h += 1
        w0 += h                         # the started heads leave the front
        nw -= h
        if policy == EASY and nw > 1:
            hd = wait[w0]
            t = profile.earliest(pt, pf, meta, now, p[hd], est[hd], np.inf)
            profile.add(pt, pf, meta, t, t + est[hd], -p[hd])
            w = 1
            for r in range(w0 + 1, w0 + nw):
                j = wait[r]
                if _fits_now(pt, pf, meta, now, p[j], est[j]):
                    start[j] = now
                    profile.add(pt, pf, meta, now, now + est[j], -p[j])
                    nh = events.push(term_t, term_k, term_j, nh, now + run[j], seq, j)
                    seq += 1
                else:
                    wait[w0 + w] = j
                    w += 1
            nw = w
            profile.add(pt, pf, meta, t, t + est[hd], p[hd])   # the head's reservation is not kept
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
