"""The AEP scan and the algorithms that run on it (``docs/models/slot_selection.md``, "The AEP scan").

One numba kernel per criterion family (``scan_amp``, ``scan_min_cost``, ...) walks the
slots in scan order (non-decreasing start, ties by lower node id), keeps at most one
candidate slot per node and evaluates each step by its criterion. Inputs are flat arrays
(the environment's slot list) and per node the job's slot length ``node_len`` and slot
cost ``node_cost`` (see :func:`.environment.job_on_nodes`); :func:`aep_search`
is the typed wrapper.

Why the step functions may look only at windows that contain the slot just added: a
candidate stays valid from its start until ``end - len``, so every window of step i that
does not use slot i was already a window at step i - 1 with the same cost, runtime and
processor time and an earlier start. As the best-so-far changes only on a strict
improvement, only windows containing slot i can change it; the exact criteria use this to
do O(candidates) work per step. The source's greedy (``min_runtime``, ``min_finish``) and
the random ``min_proc_time`` are not monotone in the candidate set, so they run on the
whole candidate list at every step, as the source does.

Sums (window cost, processor time) are compared as correctly rounded sums
(:mod:`.exactsum`), so results do not depend on the order of the terms.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernel_support.jit import kernel
from .candidates import cheapest, cheapest_within, node_orders, window_values
from .choices import AEP_ALGORITHMS  # handed on from here too
from .exact import exact_proc_time_with, exact_runtime_with
from .exactsum import fsum, sum_le, sum_lt
from .greedy import greedy_runtime, random_window


class Window(NamedTuple):
    """A window found by a search (``found`` False: the other fields are NaN / empty)."""

    found: bool
    start: float        #: t_w (time)
    nodes: np.ndarray   #: int64[n], node ids, ascending
    slots: np.ndarray   #: int64[n], index of the slot used on each node (same order)
    runtime: float      #: max len_k (time)
    finish: float       #: start + runtime (time)
    proc_time: float    #: sum len_k (time, correctly rounded sum)
    cost: float         #: sum c_k len_k (money, correctly rounded sum)


# ---------------------------------------------------------------- the scans
#
# One kernel per criterion family, each a loop over the slots in scan order (so a caller
# compiles only what it uses). Making slot i its node's candidate is written out in every
# loop (``cand_end[k] = slot_end[i]``): the loops are the hot path, and calls with array
# arguments inside them cost more than the work. Each returns
# ``(found, start, nodes int64[n], slot indices int64[n], runtime, proc_time, cost)``.


@kernel
def scan_state(node_len, n):
    """Candidate bookkeeping and window buffers of one scan."""
    nodes = node_len.shape[0]
    return (np.full(nodes, -np.inf), np.full(nodes, -1, np.int64), np.empty(n + 1, np.int64),
            np.empty(n + 1, np.float64), np.empty(n, np.int64), np.empty(n, np.int64))


@kernel
def scan_result(start, best, best_slots, node_len, node_cost, n, vals):
    """``(found, start, nodes, slots, runtime, proc_time, cost)`` of the best window (start NaN: none)."""
    if np.isnan(start):
        return False, np.nan, np.empty(0, np.int64), np.empty(0, np.int64), np.nan, np.nan, np.nan
    runtime = 0.0
    for q in range(n):
        runtime = max(runtime, node_len[best[q]])
    window_values(best, n, node_len, vals)
    proc_time = fsum(vals, n)
    window_values(best, n, node_cost, vals)
    return True, start, best, best_slots, runtime, proc_time, fsum(vals, n)


@kernel
def _min_len(node_len, node_mask):
    m = np.inf
    for j in range(node_len.shape[0]):
        if node_mask[j]:
            m = min(m, node_len[j])
    return m


@kernel
def keep_best(W, n, t, cand_slot, best, best_slots):
    """Record window ``W[:n]`` at ``t`` as the best so far (nodes ascending)."""
    best[:] = np.sort(W[:n])
    for q in range(n):
        best_slots[q] = cand_slot[best[q]]
    return t


@kernel
def scan_amp(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n):
    """amp (and alp): the first step whose n cheapest candidates fit the budget."""
    cand_end, cand_slot, W, vals, best, best_slots = scan_state(node_len, n)
    cost_order = np.argsort(node_cost, kind="mergesort")
    for i in range(slot_node.shape[0]):
        k = slot_node[i]
        t = slot_start[i]
        if node_mask[k]:
            cand_end[k] = slot_end[i]
            cand_slot[k] = i
        if cheapest(cost_order, cand_end, node_len, t, n, -1, W) == n and \
                sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
            start = keep_best(W, n, t, cand_slot, best, best_slots)
            return scan_result(start, best, best_slots, node_len, node_cost, n, vals)
    return scan_result(np.nan, best, best_slots, node_len, node_cost, n, vals)


@kernel
def scan_min_cost(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n):
    """min_cost: the new slot plus the n - 1 cheapest other candidates, at every step."""
    cand_end, cand_slot, W, vals, best, best_slots = scan_state(node_len, n)
    cost_order = np.argsort(node_cost, kind="mergesort")
    best_cost = np.inf
    start = np.nan
    for i in range(slot_node.shape[0]):
        k = slot_node[i]
        t = slot_start[i]
        if not node_mask[k]:
            continue
        cand_end[k] = slot_end[i]
        cand_slot[k] = i
        if slot_end[i] - t < node_len[k]:
            continue
        # the n - 1 cheapest others, given up as soon as they cannot beat the best
        bound = min(best_cost, budget)
        bound += 1e-10 * abs(bound) + 1e-300
        if cheapest_within(cost_order, cand_end, node_len, node_cost, t, n - 1, k, node_cost[k], bound, W) < n - 1:
            continue
        W[n - 1] = k
        approx = window_values(W, n, node_cost, vals)
        if sum_le(vals, n, approx, budget) and sum_lt(vals, n, approx, best_cost):
            best_cost = fsum(vals, n)
            start = keep_best(W, n, t, cand_slot, best, best_slots)
    return scan_result(start, best, best_slots, node_len, node_cost, n, vals)


@kernel
def scan_runtime_exact(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n,
                       finish):
    """min_runtime_exact / min_finish_exact (``finish``): the best window with the new slot."""
    cand_end, cand_slot, W, vals, best, best_slots = scan_state(node_len, n)
    len_order = node_orders(node_len, node_cost)[1]
    min_len = _min_len(node_len, node_mask)
    best_value = np.inf
    start = np.nan
    for i in range(slot_node.shape[0]):
        k = slot_node[i]
        t = slot_start[i]
        offset = t if finish else 0.0
        if not offset + min_len < best_value:
            break           # no later step can improve strictly
        if not node_mask[k]:
            continue
        cand_end[k] = slot_end[i]
        cand_slot[k] = i
        if slot_end[i] - t < node_len[k]:
            continue
        R = exact_runtime_with(k, len_order, cand_end, node_len, node_cost, t, n, budget, best_value,
                               offset, W, vals)
        if R < np.inf:
            best_value = offset + R
            start = keep_best(W, n, t, cand_slot, best, best_slots)
    return scan_result(start, best, best_slots, node_len, node_cost, n, vals)


@kernel
def scan_greedy(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n,
                finish, literal):
    """min_runtime / min_finish (``finish``): the source's greedy on all candidates, every step."""
    cand_end, cand_slot, W, vals, best, best_slots = scan_state(node_len, n)
    cost_order = np.argsort(node_cost, kind="mergesort")
    min_len = _min_len(node_len, node_mask)
    best_value = np.inf
    start = np.nan
    for i in range(slot_node.shape[0]):
        k = slot_node[i]
        t = slot_start[i]
        offset = t if finish else 0.0
        if not offset + min_len < best_value:
            break
        if node_mask[k]:
            cand_end[k] = slot_end[i]
            cand_slot[k] = i
        R = greedy_runtime(cost_order, cand_end, node_len, node_cost, t, n, budget, literal, W, vals)
        if R < np.inf and offset + R < best_value:
            best_value = offset + R
            start = keep_best(W, n, t, cand_slot, best, best_slots)
    return scan_result(start, best, best_slots, node_len, node_cost, n, vals)


@kernel
def scan_random(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n,
                uniforms, retries):
    """min_proc_time: one random n-subset per step, the smallest processor time kept."""
    cand_end, cand_slot, W, vals, best, best_slots = scan_state(node_len, n)
    cands = np.empty(node_len.shape[0], np.int64)
    best_value = np.inf
    start = np.nan
    for i in range(slot_node.shape[0]):
        k = slot_node[i]
        t = slot_start[i]
        if node_mask[k]:
            cand_end[k] = slot_end[i]
            cand_slot[k] = i
        if random_window(cand_end, node_len, node_cost, t, n, budget, uniforms[i], retries, cands, W, vals):
            approx = window_values(W, n, node_len, vals)
            if sum_lt(vals, n, approx, best_value):
                best_value = fsum(vals, n)
                start = keep_best(W, n, t, cand_slot, best, best_slots)
    return scan_result(start, best, best_slots, node_len, node_cost, n, vals)


@kernel
def scan_proc_exact(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n):
    """min_proc_time_exact: the best window with the new slot, by branch and bound."""
    cand_end, cand_slot, W, vals, best, best_slots = scan_state(node_len, n)
    len_order = node_orders(node_len, node_cost)[1]
    nodes = node_len.shape[0]
    inc = np.empty(n, np.int64)
    gnode = np.empty(nodes, np.int64)
    gstart = np.empty(nodes + 1, np.int64)
    gsize = np.empty(nodes + 1, np.int64)
    glen = np.empty(nodes + 1, np.float64)
    smc = np.empty(nodes + 1, np.float64)
    take = np.zeros(nodes + 2, np.int64)
    lvl_k = np.empty(nodes + 2, np.int64)
    lvl_proc = np.empty(nodes + 2, np.float64)
    lvl_cost = np.empty(nodes + 2, np.float64)
    inc_val = np.zeros(3)
    sa = np.empty(n, np.int64)
    sb = np.empty(n, np.int64)
    best_value = np.inf
    start = np.nan
    for i in range(slot_node.shape[0]):
        k = slot_node[i]
        t = slot_start[i]
        if not node_mask[k]:
            continue
        cand_end[k] = slot_end[i]
        cand_slot[k] = i
        if slot_end[i] - t < node_len[k]:
            continue
        if exact_proc_time_with(k, len_order, cand_end, node_len, node_cost, t, n, budget, best_value,
                                gnode, gstart, gsize, glen, smc, take, lvl_k, lvl_proc, lvl_cost,
                                inc, inc_val, W, vals, sa, sb):
            best_value = inc_val[0]
            start = keep_best(inc, n, t, cand_slot, best, best_slots)
    return scan_result(start, best, best_slots, node_len, node_cost, n, vals)


# ---------------------------------------------------------------- wrappers

def alp_mask(node_len: np.ndarray, node_cost: np.ndarray, budget: float, n: int, job_runtime: float,
             limit: str = "slot_cost") -> np.ndarray:
    """Nodes meeting ALP's local price limit: ``c_k len_k <= S / n`` or ``c_k <= S / (n T)``."""
    if limit == "slot_cost":
        return node_cost <= budget / n
    if limit == "unit_price":
        return node_cost / node_len <= budget / (n * job_runtime)
    raise ValueError(f"alp_limit must be 'slot_cost' or 'unit_price', got {limit!r}")


def aep_search(slot_node: np.ndarray, slot_start: np.ndarray, slot_end: np.ndarray,
               node_len: np.ndarray, node_cost: np.ndarray, budget: float, n: int,
               algorithm: str = "amp", node_mask: np.ndarray | None = None, *,
               greedy_budget_test: str = "swap", uniforms: np.ndarray | None = None,
               random_window_retries: int = 0, job_runtime: float | None = None,
               alp_limit: str = "slot_cost") -> Window:
    """One AEP search on a slot list (sorted by start, ties by node id).

    ``node_len``/``node_cost``: per node, the job's slot length (time) and slot cost
    (money); ``budget`` = S; ``n`` = slots per window; ``node_mask``: eligible nodes (all
    by default). ``min_proc_time`` needs ``uniforms`` of shape
    ``(slots, random_window_retries + 1, n)`` from the algorithm's own stream (see
    :func:`draw_uniforms`); ``alp`` needs ``job_runtime`` with ``alp_limit = unit_price``.
    """
    if algorithm not in AEP_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(AEP_ALGORITHMS)}, got {algorithm!r}")
    if greedy_budget_test not in ("swap", "literal"):
        raise ValueError(f"greedy_budget_test must be 'swap' or 'literal', got {greedy_budget_test!r}")
    if n < 1:
        raise ValueError(f"n (job_slots) must be >= 1, got {n}")
    nodes = node_len.shape[0]
    mask = all_nodes(nodes) if node_mask is None else np.asarray(node_mask, np.bool_)
    if algorithm == "alp":
        limit_runtime = job_runtime if job_runtime is not None else 1.0
        mask = mask & alp_mask(node_len, node_cost, budget, n, limit_runtime, alp_limit)
        budget_used = np.inf    # every eligible slot is within S / n: ALP has no window test
    else:
        budget_used = float(budget)
    if algorithm == "min_proc_time" and (
            uniforms is None or uniforms.shape != (len(slot_node), random_window_retries + 1, n)):
        raise ValueError("min_proc_time needs uniforms of shape (slots, retries + 1, n); "
                         "use draw_uniforms(rng, slots, n, retries)")
    args = (slot_node, slot_start, slot_end, node_len, node_cost, mask, budget_used, int(n))
    if algorithm in ("amp", "alp"):
        out = scan_amp(*args)
    elif algorithm == "min_cost":
        out = scan_min_cost(*args)
    elif algorithm in ("min_runtime_exact", "min_finish_exact"):
        out = scan_runtime_exact(*args, algorithm == "min_finish_exact")
    elif algorithm in ("min_runtime", "min_finish"):
        out = scan_greedy(*args, algorithm == "min_finish", greedy_budget_test == "literal")
    elif algorithm == "min_proc_time":
        out = scan_random(*args, uniforms, int(random_window_retries))
    else:
        out = scan_proc_exact(*args)
    found, start, win_nodes, win_slots, runtime, proc_time, cost = out
    return Window(found, start, win_nodes, win_slots, runtime, start + runtime, proc_time, cost)


_ALL_NODES: dict[int, np.ndarray] = {}


def all_nodes(nodes: int) -> np.ndarray:
    """An all-true mask, built once per size (kernels never write it)."""
    mask = _ALL_NODES.get(nodes)
    if mask is None:
        mask = np.ones(nodes, np.bool_)
        _ALL_NODES[nodes] = mask
    return mask


def draw_uniforms(rng: np.random.Generator, slots: int, n: int, retries: int = 0) -> np.ndarray:
    """The random numbers ``min_proc_time`` uses: ``u[step, try, draw]``, from the algorithm stream."""
    return rng.random((slots, retries + 1, n))


@kernel
def cut_window(slot_node, slot_start, slot_end, win_slots, start, node_len):
    """The slot list with a window's spans cut out (what remains of a cut slot stays a slot).

    The window uses slot ``win_slots[q]`` on its node for ``[start, start + len]``; the
    pieces before and after (if of positive length) replace it. Returns new sorted arrays.
    """
    m = slot_node.shape[0]
    w = win_slots.shape[0]
    out_n = np.empty(m + w, np.int64)
    out_s = np.empty(m + w, np.float64)
    out_e = np.empty(m + w, np.float64)
    used = np.zeros(m, np.bool_)
    for q in range(w):
        used[win_slots[q]] = True
    c = 0
    for i in range(m):
        if not used[i]:
            out_n[c], out_s[c], out_e[c] = slot_node[i], slot_start[i], slot_end[i]
            c += 1
            continue
        k = slot_node[i]
        if start > slot_start[i]:
            out_n[c], out_s[c], out_e[c] = k, slot_start[i], start
            c += 1
        after = start + node_len[k]
        if after < slot_end[i]:
            out_n[c], out_s[c], out_e[c] = k, after, slot_end[i]
            c += 1
    order = np.argsort(out_n[:c], kind="mergesort")
    order = order[np.argsort(out_s[:c][order], kind="mergesort")]
    return out_n[:c][order], out_s[:c][order], out_e[:c][order]
