"""Example plug-ins for the cluster simulator (``schedsweep workloads cluster`` lists the
plug-in points, their arguments and the helpers).

A plug-in is a plain function over read-only arrays; schedsweep compiles it with numba
for the point's signature and calls it inside the simulation kernel. Write it as you
would an ``@numba.njit`` function: loops over arrays, no Python objects; any function it
calls must itself be ``@numba.njit`` (the helpers of ``plugin_api`` are).
"""
from __future__ import annotations

from schedsweep.workloads.cluster.plugin_api import fits_now, shadow


def smallest_area_first(now, queue, running, run_end, jobs, nodes, memory):
    """Smallest area first with EASY backfilling.

    The waiting job of smallest area (processes × estimate; ties: the earliest) is the
    one to serve: it starts as soon as it fits. While it does not fit, it holds EASY's
    reservation (its shadow time, when enough running jobs will have ended by their
    estimates) and any other waiting job, in arrival order, starts now if it fits and
    either ends by that time or uses only cores the reservation leaves over.
    Returns the position in ``queue`` of the job to start now, or -1.
    """
    first = 0
    best = jobs.cores[queue[0]] * jobs.estimate[queue[0]]
    for k in range(1, queue.size):
        area = jobs.cores[queue[k]] * jobs.estimate[queue[k]]
        if area < best:
            first, best = k, area
    head = queue[first]
    if fits_now(jobs, nodes, head):
        return first
    t_shadow, extra = shadow(running, run_end, jobs, nodes, head)
    for k in range(queue.size):
        j = queue[k]
        if k != first and fits_now(jobs, nodes, j) and (now + jobs.estimate[j] <= t_shadow
                                                        or jobs.cores[j] <= extra):
            return k
    return -1


def fastest_nodes_first(now, job, jobs, nodes, chosen, procs, memory):
    """An allocation plug-in: the job's processes on the fastest nodes with room (ties:
    the lowest node id), as many per node as it can take. Returns the number of nodes
    written to ``chosen`` / ``procs``, or -1 if the nodes cannot take the job now."""
    left = jobs.cores[job]
    m = 0
    while left > 0:
        pick = -1
        for i in range(nodes.cores.size):
            taken = False
            for a in range(m):
                if chosen[a] == i:
                    taken = True
            if not taken and nodes.free_cores[i] > 0 and (pick < 0 or nodes.speed[i] > nodes.speed[pick]):
                pick = i
        if pick < 0:
            return -1
        k = min(left, nodes.free_cores[pick])
        chosen[m] = pick
        procs[m] = k
        m += 1
        left -= k
    return m
