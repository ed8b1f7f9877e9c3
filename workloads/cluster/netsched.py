"""The network engine of the ``cluster`` workload (part 2, ``network = 'packet'``).

Part 1's job flows (``workloads.cluster.flow``: same streams, same jobs) run as SPMD
programs on the packet network of ``spmd.py`` / ``network.py``. Two engines:

- part 1's allocation policies (first_fit, best_fit, fastest_first, random_first) with
  any queue policy run wholly in numba: part 1's event loop with the network merged in
  (``netsim.py``);
- the topology-aware methods of ``topo_allocation.py`` (Python, whole idle nodes) run
  under a scheduler written in Python at job granularity (one Python step per event
  time with an arrival, job end, kill or reservation wake-up; every packet event still
  runs in numba), with every queue policy of ``topo_backfill.py`` (FCFS, MPFS scan, EASY
  and conservative backfilling counted in idle nodes). For first_fit both engines give
  identical schedules (tested), so the Python scheduler is also an oracle of the kernel.

Parameters and metrics are declared in ``network_params.py`` and are the ``cluster``
workload's (``workload = "cluster"`` with ``network = "packet"``); ``cluster.run_batch``
calls :func:`run_batch` here. Job real times come from the simulation; a job still
running at ``start + t / min s`` is killed.

Event order at one time (spec "Simulation"): arrivals, packet events (link ends, then
routing ends), computation ends, kills, reservation wake-ups, one scheduling pass if
an arrival, job end or kill happened (else, if a reservation is due, only the due jobs
start), then the jobs started at that time (their first messages are sent then).
Metrics are part 1's (``metrics.compute``) over the same integrals, plus SD, MB, the
measured contention, late starts and shape delays. JD is part 1's ``spread`` metric
(distinct nodes / cores requested).

Random streams: part 1's four, in its order; stream 2 (communication) gives, per job,
``iters ~ U{1 … iters_max}`` (n draws), the pattern (n draws, used when
``pattern = 'mixed'``), then one uint64 seed for the message hash (``spmd.py``).
"""
from __future__ import annotations

import heapq
import time
from typing import Any, Mapping

import numpy as np

from .._contract import empty_outputs, substream_seeds, substreams
from . import comm_metrics, netsim, spmd, topo_allocation, topo_backfill, topology
from . import network as net
from .flows import flow as make_flow
from .metrics import compute, late_starts, offered_load
from .params import METRICS, with_defaults as cluster_defaults
from .simulator import Result


def check_network(p: Mapping[str, Any]) -> list[str]:
    """Errors of the network parameters (``p`` with defaults, layout resolved)."""
    errors = []
    if p["topology"] not in topology.KINDS:
        return [f"layout {p.get('layout')!r}: topology {p['topology']!r} not one of {', '.join(topology.KINDS)}"]
    if p["header"] >= p["packet_size"]:
        errors.append(f"header ({p['header']}) must be smaller than packet_size ({p['packet_size']})")
    alloc = p["allocation"]
    try:
        topo = _topology(p)
    except (ValueError, TypeError) as e:
        errors.append(f"topology {p['topology']!r} with topology_size {list(p['topology_size'])}: {e}")
    else:
        kinds = topo_allocation.METHODS[alloc][1] if alloc in topo_allocation.METHODS else topology.KINDS
        if topo.kind not in kinds:
            errors.append(f"allocation {alloc!r} works on topology {', '.join(kinds)}, not {p['topology']!r}")
        if topo.n_nodes != p["nodes"]:
            errors.append(f"topology {p['topology']!r} {list(p['topology_size'])} has {topo.n_nodes} nodes, "
                          f"nodes = {p['nodes']}")
    return errors


def _with_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster workload's defaults with the network on (``network = 'packet'``)."""
    return cluster_defaults(dict(params, network="packet"))


_TOPO_CACHE: dict = {}


def _topology(p: Mapping[str, Any]) -> topology.Topology:
    size = tuple(int(x) for x in p["topology_size"])
    key = (p["topology"], size, float(p["bandwidth"]), p["ties"], p["torus_routing"])
    if key not in _TOPO_CACHE:
        routing = p["torus_routing"] if p["topology"] in ("torus", "kary_ncube") else ""
        _TOPO_CACHE[key] = topology.make(p["topology"], size, p["bandwidth"], p["ties"], routing)
    return _TOPO_CACHE[key]


def communication(rng: np.random.Generator, n_jobs: int, iters_max: int, pattern: str) -> tuple:
    """Per-job iterations and pattern codes, and the message seed (stream 2's draws)."""
    iters = rng.integers(1, iters_max + 1, n_jobs)
    kinds = rng.integers(0, len(spmd.PATTERNS), n_jobs)
    seed = int(rng.integers(0, 2**63, dtype=np.int64))
    if pattern != "mixed":
        kinds = np.full(n_jobs, spmd.PATTERNS.index(pattern))
    return iters.astype(np.int64), kinds.astype(np.int64), seed


def replication_inputs(p: Mapping[str, Any], seed: int) -> tuple:
    """Replication ``seed``'s flow (part 1's, times scaled by ``time_scale``) and its
    communication draws (:func:`communication`)."""
    f, _alloc_seed = make_flow(p, seed)
    return f, communication(substreams(seed, 4)[2], f.submit.size, p["iters_max"], p["pattern"])


class _Cluster:
    """Free cores, memory and disk per node and the allocation rules on them."""

    def __init__(self, f, topo, method: str, page_side: int) -> None:
        self.cores = np.asarray(f.node_cores, np.int64)
        self.mem = np.asarray(f.node_mem, np.float64)
        self.disk = np.asarray(f.node_disk, np.float64)
        self.fc, self.fm, self.fd = self.cores.copy(), self.mem.copy(), self.disk.copy()
        self.topo, self.method, self.page_side = topo, method, page_side

    def capacity(self, mr: float, dr: float, full: bool = False) -> np.ndarray:
        c, m, d = (self.cores, self.mem, self.disk) if full else (self.fc, self.fm, self.fd)
        k = c.copy()
        if mr > 0:
            k = np.minimum(k, (m // mr).astype(np.int64))
        if dr > 0:
            k = np.minimum(k, (d // dr).astype(np.int64))
        return k

    def units(self, n: int, mr: float, dr: float) -> int:
        """Job size in the queue policies' capacity unit: cores for first_fit, idle nodes
        for topology-aware methods (more than all nodes if a node cannot take a process)."""
        if self.method == "first_fit":
            return n
        cap = int(self.capacity(mr, dr, full=True).min())
        return topo_allocation.nodes_needed(n, cap) if cap >= 1 else self.cores.size + 1

    def choose(self, n: int, mr: float, dr: float) -> np.ndarray | None:
        """Node of each of the n processes, or None if the job cannot start now."""
        if self.method == "first_fit":
            k = self.capacity(mr, dr)
            if k.sum() < n:
                return None
            take = np.minimum(k, np.maximum(0, n - np.concatenate([[0], np.cumsum(k)[:-1]])))
            return np.repeat(np.arange(k.size), take)
        cap = int(self.capacity(mr, dr, full=True).min())
        if cap < 1:
            return None
        m = topo_allocation.nodes_needed(n, cap)
        idle = self.fc == self.cores
        if idle.sum() < m:
            return None
        opts = {"page_side": self.page_side} if self.method == "paging" else {}
        order = topo_allocation.choose(self.method, self.topo, idle, m, **opts)
        return None if order is None else topo_allocation.processes_on(order, n, cap)

    def take(self, nodes: np.ndarray, mr: float, dr: float, sign: int) -> None:
        u, k = np.unique(nodes, return_counts=True)
        self.fc[u] -= sign * k
        self.fm[u] -= sign * (k * mr)
        self.fd[u] -= sign * (k * dr)


def simulate_network(p: Mapping[str, Any], f, comm: tuple, topo: topology.Topology):
    """Schedule flow ``f`` on ``topo`` with the network; returns (Result, SpmdSim, allocations, wall s).

    ``Result.bound`` holds each job's guarantee (EASY first shadow, first conservative
    reservation), ``Result.unplaceable`` the shape delays (``topo_backfill``)."""
    iters, kinds, mseed = comm
    nj = f.submit.size
    sim = spmd.SpmdSim(topo, f.cores_req, iters, kinds, f.tau, f.node_speed, mseed, p["message_mean"],
                       p["packet_size"], p["header"], p["t_routing"])
    cl = _Cluster(f, topo, p["allocation"], p["page_side"])
    speed = np.asarray(f.node_speed, np.float64)
    p_nodes = cl.cores.size
    total = int(cl.cores.sum())
    units = np.array([cl.units(int(f.cores_req[j]), f.mem_req[j], f.disk_req[j]) for j in range(nj)], np.int64)
    qs = topo_backfill.Queues(p["queue"], units, total if p["allocation"] == "first_fit" else p_nodes,
                              f.cores_req, f.estimate, speed)
    start, end = np.full(nj, np.nan), np.full(nj, np.nan)
    killed = np.zeros(nj, np.int8)
    nodes_used, min_speed = np.zeros(nj, np.int64), np.full(nj, np.nan)
    allocs: list = [None] * nj
    kills: list = []
    started: list[int] = []
    acc_u, acc_m, acc_d = np.zeros(p_nodes), np.zeros(p_nodes), np.zeros(p_nodes)
    masked = sig_t = cl_int = 0.0
    t_prev = float(f.submit[0]) if nj else 0.0
    delta = sigma = False
    ia = 0
    t = t_prev
    wall = time.perf_counter()

    def place(j: int):
        nodes = cl.choose(int(f.cores_req[j]), f.mem_req[j], f.disk_req[j])
        return None if nodes is None else (nodes, float(speed[nodes].min()))

    def commit(j: int, placed) -> None:
        nodes, ms = placed
        cl.take(nodes, f.mem_req[j], f.disk_req[j], +1)
        allocs[j] = nodes
        start[j] = t
        min_speed[j] = ms
        nodes_used[j] = np.unique(nodes).size
        lim = f.estimate[j] / ms
        heapq.heappush(kills, (t + lim, j))
        started.append(j)
        qs.started(j, t, lim)

    def finish(j: int, t: float, was_killed: bool) -> None:
        end[j] = t
        killed[j] = was_killed
        cl.take(allocs[j], f.mem_req[j], f.disk_req[j], -1)
        qs.ended(j, t)

    while True:
        ta = float(f.submit[ia]) if ia < nj else np.inf
        tl = min(ta, kills[0][0] if kills else np.inf, qs.next_wakeup())
        t, ended = sim.advance(tl, inclusive=False)
        arrived: list[int] = []
        if not ended:
            if tl == np.inf:
                break
            t = tl
            while ia < nj and f.submit[ia] == t:             # 1: arrivals
                qs.arrive(ia)
                arrived.append(ia)
                ia += 1
            _, ended = sim.advance(t, inclusive=True)       # 2-4: packets, computation ends at t
        dt = t - t_prev                                      # the state recorded after the last pass held until t
        if dt > 0 and delta:
            masked += dt
            acc_u += dt * (cl.cores - cl.fc) / cl.cores
            acc_m += dt * np.where(cl.mem > 0, (cl.mem - cl.fm) / np.where(cl.mem > 0, cl.mem, 1), 0.0)
            acc_d += dt * np.where(cl.disk > 0, (cl.disk - cl.fd) / np.where(cl.disk > 0, cl.disk, 1), 0.0)
        if dt > 0 and sigma:
            sig_t += dt
            cl_int += dt * float(np.sum(speed * cl.fc))
        t_prev = t
        trigger = bool(arrived) or bool(ended)
        for j in ended:
            finish(j, t, False)
        while kills and kills[0][0] == t:                    # 4: kills at the estimate
            _, j = heapq.heappop(kills)
            if np.isnan(end[j]):
                sim.kill(j, t)
                finish(j, t, True)
                trigger = True
        due = qs.pop_wakeups(t, start)                       # reservation wake-ups
        started.clear()
        if trigger:                                          # one scheduling pass
            qs.schedule(t, arrived, place, commit)
        elif due:
            qs.start_due(t, place, commit)
        for j in started:                                    # 5: starts of scheduled jobs
            sim.start(j, t, allocs[j])
        delta = len(qs.queue) > 0
        sigma = delta and (p["cl_mask"] == "queue_nonempty" or int(cl.fc.sum()) < total)
    wall = time.perf_counter() - wall
    per_job = [np.unique(a, return_counts=True) if a is not None else (np.zeros(0, np.int64),) * 2 for a in allocs]
    ptr = np.concatenate([[0], np.cumsum([u.size for u, _ in per_job])]).astype(np.int64)[:-1]
    alloc_node = np.concatenate([u for u, _ in per_job] + [np.zeros(0, np.int64)]).astype(np.int64)
    alloc_k = np.concatenate([k for _, k in per_job] + [np.zeros(0, np.int64)]).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = Result(alloc_ptr=ptr, alloc_node=alloc_node, alloc_k=alloc_k, start=start, end=end, killed=killed,
                     nodes_used=nodes_used, min_speed=min_speed, bound=qs.bound, node_core_util=acc_u / masked,
                     node_mem_util=acc_m / masked, node_disk_util=acc_d / masked, masked_time=masked,
                     sigma_time=sig_t, cl_integral=cl_int, unplaceable=len(qs.shape_delayed))
    return res, sim, allocs, wall


def simulate_kernel(p: Mapping[str, Any], f, comm: tuple, topo: topology.Topology, alloc_seed: int):
    """Part 1's allocation policies: the whole replication in the numba kernel (``netsim``)."""
    wall = time.perf_counter()
    res, sim = netsim.simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores,
                               f.node_mem, f.node_disk, f.node_speed, p["queue"], p["allocation"], alloc_seed, topo,
                               comm[0], comm[1], comm[2], p["message_mean"], p["packet_size"], p["header"],
                               p["t_routing"], p["cl_mask"])
    wall = time.perf_counter() - wall
    allocs = [None if np.isnan(res.start[j]) else
              np.repeat(res.alloc_node[res.alloc_ptr[j]:res.alloc_ptr[j] + res.nodes_used[j]],
                        res.alloc_k[res.alloc_ptr[j]:res.alloc_ptr[j] + res.nodes_used[j]])
              for j in range(f.submit.size)]
    return res, sim, allocs, wall


def run_batch(params: Mapping[str, Any], seeds: np.ndarray) -> dict[str, np.ndarray]:
    """The ``cluster`` workload's replications with the network on (whatever ``params['network']``)."""
    p = _with_defaults(params)
    topo = _topology(p)
    out = empty_outputs(METRICS, len(seeds))
    for r, seed in enumerate(seeds):
        f, comm = replication_inputs(p, int(seed))
        alloc_seed = int(substream_seeds(int(seed), 4)[3])
        if p["allocation"] in topo_allocation.METHODS:
            res, sim, allocs, wall = simulate_network(p, f, comm, topo)
        else:
            res, sim, allocs, wall = simulate_kernel(p, f, comm, topo, alloc_seed)
        values, reason = compute(res, f.submit, f.cores_req, f.node_speed, f.node_cores, p["bsld_threshold"])
        values["dropped_jobs"] = values["dropped_too_large"] = 0.0
        values["offered_load"] = offered_load(f.cores_req, f.tau, f.submit, f.node_speed, f.node_cores)
        values["sim_seconds"] = wall
        values["jobs_per_second"] = f.submit.size / wall if wall > 0 else np.nan
        placed = [a for a in allocs if a is not None]
        values["sd"], _jd = comm_metrics.sd_jd(topo, placed)
        values["mb"] = comm_metrics.mb(sim.net.acc)
        values["contention"] = comm_metrics.contention(sim.net.acc)
        ok = (res.killed == 0) & ~np.isnan(res.end)
        values["mean_job_time"] = float(np.mean(res.end[ok] - res.start[ok])) if ok.any() else np.nan
        values["late_starts"] = late_starts(res)
        values["shape_delays"] = float(res.unplaceable) if p["allocation"] in topo_allocation.METHODS else 0.0
        events = float(sim.net.ctr[net.C_EVENTS])
        values["packet_events"] = events
        values["packet_events_per_second"] = events / wall if wall > 0 else np.nan
        for name, v in values.items():
            out[name][r] = v
        out["reason"][r] = reason
    return out
