"""Part 1's event simulator with the packet network inside (numba), without editing part 1.

The loop is part 1's (``simulator._RUN``) with the network merged in: the next event
time is the earliest of the next arrival, part 1's heap and the network's heap; at one
time come the arrivals (priority 1), every packet event and computation end of the
network (2–4, ``spmd.advance``), part 1's kills and reservation wake-ups, one
scheduling pass (part 1's FCFS / MPFS scan / EASY / conservative with part 1's
allocation policies), and then the SPMD starts of the jobs that pass started (5), in the
order the pass started them. Jobs reach part 1's bookkeeping with ``tau = inf``, so its
``bookkeeping.started`` schedules only the kill at ``start + t / min s``; the real end comes from
the network, and a kill of a job that already ended is ignored. The pools of the
network grow inside the kernel (numba's reference counting is on in this one loop).

Unlike part 1's loops (one per queue policy, EASY's pass inlined), this one loop serves
every queue policy: packets, not scheduling, set its speed, and a loop of this size costs
about 4 CPU-s to compile, more than the passes it would leave out (the worst spec,
cluster-network-queues, has all four). The passes are inlined into it (``easy_pass`` is an
inlined helper already; ``_fcfs``, ``_scan``, ``_due`` are inlining dispatchers over the
functions of the passes part 1 calls, not copies of their code), because
numba optimises and codegens every compiled kernel with all the kernels it calls linked
in: as calls, each pass was compiled a second time as a module of its own, with the
starts' bookkeeping linked in again (LLVM IR of the spec 6.4 -> 4.7 MB,
cold compile about 25 -> 22.5 CPU-s; run time the same). Conservative's reservations
(``conservative_plan``) and its starts (``start_due``) are called apart so that one copy
of ``start_due`` serves both the pass and the wake-ups.

Use :func:`simulate` like part 1's ``simulator.simulate`` plus the network arguments;
it returns part 1's ``Result`` and the ``SpmdSim`` (its ``net.acc`` has MB and the
contention sums). The state is part 1's (``simulator.new_state``; the engines are
compared on a delay-free star by ``tests/test_cluster_network_kernel.py``).
"""
from __future__ import annotations

import numpy as np

from . import events, simulator
from . import network as net
from . import spmd
from ..kernel_support.jit import kernel as allocating, inline_without_refcount as kernel_inline
from .bookkeeping import (
    EASY, FCFS, I_ARRIVED, I_DUE, I_HSIZE, I_Q, MPFS_SCAN, _advance_clocks, _record_state, finish)
from .queue_policies import conservative_plan, easy_pass, fcfs_pass, scan_pass, start_due
from .simulator import Result, _enqueue
from .topology import Topology


@allocating
def _grow(pool, next_row: int, ctr, free_slot: int, extra: int):
    """Twice the pool (at least ``extra`` more), new slots chained before the old free list."""
    old = pool.shape[1]
    cap = max(2 * old, old + extra)
    new = np.zeros((pool.shape[0], cap), np.int64)
    for r in range(pool.shape[0]):   # loops, not slice assignment (see events.heap_grow)
        for i in range(old):
            new[r, i] = pool[r, i]
    for i in range(old, cap - 1):
        new[next_row, i] = i + 1
    new[next_row, cap - 1] = ctr[free_slot]
    ctr[free_slot] = old
    return new


@allocating
def _grow_msgf(msgf, cap: int):
    new = np.zeros((msgf.shape[0], cap))
    for r in range(msgf.shape[0]):
        for i in range(msgf.shape[1]):
            new[r, i] = msgf[r, i]
    return new


_fcfs = kernel_inline(fcfs_pass.py_func)
_scan = kernel_inline(scan_pass.py_func)
_due = kernel_inline(start_due.py_func)


@allocating
def _run_net(policy_q, alloc_policy, cl_mask, total_cores, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res,
             dplan, q, cand_node, cand_k, rng, seed, mean_bytes, payload, node_speed, pr, prf, pi, njb, njbf,
             t_routing, next_link, link_dst, link_time, dev, lnk, pk, msg, msgf, nheap, nctr, nacc, done, max_deg,
             order):
    submit, n = jb[0], jb[1]
    start, end, nused = out[0], out[1], out[3]
    alloc_ptr, alloc_node, alloc_k = alloc
    n_jobs = submit.size
    ht, hk, hd = heap
    nht = nheap[0]
    ia = np.int64(0)                             # not a literal: _enqueue compiles once
    inclusive = np.bool_(True)                   # not a literal: spmd.advance has one signature with the
                                                 # Python driver's (netsched's topology-aware path)
    lo = 0                                       # jobs before lo have started (or will never)
    while True:
        ta = submit[ia] if ia < n_jobs else np.inf
        th = ht[0] if ctr[I_HSIZE] > 0 else np.inf
        tn = nht[0] if nctr[net.C_HSIZE] > 0 else np.inf
        t = min(ta, th, tn)
        if t == np.inf:
            break
        k = ia
        while k < n_jobs and submit[k] == t:
            k += 1
        while ctr[I_HSIZE] + 2 * (ctr[I_Q] + k - ia) + 8 > ht.size:     # a wake-up and an end per queued job
            ht, hk, hd = events.heap_grow(ht, hk, hd)
            heap = (ht, hk, hd)
        _advance_clocks(t, clk)
        trigger = False
        due = False
        arrived = 0
        while ia < n_jobs and submit[ia] == t:       # 1: arrivals
            _enqueue(q, ctr, ia, n, policy_q == MPFS_SCAN)
            ia += 1
            arrived += 1
            trigger = True
        while True:                                  # 2-4: packet events and computation ends at t
            status = spmd.advance(t, inclusive, max_deg, done, seed, mean_bytes, payload, node_speed, pr, prf, pi, njb,
                                  njbf, t_routing, next_link, link_dst, link_time, dev, lnk, pk, msg, msgf, nheap,
                                  nctr, nacc)
            if status != net.NEED_ROOM:
                break
            pk = _grow(pk, net.PK_NEXT, nctr, net.C_PKFREE, 2 * max_deg + 16)
            msg = _grow(msg, net.M_NEXT, nctr, net.C_MFREE, max_deg + 16)
            msgf = _grow_msgf(msgf, msg.shape[1])
        for x in range(done[0]):
            finish(done[1 + x], t, np.bool_(False), nd, jb, out, alloc, run, ctr, acc, clk, prof, policy_q)
            trigger = True
        done[0] = 0
        while ctr[I_HSIZE] > 0 and ht[0] == t:
            _t, ek, d, ctr[I_HSIZE] = events.pop(ht, hk, hd, ctr[I_HSIZE])
            kind = events.key_kind(ek)
            if kind == events.KILL:
                if np.isnan(end[d]):                 # still running at its estimate
                    njb[spmd.J_LEFT, d] = spmd.KILLED
                    finish(d, t, np.bool_(True), nd, jb, out, alloc, run, ctr, acc, clk, prof, policy_q)
                    trigger = True
            elif kind == events.COMPUTE_END:         # not pushed for network jobs (tau = inf)
                finish(d, t, np.bool_(False), nd, jb, out, alloc, run, ctr, acc, clk, prof, policy_q)
                trigger = True
            elif kind == events.JOB_START:
                if np.isnan(start[d]) and res[d] == t:
                    due = True
                    ctr[I_DUE] += 1
        ctr[I_ARRIVED] = arrived
        wake = due and not trigger                   # conservative's wake-ups
        if trigger:                                  # one pass of the queue policy
            if policy_q == EASY:
                easy_pass(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node,
                          cand_k, rng, alloc_policy, policy_q)
            elif policy_q == FCFS:
                _fcfs(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node,
                      cand_k, rng, alloc_policy, policy_q)
            elif policy_q == MPFS_SCAN:
                _scan(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node,
                      cand_k, rng, alloc_policy, policy_q)
            else:                                    # conservative: its reservations, then its starts
                conservative_plan(t, q, jb, out, heap, ctr, clk, prof, res, dplan, True)
                wake = True
        if wake:                                     # one copy of the starts for both calls
            _due(t, q, nd, jb, out, alloc, run, heap, ctr, acc, clk, prof, res, dplan, cand_node, cand_k, rng,
                 alloc_policy, policy_q)
        # 5: SPMD starts of the jobs started at t, in the order the pass started them
        m = 0
        for j in range(lo, ia):
            if start[j] == t and njb[spmd.J_LEFT, j] == spmd.NOT_STARTED:
                x = m
                while x > 0 and alloc_ptr[order[x - 1]] > alloc_ptr[j]:
                    order[x] = order[x - 1]
                    x -= 1
                order[x] = j
                m += 1
        for x in range(m):
            j = order[x]
            need = spmd.job_messages(j, njb)
            while not net.room(pk, msg, nctr, need):
                pk = _grow(pk, net.PK_NEXT, nctr, net.C_PKFREE, 2 * need + 16)
                msg = _grow(msg, net.M_NEXT, nctr, net.C_MFREE, need + 16)
                msgf = _grow_msgf(msgf, msg.shape[1])
            spmd.place_from_alloc(j, alloc_ptr[j], nused[j], alloc_node, alloc_k, pr, njb)
            spmd.start_job(j, t, seed, mean_bytes, payload, node_speed, pr, prf, pi, njb, njbf, t_routing, next_link,
                           link_dst, link_time, dev, pk, msg, msgf, nheap, nctr, nacc)
        while lo < ia and not np.isnan(start[lo]):
            lo += 1
        _record_state(ctr, clk, total_cores, cl_mask)
    return 0


def simulate(submit, cores_req, mem_req, disk_req, estimate, tau, node_cores, node_mem, node_disk, node_speed,
             queue: str, allocation_policy: str, rng_seed: int, topo: Topology, iters, pattern, comm_seed: int,
             mean_bytes: float = 65536.0, packet_size: float = 1024.0, header: float = 64.0, t_routing: float = 1e-6,
             cl_mask: str = "queue_nonempty_and_not_all_idle") -> tuple[Result, spmd.SpmdSim]:
    """Part 1's ``simulator.simulate`` with every job an SPMD program on ``topo``'s network.

    Extra arguments: per-job ``iters`` and ``pattern`` codes (``spmd.PATTERNS``), the
    message hash seed, message mean (bytes), packet and header size (bytes), routing time (s).
    """
    policy_q, alloc_policy, mask = simulator.codes(queue, allocation_policy, cl_mask)
    if len(node_cores) != topo.n_nodes:
        raise ValueError(f"{len(node_cores)} nodes but the topology has {topo.n_nodes}")
    tau = np.asarray(tau, np.float64)
    # part 1's state with tau = inf: part 1 schedules only the kill
    st = simulator.new_state(submit, cores_req, mem_req, disk_req, estimate, np.full(tau.size, np.inf), node_cores,
                             node_mem, node_disk, node_speed, alloc_policy, rng_seed, policy_q)
    nj = st.jb[0].size
    n, speed = st.jb[1], st.nd[3]
    # ---- the network and the SPMD processes
    sim = spmd.SpmdSim(topo, n, iters, pattern, tau, speed, comm_seed, mean_bytes, packet_size, header, t_routing)
    s = sim.net
    _run_net(policy_q, alloc_policy, mask, st.total, st.nd, st.jb, st.out, st.alloc, st.run, st.heap, st.ctr, st.acc,
             st.clk, st.prof, st.res, st.dplan, st.q, st.cand_node, st.cand_k, st.rng, sim.seed, sim.mean_bytes,
             sim.payload, sim.node_speed, sim.pr, sim.prf, sim.pi, sim.jb, sim.jbf, s.t_routing, s.next_link,
             s.link_dst, s.link_time, s.dev, s.lnk, s.pk, s.msg, s.msgf, s.heap, s.ctr, s.acc, sim.done, sim.max_deg,
             np.zeros(max(nj, 1), np.int64))
    return simulator.result_of(st), sim
