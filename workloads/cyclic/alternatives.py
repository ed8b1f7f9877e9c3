"""The alternatives search of the cyclic scheme (``docs/models/cyclic.md``, "CSS" step 1, and FRSM (a)).

Rounds in priority order: each job still searching gets one window by its AEP criterion
(first fit, ``amp``, for CSS; the user's criterion for FRSM) and the window is cut out of
the slot list; rounds repeat until no job finds a new window. A job stops searching when a
scan finds nothing (cutting only shrinks the slot list, so it never would again) or when it
holds ``cap`` alternatives. Alternatives of different jobs are disjoint by construction
*(our rule)* unless ``shared``: then each job searches the whole slot list, cutting only its
own windows (its alternatives stay disjoint from each other, those of different jobs may
overlap, as the source's model allows) and the combination step keeps only conflict-free
combinations (:func:`conflicts`, :func:`.dp.choose`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernel_support.jit import kernel
from .search import FIRST_FIT, cut_spans, find_window, first_fit


class Alternatives(NamedTuple):
    """The alternatives of a (sub-)batch, grouped by job in priority order.

    Job ``jobs[q]`` owns rows ``offsets[q] : offsets[q + 1]`` (in the order found).
    """

    jobs: np.ndarray       #: int64[J], job ids in priority order
    offsets: np.ndarray    #: int64[J + 1]
    start: np.ndarray      #: float64[A], window start (time)
    nodes: np.ndarray      #: int64[A, nmax], node ids ascending, -1 padded
    runtime: np.ndarray    #: float64[A], max len_k (time)
    proc_time: np.ndarray  #: float64[A], sum len_k (time)
    cost: np.ndarray       #: float64[A], sum c_k len_k (money)

    def count(self, q: int) -> int:
        return int(self.offsets[q + 1] - self.offsets[q])


@kernel
def _rounds(slot_node, slot_start, slot_end, jobs, node_len, node_cost, node_mask, budget, n,
            criterion, cap):
    """Rounds of searches with cutting. Returns found windows in the order found and the slots left."""
    J = jobs.shape[0]
    nmax = 1
    for q in range(J):
        nmax = max(nmax, n[jobs[q]])
    searching = np.ones(J, np.bool_)
    count = np.zeros(J, np.int64)
    size = 16
    a_owner = np.empty(size, np.int64)
    a_start = np.empty(size, np.float64)
    a_nodes = np.full((size, nmax), -1, np.int64)
    A = 0
    nodes_count = node_len.shape[1]
    cand_end = np.empty(nodes_count, np.float64)
    W = np.empty(nmax, np.int64)
    vals = np.empty(nmax, np.float64)
    t_prev = np.zeros(J, np.float64)
    cost_orders = np.empty((J, nodes_count), np.int64)
    for q in range(J):
        if criterion[jobs[q]] == FIRST_FIT:
            cost_orders[q] = np.argsort(node_cost[jobs[q]], kind="mergesort")
    new = True
    while new:
        new = False
        for q in range(J):
            if not searching[q] or count[q] >= cap:
                continue
            j = jobs[q]
            if criterion[j] == FIRST_FIT:
                found, start, nodes = first_fit(slot_node, slot_start, slot_end, node_len[j], node_cost[j],
                                                cost_orders[q], node_mask, budget[j], n[j], t_prev[q],
                                                cand_end, W, vals)
            else:
                found, start, nodes = find_window(slot_node, slot_start, slot_end, node_len[j], node_cost[j],
                                                  node_mask, budget[j], n[j], criterion[j])
            if not found:
                searching[q] = False
                continue
            if A == size:
                a_owner = np.concatenate((a_owner, np.empty(size, np.int64)))
                a_start = np.concatenate((a_start, np.empty(size, np.float64)))
                a_nodes = np.concatenate((a_nodes, np.full((size, nmax), -1, np.int64)))
                size *= 2
            a_owner[A] = q
            a_start[A] = start
            t_prev[q] = start
            a_nodes[A, :n[j]] = nodes
            A += 1
            count[q] += 1
            lens = np.empty(n[j], np.float64)
            for p in range(n[j]):
                lens[p] = node_len[j, nodes[p]]
            slot_node, slot_start, slot_end = cut_spans(slot_node, slot_start, slot_end, nodes, start, lens)
            new = True
    return a_owner[:A], a_start[:A], a_nodes[:A], slot_node, slot_start, slot_end


@kernel
def _group(owner, start, nodes, J, jobs, node_len, node_cost):
    """Sort the windows by owner (stable) and compute runtime, processor time and cost."""
    A = owner.shape[0]
    order = np.argsort(owner, kind="mergesort")
    offsets = np.zeros(J + 1, np.int64)
    for a in range(A):
        offsets[owner[a] + 1] += 1
    for q in range(J):
        offsets[q + 1] += offsets[q]
    s = np.empty(A, np.float64)
    nd = np.empty_like(nodes)
    runtime = np.zeros(A, np.float64)
    proc = np.zeros(A, np.float64)
    cost = np.zeros(A, np.float64)
    for p in range(A):
        a = order[p]
        j = jobs[owner[a]]
        s[p] = start[a]
        nd[p] = nodes[a]
        for c in range(nodes.shape[1]):
            k = nodes[a, c]
            if k < 0:
                break
            runtime[p] = max(runtime[p], node_len[j, k])
            proc[p] += node_len[j, k]
            cost[p] += node_cost[j, k]
    return offsets, s, nd, runtime, proc, cost


def find_alternatives(slot_node: np.ndarray, slot_start: np.ndarray, slot_end: np.ndarray,
                      jobs: np.ndarray, node_len: np.ndarray, node_cost: np.ndarray,
                      budget: np.ndarray, n: np.ndarray, criterion: np.ndarray, cap: int,
                      node_mask: np.ndarray | None = None, shared: bool = False, spread: int = 1):
    """Alternatives of ``jobs`` (priority order) on a slot list; returns them and the slots left.

    ``node_len``/``node_cost``: float64[N, nodes] per job and node; ``budget``, ``n``,
    ``criterion`` (kernel criterion codes, see :mod:`.search`) are indexed by job id.
    ``spread`` (with ``shared``, first-fit jobs only; *our rule*): such a job searches up to
    ``cap * spread`` windows and keeps every ``spread``-th in the order found (by start: first
    fit scans forward), the first included, so its ``cap`` alternatives spread over the
    interval instead of crowding its front; 1 keeps the first ``cap`` (the calibrated model).
    """
    if cap < 1:
        raise ValueError(f"max_alternatives must be >= 1, got {cap}")
    if spread < 1:
        raise ValueError(f"first_fit_spread must be >= 1, got {spread}")
    jobs = np.asarray(jobs, np.int64)
    mask = np.ones(node_len.shape[1], np.bool_) if node_mask is None else np.asarray(node_mask, np.bool_)
    if shared:
        # each job alone on the whole slot list; nothing is cut for the others
        nmax = max([1] + [int(n[j]) for j in jobs])
        parts = [_spread(_rounds(slot_node, slot_start, slot_end, jobs[q:q + 1], node_len, node_cost, mask, budget,
                                 n, criterion, int(cap) * _step(criterion[jobs[q]], spread)),
                         _step(criterion[jobs[q]], spread)) for q in range(len(jobs))]
        owner = np.concatenate([np.zeros(0, np.int64)] + [np.full(len(p[0]), q, np.int64)
                                                          for q, p in enumerate(parts)])
        start = np.concatenate([np.zeros(0)] + [p[1] for p in parts])
        nodes = np.full((len(owner), nmax), -1, np.int64)
        row = 0
        for p in parts:
            nodes[row:row + len(p[0]), :p[2].shape[1]] = p[2]
            row += len(p[0])
        sn, ss, se = slot_node, slot_start, slot_end
    else:
        owner, start, nodes, sn, ss, se = _rounds(slot_node, slot_start, slot_end, jobs, node_len, node_cost,
                                                  mask, budget, n, criterion, int(cap))
    offsets, start, nodes, runtime, proc, cost = _group(owner, start, nodes, len(jobs), jobs, node_len, node_cost)
    return Alternatives(jobs, offsets, start, nodes, runtime, proc, cost), (sn, ss, se)


def _step(code: int, spread: int) -> int:
    """The keep-every step of a job: ``spread`` for a first-fit job, else 1."""
    return int(spread) if code == FIRST_FIT else 1


def _spread(found: tuple, step: int) -> tuple:
    """One job's windows of :func:`_rounds`, every ``step``-th kept (the first included)."""
    if step == 1:
        return found
    owner, start, nodes = found[:3]
    return (owner[::step], start[::step], nodes[::step]) + tuple(found[3:])


@kernel
def _conflicts(offsets, jobs, start, nodes, node_len, runtime):
    A = start.shape[0]
    J = offsets.shape[0] - 1
    owner = np.empty(A, np.int64)
    for q in range(J):
        owner[offsets[q]:offsets[q + 1]] = q
    out = np.zeros((A, A), np.bool_)
    for a in range(A):
        ja = jobs[owner[a]]
        for b in range(a + 1, A):
            if owner[a] == owner[b]:
                continue
            # disjoint spans [start, start + runtime) cannot overlap on any node (each node's length
            # is at most the runtime): skip the node-by-node test (same matrix, for speed)
            if start[a] >= start[b] + runtime[b] or start[b] >= start[a] + runtime[a]:
                continue
            jb = jobs[owner[b]]
            hit = False
            for c in range(nodes.shape[1]):
                k = nodes[a, c]
                if k < 0 or hit:
                    break
                for d in range(nodes.shape[1]):
                    if nodes[b, d] < 0:
                        break
                    if nodes[b, d] == k and start[a] < start[b] + node_len[jb, k] \
                            and start[b] < start[a] + node_len[ja, k]:
                        hit = True
                        break
            out[a, b] = hit
            out[b, a] = hit
    return out


def conflicts(alts: Alternatives, node_len: np.ndarray) -> np.ndarray:
    """bool[A, A]: alternatives ``a`` and ``b`` of different jobs use one node at overlapping times.

    Windows found on one slot list and not overlapping on any node can all be used together.
    """
    return _conflicts(alts.offsets, alts.jobs, alts.start, alts.nodes, node_len, alts.runtime)
