"""What a cluster plug-in sees and the helpers it may call (numba, read-only state).

Two plug-in points (README "Your own algorithm"; the kernel is ``plugin_kernel.py``):

- ``queue``: ``decide(now, queue, running, run_end, jobs, nodes, memory) -> int``: the
  position in ``queue`` of a waiting job to start now, or -1 to start nothing more at
  this time. The kernel starts the job (with the allocation policy), updates the state
  and calls again, until -1. It calls only while the cores of the smallest waiting job
  are free (else nothing can start), after all events of a time (arrivals and ends), as
  the built-in policies run.
- ``allocation``: ``allocate(now, job, jobs, nodes, chosen, procs, memory) -> int``:
  write the chosen nodes to ``chosen[:m]`` and the processes on each to ``procs[:m]``
  and return m, or -1 if the job is not to start now (the queue pass then ends, as
  FCFS's does when its head does not fit).

``queue`` (waiting jobs, arrival order), ``running`` (running jobs by estimated end) and
``run_end`` (their estimated ends) are read-only arrays, ``jobs`` a :class:`Jobs` and
``nodes`` a :class:`Nodes` record of read-only arrays (writing one does not compile);
``memory`` is the plug-in's own float64 array (64 + jobs entries, zero at the start of
each replication) for whatever it keeps between calls. A plug-in never sees a job's
real run time, only the user's estimate.

A call costs about 25-35 ns on this machine (``benchmarks/plugins.md``), whether the
state comes as these records or as one record of every array.

The kernel checks every choice: a position outside the queue, a job that does not fit
now (too few free cores, or memory/disk per process the nodes cannot hold), a node
index out of range, a node listed twice, more processes than a node can take, or a
total that is not the job's size fails the replication with a message naming the
plug-in, the time and the choice.
"""
from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np
from numba import types

from ..kernel_support.plugins import ro_array, rw_array

#: Per job (index j): submit time (s), processes, memory and disk per process (KB), the user's estimate (s).
Jobs = namedtuple("Jobs", ["submit", "cores", "mem", "disk", "estimate"])
#: Per node (index i): cores, speed, free cores, memory (KB) and disk (KB) now; and the cluster's free and total
#: cores, and how many starts and ends happened so far (a plug-in may cache what it computed while it is unchanged).
Nodes = namedtuple("Nodes", ["cores", "speed", "free_cores", "free_mem", "free_disk", "free", "total", "changes"])

_I8, _F8 = ro_array(types.int64), ro_array(types.float64)
JOBS_TYPE = types.NamedTuple((_F8, _I8, _F8, _F8, _F8), Jobs)
NODES_TYPE = types.NamedTuple((_I8, _F8, _I8, _F8, _F8, types.int64, types.int64, types.int64), Nodes)
MEMORY = rw_array(types.float64)
QUEUE_SIG = types.int64(types.float64, _I8, _I8, _F8, JOBS_TYPE, NODES_TYPE, MEMORY)
ALLOC_SIG = types.int64(types.float64, types.int64, JOBS_TYPE, NODES_TYPE, rw_array(types.int64),
                        rw_array(types.int64), MEMORY)

helper = numba.njit(cache=True, inline="always")


@helper
def capacity(jobs, nodes, i, j):
    """How many of job j's processes node i can take now (free cores, memory, disk)."""
    k = nodes.free_cores[i]
    mr, dr = jobs.mem[j], jobs.disk[j]
    if mr > 0.0:
        k = min(k, int(nodes.free_mem[i] // mr))
    if dr > 0.0:
        k = min(k, int(nodes.free_disk[i] // dr))
    return k


@helper
def fits_now(jobs, nodes, j):
    """Whether job j can start now: the nodes can take all its processes (what every
    built-in allocation policy needs; a cores-only job fits when its cores are free)."""
    n = jobs.cores[j]
    if n > nodes.free:
        return False
    if jobs.mem[j] == 0.0 and jobs.disk[j] == 0.0:
        return True
    room = 0
    for i in range(nodes.free_cores.size):
        room += capacity(jobs, nodes, i, j)
        if room >= n:
            return True
    return False


@helper
def shadow(running, run_end, jobs, nodes, j):
    """EASY's reservation of job j: ``(shadow, extra)``, the first estimated end of a
    running job at which j's cores are free (every job ending at that instant counted;
    inf if never) and the cores then left over. Counts cores only."""
    need = jobs.cores[j]
    avail = nodes.free
    r = running.size
    for k in range(r):
        avail += jobs.cores[running[k]]
        if avail >= need and (k + 1 == r or run_end[k + 1] != run_end[k]):
            return run_end[k], avail - need
    return np.inf, 0


@helper
def availability(now, running, run_end, jobs, nodes, times, free):
    """The free-core profile from the running jobs' estimated ends: ``free[s]`` cores
    from ``times[s]`` until ``times[s + 1]`` (the last step lasts forever); returns the
    number of steps (at most 1 + running jobs; ``times`` and ``free`` need that room).
    Equal ends make one step. Counts cores only."""
    times[0] = now
    free[0] = nodes.free
    s = 1
    for k in range(running.size):
        t = run_end[k]
        c = jobs.cores[running[k]]
        if t <= times[s - 1]:
            free[s - 1] += c
        else:
            times[s] = t
            free[s] = free[s - 1] + c
            s += 1
    return s


@helper
def first_fit(jobs, nodes, j, chosen, procs):
    """The built-in first fit: nodes in id order, each given as many of job j's
    processes as it can take; returns m (written to ``chosen[:m]``, ``procs[:m]``) or -1."""
    left = jobs.cores[j]
    m = 0
    for i in range(nodes.free_cores.size):
        if nodes.free_cores[i] == 0:
            continue
        k = capacity(jobs, nodes, i, j)
        if k > 0:
            k = min(k, left)
            chosen[m] = i
            procs[m] = k
            m += 1
            left -= k
            if left == 0:
                return m
    return -1
