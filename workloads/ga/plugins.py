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

import numba
from numba import types

_RO = dict(readonly=True)
_I1 = types.Array(types.int64, 1, "C", **_RO)
_F1 = types.Array(types.float64, 1, "C", **_RO)
OBJECTIVE_SIG = types.float64(_I1, _I1, _F1, _F1, _I1, _I1, _I1, _F1, _F1, types.float64)


@numba.njit(cache=True)
def call_objective(plugin, body, header, P, start, dur, period_end):
    """The plug-in's value of one timed schedule (``P``: the problem's kernel tuple)."""
    return plugin(body, header, start, dur, P[6], P[4], P[9], P[0], P[2], period_end)


def resolve_objective(path: str):
    """The compiled plug-in objective named ``path`` ("pkg.mod:func").

    Placeholder until the shared resolver (workloads/_plugins.py) lands."""
    import importlib
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def _get(p: str):
        mod, _, name = p.partition(":")
        fn = getattr(importlib.import_module(mod), name)
        return numba.cfunc(OBJECTIVE_SIG, cache=False)(getattr(fn, "py_func", fn))
    return _get(path)
