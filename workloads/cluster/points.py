"""The cluster workload's plug-in points (the plug-in API: :mod:`.plugin_api`), declared
without numba: the signatures (numba record types of the state) are built on first use."""
from __future__ import annotations

from typing import Any

from ..kernel_support.plugins import PluginPoint


def queue_signature() -> Any:
    """int64(float64, int64[:], int64[:], float64[:], Jobs, Nodes, float64[:]): a queue policy's."""
    from .plugin_api import QUEUE_SIG

    return QUEUE_SIG


def alloc_signature() -> Any:
    """int64(float64, int64, Jobs, Nodes, int64[:], int64[:], float64[:]): an allocation policy's."""
    from .plugin_api import ALLOC_SIG

    return ALLOC_SIG


STATE = (
    ("queue", "int64[:]: the waiting jobs (indices j), in arrival order"),
    ("running", "int64[:]: the running jobs, by estimated end (ties: start order)"),
    ("run_end", "float64[:]: their estimated ends (s): start + estimate / slowest node speed of the job"),
    ("jobs.submit", "float64[:] per job: submit time (s)"),
    ("jobs.cores", "int64[:] per job: processes, one core each"),
    ("jobs.mem", "float64[:] per job: memory per process (KB)"),
    ("jobs.disk", "float64[:] per job: disk per process (KB)"),
    ("jobs.estimate", "float64[:] per job: the user's run-time estimate (s at speed 1); the real run time is hidden"),
    ("nodes.cores", "int64[:] per node: cores"),
    ("nodes.speed", "float64[:] per node: speed (>= 1, relative to the slowest)"),
    ("nodes.free_cores", "int64[:] per node: free cores now"),
    ("nodes.free_mem", "float64[:] per node: free memory now (KB)"),
    ("nodes.free_disk", "float64[:] per node: free disk now (KB)"),
    ("nodes.free", "int64: free cores in the cluster now"),
    ("nodes.total", "int64: cores in the cluster"),
    ("nodes.changes", "int64: starts and ends so far; while it is unchanged, so are running, run_end and the free "
                      "resources (only arrivals joined the queue's tail)"),
)

HELPERS = ("from schedsweep.workloads.cluster.plugin_api import ...: fits_now(jobs, nodes, j), capacity(jobs, nodes, i, j), "
           "shadow(running, run_end, jobs, nodes, j), availability(now, running, run_end, jobs, nodes, times, free), "
           "first_fit(jobs, nodes, j, chosen, procs)")

_BUILTIN = "schedsweep.workloads.cluster.plugin_builtins:"
PLUGINS = (
    PluginPoint(
        "queue", "decide", queue_signature,
        (("now", "float64: the time (s)"), ("queue", "int64[:]: the waiting jobs"),
         ("running", "int64[:]: the running jobs"), ("run_end", "float64[:]: their estimated ends (s)"),
         ("jobs", "Jobs: per-job arrays"), ("nodes", "Nodes: per-node arrays, free and total cores"),
         ("memory", "float64[:]: the plug-in's own (64 + jobs entries, 0 at the start of a replication)")),
        "int64: the position in queue of a job to start now, or -1 to start no more now; called again "
        "after each start, while the smallest waiting job's cores are free",
        STATE,
        tuple((name, _BUILTIN + name) for name in ("fcfs", "easy", "mpfs_scan")),
        HELPERS,
        "Textbook semantics, network 'none', any allocation; a job that does not fit fails the replication.",
        return_type="int64"),
    PluginPoint(
        "allocation", "allocate", alloc_signature,
        (("now", "float64: the time (s)"), ("job", "int64: the starting job j"),
         ("jobs", "Jobs: as for queue"), ("nodes", "Nodes: as for queue"),
         ("chosen", "int64[:]: write the chosen nodes here"), ("procs", "int64[:]: and the processes on each"),
         ("memory", "float64[:]: the plug-in's own (64 + jobs entries)")),
        "int64: m, the number of nodes written, or -1: no room for this job now (the pass ends)",
        (), (("first_fit", _BUILTIN + "first_fit"),), HELPERS,
        "With queue fcfs, easy, mpfs_scan (run as plug-ins) or a queue plug-in; a node listed twice, busy or "
        "out of range, or a total other than the job's size fails the replication.", return_type="int64"),
)
