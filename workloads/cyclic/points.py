"""The cyclic workload's plug-in point (documented in :mod:`.plugins`), declared without
numba: its signature is built on first use."""
from __future__ import annotations

from ..kernel_support.plugins import PluginPoint


def vo_signature():
    """float64(int64, six read-only float64[A]): a VO criterion's numba signature."""
    from numba import types

    from ..kernel_support.plugins import ro_array

    f1 = ro_array(types.float64)
    return types.float64(types.int64, f1, f1, f1, f1, f1, f1)


VO_CRITERION = PluginPoint(
    param="strategy", name="criterion", signature=vo_signature, return_type="float64",
    args=(("a", "int: the alternative valued, an index into the arrays"),
          ("time", "float64[A]: the DP's time quantity of each alternative (dp_time: processor time, runtime or "
                   "finish; time units)"),
          ("cost", "float64[A]: window cost sum c_k len_k (money)"),
          ("start", "float64[A]: window start (time)"),
          ("runtime", "float64[A]: window runtime max len_k (time)"),
          ("proc_time", "float64[A]: processor time sum len_k (time)"),
          ("budget", "float64[A]: budget S_i of the alternative's job (money)")),
    returns="float: v(a); the combination minimises sum v subject to sum g <= g* (g: parameter vo_limit); "
            "NaN is an impossible value",
    builtins=tuple((name, f"schedsweep.workloads.cyclic.plugins:{name}") for name in ("min_time", "min_cost", "max_income",
                                                                           "min_idle")),
    notes="One call per alternative of a combination step (the jobs of the (sub-)batch with alternatives, in "
          "priority order). min_time = time[a] with vo_limit = cost; min_cost = cost[a], max_income = -cost[a], "
          "min_idle = -time[a] with vo_limit = time. All arrays read-only.",
)
PLUGINS = (VO_CRITERION,)
