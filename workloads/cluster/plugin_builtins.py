"""Built-in policies written as plug-ins (the form a user's plug-in takes).

They give the built-ins' schedules bit for bit (``tests/test_plugins_cluster.py``) and
run when a spec combines a built-in with a plug-in (``queue = "easy"`` with an
allocation plug-in). Each is a plain Python function over the read-only state
(``plugin_api``); the kernel compiles it as a cfunc.

- :func:`fcfs`: the queue head, while it fits;
- :func:`easy`: the head while it fits, then the first later job that fits now and
  either ends (by its estimate) by the head's shadow time or uses at most the extra
  cores; equal to the built-in where the built-in runs (memory and disk never bind)
  on homogeneous nodes (the built-in plans a backfilled job's duration on the nodes the
  allocator gives it, which a queue plug-in does not see). With memory that binds it
  computes the shadow anew after each start (the built-in keeps the pass's first:
  infinite, when nothing ran and the head did not fit by memory). It skips rescanning the jobs it rejected while only arrivals happened, as the
  built-in does (``memory`` keeps where it stopped);
- :func:`mpfs_scan`: the largest job that fits now (ties: earliest);
- :func:`first_fit`: the allocation, nodes in id order.
"""
from __future__ import annotations

from .plugin_api import first_fit as _first_fit, fits_now, shadow


def fcfs(now, queue, running, run_end, jobs, nodes, memory):
    if fits_now(jobs, nodes, queue[0]):
        return 0
    return -1


def easy(now, queue, running, run_end, jobs, nodes, memory):
    head = queue[0]
    if fits_now(jobs, nodes, head):
        return 0
    # The head's shadow, and where the backfill scan starts: while no job started or ended
    # (nodes.changes) and the head is the same, the jobs a scan rejected stay rejected (fewer
    # free cores never come back, a later now only fails more), so only arrivals need a look.
    # memory[0:5] = changes + 1 and head they are for, shadow, extra, queue size scanned.
    same = memory[0] == nodes.changes + 1 and memory[1] == head
    if same:
        t_shadow, extra, first = memory[2], int(memory[3]), int(memory[4])
    else:
        t_shadow, extra = shadow(running, run_end, jobs, nodes, head)
        first = 1
    for k in range(first, queue.size):
        j = queue[k]
        n = jobs.cores[j]
        if n <= nodes.free and (now + jobs.estimate[j] <= t_shadow or n <= extra) and fits_now(jobs, nodes, j):
            return k
    memory[0], memory[1], memory[2], memory[3], memory[4] = nodes.changes + 1, head, t_shadow, extra, queue.size
    return -1


def mpfs_scan(now, queue, running, run_end, jobs, nodes, memory):
    best = -1
    for k in range(queue.size):
        j = queue[k]
        if (best < 0 or jobs.cores[j] > jobs.cores[queue[best]]) and fits_now(jobs, nodes, j):
            best = k
    return best


def first_fit(now, job, jobs, nodes, chosen, procs, memory):
    return _first_fit(jobs, nodes, job, chosen, procs)
