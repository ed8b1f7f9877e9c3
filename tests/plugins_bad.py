"""Cluster plug-ins that make impossible choices, for tests/test_plugins_cluster.py."""
from __future__ import annotations

from schedsweep.workloads.cluster.plugin_api import fits_now


def out_of_range(now, queue, running, run_end, jobs, nodes, memory):
    return queue.size


def largest(now, queue, running, run_end, jobs, nodes, memory):
    """Always the largest waiting job, fitting or not."""
    best = 0
    for k in range(queue.size):
        if jobs.cores[queue[k]] > jobs.cores[queue[best]]:
            best = k
    return best


def writes_state(now, queue, running, run_end, jobs, nodes, memory):
    jobs.cores[0] = 1
    return -1


def busy_node(now, job, jobs, nodes, chosen, procs, memory):
    """Every process on node 0."""
    chosen[0] = 0
    procs[0] = jobs.cores[job]
    return 1


def twice(now, job, jobs, nodes, chosen, procs, memory):
    chosen[0] = 0
    chosen[1] = 0
    procs[0] = 1
    procs[1] = jobs.cores[job] - 1
    return 2


def no_node(now, job, jobs, nodes, chosen, procs, memory):
    chosen[0] = 7
    procs[0] = jobs.cores[job]
    return 1


def short(now, job, jobs, nodes, chosen, procs, memory):
    chosen[0] = 0
    procs[0] = 1
    return 1


def only_when_empty(now, job, jobs, nodes, chosen, procs, memory):
    """First fit, but only on an idle cluster (-1 otherwise: the job waits)."""
    if nodes.free < nodes.total:
        return -1
    left = jobs.cores[job]
    m = 0
    for i in range(nodes.cores.size):
        k = min(left, nodes.free_cores[i])
        if k > 0:
            chosen[m] = i
            procs[m] = k
            m += 1
            left -= k
        if left == 0:
            break
    return m
