"""The plug-in point of the desktop grid: the dispatch rule (which class an idle machine pulls).

A dispatch rule is a plain function over the kernel's own state, compiled by numba as a C
callback with :data:`DISPATCH_SIG` (every array read-only: a rule that writes one does not
compile) and called by the event loop through a first-class function pointer, so a new
rule costs its own compile (well under a second), not the simulator's::

    def rule(j, now, waiting, head_time, head_seq, mu, view, elig) -> int  # the class j pulls

* ``j`` (int): the idle machine that pulls; ``now`` (float): the simulated time;
* ``waiting[i]`` (int64[N]): tasks of class i waiting;
* ``head_time[i]`` (float64[N]): queue time of class i's oldest waiting task (its arrival,
  or its resubmission with ``resubmit_order = resubmission``), ``inf`` when none waits;
* ``head_seq[i]`` (int64[N]): arrival number of that task (FCFS tie-break), -1 when none;
* ``mu[i, j]`` (float64[N, M]): nominal rates (tasks per time unit on a dedicated machine);
* ``view[j]`` (float64[M]): the CPU availability a'_j the policies see (estimate);
* ``elig[i, j]`` (uint8[N, M]): 1 if machine j may take class i (all ones without an LP).

The kernel calls the rule only when machine j has at least one waiting class it may take,
and the rule must return such a class; anything else (out of range, no waiting task, not
allowed) stops the replication, which then fails with a message naming the rule, the time,
the machine and the choice. An arriving task that finds idle machines allowed to take it
goes to the fastest of them (``mu[i, j] * view[j]``, ties to the longest idle), as with the
built-in PST, Gcµ and LPAS_DG; the rule decides what a machine pulls when it becomes free.
"""
from __future__ import annotations

from numba import types

_RO = dict(readonly=True)
DISPATCH_SIG = types.int64(
    types.int64, types.float64,
    types.Array(types.int64, 1, "C", **_RO), types.Array(types.float64, 1, "C", **_RO),
    types.Array(types.int64, 1, "C", **_RO), types.Array(types.float64, 2, "C", **_RO),
    types.Array(types.float64, 1, "C", **_RO), types.Array(types.uint8, 2, "C", **_RO))
