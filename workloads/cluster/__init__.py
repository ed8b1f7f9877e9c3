"""``cluster``: batch scheduling of rigid parallel jobs on a cluster, with or without its network.

Spec: ``shared/spec/cluster.md`` and ``shared/spec/lublin_feitelson.md``. A replication
generates (or reads) one job flow, simulates it event by event (``simulator.py``) with
one queue policy (``queue_policies.py``) and one allocation policy (``allocation.py``),
and reports the metrics of ``metrics.py``.

``network = 'none'`` (default) is part 1: computation only, as above. ``network =
'packet'`` is part 2 (``netsched.py``): every job is an SPMD program on the packet
network of ``topology`` / ``layout`` (parameters in ``network_params.py``); part 1's
allocation policies then run in the numba kernel with the network inside
(``netsim.py``), the topology-aware methods of ``topo_allocation.py`` (allowed only with
the network on) in a Python job-level scheduler with every queue policy
(``topo_backfill.py``). The engine is imported only when the network is on (it imports
this package for the job flows). Network metrics are NaN when the network is off (no
reason code: a non-zero reason would mark every part-1 replication "no result").

``semantics = 'pyss'`` (default 'textbook') follows pyss (cluster.md, last section) in
a separate kernel, ``pyss_kernel.py``, imported and compiled only when asked: events one
at a time (Submission < Termination < Start), a pass after each, estimated ends free
from then on, conservative compressed in one pass after terminations, pyss's trace
conversion as pyss's source does it (``swf.pyss_fields``: a job that ran past its
request runs until the request, counted killed, and keeps its run time as estimate). It
supports queue fcfs / easy / conservative, network 'none', allocation 'first_fit',
homogeneous speeds, non-binding memory (``check_params`` names the rest); per-node
variances and memory/disk use are NaN there (one processor pool). Measured
(``benchmarks/pyss.md``): on the first 2,000 jobs of every shared trace the kernel's
start times equal the plain reference ``tests/naive_pyss.py`` for every job (FCFS,
EASY, conservative), and on whole traces it runs within 2x of the textbook kernel. ``kill_at_estimate = true`` (any trace, textbook semantics): estimate = the
requested time, so a job that ran longer is killed at start + request (``killed_jobs``).

Plug-ins (README "Your own algorithm"): ``queue`` and ``allocation`` also take a
user's function, ``"package.module:function"`` (``PLUGINS`` declares both points). Such
cells run in ``plugin_kernel.py`` (imported and compiled only then), the function seeing
the read-only state of ``plugin_api.py``; ``plugin_builtins.py`` has FCFS, EASY, MPFS and
first fit written as plug-ins (tested equal to the built-ins).

Random streams of a replication, in this order (all four are always spawned):
0. cluster: node speeds (``heterogeneous``: ``U[1, 2]`` per node, divided by the minimum);
1. jobs (Lublin flows only): sizes (3 × n uniforms), runtimes (component uniforms and
   gammas, redraws), estimates (n uniforms), memory (n), disk (n), then the arrival gaps
   (``poisson``: n Exp(1); ``lublin_daily``: the model's gammas);
2. communication: reserved for part 2 (iterations, patterns, message sizes);
3. allocation: seeds the kernel's splitmix64 stream (Random First).
Trace flows draw nothing from stream 1; their jobs are the trace's.
"""
from __future__ import annotations

import os
import sys
import time
import zlib
from typing import Any, Mapping

import numpy as np

from .._contract import Param, empty_outputs, is_plugin_path, substream_seeds, substreams
from .._lazy import handed_on
from .._plugins import fails_loudly
from . import lublin, swf
from .choices import ALLOCATION_NAMES as ALLOCATIONS, CL_MASKS, QUEUE_NAMES, TOPO_METHODS
from .metrics import METRICS as CORE_METRICS, REASONS, compute, offered_load
from .network_params import NETWORK_METRICS, NETWORK_PARAMS, resolve_layout
from .points import PLUGINS

# The declarations import no numba (``schedsweep workloads`` lists them quickly); the kernels
# are imported by the functions that run a replication, and handed on when asked for
# (``cluster.simulate``, ``cluster.simulator``, ``cluster.plugin_api``).
__getattr__ = handed_on(__name__, {"Result": ".simulator", "simulate": ".simulator"})

__all__ = ["PARAMS", "METRICS", "REASONS", "run_batch", "check_params", "schedule", "Flow", "job_records"]

PARAMS = (
    Param("source", "str", "lublin", "job flow: 'lublin' (generated) or 'swf' (the trace in `trace`)",
          choices=("lublin", "swf")),
    Param("trace", "path", "", "SWF trace (.swf or .swf.gz) when source = 'swf'"),
    Param("trace_max_procs", "int", 0, "machine size for the trace; 0 = its '; MaxProcs:' header", low=0),
    Param("trace_load", "float", 0.0, "scale trace submit times so eq. (8) gives this load (fraction); 0 = as recorded",
          low=0.0),
    Param("jobs", "int", 1000, "jobs per generated flow", low=1),
    Param("load", "float", 0.7, "target system load L of eq. (8) for generated flows (fraction, 0.7 = 70%)",
          low=1e-6),
    Param("arrivals", "str", "poisson", "arrival process of generated flows: Poisson or the daily cycle of one "
          "typeless stream, or the Lublin-Feitelson reference program's default: an interactive and a batch "
          "stream with daily cycles merged, each job's size and runtime from its type's parameters (SWF queue "
          "0/1)", choices=("poisson", "lublin_daily", "lublin_two_type")),
    Param("nodes", "int", 64, "compute nodes (generated flows; traces use MaxProcs single-core nodes)", low=1),
    Param("cores", "int", 4, "cores per node (generated flows)", low=1),
    Param("speeds", "str", "homogeneous", "node speeds: all 1, or U[1, 2] divided by the minimum drawn",
          choices=("homogeneous", "heterogeneous")),
    Param("node_memory", "float", 8_388_608.0, "memory per node (KB)", low=0.0),
    Param("node_disk", "float", 67_108_864.0, "disk per node (KB)", low=0.0),
    Param("mem_low", "float", 65_536.0, "per-process memory lower bound (KB, uniform)", low=0.0),
    Param("mem_high", "float", 2_097_152.0, "per-process memory upper bound (KB, uniform)", low=0.0),
    Param("disk_low", "float", 0.0, "per-process disk lower bound (KB, uniform)", low=0.0),
    Param("disk_high", "float", 8_388_608.0, "per-process disk upper bound (KB, uniform)", low=0.0),
    Param("queue", "str", "mpfs_scan", "queue policy (a plug-in: see the plug-in points)",
          choices=QUEUE_NAMES, plugin=True),
    Param("allocation", "str", "first_fit", "allocation policy: part 1's, or a topology-aware method "
          "(network = 'packet' only)",
          choices=tuple(ALLOCATIONS) + TOPO_METHODS, plugin=True),
    Param("cl_mask", "str", "queue_nonempty_and_not_all_idle", "when the performance loss CL is counted",
          choices=CL_MASKS),
    Param("bsld_threshold", "float", 10.0, "bounded-slowdown threshold tau (s)", low=0.0),
    Param("semantics", "str", "textbook", "event and reservation semantics: 'textbook' (all events of a time, "
          "then one pass) or 'pyss' (pyss's rules and trace conversion, cluster.md last section; separate kernel)",
          choices=("textbook", "pyss")),
    Param("kill_at_estimate", "bool", False, "traces: estimate = requested time (field 9, when > 0), so a job "
          "that ran longer is killed at start + requested time (walltime enforcement; counted in killed_jobs)"),
) + NETWORK_PARAMS

METRICS = CORE_METRICS + NETWORK_METRICS
PYSS_QUEUES = ("fcfs", "easy", "conservative")


def check_params(params: Mapping[str, Any]) -> list[str]:
    try:
        params = _with_defaults(params)
    except ValueError:
        return [f"layout {params.get('layout')!r} is not kind[:AxBxC] with numeric sizes"]
    errors = []
    plugged = [k for k in ("queue", "allocation") if is_plugin_path(params[k])]
    if plugged:
        errors += _check_plugins(params, plugged)
    topo_aware = params["allocation"] in TOPO_METHODS
    if params["network"] == "none" and topo_aware:
        errors.append(f"allocation {params['allocation']!r} is topology-aware: it needs network = 'packet'; "
                      f"with network = 'none' allocation is one of {', '.join(ALLOCATIONS)}")
    if params["source"] == "swf" and not params["trace"]:
        errors.append("source = 'swf' needs trace (a path to an .swf or .swf.gz file)")
    if params["source"] == "swf" and params["trace"] and not os.path.exists(params["trace"]):
        errors.append(f"trace {params['trace']!r} does not exist")
    elif params["source"] == "swf" and params["trace"]:
        errors += _check_trace(params["trace"], params["trace_max_procs"], _conversion(params))
    for lo, hi in (("mem_low", "mem_high"), ("disk_low", "disk_high")):
        if params[lo] > params[hi]:
            errors.append(f"{lo} ({params[lo]}) must not exceed {hi} ({params[hi]})")
    if params["source"] == "lublin":
        if params["mem_high"] > params["node_memory"]:
            errors.append(f"mem_high ({params['mem_high']}) exceeds node_memory ({params['node_memory']}): "
                          "a process could fit on no node")
        if params["disk_high"] > params["node_disk"]:
            errors.append(f"disk_high ({params['disk_high']}) exceeds node_disk ({params['node_disk']}): "
                          "a process could fit on no node")
        binding = (params["cores"] * params["mem_high"] > params["node_memory"]
                   or params["cores"] * params["disk_high"] > params["node_disk"])
        if binding and params["queue"] in ("easy", "conservative") and not topo_aware:
            errors.append(
                f"queue = {params['queue']!r} plans with core counts, so memory and disk must never bind: need "
                f"cores × mem_high <= node_memory ({params['cores']} × {params['mem_high']} vs "
                f"{params['node_memory']}) "
                f"and cores × disk_high <= node_disk ({params['cores']} × {params['disk_high']} vs "
                f"{params['node_disk']}); use fcfs or mpfs_scan for memory-bound studies")
    if params["semantics"] == "pyss":
        errors += _check_pyss(params)
    if params["network"] != "none":
        if params["source"] != "lublin":
            errors.append(f"network = {params['network']!r} needs source = 'lublin' (generated flows on the "
                          f"topology's nodes), not {params['source']!r}")
        from . import netsched          # the engine imports this package: import it only when needed
        errors += netsched.check_network(params)
        if not errors and params["allocation"] in ("paging", "mbs"):
            errors += _check_torus_sizes(params)
    return errors


def _check_plugins(p: Mapping[str, Any], plugged: list[str]) -> list[str]:
    """Where plug-ins run: the textbook kernel without the network (``plugin_kernel.py``)."""
    what = " and ".join(f"{k} = {p[k]!r}" for k in plugged)
    errors = []
    if p["semantics"] != "textbook":
        errors.append(f"{what}: plug-ins run in semantics = 'textbook', not {p['semantics']!r}")
    if p["network"] != "none":
        errors.append(f"{what}: plug-ins run with network = 'none', not {p['network']!r}")
    if "allocation" in plugged and p["queue"] == "conservative":
        errors.append(f"{what}: an allocation plug-in runs with queue fcfs, easy, mpfs_scan or a queue plug-in, "
                      "not 'conservative' (its reservations plan on the built-in allocation)")
    return errors


def _check_pyss(p: Mapping[str, Any]) -> list[str]:
    """What pyss mode supports: pyss's machine is one pool of identical processors."""
    errors = []
    if p["queue"] not in PYSS_QUEUES:
        errors.append(f"semantics = 'pyss' supports queue in {', '.join(PYSS_QUEUES)}, not {p['queue']!r}")
    if p["network"] != "none":
        errors.append(f"semantics = 'pyss' needs network = 'none' (pyss has no network), not {p['network']!r}")
    if p["allocation"] != "first_fit":
        errors.append(f"semantics = 'pyss' counts processors as one pool: allocation must be 'first_fit', "
                      f"not {p['allocation']!r}")
    if p["speeds"] != "homogeneous":
        errors.append("semantics = 'pyss' needs speeds = 'homogeneous' (pyss's processors are identical)")
    if p["source"] == "lublin" and (p["cores"] * p["mem_high"] > p["node_memory"]
                                    or p["cores"] * p["disk_high"] > p["node_disk"]):
        errors.append("semantics = 'pyss' counts cores only: memory and disk must never bind (cores × mem_high "
                      "<= node_memory and cores × disk_high <= node_disk)")
    return errors


def _check_torus_sizes(p: Mapping[str, Any]) -> list[str]:
    """The size rules paging and mbs would otherwise raise in every replication."""
    from . import netsched, topo_allocation

    try:
        dims = list(topo_allocation._dims(netsched._topology(p)))
    except (ValueError, TypeError, KeyError) as exc:
        return [f"allocation {p['allocation']!r}: {' '.join(str(exc).split())}"]
    if p["allocation"] == "paging" and any(k % p["page_side"] for k in dims):
        return [f"page_side ({p['page_side']}) must divide every torus size {dims} (allocation = 'paging')"]
    if p["allocation"] == "mbs" and any(k & (k - 1) for k in dims):
        return [f"allocation = 'mbs' needs power-of-two torus sizes, got {dims}"]
    return []


def _check_trace(path: str, max_procs: int, conversion: str = "textbook") -> list[str]:
    """Read the trace once, at validation (the parse is cached per process for the replications):
    a malformed record is named by file and line here, not inside every replication."""
    try:
        tr = swf.read_cached(path, max_procs, conversion)
    except swf.SWFError as exc:
        return [str(exc)]
    except (OSError, UnicodeDecodeError, EOFError, zlib.error) as exc:
        return [f"{path}: cannot be read as an SWF trace: {exc.__class__.__name__}: {' '.join(str(exc).split())}"]
    if tr.n_jobs == 0:
        return [f"{path}: no usable job ({tr.dropped_invalid} with run time < 0 or no processor count, "
                f"{tr.dropped_too_large} larger than the machine's {tr.max_procs} processors)"]
    return []


def late_starts(res: Result) -> float:
    """Jobs that started after their guaranteed start (``Result.bound``; NaN bound: none)."""
    with np.errstate(invalid="ignore"):
        return float(np.sum(res.start > res.bound))


class Flow:
    """One replication's cluster and jobs, in queue order (times in s, sizes in KB)."""

    def __init__(self, submit, cores_req, mem_req, disk_req, estimate, tau, node_cores, node_mem, node_disk,
                 node_speed, job_id=None, dropped=0, dropped_too_large=0):
        self.submit, self.cores_req, self.mem_req, self.disk_req = submit, cores_req, mem_req, disk_req
        self.estimate, self.tau = estimate, tau
        self.node_cores, self.node_mem, self.node_disk, self.node_speed = node_cores, node_mem, node_disk, node_speed
        self.job_id = np.arange(1, submit.size + 1) if job_id is None else job_id
        self.dropped, self.dropped_too_large = dropped, dropped_too_large
        self.job_type: np.ndarray | None = None  # SWF queue number of each job (two-type Lublin flows)


def _speeds(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    s = rng.uniform(1.0, 2.0, n)   # drawn in every case so the cluster stream never shifts
    return s / s.min() if kind == "heterogeneous" else np.ones(n)


def _lublin_flow(p: Mapping[str, Any], rng_cluster, rng_jobs) -> Flow:
    nodes, cores, n = p["nodes"], p["cores"], p["jobs"]
    speed = _speeds(rng_cluster, nodes, p["speeds"])
    node_cores = np.full(nodes, cores, np.int64)
    job_type = None
    if p["arrivals"] == "lublin_two_type":   # sizes, runtimes and arrivals by type, drawn first
        arrival, size, tau, job_type = lublin.two_type_jobs(rng_jobs, n, nodes * cores)
        size = np.minimum(size, nodes * cores)
    else:
        lp = lublin.for_machine(nodes * cores)
        size = np.minimum(lublin.sizes(rng_jobs, n, lp), nodes * cores)
        tau = lublin.runtimes(rng_jobs, size, lp)
    est = tau * (1.0 + rng_jobs.random(n))                      # U[tau, 2 tau]
    mem = rng_jobs.uniform(p["mem_low"], p["mem_high"], n)
    disk = rng_jobs.uniform(p["disk_low"], p["disk_high"], n)
    if p["arrivals"] == "poisson":
        arrival = np.cumsum(rng_jobs.exponential(1.0, n))
    elif p["arrivals"] == "lublin_daily":
        arrival = lublin.daily_arrivals(rng_jobs, n, lublin.TYPELESS)
    cap = float(np.sum(speed * node_cores))
    span = float(arrival[-1])
    # exact scaling: eq. (8) with a_j = factor * arrival_j gives the target load
    factor = float(np.sum(size * tau)) / (cap * p["load"] * span) if span > 0 else 1.0
    f = Flow(arrival * factor, size, mem, disk, est, tau, node_cores, np.full(nodes, p["node_memory"]),
             np.full(nodes, p["node_disk"]), speed)
    f.job_type = job_type
    return f


def _conversion(p: Mapping[str, Any]) -> str:
    """The trace conversion of ``swf.read`` these parameters ask for (pyss's already cuts
    every job at its requested time, so ``kill_at_estimate`` changes nothing there)."""
    if p.get("semantics") == "pyss":
        return "pyss"
    return "walltime" if p.get("kill_at_estimate") else "textbook"


def _trace_flow(p: Mapping[str, Any], rng_cluster) -> Flow:
    tr = swf.read_cached(p["trace"], p["trace_max_procs"], _conversion(p))
    m = tr.max_procs
    speed = _speeds(rng_cluster, m, p["speeds"])
    node_cores = np.ones(m, np.int64)
    submit = tr.submit
    if p["trace_load"] > 0:
        l0 = offered_load(tr.procs, tr.run, submit, speed, node_cores) / 100.0
        if np.isfinite(l0):
            submit = submit * (l0 / p["trace_load"])
    z = np.zeros(tr.n_jobs)
    f = Flow(submit, tr.procs, z, z, tr.estimate, tr.run, node_cores, np.full(m, p["node_memory"]),
             np.full(m, p["node_disk"]), speed, job_id=tr.job_id,
             dropped=tr.dropped_invalid + tr.dropped_too_large, dropped_too_large=tr.dropped_too_large)
    f.cut = tr.cut      # pyss conversion: jobs cut (killed) at their requested time
    return f


def flow(params: Mapping[str, Any], seed: int) -> tuple[Flow, int]:
    """The cluster and job flow of replication ``seed``, and the allocation stream's seed."""
    rng_cluster, rng_jobs, _rng_comm, _rng_alloc = substreams(seed, 4)
    alloc_seed = int(substream_seeds(seed, 4)[3])
    if params["source"] == "swf":
        f = _trace_flow(params, rng_cluster)
    else:
        f = _lublin_flow(params, rng_cluster, rng_jobs)
    scale = params.get("time_scale", 1.0)
    if scale != 1.0:                     # the load of eq. (8) is unchanged: all times scale together
        f.tau, f.estimate, f.submit = (x * scale for x in (f.tau, f.estimate, f.submit))
    return f, alloc_seed


def schedule(params: Mapping[str, Any], seed: int) -> tuple[Flow, Result, float]:
    """Simulate replication ``seed``: its flow, the per-job schedule and the kernel wall time (s).

    Write it as SWF with ``swf.write(path, f.job_id, f.submit, r.start, r.end, f.cores_req,
    f.estimate, r.killed, f.node_cores.sum())``.
    """
    from .simulator import simulate

    p = _with_defaults(params)
    f, alloc_seed = flow(p, seed)
    if p["semantics"] == "pyss":
        from . import pyss_kernel      # compiled only by specs that ask for it
        t0 = time.perf_counter()
        r = pyss_kernel.schedule_flow(f, p["queue"], p["cl_mask"])
        return f, r, time.perf_counter() - t0
    if is_plugin_path(p["queue"]) or is_plugin_path(p["allocation"]):
        return f, *_schedule_plugins(p, f, alloc_seed)
    t0 = time.perf_counter()
    r = simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores, f.node_mem,
                 f.node_disk, f.node_speed, p["queue"], p["allocation"], alloc_seed, p["cl_mask"])
    return f, r, time.perf_counter() - t0


def _schedule_plugins(p: Mapping[str, Any], f: Flow, alloc_seed: int) -> tuple[Result, float]:
    """The schedule with plug-ins (``plugin_kernel``, compiled only by specs that name one),
    and the kernel wall time (s). A built-in queue runs as its plug-in form; a built-in
    allocation runs as itself."""
    from . import plugin_kernel
    from .._plugins import function
    from .bookkeeping import CL_MASKS

    module = sys.modules[__name__]
    queue_fn = function(module, "queue", p["queue"])
    if is_plugin_path(p["allocation"]):
        alloc_fn, alloc_code = function(module, "allocation", p["allocation"]), -1
    else:     # the placeholder is never called: the kernel takes one function type
        alloc_fn, alloc_code = function(module, "allocation", "first_fit"), ALLOCATIONS.index(p["allocation"])
    t0 = time.perf_counter()
    r = plugin_kernel.simulate(f, queue_fn, alloc_fn, alloc_code, CL_MASKS.index(p["cl_mask"]), alloc_seed,
                               (p["queue"], p["allocation"]))
    return r, time.perf_counter() - t0


def _with_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    p = {q.name: q.default for q in PARAMS}
    p.update(params)
    resolve_layout(p)
    return p


def job_records(params: Mapping[str, Any], seed: int) -> dict[str, np.ndarray]:
    """Per-job records of replication ``seed`` (``pipeline.records``): one row per job and
    node it ran on (``size`` = its processes there), ``status`` 0 completed, 1 killed at its
    estimate, 2 never started. Generated flows and traces without the packet network."""
    if _with_defaults(params)["network"] != "none":
        raise ValueError("job_records: the packet-network simulator keeps no per-job records yet")
    f, res, _ = schedule(params, seed)
    started = ~np.isnan(res.start)
    if _with_defaults(params)["semantics"] == "pyss":   # one pool of processors: no nodes to name
        status = np.where(started, np.where(res.killed == 1, 1, 0), 2)
        return {"job": f.job_id, "submit": f.submit, "start": res.start, "end": res.end,
                "resource": np.full(f.submit.size, -1, np.int64), "size": np.asarray(f.cores_req, np.int64),
                "status": status}
    pieces = np.where(started, res.nodes_used, 1).astype(np.int64)
    job = np.repeat(np.arange(f.submit.size), pieces)
    node = np.full(job.size, -1, np.int64)
    size = np.repeat(f.cores_req, pieces).astype(np.int64)
    first = np.concatenate(([0], np.cumsum(pieces)[:-1]))
    for j in np.flatnonzero(started):
        a, k = int(res.alloc_ptr[j]), int(res.nodes_used[j])
        node[first[j]:first[j] + k] = res.alloc_node[a:a + k]
        size[first[j]:first[j] + k] = res.alloc_k[a:a + k]
    status = np.where(started, np.where(res.killed == 1, 1, 0), 2)
    return {"job": f.job_id[job], "submit": f.submit[job], "start": res.start[job], "end": res.end[job],
            "resource": node, "size": size, "status": status[job]}


@fails_loudly
def run_batch(params: Mapping[str, Any], seeds: np.ndarray) -> dict[str, np.ndarray]:
    if _with_defaults(params)["network"] != "none":
        from . import netsched
        return netsched.run_batch(params, seeds)
    out = empty_outputs(METRICS, len(seeds))
    for r, seed in enumerate(seeds):
        f, res, wall = schedule(params, int(seed))
        values, reason = compute(res, f.submit, f.cores_req, f.node_speed, f.node_cores,
                                 _with_defaults(params)["bsld_threshold"])
        ok = (res.killed == 0) & ~np.isnan(res.end)
        values["mean_job_time"] = float(np.mean(res.end[ok] - res.start[ok])) if ok.any() else np.nan
        values["late_starts"] = late_starts(res)
        values["shape_delays"] = 0.0     # part 1's policies place any job whose cores are free
        values["dropped_jobs"] = float(f.dropped)
        values["dropped_too_large"] = float(f.dropped_too_large)
        values["offered_load"] = offered_load(f.cores_req, f.tau, f.submit, f.node_speed, f.node_cores)
        values["sim_seconds"] = wall
        values["jobs_per_second"] = f.submit.size / wall if wall > 0 else np.nan
        if _with_defaults(params)["semantics"] == "pyss":     # a processor pool has no per-node spread
            for name in ("var_core_util", "var_mem_util", "var_disk_util"):
                values[name] = np.nan
        for name, v in values.items():
            out[name][r] = v
        out["reason"][r] = reason
    return out
