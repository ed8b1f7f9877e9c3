"""The AEP scan and the algorithms that run on it (``shared/spec/slots.md``, "AEP scan").

One numba kernel, :func:`_scan`, walks the slots in scan order (non-decreasing start, ties
by lower node id), keeps at most one candidate slot per node and hands each step to the
criterion's step function. Inputs are flat arrays (the environment's slot list) and per
node the job's slot length ``node_len`` and slot cost ``node_cost`` (see
:func:`workloads.environment.job_on_nodes`); :func:`aep_search` is the typed wrapper.

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

import numba
import numpy as np

from .candidates import cheapest, node_orders, valid, window_values
from .exact import exact_proc_time_with, exact_runtime_with
from .exactsum import fsum, sum_le, sum_lt
from .greedy import greedy_runtime, random_window

# criterion codes of the kernel (alp runs as amp with an eligibility mask, no budget)
AMP, MIN_COST, MIN_RUNTIME, MIN_RUNTIME_EXACT, MIN_FINISH, MIN_FINISH_EXACT, \
    MIN_PROC_TIME, MIN_PROC_TIME_EXACT = range(8)

#: Algorithm name -> kernel criterion code (``alp`` and ``csa`` are built on ``amp``).
CRITERIA = {
    "amp": AMP, "alp": AMP, "min_cost": MIN_COST, "min_runtime": MIN_RUNTIME,
    "min_runtime_exact": MIN_RUNTIME_EXACT, "min_finish": MIN_FINISH,
    "min_finish_exact": MIN_FINISH_EXACT, "min_proc_time": MIN_PROC_TIME,
    "min_proc_time_exact": MIN_PROC_TIME_EXACT,
}

_NO_UNIFORMS = np.zeros((0, 1, 1))


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


# ---------------------------------------------------------------- the scan

@numba.njit(cache=True)
def _scan(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n, criterion,
          literal, uniforms, retries):
    """One AEP scan. Returns ``(found, start, window nodes int64[n], their slot indices int64[n])``."""
    m = slot_node.shape[0]
    nodes = node_len.shape[0]
    cand_end = np.full(nodes, -np.inf)
    cand_slot = np.full(nodes, -1, np.int64)
    cost_order, len_order = node_orders(node_len, node_cost)
    min_len = np.inf
    for j in range(nodes):
        if node_mask[j]:
            min_len = min(min_len, node_len[j])
    W = np.empty(n + 1, np.int64)
    vals = np.empty(n + 1, np.float64)
    best_nodes = np.empty(n, np.int64)
    best_slots = np.full(n, -1, np.int64)
    best = np.inf
    found = False
    start = np.nan
    # scratch of the processor-time search
    cands = np.empty(nodes, np.int64)
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

    for i in range(m):
        k = slot_node[i]
        t = slot_start[i]
        added = False
        if node_mask[k]:
            cand_end[k] = slot_end[i]
            cand_slot[k] = i
            added = valid(k, cand_end, node_len, t)
        improved = False
        if criterion == AMP:
            if cheapest(cost_order, cand_end, node_len, t, n, -1, W) == n and \
                    sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
                improved = True
        elif criterion == MIN_COST:
            if not added or node_cost[k] > best:
                continue
            if cheapest(cost_order, cand_end, node_len, t, n - 1, k, W) == n - 1:
                W[n - 1] = k
                approx = window_values(W, n, node_cost, vals)
                if sum_le(vals, n, approx, budget) and sum_lt(vals, n, approx, best):
                    best = fsum(vals, n)
                    improved = True
        elif criterion == MIN_RUNTIME_EXACT or criterion == MIN_FINISH_EXACT:
            offset = t if criterion == MIN_FINISH_EXACT else 0.0
            if not offset + min_len < best:
                break           # no later step can improve strictly
            if not added:
                continue
            R = exact_runtime_with(k, len_order, cand_end, node_len, node_cost, t, n, budget, best,
                                    offset, W, vals)
            if R < np.inf:
                best = offset + R
                improved = True
        elif criterion == MIN_RUNTIME or criterion == MIN_FINISH:
            offset = t if criterion == MIN_FINISH else 0.0
            if not offset + min_len < best:
                break
            R = greedy_runtime(cost_order, cand_end, node_len, node_cost, t, n, budget, literal, W, vals)
            if R < np.inf and offset + R < best:
                best = offset + R
                improved = True
        elif criterion == MIN_PROC_TIME:
            if random_window(cand_end, node_len, node_cost, t, n, budget, uniforms[i], retries,
                              cands, W, vals):
                approx = window_values(W, n, node_len, vals)
                if sum_lt(vals, n, approx, best):
                    best = fsum(vals, n)
                    improved = True
        elif criterion == MIN_PROC_TIME_EXACT:
            if not added:
                continue
            # the incumbent window goes to ``cands`` (free here), W is the search's scratch
            if exact_proc_time_with(k, len_order, cand_end, node_len, node_cost, t, n, budget, best,
                                     gnode, gstart, gsize, glen, smc, take, lvl_k, lvl_proc, lvl_cost,
                                     cands, inc_val,
                                     W, vals, sa, sb):
                W[:n] = cands[:n]
                best = inc_val[0]
                improved = True
        if improved:
            found = True
            start = t
            best_nodes[:] = np.sort(W[:n])
            for q in range(n):
                best_slots[q] = cand_slot[best_nodes[q]]
            if criterion == AMP:
                break
    return found, start, best_nodes, best_slots


# ---------------------------------------------------------------- wrappers

def window_from(found: bool, start: float, nodes: np.ndarray, slots: np.ndarray,
                node_len: np.ndarray, node_cost: np.ndarray) -> Window:
    """The :class:`Window` of a kernel result, with its runtime, finish, processor time, cost."""
    if not found:
        empty = np.empty(0, np.int64)
        return Window(False, np.nan, empty, empty, np.nan, np.nan, np.nan, np.nan)
    lens = node_len[nodes]
    runtime = float(lens.max())
    return Window(True, float(start), nodes, slots, runtime, float(start) + runtime,
                  float(fsum(np.ascontiguousarray(lens), len(nodes))),
                  float(fsum(np.ascontiguousarray(node_cost[nodes]), len(nodes))))


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
    if algorithm not in CRITERIA:
        raise ValueError(f"algorithm must be one of {', '.join(CRITERIA)}, got {algorithm!r}")
    if greedy_budget_test not in ("swap", "literal"):
        raise ValueError(f"greedy_budget_test must be 'swap' or 'literal', got {greedy_budget_test!r}")
    if n < 1:
        raise ValueError(f"n (job_slots) must be >= 1, got {n}")
    nodes = node_len.shape[0]
    mask = np.ones(nodes, np.bool_) if node_mask is None else np.asarray(node_mask, np.bool_)
    if algorithm == "alp":
        limit_runtime = job_runtime if job_runtime is not None else 1.0
        mask = mask & alp_mask(node_len, node_cost, budget, n, limit_runtime, alp_limit)
        budget_used = np.inf    # every eligible slot is within S / n: ALP has no window test
    else:
        budget_used = float(budget)
    if algorithm == "min_proc_time":
        if uniforms is None or uniforms.shape != (len(slot_node), random_window_retries + 1, n):
            raise ValueError("min_proc_time needs uniforms of shape (slots, retries + 1, n); "
                             "use draw_uniforms(rng, slots, n, retries)")
        u = uniforms
    else:
        u = _NO_UNIFORMS
    found, start, win_nodes, win_slots = _scan(
        slot_node, slot_start, slot_end, node_len, node_cost, mask, budget_used, int(n),
        CRITERIA[algorithm], greedy_budget_test == "literal", u, int(random_window_retries))
    return window_from(found, start, win_nodes, win_slots, node_len, node_cost)


def draw_uniforms(rng: np.random.Generator, slots: int, n: int, retries: int = 0) -> np.ndarray:
    """The random numbers ``min_proc_time`` uses: ``u[step, try, draw]``, from the algorithm stream."""
    return rng.random((slots, retries + 1, n))


@numba.njit(cache=True)
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
