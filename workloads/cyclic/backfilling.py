"""Backfilling executed against the local load (``docs/models/cyclic.md``, "Backfilling" and "CSS+BF").

Jobs wait in priority order; local (owner) tasks are fixed; the slots of the environment
are each node's free time. *Committed* jobs (started, or fixed in advance by the cyclic
part of CSS+BF) occupy ``[start, start + len_k)`` on each node until they actually finish
there at ``start + rho * len_k``; the scheduler does not know ``rho`` and counts the
reserved end until the completion has happened.

- ``conservative``: at every event the waiting jobs get reservations again, in priority
  order: the earliest ``t >= now`` with ``n_i`` nodes free on ``[t, t + len_k]`` of local
  load, committed jobs and earlier jobs' reservations, taking the first ``n_i`` free nodes in
  node-index order. A job whose reservation is ``now`` starts. Events: completions on a
  node and reservation starts. Between completions nothing changes, so at a reservation
  start without a completion the plan stands and is not recomputed (the tests compare
  with an oracle that re-plans at every event).
- ``easy``: only the first waiting job with a feasible start (the head) holds a reservation;
  any other waiting job starts ``now`` if it fits now without touching the head's
  reservation. Events also at the ends of local tasks (the starts of slots), when nodes free.
- ``bf_budget = enforce``: at a time t the job takes AMP's choice, the ``n_i`` cheapest free
  nodes (slot cost, ties by node id), and t is feasible only if they fit the budget S_i.

A job that never finds room inside the interval is postponed (start NaN).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernel_support.jit import kernel
from .choices import BUDGET_RULES, VARIANTS  # handed on from here too
from .occupancy import add_busy, group_by_node, next_free


@kernel
def _earliest(j, now, ptr, fs, fe, node_len, node_cost, budget, n, enforce,
              busy_start, busy_end, busy_count, f, out):
    """Earliest start ``>= now`` of job j and its nodes (into ``out``); inf if none."""
    nodes = node_len.shape[1]
    need = n[j]
    t = now
    while True:
        for k in range(nodes):
            f[k] = next_free(ptr, fs, fe, k, t, node_len[j, k], busy_start, busy_end, busy_count)
        if not enforce:
            c = 0
            for k in range(nodes):
                if f[k] == t:
                    out[c] = k
                    c += 1
                    if c == need:
                        return t
            # fewer than n free at t: no time before the n-th smallest f can have n free
            t_next = np.sort(f)[need - 1] if need <= nodes else np.inf
        else:
            # the n cheapest free nodes (cost, then id)
            c = 0
            total = 0.0
            best_cost = np.empty(need, np.float64)
            for k in range(nodes):
                if f[k] != t:
                    continue
                ck = node_cost[j, k]
                if c < need:
                    p = c
                    c += 1
                elif ck < best_cost[need - 1]:
                    p = need - 1
                else:
                    continue
                while p > 0 and best_cost[p - 1] > ck:
                    best_cost[p] = best_cost[p - 1]
                    out[p] = out[p - 1]
                    p -= 1
                best_cost[p] = ck
                out[p] = k
            if c == need:
                for p in range(need):
                    total += best_cost[p]
                if total <= budget[j]:
                    out[:need] = np.sort(out[:need])
                    return t
            # until a node not free now becomes free, the free set only shrinks
            t_next = np.inf
            for k in range(nodes):
                if f[k] > t:
                    t_next = min(t_next, f[k])
        if t_next == np.inf:
            return np.inf
        t = t_next


@kernel
def _simulate(ptr, fs, fe, queue, committed, start, job_nodes, node_len, node_cost, budget, n, rho,
              easy, enforce, slot_starts_sorted):
    """Run the queue; ``committed`` jobs (with ``start``/``job_nodes`` set) are fixed in advance.

    Fills ``start`` and ``job_nodes`` of the queue jobs that run (others stay NaN / -1).
    """
    N = start.shape[0]
    nodes = node_len.shape[1]
    cap = N + 1
    busy_start = np.empty((nodes, cap), np.float64)
    busy_end = np.empty((nodes, cap), np.float64)
    busy_count = np.zeros(nodes, np.int64)
    f = np.empty(nodes, np.float64)
    out = np.empty(max(1, nodes), np.int64)
    waiting = np.zeros(N, np.bool_)
    for p in range(queue.shape[0]):
        waiting[queue[p]] = True
    res_t = np.full(N, np.inf)
    res_nodes = np.full((N, max(1, nodes)), -1, np.int64)
    now = 0.0
    next_slot = 0
    replan = True
    while True:
        if replan:
            _plan(queue, committed, waiting, start, job_nodes, res_t, res_nodes, node_len, node_cost, budget,
                  n, rho, easy, enforce, now, ptr, fs, fe, busy_start, busy_end, busy_count, f, out)
        else:
            # conservative, no completion since the last plan: the plan stands, jobs whose
            # reservation is now start on their reserved nodes
            for p in range(queue.shape[0]):
                j = queue[p]
                if waiting[j] and res_t[j] == now:
                    waiting[j] = False
                    committed[j] = True
                    start[j] = now
                    job_nodes[j, :n[j]] = res_nodes[j, :n[j]]
        # next event: a completion on a node, a reservation start, (EASY) the end of a local task
        completion = np.inf
        reservation = np.inf
        for j in range(N):
            if committed[j]:
                for c in range(n[j]):
                    e = start[j] + rho[j] * node_len[j, job_nodes[j, c]]
                    if e > now:
                        completion = min(completion, e)
            elif waiting[j] and res_t[j] > now:
                reservation = min(reservation, res_t[j])
        nxt = min(completion, reservation)
        replan = easy or completion <= reservation
        if easy:
            while next_slot < slot_starts_sorted.shape[0] and slot_starts_sorted[next_slot] <= now:
                next_slot += 1
            if next_slot < slot_starts_sorted.shape[0]:
                nxt = min(nxt, slot_starts_sorted[next_slot])
        if nxt == np.inf:
            break
        now = nxt


@kernel
def _plan(queue, committed, waiting, start, job_nodes, res_t, res_nodes, node_len, node_cost, budget, n, rho,
          easy, enforce, now, ptr, fs, fe, busy_start, busy_end, busy_count, f, out):
    """Re-plan at ``now``: committed jobs busy until their reserved end (or their actual end if
    it has passed), then the waiting jobs in priority order; the ones due now start."""
    busy_count[:] = 0
    for j in range(start.shape[0]):
        if not committed[j]:
            continue
        for c in range(n[j]):
            k = job_nodes[j, c]
            L = node_len[j, k]
            actual_end = start[j] + rho[j] * L
            add_busy(busy_start, busy_end, busy_count, k, start[j],
                     actual_end if actual_end <= now else start[j] + L)
    head = False
    for p in range(queue.shape[0]):
        j = queue[p]
        if not waiting[j]:
            continue
        t = _earliest(j, now, ptr, fs, fe, node_len, node_cost, budget, n, enforce,
                      busy_start, busy_end, busy_count, f, out)
        res_t[j] = t
        if t == np.inf:
            continue
        if t == now:
            waiting[j] = False
            committed[j] = True
            start[j] = now
            job_nodes[j, :n[j]] = out[:n[j]]
        elif easy and head:
            res_t[j] = np.inf           # EASY: no reservation beyond the head
            continue
        else:
            head = True
            res_nodes[j, :n[j]] = out[:n[j]]
        for c in range(n[j]):
            k = out[c]
            add_busy(busy_start, busy_end, busy_count, k, t, t + node_len[j, k])


class Execution(NamedTuple):
    start: np.ndarray  #: float64[N], start of each job (NaN: did not run)
    nodes: np.ndarray  #: int64[N, nmax], its nodes (ascending, -1 padded)


def backfill(slots: tuple[np.ndarray, np.ndarray, np.ndarray], queue: np.ndarray, node_len: np.ndarray,
             node_cost: np.ndarray, budget: np.ndarray, n: np.ndarray, rho: np.ndarray, *,
             variant: str = "conservative", bf_budget: str = "ignore",
             fixed_start: np.ndarray | None = None, fixed_nodes: np.ndarray | None = None) -> Execution:
    """Execute the ``queue`` (job ids, priority order) by backfilling on the environment ``slots``.

    ``rho``: actual / reserved runtime per job (all ones gives the plan). ``fixed_start`` /
    ``fixed_nodes``: windows fixed in advance (CSS+BF: the cyclic part), NaN / -1 elsewhere;
    they run at their start for ``rho * len_k`` and count as busy until then.
    """
    if variant not in VARIANTS:
        raise ValueError(f"bf_variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if bf_budget not in BUDGET_RULES:
        raise ValueError(f"bf_budget must be one of {', '.join(BUDGET_RULES)}, got {bf_budget!r}")
    N, nodes = node_len.shape
    nmax = int(max(1, n.max())) if N else 1
    start = np.full(N, np.nan)
    job_nodes = np.full((N, nmax), -1, np.int64)
    committed = np.zeros(N, np.bool_)
    if fixed_start is not None:
        committed = ~np.isnan(fixed_start)
        start[committed] = fixed_start[committed]
        job_nodes[committed] = fixed_nodes[committed, :nmax]
    ptr, fs, fe = group_by_node(*slots, nodes)
    slot_starts = np.unique(slots[1])
    _simulate(ptr, fs, fe, np.asarray(queue, np.int64), committed, start, job_nodes, node_len, node_cost,
              budget, n, rho, variant == "easy", bf_budget == "enforce", slot_starts)
    return Execution(start, job_nodes)
