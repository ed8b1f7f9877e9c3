"""``cluster``: batch scheduling of rigid parallel jobs on a cluster, with or without its network.

Model: ``docs/models/cluster.md`` and ``docs/models/lublin_feitelson.md``. A replication
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

``semantics = 'pyss'`` (default 'textbook') follows pyss (docs/models/cluster.md, last section) in
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
1. jobs: Lublin flows: sizes (3 × n uniforms), runtimes (component uniforms and
   gammas, redraws), estimates (n uniforms), memory (n), disk (n), then the arrival gaps
   (``poisson``: n Exp(1); ``lublin_daily``: the model's gammas); trace windows drawn at
   random (``trace_window_draw = "random"``): one integer, the window's first job;
2. communication: reserved for part 2 (iterations, patterns, message sizes);
3. allocation: seeds the kernel's splitmix64 stream (Random First).
Trace flows draw nothing else from stream 1; their jobs are the trace's.

Trace windows (``windows.py``): with ``trace_window_jobs = W`` > 0 a replication simulates
W consecutive jobs of the trace from an empty machine, the r-th window for replication r
(``trace_window_draw = "sequential"``) or one drawn from its seed (``"random"``), the first
``trace_window_warmup`` fraction of them left out of the per-job metrics. Sequential
windows need the replication index: the package declares ``TAKES_REPLICATIONS``, so the
pipeline calls ``run_batch(params, seeds, replications)``; ``check_replications`` refuses
a spec asking for more replications than the trace has windows.
"""
from __future__ import annotations

import os
import zlib
from typing import Any, Mapping

import numpy as np

from .._contract import empty_outputs, is_plugin_path
from ..kernel_support.lazy import handed_on
from ..kernel_support.plugins import fails_loudly
from . import batsim, swf, windows
from .choices import ALLOCATION_NAMES as ALLOCATIONS, CL_MASKS, QUEUE_NAMES, TOPO_METHODS  # noqa: F401 (handed on)
from .flows import Flow, _schedule_plugins, flow, schedule, trace_conversion  # noqa: F401 (handed on)
from .metrics import REASONS, compute, late_starts, offered_load
from .params import METRICS, PARAMS, PYSS_QUEUES, with_defaults as _with_defaults
from .points import PLUGINS

# Handed on (tests and scripts use them as cluster.NAME): the flows, the schedule, and the
# declarations the workload contract asks for.
__all__ = ["PARAMS", "METRICS", "REASONS", "PLUGINS", "TAKES_REPLICATIONS", "run_batch", "check_params",
           "check_replications", "deterministic", "schedule", "Flow", "flow", "job_records", "late_starts"]

#: run_batch and job_records take the replication indices (a trace's sequential windows).
TAKES_REPLICATIONS = True

# The declarations import no numba (``schedsweep workloads`` lists them quickly); the kernels
# are imported by the functions that run a replication, and handed on when asked for
# (``cluster.simulate``, ``cluster.simulator``, ``cluster.plugin_api``).
__getattr__ = handed_on(__name__, {"Result": ".simulator", "simulate": ".simulator"})


#: Allocation policies that draw nothing: with them a whole-trace cell is the same in every replication.
_DRAWLESS_ALLOCATIONS = ("first_fit", "best_fit", "fastest_first")


def deterministic(params: Mapping[str, Any]) -> bool | str:
    """A trace cell that draws nothing from its seed: the whole trace (no window: a windowed
    cell's replications simulate different windows), homogeneous speeds (stream 0 unused), no
    network (stream 2 draws the communication), a built-in queue and a drawless built-in
    allocation (Random First and plug-ins may use stream 3). Its replications would be copies."""
    try:
        p = _with_defaults(params)
    except ValueError:  # a layout check_params refuses: the spec never runs
        return False
    if p["source"] != "swf" or p.get("trace_window_jobs", 0) != 0:
        return False
    if p["speeds"] != "homogeneous" or p["network"] != "none":
        return False
    if is_plugin_path(p["queue"]) or p["allocation"] not in _DRAWLESS_ALLOCATIONS:
        return False
    return "whole trace"


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
        errors.append("source = 'swf' needs trace (a path to an .swf, .swf.gz, Batsim .json or .json.gz file)")
    if params["source"] == "swf" and params["trace"] and not os.path.exists(params["trace"]):
        errors.append(f"trace {params['trace']!r} does not exist")
    elif params["source"] == "swf" and params["trace"]:
        errors += _check_trace(params["trace"], params["trace_max_procs"], trace_conversion(params))
        if not errors:
            errors += _check_window(params)
    if params["source"] != "swf" and params["trace_window_jobs"] > 0:
        errors.append(f"trace_window_jobs = {params['trace_window_jobs']} needs source = 'swf' (windows of a "
                      f"trace), not {params['source']!r}; generated flows set jobs")
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


def _window_trace(p: Mapping[str, Any]) -> swf.Trace:
    return swf.read_cached(p["trace"], p["trace_max_procs"], trace_conversion(p))


def _check_window(p: Mapping[str, Any]) -> list[str]:
    """A window must fit in the trace (read already, cached)."""
    w, n = p["trace_window_jobs"], _window_trace(p).n_jobs
    if w > n:
        return [f"trace_window_jobs = {w} exceeds the {n} usable jobs of trace {p['trace']!r}"]
    if w == n and p["trace_window_draw"] == "random":   # each replication a copy of one run
        return [f"trace_window_jobs = {w} is the whole trace {p['trace']!r}: every random window would be "
                f"the same; use trace_window_jobs below {n}, or 0 for the whole trace"]
    return []


def check_replications(params: Mapping[str, Any], replications: int) -> list[str]:
    """Sequential trace windows: one per replication, so no more replications than windows."""
    p = _with_defaults(params)
    w = p["trace_window_jobs"]
    if p["source"] != "swf" or w == 0 or p["trace_window_draw"] != "sequential":
        return []
    n = _window_trace(p).n_jobs
    k = windows.count(n, w)
    if replications > k:
        return [f"trace_window_draw = 'sequential': trace {p['trace']!r} has {k} windows of {w} jobs "
                f"({n} usable jobs), fewer than replications = {replications}; ask for at most {k}, "
                f"or trace_window_draw = 'random'"]
    return []


def _check_trace(path: str, max_procs: int, conversion: str = "textbook") -> list[str]:
    """Read the trace once, at validation (the parse is cached per process for the replications):
    a malformed record is named by file and line here, not inside every replication."""
    try:
        tr = swf.read_cached(path, max_procs, conversion)
    except (swf.SWFError, batsim.BatsimError) as exc:
        return [str(exc)]
    except (OSError, UnicodeDecodeError, EOFError, zlib.error) as exc:
        kind = "a Batsim workload" if batsim.is_batsim(path) else "an SWF trace"
        return [f"{path}: cannot be read as {kind}: {exc.__class__.__name__}: {' '.join(str(exc).split())}"]
    if tr.n_jobs == 0:
        return [f"{path}: no usable job ({tr.dropped_invalid} with run time < 0 or no processor count, "
                f"{tr.dropped_too_large} larger than the machine's {tr.max_procs} processors)"]
    return []


def job_records(params: Mapping[str, Any], seed: int, replication: int | None = None) -> dict[str, np.ndarray]:
    """Per-job records of replication ``seed`` (``pipeline.store.records``): one row per job and
    node it ran on (``size`` = its processes there), ``status`` 0 completed, 1 killed at its
    estimate, 2 never started, and its ``estimate`` (s; the requested time of a jobs.csv
    export). Generated flows and traces without the packet network; a trace window
    (``replication``: its index, which sequential windows need) with its warm-up."""
    if _with_defaults(params)["network"] != "none":
        raise ValueError("job_records: the packet-network simulator keeps no per-job records yet")
    f, res, _ = schedule(params, seed, replication)
    started = ~np.isnan(res.start)
    if _with_defaults(params)["semantics"] == "pyss":   # one pool of processors: no nodes to name
        status = np.where(started, np.where(res.killed == 1, 1, 0), 2)
        return {"job": f.job_id, "submit": f.submit, "start": res.start, "end": res.end,
                "resource": np.full(f.submit.size, -1, np.int64), "size": np.asarray(f.cores_req, np.int64),
                "status": status, "estimate": f.estimate}
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
            "resource": node, "size": size, "status": status[job], "estimate": f.estimate[job]}


@fails_loudly
def run_batch(params: Mapping[str, Any], seeds: np.ndarray,
              replications: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """One replication per seed; ``replications`` (their indices, given by the pipeline:
    ``TAKES_REPLICATIONS``) choose a trace's sequential windows and are read for nothing else."""
    if _with_defaults(params)["network"] != "none":
        from . import netsched
        return netsched.run_batch(params, seeds)
    out = empty_outputs(METRICS, len(seeds))
    warmup = windows.warmup_jobs(_with_defaults(params))
    for r, seed in enumerate(seeds):
        f, res, wall = schedule(params, int(seed), None if replications is None else int(replications[r]))
        values, reason = compute(res, f.submit, f.cores_req, f.node_speed, f.node_cores,
                                 _with_defaults(params)["bsld_threshold"], warmup)
        m = slice(warmup, None)     # a trace window's measured jobs
        ok = (res.killed[m] == 0) & ~np.isnan(res.end[m])
        values["mean_job_time"] = float(np.mean(res.end[m][ok] - res.start[m][ok])) if ok.any() else np.nan
        values["late_starts"] = late_starts(res, warmup)
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
