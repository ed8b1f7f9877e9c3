"""The slot_selection workload's plug-in point (documented in :mod:`.plugins`), declared without
numba: its signature is built on first use."""
from __future__ import annotations

from ..kernel_support.plugins import PluginPoint


def criterion_signature():
    """float64(float64, int64[n], three float64[nodes], all read-only): a window criterion's numba signature."""
    from numba import types

    from ..kernel_support.plugins import ro_array

    return types.float64(types.float64, ro_array(types.int64), ro_array(types.float64), ro_array(types.float64),
                         ro_array(types.float64))


CRITERION = PluginPoint(
    param="algorithm", name="criterion", signature=criterion_signature, return_type="float64",
    args=(("t", "float: the step's start t_w, the window's start (time)"),
          ("window", "int64[n]: the window's node ids, the n - 1 cheapest other valid candidates in slot cost "
                     "order, then the node of the slot just added"),
          ("node_len", "float64[nodes]: the job's slot length len_k on node k (time)"),
          ("node_cost", "float64[nodes]: the slot cost c_k len_k on node k (money)"),
          ("cand_end", "float64[nodes]: end of node k's current candidate slot, -inf when none (time)")),
    returns="float: the window's value, smaller is better (NaN is an impossible value)",
    builtins=(("min_cost", "schedsweep.workloads.slot_selection.plugins:min_cost"),),
    helpers="schedsweep.workloads.slots.exactsum.fsum(values, k): correctly rounded sum of values[:k]",
    notes="The scan runs as min_cost: at each step the window is the new slot plus the n - 1 cheapest other "
          "valid candidates, kept if its cost fits the budget; the best value so far changes only on a strict "
          "improvement. All arrays read-only.",
)
PLUGINS = (CRITERION,)
