"""SPMD jobs on the packet network (spec "Jobs"): processes, patterns, message sizes.

Every process u of a job runs ``iters`` iterations of ``Communication(i); Computation(i)``.
Communication: non-blocking sends to all successors of u in the job's pattern (all
messages enter u's node input queue at once, successors in ascending order), then
blocking receives from all predecessors. Computation of u takes
``tau / (iters * s(node(u)))``. The job ends when all its processes have ended.

Patterns *(spec, our rule for the arcs)*: ``RANDOM`` each process sends to one other
process drawn uniformly, redrawn every iteration; ``PAIRS`` 2u <-> 2u+1 (an odd last
process idles); ``RING`` u -> u+1 mod n; ``ONE_TO_ALL`` 0 -> every other;
``ALL_TO_ALL`` every ordered pair. A job with n = 1 does not communicate.

Random numbers *(our rule)*: a message's size and a Random destination are a hash
(splitmix64) of (the replication's communication seed, job, iteration, sender,
receiver), so they do not depend on the order events happen in, on the allocation or on
the topology: every method sees the same messages (common random numbers). Size
``q ~ Exp(mean)`` bytes, ``Np = max(1, ceil(q / (g - h)))`` packets.

Receive blocking: a process's receives of one iteration are called one after another
in ascending sender order from the moment its sends are posted; the waits telescope,
so their sum is ``max(0, last arrival - post time)`` whatever the order, which is what
``acc[A_BLOCK]`` adds up (``MB = A_BLOCK / A_RECVS``; early messages wait 0).

Exact times: computation ends are computed as ``origin + (tau / s) * ((i + 1 - k0) / iters)``
where ``origin`` is the last time a receive actually blocked (job start at first), so
on a network without delay a process ends at exactly ``start + tau / s`` — bit-equal to
the network-free model.

Process state ``pr`` int64[4, procs]: job, node, iteration, k0; ``prf`` float64[2, procs]:
post time of the current iteration, origin. Per (process, iteration) ``pi`` int64[2, ·]:
expected and arrived receives. Job state ``jb`` int64[6, jobs]: first process, n,
iters, pattern, first (process, iteration) slot, processes still running (-1 = not
started, -2 = killed); ``jbf`` float64[3, jobs]: tau (s, unit speed), start, end.
"""
from __future__ import annotations

import math

import numpy as np

from schedsweep.workloads._contract import kernel_array

from . import network as net
from .network import A_BLOCK, A_RECVS, COMPUTE_END, NEED_ROOM, kernel
from ..kernel_support.jit import inline_without_refcount as kernel_inline
from .choices import PATTERNS  # handed on from here too
from .topology import Topology

RANDOM, PAIRS, RING, ONE_TO_ALL, ALL_TO_ALL = 0, 1, 2, 3, 4     # codes: indices of PATTERNS

P_JOB, P_NODE, P_ITER, P_K0 = 0, 1, 2, 3
PF_POST, PF_ORIGIN = 0, 1
PI_EXP, PI_ARR = 0, 1
J_PBASE, J_N, J_ITERS, J_PATTERN, J_PIBASE, J_LEFT = 0, 1, 2, 3, 4, 5
JF_TAU, JF_START, JF_END = 0, 1, 2
NOT_STARTED, KILLED = -1, -2
_SALT_DEST = np.uint64(0xD1B54A32D192ED03)


@kernel
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def hash_uniform(seed, job: int, it: int, u: int, v: int) -> float:
    """A uniform in [0, 1) from (seed, job, iteration, u, v), independent of event order."""
    h = _mix(seed + np.uint64(job) * np.uint64(0x9E3779B97F4A7C15))
    h = _mix(h ^ (np.uint64(it) * np.uint64(0xC2B2AE3D27D4EB4F) + np.uint64(u)))
    h = _mix(h ^ (np.uint64(v) * np.uint64(0x165667B19E3779F9) + np.uint64(0x27D4EB2F165667C5)))
    return float(h >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel
def message_packets(seed, job: int, it: int, u: int, v: int, mean_bytes: float, payload: float) -> int:
    """Packets of the message u -> v of iteration ``it``: max(1, ceil(Exp(mean) / payload))."""
    q = -mean_bytes * math.log1p(-hash_uniform(seed, job, it, u, v))
    return max(1, int(math.ceil(q / payload)))


@kernel
def random_target(seed, job: int, it: int, u: int, n: int) -> int:
    """The Random pattern's receiver of u in iteration ``it`` (uniform over the others)."""
    r = int(hash_uniform(seed ^ _SALT_DEST, job, it, u, n) * (n - 1))
    return r if r < u else r + 1


@kernel
def out_degree(pattern: int, n: int, u: int) -> int:
    if n < 2:
        return 0
    if pattern == RANDOM or pattern == RING:
        return 1
    if pattern == PAIRS:
        return 1 if (u ^ 1) < n else 0
    if pattern == ONE_TO_ALL:
        return n - 1 if u == 0 else 0
    return n - 1


@kernel
def successor(pattern: int, n: int, u: int, k: int, seed, job: int, it: int) -> int:
    """The k-th successor (ascending) of u; k < out_degree."""
    if pattern == RANDOM:
        return random_target(seed, job, it, u, n)
    if pattern == RING:
        return (u + 1) % n
    if pattern == PAIRS:
        return u ^ 1
    return k if k < u else k + 1      # ONE_TO_ALL (u = 0) and ALL_TO_ALL: every other process


@kernel
def _expected(pattern: int, n: int, u: int) -> int:
    """Receives per iteration for the deterministic patterns."""
    if n < 2:
        return 0
    if pattern == RING:
        return 1
    if pattern == PAIRS:
        return 1 if (u ^ 1) < n else 0
    if pattern == ONE_TO_ALL:
        return 0 if u == 0 else 1
    return n - 1


# ------------------------------------------------------------------ process steps
@kernel
def _compute(p: int, t: float, node_speed, pr, prf, jb, jbf, heap, ctr) -> None:
    """Receives of the current iteration are complete at t: start its computation."""
    j = pr[P_JOB, p]
    it = pr[P_ITER, p]
    iters = jb[J_ITERS, j]
    work = jbf[JF_TAU, j] / node_speed[pr[P_NODE, p]]
    chain = prf[PF_ORIGIN, p] + work * ((it - pr[P_K0, p]) / iters)
    if t != chain:                  # a receive blocked: restart the exact chain here
        prf[PF_ORIGIN, p] = t
        pr[P_K0, p] = it
    net.heap_push(heap, ctr, prf[PF_ORIGIN, p] + work * ((it + 1 - pr[P_K0, p]) / iters), np.int64(COMPUTE_END), p)


@kernel
def _begin(p: int, it: int, t: float, seed, mean_bytes: float, payload: float, node_speed, pr, prf, pi, jb, jbf,
           t_routing, next_link, link_dst, link_time, dev, pk, msg, msgf, heap, ctr, acc) -> None:
    """Process p starts iteration ``it`` at t: post its sends, then wait for its receives."""
    j = pr[P_JOB, p]
    base = jb[J_PBASE, j]
    n = jb[J_N, j]
    pattern = jb[J_PATTERN, j]
    u = p - base
    pr[P_ITER, p] = it
    prf[PF_POST, p] = t
    src = pr[P_NODE, p]
    for k in range(out_degree(pattern, n, u)):
        v = successor(pattern, n, u, k, seed, j, it)
        npk = message_packets(seed, j, it, u, v, mean_bytes, payload)
        net.inject(t, src, pr[P_NODE, base + v], npk, base + v, it, t_routing, next_link, link_dst, link_time, dev,
                   pk, msg, msgf, heap, ctr, acc)
    slot = jb[J_PIBASE, j] + u * jb[J_ITERS, j] + it
    acc[A_RECVS] += pi[PI_EXP, slot]
    if pi[PI_ARR, slot] == pi[PI_EXP, slot]:
        _compute(p, t, node_speed, pr, prf, jb, jbf, heap, ctr)


@kernel
def _arrived(m: int, t: float, node_speed, pr, prf, pi, jb, jbf, msg, heap, ctr, acc) -> None:
    """Message m has arrived at t: count it; release its receiver if that was the last one."""
    p = msg[net.M_PROC, m]
    it = msg[net.M_TAG, m]
    net.free_message(m, msg, ctr)
    j = pr[P_JOB, p]
    if jb[J_LEFT, j] < 0:           # killed job: the network still carried its packets
        return
    slot = jb[J_PIBASE, j] + (p - jb[J_PBASE, j]) * jb[J_ITERS, j] + it
    pi[PI_ARR, slot] += 1
    if pr[P_ITER, p] == it and pi[PI_ARR, slot] == pi[PI_EXP, slot]:
        acc[A_BLOCK] += t - prf[PF_POST, p]
        _compute(p, t, node_speed, pr, prf, jb, jbf, heap, ctr)


@kernel
def start_job(j: int, t: float, seed, mean_bytes: float, payload: float, node_speed, pr, prf, pi, jb, jbf,
              t_routing, next_link, link_dst, link_time, dev, pk, msg, msgf, heap, ctr, acc) -> None:
    """Start job j at t on the nodes already written to ``pr[P_NODE]`` of its processes.

    Room for ``n * max out-degree`` messages must be available (:func:`job_messages`).
    """
    base = jb[J_PBASE, j]
    n = jb[J_N, j]
    iters = jb[J_ITERS, j]
    pattern = jb[J_PATTERN, j]
    pib = jb[J_PIBASE, j]
    jbf[JF_START, j] = t
    jb[J_LEFT, j] = n
    for u in range(n):
        for it in range(iters):
            pi[PI_EXP, pib + u * iters + it] = _expected(pattern, n, u) if pattern != RANDOM else 0
            pi[PI_ARR, pib + u * iters + it] = 0
    if pattern == RANDOM and n > 1:
        for it in range(iters):
            for u in range(n):
                v = random_target(seed, j, it, u, n)
                pi[PI_EXP, pib + v * iters + it] += 1
    for u in range(n):
        p = base + u
        pr[P_JOB, p] = j
        pr[P_K0, p] = 0
        prf[PF_ORIGIN, p] = t
    first = np.int64(0)     # not the literal 0: that would compile a second copy of _begin and its callees
    for u in range(n):
        _begin(base + u, first, t, seed, mean_bytes, payload, node_speed, pr, prf, pi, jb, jbf, t_routing, next_link,
               link_dst, link_time, dev, pk, msg, msgf, heap, ctr, acc)


@kernel
def place_from_alloc(j: int, ptr: int, m: int, alloc_node, alloc_k, pr, jb) -> None:
    """Write job j's process nodes from a part 1 allocation (``m`` nodes from ``ptr``:
    ``alloc_k`` processes on each ``alloc_node``, ranks in that order) — the hook the part 1
    kernel's allocation (``bookkeeping.take_*``) gives before :func:`start_job`."""
    p = jb[J_PBASE, j]
    for a in range(m):
        for _ in range(alloc_k[ptr + a]):
            pr[P_NODE, p] = alloc_node[ptr + a]
            p += 1


@kernel
def next_time(heap, ctr) -> float:
    """Time of the network's next event (inf if none): merge it into an outer event loop."""
    return heap[0][0] if ctr[net.C_HSIZE] > 0 else np.inf


@kernel
def job_messages(j: int, jb) -> int:
    """Records job j's start can take at once: a message record per arc (n times the
    largest out-degree) and one packet split per process's node (``room`` adds 2 more)."""
    n = jb[J_N, j]
    return 0 if n < 2 else n * (n - 1) + n


@kernel_inline
def _packet_event(t: float, prio: int, data: int, node_speed, pr, prf, pi, jb, jbf, t_routing, next_link, link_dst,
                  link_time, dev, lnk, pk, msg, msgf, heap, ctr, acc) -> None:
    """A link or routing end; a message it completes goes to its receiving process (a
    bare message is freed)."""
    m = net.packet_event(t, prio, data, t_routing, next_link, link_dst, link_time, dev, lnk, pk, msg, msgf,
                         heap, ctr, acc)
    if m >= 0:
        if msg[net.M_PROC, m] >= 0:
            _arrived(m, t, node_speed, pr, prf, pi, jb, jbf, msg, heap, ctr, acc)
        else:
            net.free_message(m, msg, ctr)


@kernel
def step(t: float, prio: int, data: int, seed, mean_bytes: float, payload: float, node_speed, pr, prf, pi, jb, jbf,
         t_routing, next_link, link_dst, link_time, dev, lnk, pk, msg, msgf, heap, ctr, acc) -> int:
    """Handle one popped event; returns the job that ended with it, or -1."""
    if prio != COMPUTE_END:
        _packet_event(t, prio, data, node_speed, pr, prf, pi, jb, jbf, t_routing, next_link, link_dst, link_time,
                      dev, lnk, pk, msg, msgf, heap, ctr, acc)
        return -1
    p = data
    j = pr[P_JOB, p]
    if jb[J_LEFT, j] < 0:
        return -1
    it = pr[P_ITER, p] + 1
    if it < jb[J_ITERS, j]:
        _begin(p, it, t, seed, mean_bytes, payload, node_speed, pr, prf, pi, jb, jbf, t_routing, next_link,
               link_dst, link_time, dev, pk, msg, msgf, heap, ctr, acc)
        return -1
    jb[J_LEFT, j] -= 1
    if jb[J_LEFT, j] == 0:
        jbf[JF_END, j] = t
        return j
    return -1


@kernel
def advance(t_limit: float, inclusive: bool, max_deg: int, done, seed, mean_bytes: float, payload: float,
            node_speed, pr, prf, pi, jb, jbf, t_routing, next_link, link_dst, link_time, dev, lnk, pk, msg, msgf,
            heap, ctr, acc) -> int:
    """Handle events before ``t_limit`` (or up to it, ``inclusive``), stopping after the
    first event time at which some job ended (every event of that time is handled).

    Jobs that ended are appended to ``done[1 : 1 + done[0]]`` (the caller empties it by
    setting ``done[0] = 0``). Returns 0 when nothing is left before the limit, 2 when jobs
    ended, ``NEED_ROOM`` when the pools must grow (call again afterwards: nothing is lost).
    """
    ht = heap[0]
    t_end = jbf[JF_END, done[1]] if done[0] > 0 else np.inf
    while ctr[net.C_HSIZE] > 0:
        t = ht[0]
        if t > t_limit or (t == t_limit and not inclusive) or t > t_end:
            break
        if not net.room(pk, msg, ctr, max_deg):
            return NEED_ROOM
        t, prio, data = net.heap_pop(heap, ctr)
        if prio != COMPUTE_END:         # the hot path: straight to the packet handler
            _packet_event(t, prio, data, node_speed, pr, prf, pi, jb, jbf, t_routing, next_link, link_dst, link_time,
                          dev, lnk, pk, msg, msgf, heap, ctr, acc)
            continue
        j = step(t, prio, data, seed, mean_bytes, payload, node_speed, pr, prf, pi, jb, jbf, t_routing, next_link,
                 link_dst, link_time, dev, lnk, pk, msg, msgf, heap, ctr, acc)
        if j >= 0:
            done[0] += 1
            done[done[0]] = j
            t_end = t
    return 2 if done[0] > 0 else 0


class SpmdSim:
    """The network plus the SPMD jobs of one replication (Python driver of the kernels).

    ``n``, ``iters``, ``pattern``, ``tau`` per job (tau in s on unit-speed cores);
    ``node_speed`` per node; ``seed`` the communication seed (uint64); messages
    ``Exp(mean_bytes)`` in packets of ``packet_size`` bytes with ``header`` bytes.
    """

    def __init__(self, topo: Topology, n, iters, pattern, tau, node_speed, seed: int, mean_bytes: float = 65536.0,
                 packet_size: float = 1024.0, header: float = 64.0, t_routing: float = 1e-6,
                 pool: int = 1024) -> None:
        n = np.asarray(n, np.int64)
        iters = np.asarray(iters, np.int64)
        pattern = np.asarray(pattern, np.int64)
        if not 0 <= header < packet_size:
            raise ValueError(f"header ({header}) must be >= 0 and < packet_size ({packet_size})")
        if n.size and (n.min() < 1 or iters.min() < 1):
            raise ValueError("every job needs n >= 1 processes and iters >= 1")
        if pattern.size and (pattern.min() < 0 or pattern.max() >= len(PATTERNS)):
            raise ValueError(f"pattern codes must be 0..{len(PATTERNS) - 1} ({', '.join(PATTERNS)})")
        if not mean_bytes > 0:
            raise ValueError(f"mean message size must be > 0 bytes, got {mean_bytes}")
        nj = n.size
        pbase = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
        pibase = np.concatenate([[0], np.cumsum(n * iters)]).astype(np.int64)
        self.jb = np.zeros((6, nj), np.int64)
        self.jb[J_PBASE] = pbase[:-1]
        self.jb[J_N] = n
        self.jb[J_ITERS] = iters
        self.jb[J_PATTERN] = pattern
        self.jb[J_PIBASE] = pibase[:-1]
        self.jb[J_LEFT] = NOT_STARTED
        self.jbf = np.full((3, nj), np.nan)
        self.jbf[JF_TAU] = np.asarray(tau, np.float64)
        procs = int(pbase[-1])
        self.pr = np.zeros((4, max(procs, 1)), np.int64)
        self.prf = np.zeros((2, max(procs, 1)))
        self.pi = np.zeros((2, max(int(pibase[-1]), 1)), np.int64)
        self.node_speed = kernel_array(node_speed, np.float64)
        if self.node_speed.size != topo.n_nodes:
            raise ValueError(f"node_speed has {self.node_speed.size} entries, the topology {topo.n_nodes} nodes")
        self.max_deg = int(max(n.max() - 1, 1)) if nj else 1
        self.net = net.new_state(topo, packet_size, t_routing, pool=pool,
                                 heap_capacity=topo.n_devices + topo.n_links + procs + 16)
        self.seed = np.uint64(seed)
        self.mean_bytes = float(mean_bytes)
        self.payload = float(packet_size - header)
        self.done = np.zeros(nj + 1, np.int64)

    def _args(self) -> tuple:
        s = self.net
        return (self.seed, self.mean_bytes, self.payload, self.node_speed, self.pr, self.prf, self.pi, self.jb,
                self.jbf, s.t_routing, s.next_link, s.link_dst, s.link_time, s.dev)

    def _tail(self) -> tuple:
        s = self.net
        return (s.pk, s.msg, s.msgf, s.heap, s.ctr, s.acc)

    def start(self, j: int, t: float, proc_nodes) -> None:
        """Start job j at t with its processes on ``proc_nodes`` (one node id per process)."""
        base, n = self.jb[J_PBASE, j], self.jb[J_N, j]
        if self.jb[J_LEFT, j] != NOT_STARTED:
            raise ValueError(f"job {j} was already started")
        self.pr[P_NODE, base:base + n] = proc_nodes
        need = int(job_messages(j, self.jb))
        s = self.net
        while not net.room(s.pk, s.msg, s.ctr, need):
            s.grow(need)
        a = self._args()
        start_job(j, float(t), *a, *self._tail())

    def kill(self, j: int, t: float) -> None:
        """Stop job j at t: its pending computations and later messages are ignored."""
        self.jb[J_LEFT, j] = KILLED
        self.jbf[JF_END, j] = t

    def next_time(self) -> float:
        return float(self.net.heap[0][0]) if self.net.ctr[net.C_HSIZE] > 0 else np.inf

    def advance(self, t_limit: float, inclusive: bool = False) -> tuple[float, list[int]]:
        """Run the network up to ``t_limit`` or the first time jobs end; (that time, jobs)."""
        s = self.net
        while True:
            a = self._args()
            status = advance(float(t_limit), inclusive, self.max_deg, self.done, *a, s.lnk, *self._tail())
            if status != NEED_ROOM:
                break
            s.grow(self.max_deg)
        if status == 0:
            return np.inf, []
        k = int(self.done[0])
        ended = self.done[1:k + 1].tolist()
        self.done[0] = 0
        return float(self.jbf[JF_END, ended[0]]), ended


def simulate_jobs(topo: Topology, start, proc_nodes: list, n, iters, pattern, tau, node_speed, seed: int = 0,
                  **kw) -> SpmdSim:
    """Run jobs started at fixed times on fixed nodes until all end (no scheduler, no kills).

    ``proc_nodes[j]`` lists the node of each process of job j. Returns the simulation;
    ``sim.jbf[JF_END]`` holds the end times (s).
    """
    sim = SpmdSim(topo, n, iters, pattern, tau, node_speed, seed, **kw)
    order = np.argsort(np.asarray(start, np.float64), kind="stable")
    for j in order:
        t = float(start[j])
        while True:                              # every event before the start (priority 5 comes last)
            te, _ = sim.advance(t, inclusive=True)
            if te == np.inf:
                break
        sim.start(int(j), t, proc_nodes[j])
    while sim.advance(np.inf, inclusive=True)[0] != np.inf:
        pass
    return sim
