"""``workloads.cluster.netsched``: the cluster workload with its network (part 2).

Part 1's job flows (``workloads.cluster.flow``: same streams, same jobs) run as SPMD
programs on the packet network of ``spmd.py`` / ``network.py``. Two engines:

- part 1's allocation policies (first_fit, best_fit, fastest_first, random_first) with
  any queue policy run wholly in numba: part 1's event loop with the network merged in
  (``netsim.py``);
- the topology-aware methods of ``topo_allocation.py`` (Python, whole idle nodes) run
  under a scheduler written in Python at job granularity (one Python step per event
  time with an arrival, job end or kill; every packet event still runs in numba), with
  ``fcfs`` and ``mpfs_scan``. For first_fit both engines give identical schedules
  (tested), so the Python scheduler is also an oracle of the kernel.

Job real times come from the simulation; a job still running at ``start + t / min s``
is killed.

Event order at one time (spec "Simulation"): arrivals, packet events (link ends, then
routing ends), computation ends, kills, one scheduling pass if anything but packet
events happened, then the jobs it started (their first messages are sent then).
Metrics are part 1's (``metrics.compute``) over the same integrals, plus SD, MB and
the measured contention.

JD is part 1's ``spread`` metric (distinct nodes / cores requested).

Still to do for a full integration: topology-aware methods as numba allocation
policies inside part 1's ``allocation.choose`` (then backfilling works with them too),
and this module's parameters merged into ``cluster/__init__.py``.

Random streams: part 1's four, in its order; stream 2 (communication) gives, per job,
``iters ~ U{1 … iters_max}`` (n draws), the pattern (n draws, used when
``pattern = 'mixed'``), then one uint64 seed for the message hash (``spmd.py``).
"""
from __future__ import annotations

import heapq
import time
from typing import Any, Mapping

import numpy as np

from .._contract import Metric, Param, empty_outputs, substream_seeds, substreams
from . import PARAMS as CLUSTER_PARAMS, check_params as cluster_check_params, flow as make_flow
from . import comm_metrics, topo_allocation, topology
from . import network as net
from . import spmd
from .metrics import METRICS as CLUSTER_METRICS, REASONS, compute, offered_load  # REASONS: this workload's too
from .simulator import Result

from .allocation import NAMES as PART1_ALLOCATIONS
from .bookkeeping import QUEUE_NAMES
from . import netsim

ALLOCATIONS = tuple(PART1_ALLOCATIONS) + tuple(topo_allocation.METHODS)
_SKIP = {"queue", "allocation", "source", "trace", "trace_max_procs", "trace_load"}

PARAMS = tuple(p for p in CLUSTER_PARAMS if p.name not in _SKIP) + (
    Param("queue", "str", "mpfs_scan", "queue policy (topology-aware allocation: fcfs or mpfs_scan only)",
          choices=QUEUE_NAMES),
    Param("allocation", "str", "first_fit", "allocation: part 1's policies (numba kernel, netsim.py) or a "
          "topology-aware method (Python scheduler)", choices=ALLOCATIONS),
    Param("topology", "str", "fat_tree", "interconnect", choices=topology.KINDS),
    Param("topology_size", "floats", (), "sizes: star (p); fat_tree (leaves, per_leaf, spines); torus (k1, k2[, k3]); "
          "kary_ntree (k, n); empty = the spec's default for 64 nodes"),
    Param("layout", "str", "", "topology and sizes in one sweepable string, e.g. 'torus:4x4x4', 'fat_tree:8x8x4', "
          "'star:64', 'kary_ntree:4x3', 'torus' (default sizes); overrides topology and topology_size when set"),
    Param("ties", "str", "lowest_id", "tie rule among equal shortest next hops (trees; tori use dimension order)",
          choices=topology.TIES),
    Param("torus_routing", "str", "dimension_order", "routing on tori and cubes (trees and stars: shortest up/down)",
          choices=("dimension_order", "shortest")),
    Param("bandwidth", "float", 1.25e9, "link bandwidth per direction (bytes/s; inf = no transmission time)",
          low=1e-300),
    Param("packet_size", "float", 1024.0, "packet size g (bytes)", low=1.0),
    Param("header", "float", 64.0, "packet header h (bytes), h < g", low=0.0),
    Param("t_routing", "float", 1e-6, "routing stage service time (s)", low=0.0),
    Param("iters_max", "int", 20, "iterations per job ~ U{1 ... iters_max}", low=1),
    Param("pattern", "str", "mixed", "communication pattern of every job; mixed = uniform per job",
          choices=("mixed",) + spmd.PATTERNS),
    Param("message_mean", "float", 65536.0, "mean message size per arc and iteration (bytes, exponential)",
          low=1e-9),
    Param("page_side", "int", 1, "paging: page side in nodes", low=1),
    Param("time_scale", "float", 1.0, "multiplies every job's tau, estimate and submit time (our rule: Lublin "
          "runtimes are seconds to hours, messages microseconds; scaling the flow lets the network matter)",
          low=1e-12),
)

METRICS = CLUSTER_METRICS + (
    Metric("sd", "hops", "SD: mean over jobs of the sum over process pairs of the hop distance of their nodes"),
    Metric("mb", "s", "MB: mean time from a blocking receive's call to the arrival of its message"),
    Metric("contention", "1", "sum of measured message times / sum of their idle-network times"),
    Metric("mean_job_time", "s", "mean real time T of the jobs that were not killed"),
    Metric("packet_events", "events", "link-end and routing-end events simulated"),
    Metric("packet_events_per_second", "events/s", "packet events per second of simulation wall time", timing=True),
)


def check_params(params: Mapping[str, Any]) -> list[str]:
    errors = []
    try:
        p = _with_defaults(params)
    except ValueError:
        return [f"layout {params.get('layout')!r} is not kind[:AxBxC] with integer sizes"]
    if p["topology"] not in topology.KINDS:
        return [f"layout {params.get('layout')!r}: topology {p['topology']!r} not one of {', '.join(topology.KINDS)}"]
    errors += cluster_check_params(p)             # part 1's rules (memory/disk bounds, backfilling)
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
        if alloc in topo_allocation.METHODS and p["queue"] not in ("fcfs", "mpfs_scan"):
            errors.append(f"queue {p['queue']!r} with allocation {alloc!r}: topology-aware methods run in the "
                          "Python scheduler, which has fcfs and mpfs_scan only")
        if topo.n_nodes != p["nodes"]:
            errors.append(f"topology {p['topology']!r} {list(p['topology_size'])} has {topo.n_nodes} nodes, "
                          f"nodes = {p['nodes']}")
    return errors


def _with_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    p = {q.name: q.default for q in PARAMS}
    p.update(params)
    p["source"] = "lublin"
    if p["layout"]:
        kind, _, size = p["layout"].partition(":")
        p["topology"] = kind
        p["topology_size"] = tuple(float(x) for x in size.split("x")) if size else ()
    return p


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
    if p["time_scale"] != 1.0:           # the load of eq. (8) is unchanged: all times scale together
        f.tau, f.estimate, f.submit = (x * p["time_scale"] for x in (f.tau, f.estimate, f.submit))
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
    """Schedule flow ``f`` on ``topo`` with the network; returns (Result, SpmdSim, allocations, wall s)."""
    iters, kinds, mseed = comm
    nj = f.submit.size
    sim = spmd.SpmdSim(topo, f.cores_req, iters, kinds, f.tau, f.node_speed, mseed, p["message_mean"],
                       p["packet_size"], p["header"], p["t_routing"])
    cl = _Cluster(f, topo, p["allocation"], p["page_side"])
    speed = np.asarray(f.node_speed, np.float64)
    p_nodes = cl.cores.size
    total = int(cl.cores.sum())
    start, end = np.full(nj, np.nan), np.full(nj, np.nan)
    killed = np.zeros(nj, np.int8)
    nodes_used, min_speed = np.zeros(nj, np.int64), np.full(nj, np.nan)
    allocs: list = [None] * nj
    queue: list[int] = []
    kills: list = []
    mpfs = p["queue"] == "mpfs_scan"
    acc_u, acc_m, acc_d = np.zeros(p_nodes), np.zeros(p_nodes), np.zeros(p_nodes)
    masked = sig_t = cl_int = 0.0
    t_prev = float(f.submit[0]) if nj else 0.0
    delta = sigma = False
    ia = 0
    wall = time.perf_counter()

    def finish(j: int, t: float, was_killed: bool) -> None:
        end[j] = t
        killed[j] = was_killed
        cl.take(allocs[j], f.mem_req[j], f.disk_req[j], -1)

    while True:
        ta = float(f.submit[ia]) if ia < nj else np.inf
        tl = min(ta, kills[0][0] if kills else np.inf)
        t, ended = sim.advance(tl, inclusive=False)
        if not ended:
            if tl == np.inf:
                break
            t = tl
            while ia < nj and f.submit[ia] == t:             # 1: arrivals
                queue.append(ia)
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
        for j in ended:
            finish(j, t, False)
        while kills and kills[0][0] == t:                    # 4: kills at the estimate
            _, j = heapq.heappop(kills)
            if np.isnan(end[j]):
                sim.kill(j, t)
                finish(j, t, True)
        if mpfs:
            queue.sort(key=lambda j: (-f.cores_req[j], j))
        started = []
        for j in list(queue):                                # one scheduling pass
            nodes = cl.choose(int(f.cores_req[j]), f.mem_req[j], f.disk_req[j])
            if nodes is None:
                if mpfs:
                    continue
                break
            queue.remove(j)
            cl.take(nodes, f.mem_req[j], f.disk_req[j], +1)
            allocs[j] = nodes
            start[j] = t
            ms = float(speed[nodes].min())
            min_speed[j] = ms
            nodes_used[j] = np.unique(nodes).size
            heapq.heappush(kills, (t + f.estimate[j] / ms, j))
            started.append(j)
        for j in started:                                    # 5: starts of scheduled jobs
            sim.start(j, t, allocs[j])
        delta = len(queue) > 0
        sigma = delta and (p["cl_mask"] == "queue_nonempty" or int(cl.fc.sum()) < total)
    wall = time.perf_counter() - wall
    per_job = [np.unique(a, return_counts=True) if a is not None else (np.zeros(0, np.int64),) * 2 for a in allocs]
    ptr = np.concatenate([[0], np.cumsum([u.size for u, _ in per_job])]).astype(np.int64)[:-1]
    alloc_node = np.concatenate([u for u, _ in per_job] + [np.zeros(0, np.int64)]).astype(np.int64)
    alloc_k = np.concatenate([k for _, k in per_job] + [np.zeros(0, np.int64)]).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = Result(alloc_ptr=ptr, alloc_node=alloc_node, alloc_k=alloc_k, start=start, end=end, killed=killed, nodes_used=nodes_used, min_speed=min_speed,
                     bound=np.full(nj, np.nan), node_core_util=acc_u / masked, node_mem_util=acc_m / masked,
                     node_disk_util=acc_d / masked, masked_time=masked, sigma_time=sig_t, cl_integral=cl_int,
                     unplaceable=0)
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
        events = float(sim.net.ctr[net.C_EVENTS])
        values["packet_events"] = events
        values["packet_events_per_second"] = events / wall if wall > 0 else np.nan
        for name, v in values.items():
            out[name][r] = v
        out["reason"][r] = reason
    return out
