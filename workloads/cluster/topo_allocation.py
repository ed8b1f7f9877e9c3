"""Topology-aware allocation: which nodes a started job gets (spec "Scheduling algorithms").

Common frame *(our rule)*. These methods were published for machines with one processor
per node, so they allocate whole idle nodes: a job of ``n`` processes whose per-node
capacity is ``cap`` (cores, limited by memory and disk; nodes must be homogeneous for
these methods) needs ``m = ceil(n / cap)`` idle nodes; every method returns an ordered
list of ``m`` idle node ids, or ``None`` when it cannot place the job now, and the job's
processes fill the nodes in that order (process u on node ``order[u // cap]``), so
consecutive ranks are neighbours. Every function is pure: it reads ``idle`` and never
changes it. Ties always go to the lowest position / node id.

Trees and stars (node ids are grouped by leaf switch, subtrees hold consecutive ids):

- ``node_sorting``: leaf groups; if one group has ``m`` idle nodes, the one with the
  fewest idle nodes among those that fit (best fit); otherwise groups by idle count,
  largest first; inside a group, ids ascending;
- ``contiguous`` (Pascual, Navaridas & Miguel-Alonso 2009): ``m`` idle nodes with
  consecutive ids, the lowest such range; the job waits if there is none;
- ``quasi_contiguous``: the smallest aligned subtree (a leaf, then ``k`` leaves, …,
  the whole tree) holding ``m`` idle nodes, the fullest such subtree (fewest idle), its
  first ``m`` idle nodes: compact but not necessarily consecutive.

Tori (meshes with wrap-around; shapes are boxes of nodes, coordinates mod the sizes):

- request shape *(our rule)*: the most cube-like box covering ``m``: side i is
  ``ceil(r ** (1 / (d - i)))`` clipped to the torus size, ``r`` the nodes still to cover;
- ``paging`` (Lo et al. 1997): aligned pages of side ``page_side`` in row-major page
  order (dimension 0 fastest); a page is free when all its nodes are idle; the first
  ``ceil(m / page nodes)`` free pages, first ``m`` of their nodes;
- ``mbs``, Multiple Buddy System (Lo et al. 1997): ``m`` written in base ``2**d``;
  digit ``c_i`` asks for ``c_i`` aligned free blocks of side ``2**i`` (the top level
  takes ``m // top block``); a block request takes the free aligned block whose parent
  block has the fewest idle nodes (what a buddy system's free lists give: existing
  fragments before splitting bigger blocks), and with no free block of that size it is
  broken into ``2**d`` requests one level down. Sizes must be powers of two;
- ``anca``, Adaptive Non-Contiguous Allocation (Chang & Mohapatra 1998): the request box
  at the first position where it is all idle; if none, it is halved along its longest
  side and each half is placed the same way, recursively, down to single nodes;
- ``gabl``, Greedy Available Busy List (Bani-Mohammad et al. 2007): repeatedly the
  largest all-idle box (area, then first position) with sides within the request box and
  area at most the nodes still needed, until ``m`` nodes are taken;
- ``mc``, Minimizing Contention (Mache, Lo & Windisch 1997): for every position of the
  request box, idle nodes are taken by shell (Chebyshev ring distance to the box, 0
  inside), then id; the position with the least total shell wins;
- ``mc_incremental`` (MC1x1): the same with a 1×1 box, i.e. shells grown one ring at a
  time around each idle node as centre;
- ``manhattan_median`` (Bender et al. 2005): for every candidate centre (each node's
  position shifted by 0 or 1/2 in every dimension, so centres between processors count),
  the ``m`` idle nodes nearest in L1 ring distance, ties by id; the set with the least
  sum of pairwise hop distances wins (ties: first centre);
- NEP is dropped from the method list (docs/models/cluster.md): P10 names it
  among the torus methods without a definition or a reference that defines it, and a
  search of the literature found none.

Any topology:

- ``modified_mc``: MC1x1 with shells = routed hop distance from the centre node.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .topology import Topology


def nodes_needed(n: int, cap: int) -> int:
    """Idle nodes a job of ``n`` processes needs when a node takes ``cap`` of them."""
    if cap < 1:
        raise ValueError(f"a node must take at least one process (cap={cap})")
    return -(-n // cap)


def processes_on(order: np.ndarray, n: int, cap: int) -> np.ndarray:
    """Node of each process: ranks fill the chosen nodes in order, ``cap`` per node."""
    return np.asarray(order, np.int64)[np.arange(n) // cap]


# ------------------------------------------------------------------ trees and stars
def _groups(topo: Topology) -> int:
    if topo.per_leaf < 1:
        raise ValueError(f"{topo.kind}: tree methods need a star, fat_tree or kary_ntree")
    return topo.per_leaf


def node_sorting(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    per = _groups(topo)
    if idle.sum() < m:
        return None
    counts = idle.reshape(-1, per).sum(axis=1)
    fits = np.nonzero(counts >= m)[0]
    if fits.size:
        groups = [int(fits[np.argmin(counts[fits])])]
    else:
        groups = np.lexsort((np.arange(counts.size), -counts)).tolist()
    out = []
    for g in groups:
        ids = g * per + np.nonzero(idle[g * per:(g + 1) * per])[0]
        out.extend(ids.tolist())
        if len(out) >= m:
            break
    return np.array(out[:m], np.int64)


def contiguous(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    _groups(topo)
    run = 0
    for i, free in enumerate(idle.tolist()):
        run = run + 1 if free else 0
        if run == m:
            return np.arange(i - m + 1, i + 1, dtype=np.int64)
    return None


def _subtree_sizes(topo: Topology) -> list[int]:
    per = _groups(topo)
    sizes, s = [], per
    k = topo.tree_k if topo.kind == "kary_ntree" else 0
    while s < topo.n_nodes:
        sizes.append(s)
        s = s * k if k > 1 else topo.n_nodes
    sizes.append(topo.n_nodes)
    return sizes


def quasi_contiguous(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    for size in _subtree_sizes(topo):
        counts = idle.reshape(-1, size).sum(axis=1)
        fits = np.nonzero(counts >= m)[0]
        if fits.size:
            g = int(fits[np.argmin(counts[fits])])
            return (g * size + np.nonzero(idle[g * size:(g + 1) * size])[0][:m]).astype(np.int64)
    return None


# ------------------------------------------------------------------ torus helpers
def _dims(topo: Topology) -> tuple[int, ...]:
    if not topo.dims:
        raise ValueError(f"{topo.kind}: this allocation method needs a torus")
    return topo.dims


def request_shape(m: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    """The most cube-like box covering m nodes (module doc)."""
    sides, r = [], m
    d = len(dims)
    for i, k in enumerate(dims):
        s = min(k, max(1, math.ceil(r ** (1.0 / (d - i)) - 1e-9)))
        sides.append(s)
        r = -(-r // s)
    return tuple(sides)


def _box_nodes(dims: tuple[int, ...], shape: tuple[int, ...], aligned: bool = False) -> np.ndarray:
    """[positions, box nodes] node ids of the box at every base (row-major in the box)."""
    strides = np.cumprod((1,) + dims[:-1])
    p = int(np.prod(dims))
    bases = np.arange(p)
    base_c = np.stack([(bases // s) % k for s, k in zip(strides, dims)], axis=1)
    if aligned:
        keep = np.all(base_c % np.array(shape) == 0, axis=1)
        base_c = base_c[keep]
    offs = np.stack(np.meshgrid(*[np.arange(s) for s in shape], indexing="ij"), axis=-1).reshape(-1, len(dims))
    offs = offs[np.lexsort(offs.T)]          # dimension 0 fastest inside the box
    c = (base_c[:, None, :] + offs[None, :, :]) % np.array(dims)
    return (c * strides).sum(axis=2).astype(np.int64)


def _first_free_box(idle, dims, shape):
    boxes = _box_nodes(dims, shape)
    ok = np.nonzero(idle[boxes].all(axis=1))[0]
    return boxes[ok[0]] if ok.size else None


def paging(topo: Topology, idle: np.ndarray, m: int, page_side: int = 1) -> np.ndarray | None:
    dims = _dims(topo)
    if any(k % page_side for k in dims):
        raise ValueError(f"page_side {page_side} must divide every torus size {dims}")
    pages = _box_nodes(dims, (page_side,) * len(dims), aligned=True)
    free = pages[idle[pages].all(axis=1)]
    need = -(-m // pages.shape[1])
    if free.shape[0] < need:
        return None
    return free[:need].reshape(-1)[:m]


def mbs(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    dims = _dims(topo)
    if any(k & (k - 1) for k in dims):
        raise ValueError(f"mbs needs power-of-two torus sizes, got {dims}")
    if idle.sum() < m:
        return None
    d = len(dims)
    top = int(math.log2(min(dims)))
    free = idle.copy()
    levels = [_box_nodes(dims, (2 ** i,) * d, aligned=True) for i in range(top + 1)]
    requests = [0] * (top + 1)
    rest = m
    for i in range(top, -1, -1):
        unit = 2 ** (i * d)
        requests[i] = rest // unit
        rest -= requests[i] * unit
    out: list[int] = []
    for i in range(top, -1, -1):
        blocks = levels[i]
        for _ in range(requests[i]):
            ok = np.nonzero(free[blocks].all(axis=1))[0]
            if ok.size == 0:
                requests[i - 1] += 2 ** d          # break the request one level down
                continue
            if i < top:                            # prefer blocks whose parent is most used
                parent = levels[i + 1]
                pidx = _parent_index(blocks[ok, 0], parent)
                busy_parent = -free[parent[pidx]].sum(axis=1)
                ok = ok[np.lexsort((ok, -busy_parent))]
            b = blocks[ok[0]]
            free[b] = False
            out.extend(b.tolist())
    return np.array(out, np.int64)


def _parent_index(first_nodes: np.ndarray, parent_blocks: np.ndarray) -> np.ndarray:
    where = np.full(parent_blocks.max() + 1, -1, np.int64)
    for r, blk in enumerate(parent_blocks):
        where[blk] = r
    return where[first_nodes]


def anca(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    dims = _dims(topo)
    if idle.sum() < m:
        return None
    free = idle.copy()
    out: list[int] = []

    def place(shape: tuple[int, ...], count: int) -> None:
        if count == 0:
            return
        box = _first_free_box(free, dims, shape)
        if box is not None:
            take = box[:count]
            free[take] = False
            out.extend(take.tolist())
            return
        if int(np.prod(shape)) == 1:
            i = int(np.nonzero(free)[0][0])
            free[i] = False
            out.append(i)
            return
        dim = int(np.argmax(shape))
        a = list(shape)
        b = list(shape)
        a[dim] = (shape[dim] + 1) // 2
        b[dim] = shape[dim] // 2
        first = min(count, int(np.prod(a)))
        place(tuple(a), first)
        place(tuple(b), count - first)

    shape = request_shape(m, dims)
    if int(np.prod(shape)) < m:          # the torus is too small for a box: fully split
        shape = dims
    place(shape, m)
    return np.array(out, np.int64)


def gabl(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    dims = _dims(topo)
    if idle.sum() < m:
        return None
    bound = request_shape(m, dims)
    shapes = [s for s in np.ndindex(*bound)]
    shapes = sorted((tuple(x + 1 for x in s) for s in shapes), key=lambda s: (-int(np.prod(s)), s))
    free = idle.copy()
    out: list[int] = []
    while len(out) < m:
        r = m - len(out)
        for s in shapes:
            if int(np.prod(s)) > r:
                continue
            box = _first_free_box(free, dims, s)
            if box is not None:
                free[box] = False
                out.extend(box.tolist())
                break
    return np.array(out, np.int64)


def _ring_dist(x: np.ndarray, lo: np.ndarray, side: int, k: int) -> np.ndarray:
    """Ring distance from coordinate(s) x to the interval [lo, lo + side - 1] mod k."""
    off = (x - lo) % k
    return np.where(off < side, 0, np.minimum(off - (side - 1), k - off))


def _shell_pick(shell: np.ndarray, idle: np.ndarray, m: int) -> np.ndarray | None:
    """For each candidate row of shells, the m idle nodes of least (shell, id) and the
    position of the cheapest candidate; returns its node list."""
    cand = np.nonzero(idle)[0]
    if cand.size < m:
        return None
    sub = shell[:, cand]
    order = np.argsort(sub, axis=1, kind="stable")[:, :m]       # stable: ties by node id
    cost = np.take_along_axis(sub, order, axis=1).sum(axis=1)
    best = int(np.argmin(cost))
    return cand[order[best]].astype(np.int64)


def _box_shells(topo: Topology, shape: tuple[int, ...]) -> np.ndarray:
    """[box base node, node] Chebyshev ring distance from a node to the box at that base."""
    c = topo.coords
    shell = np.zeros((topo.n_nodes, topo.n_nodes), np.int64)
    for dim, k in enumerate(topo.dims):
        shell = np.maximum(shell, _ring_dist(c[None, :, dim], c[:, None, dim], shape[dim], k))
    return shell


def mc(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    dims = _dims(topo)
    return _shell_pick(_box_shells(topo, request_shape(m, dims)), idle, m)


def mc_incremental(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    dims = _dims(topo)
    shell = _box_shells(topo, (1,) * len(dims))[np.asarray(idle, bool)]    # idle centres only
    return _shell_pick(shell, idle, m) if shell.shape[0] else None


def manhattan_median(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    dims = _dims(topo)
    cand = np.nonzero(idle)[0]
    if cand.size < m:
        return None
    # centres: every node shifted by 0 or 1/2 in each dimension (between processors too)
    shifts = np.array(list(np.ndindex(*(2,) * len(dims)))) * 0.5
    centres = (topo.coords[:, None, :] + shifts[None, :, :]).reshape(-1, len(dims))
    k = np.array(dims, np.float64)
    off = np.abs(topo.coords[cand][None, :, :] - centres[:, None, :]) % k
    dist = np.minimum(off, k - off).sum(axis=2)                     # L1 ring distance, [centre, idle node]
    order = np.argsort(dist, axis=1, kind="stable")[:, :m]         # ties: lowest node id
    sets = cand[order]
    cost = topo.hops[sets[:, :, None], sets[:, None, :]].sum(axis=(1, 2))
    return sets[int(np.argmin(cost))].astype(np.int64)


def modified_mc(topo: Topology, idle: np.ndarray, m: int) -> np.ndarray | None:
    cand = np.nonzero(idle)[0]
    if cand.size < m:
        return None
    d = topo.hops[np.ix_(cand, cand)]                   # rows: centre, columns: idle nodes
    order = np.argsort(d, axis=1, kind="stable")[:, :m]
    cost = np.take_along_axis(d, order, axis=1).sum(axis=1)
    return cand[order[int(np.argmin(cost))]].astype(np.int64)


#: name -> (function, which topologies it accepts)
METHODS: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "node_sorting": (node_sorting, ("star", "fat_tree", "kary_ntree")),
    "contiguous": (contiguous, ("star", "fat_tree", "kary_ntree")),
    "quasi_contiguous": (quasi_contiguous, ("star", "fat_tree", "kary_ntree")),
    "paging": (paging, ("torus",)),
    "mbs": (mbs, ("torus",)),
    "anca": (anca, ("torus",)),
    "gabl": (gabl, ("torus",)),
    "mc": (mc, ("torus",)),
    "mc_incremental": (mc_incremental, ("torus",)),
    "manhattan_median": (manhattan_median, ("torus",)),
    "modified_mc": (modified_mc, ("star", "fat_tree", "torus", "kary_ntree")),
}


def choose(method: str, topo: Topology, idle: np.ndarray, m: int, **options) -> np.ndarray | None:
    """Ordered idle nodes for a job needing ``m`` nodes, or None if it cannot start now."""
    if method not in METHODS:
        raise ValueError(f"allocation {method!r} not one of {', '.join(METHODS)}")
    fn, kinds = METHODS[method]
    if topo.kind not in kinds:
        raise ValueError(f"allocation {method!r} works on {', '.join(kinds)}, not on {topo.kind}")
    if m < 1:
        raise ValueError(f"a job needs m >= 1 nodes, got {m}")
    return fn(topo, np.asarray(idle, bool), m, **options)
