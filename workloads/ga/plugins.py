"""The plug-in point of the GA: the objective (the fitness every individual is ranked by).

An objective is a plain function of one timed schedule, compiled by numba as a C callback
with :data:`OBJECTIVE_SIG` (every array read-only: an objective that writes one does not
compile) and called inside the GA kernels through a first-class function pointer::

    def objective(body, header, start, dur, prio, width, proc_job, speed, ready, period_end) -> float

* ``body`` (int64[N]): process ids unit by unit in execution order; ``header`` (int64[C]):
  the number of slots on each unit (so unit m owns ``body[sum(header[:m]) : ...]``);
* ``start[j]``, ``dur[j]`` (float64[J]): start and duration of job j (time units);
* ``prio[j]``, ``width[j]`` (int64[J]): priority (1 .. p_max) and processes of job j;
* ``proc_job[p]`` (int64[N]): the job of process p;
* ``speed[m]``, ``ready[m]`` (float64[C]): unit speed k_m and the time from which it is free;
* ``period_end`` (float): end of the planning period (no slot starts before it).

Smaller is better; with ``docking = tau_first`` individuals are ranked by (docking gap tau,
objective) as with the built-ins. The built-in ``gmean`` is ``log f`` of the source's
geometric mean (see ``jobs/plugins_example/ga_objectives.py``). An objective returning NaN
fails the replication with a message naming it, the generation and the island; the
``objective`` metric is then the plug-in's value of each period's schedule, mean over periods.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.plugins import PluginError, resolve
from ..kernel_support.jit import kernel
from .points import OBJECTIVE, PLUGINS  # noqa: F401 - declared without numba, for the listing

OBJECTIVE_SIG = OBJECTIVE.numba_signature


class ObjectiveNaN(PluginError):
    """A plug-in objective returned NaN (the replication fails with this message)."""


def plugin_of(objective: str):
    """The compiled plug-in objective named ``objective`` ("pkg.mod:func")."""
    return resolve(objective, OBJECTIVE).cfunc


@kernel
def call_objective(plugin, body, header, P, start, dur, period_end):
    """The plug-in's value of one timed schedule (``P``: the problem's kernel tuple)."""
    return plugin(body, header, start, dur, P[6], P[4], P[9], P[0], P[2], period_end)


def gmean(body, header, start, dur, prio, width, proc_job, speed, ready, period_end):
    """The built-in ``gmean`` as a plug-in: ``log f`` of the source's geometric mean of the
    units' weighted lengths (:func:`.objectives.log_gmean`, the same operations in the same order)."""
    C = header.shape[0]
    total = 0.0
    first = 0
    for m in range(C):
        n = header[m]
        if n == 0:
            continue
        top = -np.inf
        for d in range(n):
            j = proc_job[body[first + d]]
            top = max(top, (d + 1) * np.log(prio[j]) + np.log(dur[j]))
        acc = 0.0
        for d in range(n):
            j = proc_job[body[first + d]]
            acc += np.exp((d + 1) * np.log(prio[j]) + np.log(dur[j]) - top)
        total += top + np.log(acc)
        first += n
    return total / C
