"""The plug-in point of the cyclic scheme: the VO criterion of the combination step.

A VO criterion is a plain function giving the value ``v(s)`` of one alternative, compiled by
numba as a C callback with :data:`VO_SIG` (every array read-only: a criterion that writes
one does not compile) and called for every alternative of a combination step by a small
kernel through a first-class function pointer::

    def criterion(a, time, cost, start, runtime, proc_time, budget) -> float  # v of alternative a

All arrays are float64[A], one entry per alternative of the step (the jobs of the
(sub-)batch that found alternatives, in priority order, each job's alternatives in the
order found): ``time`` the DP's time quantity (``dp_time``: processor time, runtime or
finish), ``cost`` the window cost ``sum c_k len_k``, ``start``, ``runtime``, ``proc_time``
the window's, ``budget`` the budget S_i of the alternative's job.

The combination step then *minimises* ``sum v`` over one alternative per job (the DP of
``docs/models/cyclic.md``, CSS step 2) subject to ``sum g <= g*``, where ``g`` is the quantity named by
the parameter ``vo_limit``: ``cost`` (B*, as ``min_time``) or ``time`` (T*, as ``min_cost``,
``max_income``, ``min_idle``). Every built-in strategy is such a criterion: ``min_time`` is
``v = time[a]`` with ``vo_limit = cost``, ``max_income`` is ``v = -cost[a]`` with ``vo_limit =
time`` (see ``jobs/plugins_example/cyclic_criteria.py``). A criterion returning NaN fails the
replication with a message naming it, the alternative, its job and its start.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from ..kernel_support.plugins import PluginError, resolve
from .choices import VO_LIMITS  # noqa: F401 - handed on
from .points import PLUGINS, VO_CRITERION  # noqa: F401 - declared without numba, for the listing

VO_SIG = VO_CRITERION.numba_signature


def min_time(a, time, cost, start, runtime, proc_time, budget):
    """The built-in ``min_time`` (with ``vo_limit = cost``): the alternative's time."""
    return time[a]


def min_cost(a, time, cost, start, runtime, proc_time, budget):
    """The built-in ``min_cost`` (with ``vo_limit = time``): the alternative's cost."""
    return cost[a]


def max_income(a, time, cost, start, runtime, proc_time, budget):
    """The built-in ``max_income`` (with ``vo_limit = time``): maximise the cost, i.e. minimise its negative."""
    return -cost[a]


def min_idle(a, time, cost, start, runtime, proc_time, budget):
    """The built-in ``min_idle`` (with ``vo_limit = time``): maximise the time used."""
    return -time[a]


@kernel
def _vo_values(criterion, time, cost, start, runtime, proc_time, budget, out):
    """``out[a] = criterion(a, ...)`` for every alternative; the first NaN's index, or -1."""
    for a in range(out.shape[0]):
        v = criterion(a, time, cost, start, runtime, proc_time, budget)
        if np.isnan(v):
            return a
        out[a] = v
    return -1


def criterion_of(strategy: str):
    """The compiled VO criterion named ``strategy`` ("pkg.mod:func")."""
    return resolve(strategy, VO_CRITERION).cfunc


def vo_values(criterion, name: str, time: np.ndarray, cost: np.ndarray, start: np.ndarray, runtime: np.ndarray,
              proc_time: np.ndarray, budget: np.ndarray, jobs: np.ndarray) -> np.ndarray:
    """The plug-in's ``v`` of every alternative (``jobs[a]``: the job of alternative a, for errors)."""
    arrays = [np.ascontiguousarray(x, np.float64) for x in (time, cost, start, runtime, proc_time, budget)]
    out = np.empty(arrays[0].shape[0])
    bad = _vo_values(criterion, *arrays, out)
    if bad >= 0:
        raise PluginError(f"VO criterion {name} returned nan for alternative {bad} (job {int(jobs[bad])}, "
                          f"start {float(start[bad])!r}); a criterion must return a number (the DP minimises it)")
    return out
