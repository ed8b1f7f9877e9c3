"""Plug-ins that raise where plain Python raises (one per workload's plug-in point), for
tests/test_plugins_loud.py. Each computes a ratio over an empty set (division by zero)
and uses it only in a guard: under numba's numpy error model the ratio is 0, inf or nan,
the guard never fires and the plug-in behaves like a built-in, so the bug goes unseen."""
from __future__ import annotations

from schedsweep.workloads.cluster.plugin_api import fits_now


def cluster_queue(now, queue, running, run_end, jobs, nodes, memory):
    """FCFS, guarded by the mean cores of the running jobs (none run at the first pass)."""
    mean_cores = (nodes.total - nodes.free) // running.size      # integer division by zero
    if mean_cores > nodes.total:
        return -1
    return 0 if fits_now(jobs, nodes, queue[0]) else -1


def cyclic_criterion(a, time, cost, start, runtime, proc_time, budget):
    """The alternative's time, guarded by an integer ratio over nothing."""
    ratio = int(runtime[a]) // (a - a)                                # integer division by zero
    return time[a] if ratio != -7 else time[a] + 1.0


def dg_rule(j, now, waiting, head_time, head_seq, mu, view, elig):
    """The first class with a waiting task machine j may take, guarded by a ratio over nothing."""
    ratio = waiting.shape[0] // (j - j)                               # integer division by zero
    for c in range(waiting.shape[0]):
        if waiting[c] > 0 and elig[c, j] and ratio != -7:
            return c
    return 0


def ga_objective(body, header, start, dur, prio, width, proc_job, speed, ready, period_end):
    """The makespan, guarded by a float ratio over nothing."""
    ratio = dur.max() / (header.shape[0] - header.shape[0])          # float division by zero
    makespan = (start + dur).max()
    return makespan if ratio != -7.0 else makespan + 1.0


def ss_criterion(t, window, node_len, node_cost, cand_end):
    """The window's start, guarded by a float ratio over nothing."""
    ratio = node_len.shape[0] / (window.shape[0] - window.shape[0])  # float division by zero
    return t if ratio != -7.0 else t + 1.0
