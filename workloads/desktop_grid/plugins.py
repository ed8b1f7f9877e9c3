"""The plug-in point of the desktop grid: the dispatch rule (which class an idle machine pulls).

A dispatch rule is a plain function over the kernel's own state, compiled by numba as a C
callback with :data:`DISPATCH_SIG` (every array read-only: a rule that writes one does not
compile) and called by the event loop through a first-class function pointer
(:mod:`schedsweep.workloads.kernel_support.plugins`), so a new rule costs its own compile, not the simulator's::

    def rule(j, now, waiting, head_time, head_seq, mu, view, elig) -> int  # the class j pulls

The kernel calls the rule only when machine j has at least one waiting class it may take,
and the rule must return such a class; anything else (out of range, no waiting task, not
allowed) stops the replication, which then fails with a message naming the rule, the time,
the machine and the choice. An arriving task that finds idle machines allowed to take it
goes to the fastest of them (``mu[i, j] * view[j]``, ties to the longest idle), as with the
built-in PST, Gcµ and LPAS_DG; the rule decides what a machine pulls when it becomes free
(so the built-in FCFS, which gives an arriving task to the longest idle machine, is not a
rule of this point). With a plug-in every machine may take every class (no LP).

:func:`gcmu` and :func:`pst` are the built-ins written as rules (tests check them bit for
bit against the kernel's own code).
"""
from __future__ import annotations

from typing import Any

from ..kernel_support.plugins import PluginPoint


def dispatch_signature():
    """int64(int64, float64, int64[N], float64[N], int64[N], float64[N, M], float64[M], uint8[N, M]),
    the arrays read-only: a dispatch rule's numba signature (built on first use: declaring the
    point does not import numba)."""
    from numba import types

    from ..kernel_support.plugins import ro_array

    return types.int64(types.int64, types.float64, ro_array(types.int64), ro_array(types.float64),
                       ro_array(types.int64), ro_array(types.float64, 2), ro_array(types.float64),
                       ro_array(types.uint8, 2))


DISPATCH = PluginPoint(
    param="policy", name="rule", signature=dispatch_signature, return_type="int64",
    args=(("j", "int: the idle machine that pulls"),
          ("now", "float: the simulated time (time units)"),
          ("waiting", "int64[N]: tasks of class i waiting"),
          ("head_time", "float64[N]: queue time of class i's oldest waiting task (its arrival, or its "
                        "resubmission with resubmit_order = resubmission); inf when none waits"),
          ("head_seq", "int64[N]: arrival number of that task (ties), -1 when none waits"),
          ("mu", "float64[N, M]: nominal rate of class i on machine j (tasks per time unit, dedicated)"),
          ("view", "float64[M]: the CPU availability a'_j the policies see (estimate)"),
          ("elig", "uint8[N, M]: 1 if machine j may take class i (all ones with a plug-in)")),
    returns="int: the class machine j pulls (its oldest task); must have a waiting task j may take",
    builtins=(("gcmu", "schedsweep.workloads.desktop_grid.plugins:gcmu"), ("pst", "schedsweep.workloads.desktop_grid.plugins:pst")),
    notes="Called only when machine j may take some waiting task; an arriving task that finds idle machines "
          "goes to the fastest (mu * view, ties to the longest idle) as with PST/Gcmu; all arrays read-only.",
)
PLUGINS = (DISPATCH,)


def __getattr__(name: str) -> Any:
    if name == "DISPATCH_SIG":      # the numba signature, as before
        return DISPATCH.numba_signature
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def gcmu(j, now, waiting, head_time, head_seq, mu, view, elig):
    """Gcµ: the class maximising ``mu[i, j] * view[j] * (waiting time of its oldest task)``."""
    best = -1
    best_key = 0.0
    for i in range(waiting.shape[0]):
        if waiting[i] == 0 or elig[i, j] == 0:
            continue
        key = mu[i, j] * view[j]
        key *= now - head_time[i]
        if best < 0 or key > best_key:
            best = i
            best_key = key
    return best


def pst(j, now, waiting, head_time, head_seq, mu, view, elig):
    """PST: the waiting class machine j is fastest for (first class on ties)."""
    best = -1
    best_key = 0.0
    for i in range(waiting.shape[0]):
        if waiting[i] == 0 or elig[i, j] == 0:
            continue
        key = mu[i, j] * view[j]
        if best < 0 or key > best_key:
            best = i
            best_key = key
    return best
