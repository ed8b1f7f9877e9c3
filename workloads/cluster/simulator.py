"""The event-driven cluster simulator: one replication = one call of :func:`simulate`.

Events are ordered by (time, priority, sequence) (``events.py``). At each event time the
kernel accounts the interval since the previous time for the metrics, handles every
event of the time, runs the queue policy once if the time held an arrival or a
computation end (spec "Simulation"; conservative also starts jobs whose reservation
time has come, at the earliest reservation after the last time, ``clk[C_WAKE]``), then
records the state that holds until the next time. Part 2 adds packet events to the same
loop (``netsim.py``).

The loop is compiled once per queue policy (:data:`_RUN`): a spec compiles only the
passes its policies need, and EASY's pass, the one whose speed needs it, is inlined into
its own loop alone; conservative's loop inlines ``bookkeeping.finish_job`` and its
reservations (``queue_policies.conservative_plan``) too, the others call them (one
shared compiled copy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from schedsweep.workloads._contract import kernel_array

from . import allocation, events, profile
from ..kernel_support.jit import kernel_without_refcount as kernel
from .bookkeeping import (
    CL_MASKS, CONSERVATIVE, C_CLACC, C_WAKE, C_MDELTA, C_MSIGMA, C_SMAX, C_SMIN, C_SPEEDFREE, C_TPREV, EASY, FCFS,
    I_ARRIVED, I_BY_COUNT, I_CURSOR, I_DUE, I_FREE, I_HSIZE, I_Q, I_QH, I_QT, I_SH_HEAD, I_UNPLACEABLE,
    MPFS_SCAN, N_CLK, N_CTR, QUEUE_NAMES, _advance_clocks, _record_state, finish, finish_job)
from .queue_policies import conservative_plan, easy_pass, entry, fcfs_pass, scan_pass, start_due


@kernel
def _enqueue(q, ctr, j: int, n, mpfs: bool) -> None:
    """Append job j (FCFS order), or insert it in (-cores, arrival) order for MPFS (the
    MPFS queue has no holes: its scan pass compacts it)."""
    qt = ctr[I_QT]
    if not mpfs:
        q[qt] = entry(n[j], j)
    else:   # after every job with >= cores
        lo, hi = ctr[I_QH], qt
        while lo < hi:
            mid = (lo + hi) >> 1
            if q[mid] >> 32 >= n[j]:
                lo = mid + 1
            else:
                hi = mid
        for k in range(qt, lo, -1):
            q[k] = q[k - 1]
        q[lo] = entry(n[j], j)
    ctr[I_QT] = qt + 1
    ctr[I_Q] += 1


def _event_loop(policy: int):
    """Part 1's event loop compiled for queue policy ``policy`` alone.

    ``policy`` is a constant of the closure, so numba drops the other policies' branches
    before it types the loop: a spec compiles only the passes its queue policies need (the
    EASY pass, inlined here for its speed, is most of a loop's compile time). numba keys
    the cached copies of a closure by the values of its cells, so each policy's loop is
    cached on its own. ``policy_q`` is still passed: the inlined bookkeeping reads it."""

    @kernel
    def _run(policy_q, alloc_policy, cl_mask, total_cores, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res,
             dplan, q, cand_node, cand_k, rng) -> None:
        """Run until every event is handled. The heap holds at most one end per running
        job (conservative's wake-up is ``clk[C_WAKE]``, not an event), which its capacity
        allows (``new_state``)."""
        submit, n = jb[0], jb[1]
        n_jobs = submit.size
        ht, hk, hd = heap
        ia = 0
        while True:
            ta = submit[ia] if ia < n_jobs else np.inf
            th = ht[0] if ctr[I_HSIZE] > 0 else np.inf
            t = min(ta, th)
            if policy == CONSERVATIVE:
                # the earliest reservation after the last time, kept exact by the pass
                # (queue_policies.start_due): one wake-up, not a JOB_START event per
                # reservation; on KTH-SP2 all but 6 of those 56k were stale (the job had
                # moved or started), at twice the heap traffic (benchmarks/cluster.md).
                # A wake-up only sets `due`, so its order among this time's events (spec
                # priority 5, the last) does not matter: the pass comes after all of them.
                t = min(t, clk[C_WAKE])
            if t == np.inf:
                break
            _advance_clocks(t, clk)
            trigger = False
            due = False
            arrived = 0
            while ia < n_jobs and submit[ia] == t:       # priority 1: arrivals
                _enqueue(q, ctr, ia, n, policy_q == MPFS_SCAN)
                ia += 1
                arrived += 1
                trigger = True
            while ctr[I_HSIZE] > 0 and ht[0] == t:
                _t, ek, d, ctr[I_HSIZE] = events.pop(ht, hk, hd, ctr[I_HSIZE])
                kind = events.key_kind(ek)
                if kind == events.COMPUTE_END or kind == events.KILL:
                    if policy == CONSERVATIVE:
                        # inlined: the call passes the ~13 state tuples, and was measured to
                        # halve conservative on KTH-SP2 (benchmarks/cluster.md, "Regression guard")
                        finish_job(d, t, kind == events.KILL, nd, jb, out, alloc, run, ctr, acc, clk, prof,
                                   policy_q)
                    else:
                        finish(d, t, kind == events.KILL, nd, jb, out, alloc, run, ctr, acc, clk, prof, policy_q)
                    trigger = True
            if policy == CONSERVATIVE and clk[C_WAKE] == t:
                due = True               # start_due (in the pass or below) sets the next wake-up
                ctr[I_DUE] += 1
            ctr[I_ARRIVED] = arrived
            if trigger:
                if policy == EASY:
                    easy_pass(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k,
                              rng, alloc_policy, policy_q)
                elif policy == FCFS:
                    fcfs_pass(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k,
                              rng, alloc_policy, policy_q)
                elif policy == MPFS_SCAN:
                    scan_pass(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k,
                              rng, alloc_policy, policy_q)
                else:
                    # inlined, and start_due called only when a job is due: each call passes
                    # the state's ~50 arrays (numba flattens each into its fields) at every pass
                    conservative_plan(t, q, jb, out, heap, ctr, clk, prof, res, dplan, False)
                    if ctr[I_DUE] != 0:
                        start_due(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node,
                                  cand_k, rng, alloc_policy, policy_q)
            elif due:
                if policy == CONSERVATIVE:   # only conservative's reservations wake the loop
                    start_due(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k,
                              rng, alloc_policy, policy_q)
            _record_state(ctr, clk, total_cores, cl_mask)

    return _run


#: One event loop per queue policy (index of ``QUEUE_NAMES``), compiled on first use.
_RUN = tuple(_event_loop(policy) for policy in range(len(QUEUE_NAMES)))


@dataclass
class Result:
    """Per-job schedule and per-node integrals of one replication (times in s)."""

    start: np.ndarray        # NaN if never started (unplaceable)
    end: np.ndarray
    killed: np.ndarray       # int8
    nodes_used: np.ndarray   # distinct nodes of each job
    min_speed: np.ndarray    # slowest allocated node's speed
    bound: np.ndarray        # guaranteed start (EASY first shadow / first reservation), NaN if none
    node_core_util: np.ndarray   # per node, time-averaged used-core fraction over delta-masked time
    node_mem_util: np.ndarray
    node_disk_util: np.ndarray
    masked_time: float       # sum dt delta
    sigma_time: float        # sum dt sigma
    cl_integral: float       # sum_k dt sigma sum_i s_i P_ik
    unplaceable: int         # reservations that came due but could not be placed
    alloc_ptr: np.ndarray    # job j's nodes are alloc_node[alloc_ptr[j]:alloc_ptr[j] + nodes_used[j]] (started jobs)
    alloc_node: np.ndarray
    alloc_k: np.ndarray      # processes of the job on that node


class State(NamedTuple):
    """The kernel's state arrays of one replication (see ``bookkeeping``), grouped as
    :func:`_run` takes them."""

    nd: tuple
    jb: tuple
    out: tuple
    alloc: tuple
    run: tuple
    heap: tuple
    ctr: np.ndarray
    acc: tuple
    clk: np.ndarray
    prof: tuple
    res: np.ndarray
    dplan: np.ndarray
    q: np.ndarray
    cand_node: np.ndarray
    cand_k: np.ndarray
    rng: np.ndarray
    total: int


def codes(queue: str, allocation_policy: str, cl_mask: str) -> tuple[int, int, int]:
    """The kernel's integer codes of a queue policy, an allocation policy and a CL mask."""
    if queue not in QUEUE_NAMES:
        raise ValueError(f"queue {queue!r} not one of {', '.join(QUEUE_NAMES)}")
    if allocation_policy not in allocation.NAMES:
        raise ValueError(f"allocation {allocation_policy!r} not one of {', '.join(allocation.NAMES)}")
    if cl_mask not in CL_MASKS:
        raise ValueError(f"cl_mask {cl_mask!r} not one of {', '.join(CL_MASKS)}")
    return QUEUE_NAMES.index(queue), allocation.NAMES.index(allocation_policy), CL_MASKS.index(cl_mask)


def new_state(submit: np.ndarray, cores_req: np.ndarray, mem_req: np.ndarray, disk_req: np.ndarray,
              estimate: np.ndarray, tau: np.ndarray, node_cores: np.ndarray, node_mem: np.ndarray,
              node_disk: np.ndarray, node_speed: np.ndarray, alloc_policy: int, rng_seed: int,
              policy_q: int) -> State:
    """Validate one job flow and cluster and build the kernel's initial state (arguments
    as :func:`simulate`'s; ``alloc_policy`` an index of ``allocation.NAMES``, ``policy_q``
    of ``QUEUE_NAMES``).

    Arrays only one queue policy reads (the profile, reservations and planned durations
    of conservative, EASY's running list) get their full size only for that policy: the
    allocation, not the simulation, dominated short runs."""
    submit = kernel_array(submit, np.float64)
    nj = submit.size
    if nj and np.any(np.diff(submit) < 0):
        raise ValueError("jobs must be sorted by submit time")
    n = kernel_array(cores_req, np.int64)
    cores = kernel_array(node_cores, np.int64)
    speed = kernel_array(node_speed, np.float64)
    p = cores.size
    total = int(cores.sum())
    if nj and n.max() > total:
        raise ValueError(f"a job asks for {n.max()} cores, the cluster has {total}")
    if nj >= 2 ** 31:
        raise ValueError(f"{nj} jobs: at most 2**31 - 1 per flow")   # queue entries pack (cores, job)
    order, rank, bits = allocation.scan_state(alloc_policy, speed, cores)
    mem = kernel_array(node_mem, np.float64)
    disk = kernel_array(node_disk, np.float64)
    nd = (cores, mem, disk, speed, cores.copy(), mem.copy(), disk.copy(), order, rank, bits, np.empty(p, np.int64))
    est = kernel_array(estimate, np.float64)
    jb = (submit, n, kernel_array(mem_req, np.float64), kernel_array(disk_req, np.float64),
          est, kernel_array(tau, np.float64))
    nan = np.full(nj, np.nan)
    out = (nan.copy(), nan.copy(), np.zeros(nj, np.int8), np.zeros(nj, np.int64), nan.copy(), nan.copy(),
           nan.copy(), np.full(nj, np.inf), np.zeros(nj))
    total_procs = int(n.sum())
    # a job's nodes are written when it starts, before anything reads them
    alloc = (np.zeros(nj, np.int64), np.empty(max(total_procs, 1), np.int64), np.empty(max(total_procs, 1), np.int64))
    cons = policy_q == CONSERVATIVE
    # the heap holds one end per running job (conservative's wake-up is clk[C_WAKE]; the
    # network's loop grows the heap for its wake-ups), and a job holds a core
    running = nj if nj == 0 or n.min() < 1 else min(nj, total)
    nr = running + 1 if policy_q == EASY else 1
    run = (np.zeros(nr), np.zeros(nr, np.int64))    # EASY's running list: estimated end, cores << 32 | job
    ctr = np.zeros(N_CTR, np.int64)
    ctr[I_FREE] = total
    ctr[I_SH_HEAD] = -1
    # an ordered policy (it draws nothing) and no memory or disk per process: a job fits
    # exactly when its cores are free, and bookkeeping.take_in_order takes the nodes
    ctr[I_BY_COUNT] = (alloc_policy in allocation.ORDERED and not np.any(jb[2]) and not np.any(jb[3]))
    clk = np.zeros(N_CLK)
    clk[C_SPEEDFREE] = float((speed * cores).sum())
    clk[C_SMIN], clk[C_SMAX] = speed.min(), speed.max()
    clk[C_WAKE] = np.inf
    clk[C_TPREV] = submit[0] if nj else 0.0
    n_prof = 2 * nj + 8 if cons else 8
    prof_pt, prof_pf, prof_meta = profile.new(n_prof, total)
    return State(nd=nd, jb=jb, out=out, alloc=alloc, run=run,
                 heap=events.heap_new(running + 16), ctr=ctr,
                 acc=(np.zeros(p), np.zeros(p), np.zeros(p), np.zeros(p)), clk=clk,
                 prof=(prof_pt, prof_pf, prof_meta, np.zeros(n_prof, np.int64)), res=nan.copy() if cons else nan[:1],
                 dplan=est / speed.min() if cons else est[:1], q=np.empty(nj + 1, np.int64),
                 cand_node=np.zeros(p, np.int64), cand_k=np.zeros(p, np.int64),
                 rng=np.array([rng_seed], dtype=np.uint64), total=total)


def result_of(st: State) -> Result:
    """The schedule and integrals of a finished run."""
    cores, mem, disk = st.nd[0], st.nd[1], st.nd[2]
    out, acc, clk = st.out, st.acc, st.clk
    md = clk[C_MDELTA]
    used = int(st.ctr[I_CURSOR])      # the allocation arrays' written part
    with np.errstate(invalid="ignore", divide="ignore"):
        u, m_, d_ = (a / (md * cap) for a, cap in zip(acc[1:], (cores, mem, disk)))
    return Result(start=out[0], end=out[1], killed=out[2], nodes_used=out[3], min_speed=out[4], bound=out[5],
                  node_core_util=u, node_mem_util=m_, node_disk_util=d_, masked_time=md,
                  sigma_time=clk[C_MSIGMA], cl_integral=clk[C_CLACC], unplaceable=int(st.ctr[I_UNPLACEABLE]),
                  alloc_ptr=st.alloc[0], alloc_node=st.alloc[1][:used], alloc_k=st.alloc[2][:used])


def simulate(submit: np.ndarray, cores_req: np.ndarray, mem_req: np.ndarray, disk_req: np.ndarray,
             estimate: np.ndarray, tau: np.ndarray, node_cores: np.ndarray, node_mem: np.ndarray,
             node_disk: np.ndarray, node_speed: np.ndarray, queue: str, allocation_policy: str,
             rng_seed: int, cl_mask: str = "queue_nonempty_and_not_all_idle") -> Result:
    """Simulate one job flow on one cluster.

    Jobs must be in queue order (submit ascending, ties by id). ``cores_req`` processes
    per job, each needing ``mem_req`` / ``disk_req`` KB; ``estimate`` (t) and ``tau``
    in seconds on unit-speed cores. Nodes: cores, memory and disk (KB), speed >= 1
    relative to the slowest. ``rng_seed`` seeds the allocation stream (Random First).
    """
    policy_q, alloc_policy, mask = codes(queue, allocation_policy, cl_mask)
    st = new_state(submit, cores_req, mem_req, disk_req, estimate, tau, node_cores, node_mem, node_disk, node_speed,
                   alloc_policy, rng_seed, policy_q)
    _RUN[policy_q](policy_q, alloc_policy, mask, st.total, st.nd, st.jb, st.out, st.alloc, st.run, st.heap, st.ctr,
                   st.acc, st.clk, st.prof, st.res, st.dplan, st.q, st.cand_node, st.cand_k, st.rng)
    return result_of(st)
