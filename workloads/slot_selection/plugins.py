"""The plug-in point of slot selection: the window criterion the AEP scan minimises.

A criterion is a plain function of one candidate window, compiled by numba as a C callback
with :data:`CRITERION_SIG` (every array read-only: a criterion that writes one does not
compile) and called from the scan kernel through a first-class function pointer::

    def criterion(t, window, node_len, node_cost, cand_end) -> float  # smaller is better

* ``t`` (float): the step's start t_w (time), the start of the window;
* ``window`` (int64[n]): the window's node ids: the n - 1 cheapest other valid candidates in
  slot cost order, then the node of the slot just added;
* ``node_len[k]``, ``node_cost[k]`` (float64[nodes]): the job's slot length (time) and slot
  cost ``c_k len_k`` (money) on node k;
* ``cand_end[k]`` (float64[nodes]): end of node k's current candidate slot (-inf: none).

The scan (``docs/models/slot_selection.md``, "The AEP scan") runs as ``min_cost`` does: at each step the
window is the slot just added plus the n - 1 cheapest other valid candidates, kept only if
its cost fits the budget S (correctly rounded sum); the criterion's value of that window
is compared with the best so far, which changes only on a strict improvement (ties keep the
earlier window) *(our rule for the window of a step: the cheapest one, so the budget never
rules out a window that a cheaper choice would have kept)*. The built-in ``min_cost`` is
the criterion "the window's cost" (see ``jobs/plugins_example/slot_selection_criteria.py``).
A criterion returning NaN fails the replication with a message naming it, the step's
start and the window.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from ..kernel_support.plugins import PluginError
from ..slots.aep import Window, keep_best, scan_result, scan_state
from ..slots.candidates import cheapest_within, window_values
from ..slots.exactsum import fsum, sum_le
from .points import CRITERION, PLUGINS  # noqa: F401 - declared without numba, for the listing

CRITERION_SIG = CRITERION.numba_signature


def min_cost(t, window, node_len, node_cost, cand_end):
    """The built-in ``min_cost`` as a criterion: the window's cost, correctly rounded."""
    n = window.shape[0]
    vals = np.empty(n)
    for q in range(n):
        vals[q] = node_cost[window[q]]
    return fsum(vals, n)


@kernel
def _scan_plugin(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n, criterion, bad):
    """The min_cost scan with ``criterion``'s value in place of the cost. On a NaN value it
    stops with ``bad = [t, slot index]`` (else ``bad[0]`` stays NaN)."""
    cand_end, cand_slot, W, vals, best, best_slots = scan_state(node_len, n)
    cost_order = np.argsort(node_cost, kind="mergesort")
    best_value = np.inf
    start = np.nan
    bound = budget + 1e-10 * abs(budget) + 1e-300
    win = W[:n]
    for i in range(slot_node.shape[0]):
        k = slot_node[i]
        t = slot_start[i]
        if not node_mask[k]:
            continue
        cand_end[k] = slot_end[i]
        cand_slot[k] = i
        if slot_end[i] - t < node_len[k]:
            continue
        # the n - 1 cheapest others, given up as soon as they cannot fit the budget
        if cheapest_within(cost_order, cand_end, node_len, node_cost, t, n - 1, k, node_cost[k], bound, W) < n - 1:
            continue
        W[n - 1] = k
        if not sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
            continue
        value = criterion(t, win, node_len, node_cost, cand_end)
        if np.isnan(value):
            bad[0] = t
            bad[1] = i
            break
        if value < best_value:
            best_value = value
            start = keep_best(W, n, t, cand_slot, best, best_slots)
    return scan_result(start, best, best_slots, node_len, node_cost, n, vals)


def plugin_search(slot_node: np.ndarray, slot_start: np.ndarray, slot_end: np.ndarray, node_len: np.ndarray,
                  node_cost: np.ndarray, budget: float, n: int, criterion, name: str) -> Window:
    """One AEP scan minimising the compiled ``criterion`` (named ``name`` in errors)."""
    if n < 1:
        raise ValueError(f"n (job_slots) must be >= 1, got {n}")
    node_len = np.ascontiguousarray(node_len, np.float64)
    node_cost = np.ascontiguousarray(node_cost, np.float64)
    mask = np.ones(node_len.shape[0], np.bool_)
    bad = np.full(2, np.nan)
    found, start, nodes, slots, runtime, proc_time, cost = _scan_plugin(
        slot_node, slot_start, slot_end, node_len, node_cost, mask, float(budget), int(n), criterion, bad)
    if not np.isnan(bad[0]):
        raise PluginError(f"window criterion {name} returned nan at t_w = {float(bad[0])!r} (slot {int(bad[1])}); "
                                "a criterion must return a number (smaller is better)")
    return Window(found, start, nodes, slots, runtime, start + runtime, proc_time, cost)
