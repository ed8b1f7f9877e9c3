"""The cluster workload's parameters, metrics and defaults (declared without numba).

Kept beneath the package and the modules that build flows and run replications
(``flows.py``, ``netsched.py``), so that each imports them from here, one way.
"""
from __future__ import annotations

from typing import Any, Mapping

from .._contract import Param
from .choices import ALLOCATION_NAMES as ALLOCATIONS, CL_MASKS, QUEUE_NAMES, TOPO_METHODS
from .metrics import METRICS as CORE_METRICS
from .network_params import NETWORK_METRICS, NETWORK_PARAMS, resolve_layout

PARAMS = (
    Param("source", "str", "lublin",
          "job flow: 'lublin' (generated) or 'swf' (the trace file in `trace`, SWF or Batsim JSON)",
          choices=("lublin", "swf")),
    Param("trace", "path", "", "trace file when source = 'swf': SWF (.swf, .swf.gz) or a Batsim workload "
          "(.json, .json.gz)"),
    Param("trace_max_procs", "int", 0,
          "machine size for the trace; 0 = its '; MaxProcs:' header (Batsim: nb_res)", low=0),
    Param("trace_load", "float", 0.0, "scale trace submit times so eq. (8) gives this load (fraction); 0 = as recorded",
          low=0.0),
    Param("trace_window_jobs", "int", 0, "jobs per trace window (source = 'swf'): each replication simulates "
          "one window of this many consecutive jobs of the trace (queue order, after the dropping rules), from "
          "an empty machine, submit times shifted so that the window starts at 0; trace_load scales each "
          "window; 0 = the whole trace", low=0),
    Param("trace_window_draw", "str", "sequential", "which window a replication simulates: 'sequential' = "
          "replication r the r-th window (jobs [r W, (r + 1) W); the trace's last jobs that fill no whole "
          "window are left out; replications must not exceed the windows), 'random' = a window starting at a "
          "job drawn uniformly from the replication's seed (stream 1, one integer in [0, jobs - W])",
          choices=("sequential", "random")),
    Param("trace_window_warmup", "float", 0.1, "warm-up of a trace window, a fraction of its jobs: the first "
          "floor(fraction x W) jobs of each window are simulated (they load the machine, empty at the "
          "window's start) but left out of every per-job metric (waits, slowdowns, their percentiles, killed "
          "jobs, spread); time averages (utilisation, CL, memory, disk) already leave out an idle machine "
          "with an empty queue (delta mask)", low=0.0, high=0.99),
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
          "then one pass) or 'pyss' (pyss's rules and trace conversion, docs/models/cluster.md last section; separate kernel)",
          choices=("textbook", "pyss")),
    Param("pyss_processors", "str", "requested", "semantics = 'pyss': a trace job's processors, the requested "
          "count (field 8, else the allocated field 5, as pyss runs in the literature) or the allocated count "
          "(field 5, as predictsim's pyss source reads it); capped to the machine",
          choices=("requested", "allocated")),
    Param("kill_at_estimate", "bool", False, "traces: estimate = requested time (field 9, when > 0), so a job "
          "that ran longer is killed at start + requested time (walltime enforcement; counted in killed_jobs)"),
) + NETWORK_PARAMS

METRICS = CORE_METRICS + NETWORK_METRICS
PYSS_QUEUES = ("fcfs", "easy", "conservative")


def with_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` over every parameter's default, the network layout resolved."""
    p = {q.name: q.default for q in PARAMS}
    p.update(params)
    resolve_layout(p)
    return p
