"""CSA, "common stats, AMP": every disjoint alternative found by AMP with slot cutting.

Spec: run AMP, cut the window's spans out of the slot list (what remains of a cut slot
stays a slot), repeat until no window is found.

Why one pass is enough: after AMP finds a window at step i (time t_w), no later search
can find one at an earlier step — cutting only shortens slots, so the candidate sets of
steps before i only shrink — and the pieces a cut leaves are ``[a, t_w]`` (useless from
t_w on) and ``[t_w + len_k, b]`` (starting after t_w). So the kernel resumes the scan at
step i with the used nodes' candidates removed, and merges the right-hand pieces into the
scan order (start, then node id) through a small heap. It is checked against the literal
repeat-and-cut procedure in the tests.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernel_support.jit import inline_kernel, kernel
from ..slots.aep import all_nodes
from ..slots.candidates import cheapest, window_values
from ..slots.exactsum import fsum, sum_le


class Alternatives(NamedTuple):
    """CSA's alternatives, in the order found (non-decreasing start)."""

    start: np.ndarray      #: float64[A], window starts (time)
    nodes: np.ndarray      #: int64[A, n], node ids of each window, ascending
    runtime: np.ndarray    #: float64[A]
    finish: np.ndarray     #: float64[A]
    proc_time: np.ndarray  #: float64[A]
    cost: np.ndarray       #: float64[A]

    @property
    def count(self) -> int:
        return self.start.shape[0]


@inline_kernel
def _before(s1, k1, s2, k2):
    return s1 < s2 or (s1 == s2 and k1 < k2)


# The merge heap is its own, not the event heap of cluster/events.py: its entries carry a
# float payload (the piece's end time), where that heap carries an integer, and a model
# package does not import another model's internals.
@kernel
def _heap_push(hs, hk, he, size, s, k, e):
    i = size
    hs[i], hk[i], he[i] = s, k, e
    while i > 0:
        parent = (i - 1) // 2
        if _before(hs[i], hk[i], hs[parent], hk[parent]):
            hs[i], hs[parent] = hs[parent], hs[i]
            hk[i], hk[parent] = hk[parent], hk[i]
            he[i], he[parent] = he[parent], he[i]
            i = parent
        else:
            break
    return size + 1


@kernel
def _heap_pop(hs, hk, he, size):
    """Remove the top; returns the new size (the caller read the top before)."""
    size -= 1
    hs[0], hk[0], he[0] = hs[size], hk[size], he[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and _before(hs[left + 1], hk[left + 1], hs[left], hk[left]):
            child = left + 1
        if _before(hs[child], hk[child], hs[i], hk[i]):
            hs[i], hs[child] = hs[child], hs[i]
            hk[i], hk[child] = hk[child], hk[i]
            he[i], he[child] = he[child], he[i]
            i = child
        else:
            break
    return size


@kernel
def _csa(slot_node, slot_start, slot_end, node_len, node_cost, node_mask, budget, n):
    """All CSA alternatives: ``(starts float64[A], nodes int64[A, n])``."""
    m = slot_node.shape[0]
    nodes = node_len.shape[0]
    cost_order = np.argsort(node_cost, kind="mergesort")   # slot cost order, ties by node id
    cand_end = np.full(nodes, -np.inf)
    W = np.empty(n, np.int64)
    vals = np.empty(n, np.float64)
    cap = max(16, m)
    hs = np.empty(cap, np.float64)
    hk = np.empty(cap, np.int64)
    he = np.empty(cap, np.float64)
    hsize = np.int64(0)  # not the literal 0: _heap_pop would be compiled for Literal[int](0) as well
    alt_start = np.empty(16, np.float64)
    alt_nodes = np.empty((16, n), np.int64)
    A = 0
    i = 0
    while True:
        # next slot in scan order: the static list or a cut piece, whichever comes first
        if i < m and (hsize == 0 or _before(slot_start[i], slot_node[i], hs[0], hk[0])):
            k, t, e = slot_node[i], slot_start[i], slot_end[i]
            i += 1
        elif hsize > 0:
            k, t, e = hk[0], hs[0], he[0]
            hsize = _heap_pop(hs, hk, he, hsize)
        else:
            break
        if node_mask[k]:
            cand_end[k] = e
        # AMP at this step, again and again while it finds windows
        while cheapest(cost_order, cand_end, node_len, t, n, -1, W) == n and \
                sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
            if A == alt_start.shape[0]:
                alt_start = np.concatenate((alt_start, np.empty(A, np.float64)))
                alt_nodes = np.concatenate((alt_nodes, np.empty((A, n), np.int64)))
            alt_start[A] = t
            alt_nodes[A, :] = np.sort(W)
            A += 1
            for q in range(n):
                j = W[q]
                after = t + node_len[j]
                if after < cand_end[j]:
                    if hsize == hs.shape[0]:
                        hs = np.concatenate((hs, np.empty(hsize, np.float64)))
                        hk = np.concatenate((hk, np.empty(hsize, np.int64)))
                        he = np.concatenate((he, np.empty(hsize, np.float64)))
                    hsize = _heap_push(hs, hk, he, hsize, after, j, cand_end[j])
                cand_end[j] = -np.inf   # the piece before t_w ends at t_w: never valid again
    return alt_start[:A].copy(), alt_nodes[:A].copy()


@kernel
def _summarise(start, nodes, node_len, node_cost):
    """Runtime, finish, processor time and cost (correctly rounded sums) of each alternative."""
    A, n = nodes.shape
    runtime = np.empty(A)
    proc = np.empty(A)
    cost = np.empty(A)
    vals = np.empty(n)
    for a in range(A):
        r = 0.0
        for q in range(n):
            r = max(r, node_len[nodes[a, q]])
        runtime[a] = r
        window_values(nodes[a], n, node_len, vals)
        proc[a] = fsum(vals, n)
        window_values(nodes[a], n, node_cost, vals)
        cost[a] = fsum(vals, n)
    return runtime, start + runtime, proc, cost


def summarise(start: np.ndarray, nodes: np.ndarray, node_len: np.ndarray, node_cost: np.ndarray) -> Alternatives:
    """The :class:`Alternatives` of windows ``(start[a], nodes[a])``."""
    return Alternatives(start, nodes, *_summarise(start, nodes, node_len, node_cost))


def csa_search(slot_node: np.ndarray, slot_start: np.ndarray, slot_end: np.ndarray,
               node_len: np.ndarray, node_cost: np.ndarray, budget: float, n: int,
               node_mask: np.ndarray | None = None) -> Alternatives:
    """CSA on a slot list sorted by start (ties by node id); see the module docstring."""
    if n < 1:
        raise ValueError(f"n (job_slots) must be >= 1, got {n}")
    mask = all_nodes(node_len.shape[0]) if node_mask is None else np.asarray(node_mask, np.bool_)
    start, nodes = _csa(slot_node, slot_start, slot_end, node_len, node_cost, mask, float(budget), int(n))
    return summarise(start, nodes, node_len, node_cost)
