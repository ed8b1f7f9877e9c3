"""The ga workload's plug-in point (documented in :mod:`.plugins`), declared without numba:
its signature is built on first use."""
from __future__ import annotations

from ..kernel_support.plugins import PluginPoint


def objective_signature():
    """float64(int64[N], int64[C], float64[J] x2, int64[J] x2, int64[N], float64[C] x2, float64), the
    arrays read-only: an objective's numba signature."""
    from numba import types

    from ..kernel_support.plugins import ro_array

    i1, f1 = ro_array(types.int64), ro_array(types.float64)
    return types.float64(i1, i1, f1, f1, i1, i1, i1, f1, f1, types.float64)


OBJECTIVE = PluginPoint(
    param="objective", name="objective", signature=objective_signature, return_type="float64",
    args=(("body", "int64[N]: process ids unit by unit in execution order"),
          ("header", "int64[C]: slots on each unit (unit m owns body[sum(header[:m]) : sum(header[:m + 1])])"),
          ("start", "float64[J]: start of job j (time units)"),
          ("dur", "float64[J]: duration of job j (time units)"),
          ("prio", "int64[J]: priority of job j (1 .. p_max)"),
          ("width", "int64[J]: processes of job j"),
          ("proc_job", "int64[N]: the job of process p"),
          ("speed", "float64[C]: speed coefficient k_m of unit m"),
          ("ready", "float64[C]: time from which unit m is free (its idle gene's end)"),
          ("period_end", "float: end of the planning period (time units)")),
    returns="float: the schedule's objective, smaller is better (NaN is an impossible value)",
    builtins=(("gmean", "schedsweep.workloads.ga.plugins:gmean"),),
    notes="Ranked by (docking gap tau, objective) with docking = tau_first. The objective metric is then the "
          "plug-in's value of each period's schedule, mean over periods; time to solution counts the first "
          "generation within target_within (0.01 by default, relative) of the target value. All arrays read-only.",
)
PLUGINS = (OBJECTIVE,)
