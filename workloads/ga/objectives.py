"""Objectives of a timed schedule, and the docking gap ``tau``.

* ``gmean`` (source): ``f = (prod_{m in M_S} L_m)^(1/G)``, ``L_m = sum_l p_l**d_lm |s_lm|``,
  evaluated as ``log f = (1/G) sum_m log L_m`` (each ``L_m`` by log-sum-exp, so
  ``p**d`` cannot overflow on long units). Idle genes are not slots (our rule).
* ``makespan`` (our rule): latest slot end minus the end of the planning period.
* ``weighted_completion`` (our rule): ``sum_l p_l C_l / sum_l p_l`` over slots, with C
  measured from the end of the planning period.

The fitness value of ``gmean`` is ``log f``; of the others the value itself. Smaller is
better. ``tau`` (source) = sum over units that have slots both here and in the previous
schedule (our rule) of (first start here - end of the previous schedule).
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from .choices import OBJECTIVES  # handed on from here too
from .model import segment_starts

GMEAN, MAKESPAN, WEIGHTED_COMPLETION = 0, 1, 2
PLUGIN = -1  # the objective code passed with a plug-in objective


@kernel
def log_gmean(body, header, P, dur) -> float:
    """``log f`` of the source objective (f in time units)."""
    prio = P[6]
    proc_job = P[9]
    C = header.shape[0]
    seg = segment_starts(header)
    total = 0.0
    for m in range(C):
        n = seg[m + 1] - seg[m]
        if n == 0:
            continue
        # log-sum-exp of d*log(p) + log|s| over positions d = 1..n
        top = -np.inf
        for d in range(n):
            j = proc_job[body[seg[m] + d]]
            top = max(top, (d + 1) * np.log(prio[j]) + np.log(dur[j]))
        acc = 0.0
        for d in range(n):
            j = proc_job[body[seg[m] + d]]
            acc += np.exp((d + 1) * np.log(prio[j]) + np.log(dur[j]) - top)
        total += top + np.log(acc)
    return total / C


@kernel
def makespan(start, dur, period_end) -> float:
    """Latest job end minus ``period_end`` (time units)."""
    best = -np.inf
    for j in range(start.shape[0]):
        best = max(best, start[j] + dur[j])
    return best - period_end


@kernel
def weighted_completion(P, start, dur, period_end) -> float:
    """``sum p C / sum p`` over slots (every process of a job is a slot), time units."""
    width = P[4]
    prio = P[6]
    num = 0.0
    den = 0.0
    for j in range(start.shape[0]):
        w = prio[j] * width[j]
        num += w * (start[j] + dur[j] - period_end)
        den += w
    return num / den


@kernel
def tau(body, header, P, start) -> float:
    """Docking gap: sum over units with slots here and before of first start - previous end."""
    prev_end = P[3]
    proc_job = P[9]
    C = header.shape[0]
    seg = segment_starts(header)
    total = 0.0
    for m in range(C):
        if header[m] > 0 and not np.isnan(prev_end[m]):
            total += start[proc_job[body[seg[m]]]] - prev_end[m]
    return total


@kernel
def fitness(body, header, P, start, dur, objective, period_end, plugin=None) -> float:
    """The minimised value of ``objective`` (GMEAN gives log f), or of the ``plugin``
    objective (a first-class function, :data:`.plugins.OBJECTIVE_SIG`) when one is given."""
    if plugin is not None:
        return plugin(body, header, start, dur, P[6], P[4], P[9], P[0], P[2], period_end)
    if objective == GMEAN:
        return log_gmean(body, header, P, dur)
    if objective == MAKESPAN:
        return makespan(start, dur, period_end)
    return weighted_completion(P, start, dur, period_end)


@kernel
def better(tau_a, fit_a, tau_b, fit_b) -> bool:
    """Lexicographic ``(tau, f)`` comparison: a strictly better than b."""
    return tau_a < tau_b or (tau_a == tau_b and fit_a < fit_b)
