"""Interconnect topologies as arrays, and their routing tables.

A topology has ``P`` compute nodes (device ids ``0 … P-1``) and ``K`` switches (device
ids ``P … P+K-1``), joined by full-duplex links stored as two directed links each:
``link_src[l] -> link_dst[l]`` with bandwidth ``link_bw[l]`` (bytes/s). Routing is a
table ``next_link[device, destination node]``: the directed link a packet at ``device``
bound for ``destination`` takes next (-1 at the destination itself). Every routing
below is memoryless (the next hop depends only on where the packet is and where it
goes), which is what lets one table describe it.

Generators (spec "Cluster"; default sizes in the spec's table):

- ``star(p)``: one switch, ``p`` nodes;
- ``fat_tree(leaves, per_leaf, spines)``: two levels, every leaf switch linked to every
  spine switch;
- ``torus(dims)``: a direct network (nodes route, no switches) with wrap-around links in
  every dimension; 2-D and 3-D tori and the k-ary n-cube (``dims = (k,) * n``) are this
  generator. A dimension of size 2 has one link pair (the ± neighbours coincide), of
  size 1 none;
- ``kary_ntree(k, n)``: Petrini & Vanneschi's k-ary n-tree: ``k**n`` nodes, ``n``
  levels of ``k**(n-1)`` switches; switch ``<w, l>`` (``w`` in ``{0…k-1}**(n-1)``)
  links to ``<w', l+1>`` iff ``w`` and ``w'`` agree in every digit except digit ``l``;
  node ``p = (p_0 … p_{n-1})`` hangs off leaf switch ``<(p_0 … p_{n-2}), n-1>``; digit 0
  is the most significant one in ids, so every subtree holds consecutive node ids.

Routing (spec "Network"):

- ``shortest``: hop-count shortest paths; ties among equal next hops go to the lowest
  next-device id (spec rule), or with ``ties="destination_mod"`` to candidate number
  ``destination mod (number of candidates)`` in id order *(our rule, an option: on a
  two-level fat tree it is the usual d-mod-k spreading over the spines; on a k-ary
  n-tree every level uses the same residue ``destination mod k``, not d-mod-k's one
  digit per level; lowest-id sends all up-traffic through the lowest switches)*;
- ``dimension_order`` (tori, the default there): correct dimension 0 first, then 1, …;
  in each dimension the shorter way round, and at a tie (offset exactly k/2) the way
  whose next node has the lower id;
- ``updown`` (trees, the default there): on these trees every shortest path goes up to
  a nearest common ancestor and then down, so up/down routing is shortest-path routing
  on the tree with the same tie rule (property-tested).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections import deque

import numpy as np

ROUTINGS = ("shortest", "dimension_order", "updown")
TIES = ("lowest_id", "destination_mod")
KINDS = ("star", "fat_tree", "torus", "kary_ncube", "kary_ntree")


@dataclass(frozen=True)
class Topology:
    """A generated interconnect; every array is read-only after construction."""

    kind: str
    n_nodes: int
    n_switches: int
    link_src: np.ndarray          # int64 [L] device ids
    link_dst: np.ndarray          # int64 [L]
    link_bw: np.ndarray           # float64 [L] bytes/s
    next_link: np.ndarray         # int64 [P+K, P]
    hops: np.ndarray              # int64 [P, P] links on the routed path
    dims: tuple = ()              # torus sizes per dimension
    coords: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # [P, ndim]
    tree_k: int = 0               # k of a k-ary n-tree (0 otherwise)
    tree_n: int = 0
    per_leaf: int = 0             # nodes per leaf switch on stars and trees (node ids grouped by leaf)

    @property
    def n_devices(self) -> int:
        return self.n_nodes + self.n_switches

    @property
    def n_links(self) -> int:
        return int(self.link_src.size)

    def adjacency(self) -> np.ndarray:
        """Dense [device, device] matrix of link bandwidths (bytes/s; 0 = no link)."""
        a = np.zeros((self.n_devices, self.n_devices))
        a[self.link_src, self.link_dst] = self.link_bw
        return a

    def path(self, src: int, dst: int) -> list[int]:
        """The directed links of the routed path from node ``src`` to node ``dst``."""
        out, d = [], src
        while d != dst:
            link = int(self.next_link[d, dst])
            out.append(link)
            d = int(self.link_dst[link])
        return out


# ------------------------------------------------------------------ link lists
def _duplex(pairs: list[tuple[int, int]], bandwidth: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both directions of every undirected pair, as link arrays (direction a->b first)."""
    src, dst = [], []
    for a, b in pairs:
        src += [a, b]
        dst += [b, a]
    src_a = np.array(src, np.int64)
    dst_a = np.array(dst, np.int64)
    return src_a, dst_a, np.full(src_a.size, float(bandwidth))


def _check_bw(bandwidth: float) -> None:
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be > 0 bytes/s (inf allowed), got {bandwidth}")


# ------------------------------------------------------------------ routing
def _distances(n_dev: int, n_nodes: int, link_src: np.ndarray, link_dst: np.ndarray) -> np.ndarray:
    """Hop distance from every device to every node (BFS on reversed links)."""
    into: list[list[int]] = [[] for _ in range(n_dev)]
    for s, d in zip(link_src.tolist(), link_dst.tolist()):
        into[d].append(s)
    dist = np.full((n_dev, n_nodes), -1, np.int64)
    for t in range(n_nodes):
        dist[t, t] = 0
        frontier = deque([t])
        while frontier:
            v = frontier.popleft()
            for u in into[v]:
                if dist[u, t] < 0:
                    dist[u, t] = dist[v, t] + 1
                    frontier.append(u)
    if (dist < 0).any():
        raise ValueError("topology is not connected")
    return dist


def shortest_path_table(n_nodes: int, n_switches: int, link_src: np.ndarray, link_dst: np.ndarray,
                        ties: str = "lowest_id") -> np.ndarray:
    """``next_link[device, node]`` of hop-count shortest paths (tie rule in the module doc)."""
    if ties not in TIES:
        raise ValueError(f"ties {ties!r} not one of {', '.join(TIES)}")
    n_dev = n_nodes + n_switches
    dist = _distances(n_dev, n_nodes, link_src, link_dst)
    out_links: list[list[int]] = [[] for _ in range(n_dev)]
    for l in np.lexsort((link_dst, link_src)).tolist():      # per device, by next-device id
        out_links[int(link_src[l])].append(l)
    table = np.full((n_dev, n_nodes), -1, np.int64)
    for d in range(n_dev):
        for t in range(n_nodes):
            if d == t:
                continue
            cands = [l for l in out_links[d] if dist[link_dst[l], t] == dist[d, t] - 1]
            table[d, t] = cands[0] if ties == "lowest_id" else cands[t % len(cands)]
    return table


def _hops(table: np.ndarray, link_dst: np.ndarray, n_nodes: int) -> np.ndarray:
    hops = np.zeros((n_nodes, n_nodes), np.int64)
    for s in range(n_nodes):
        for t in range(n_nodes):
            d, h = s, 0
            while d != t:
                d = int(link_dst[table[d, t]])
                h += 1
                if h > table.shape[0]:
                    raise ValueError("routing table has a loop")
            hops[s, t] = h
    return hops


def dimension_order_table(dims: tuple[int, ...], link_src: np.ndarray, link_dst: np.ndarray) -> np.ndarray:
    """``next_link[node, node]`` of dimension-order routing on a torus (see module doc)."""
    p = int(np.prod(dims))
    coords = torus_coords(dims)
    link_of = {(int(s), int(d)): l for l, (s, d) in enumerate(zip(link_src, link_dst))}
    strides = _strides(dims)
    table = np.full((p, p), -1, np.int64)
    for a in range(p):
        for t in range(p):
            if a == t:
                continue
            dim = int(np.nonzero(coords[a] != coords[t])[0][0])
            k = dims[dim]
            off = (coords[t, dim] - coords[a, dim]) % k
            up = a + ((coords[a, dim] + 1) % k - coords[a, dim]) * strides[dim]
            down = a + ((coords[a, dim] - 1) % k - coords[a, dim]) * strides[dim]
            if off < k - off:
                nxt = up
            elif off > k - off:
                nxt = down
            else:
                nxt = min(up, down)
            table[a, t] = link_of[(a, int(nxt))]
    return table


# ------------------------------------------------------------------ generators
def star(p: int = 64, bandwidth: float = 1.25e9) -> Topology:
    """One switch (device ``p``) linked to ``p`` nodes."""
    if p < 1:
        raise ValueError(f"star needs p >= 1 nodes, got {p}")
    _check_bw(bandwidth)
    src, dst, bw = _duplex([(i, p) for i in range(p)], bandwidth)
    table = shortest_path_table(p, 1, src, dst)
    return Topology("star", p, 1, src, dst, bw, table, _hops(table, dst, p), per_leaf=p)


def fat_tree(leaves: int = 8, per_leaf: int = 8, spines: int = 4, bandwidth: float = 1.25e9,
             ties: str = "lowest_id") -> Topology:
    """Two-level fat tree: leaf switches ``P … P+leaves-1``, spines after them."""
    if leaves < 1 or per_leaf < 1 or spines < 1:
        raise ValueError(f"fat_tree needs leaves, per_leaf, spines >= 1, got {leaves}, {per_leaf}, {spines}")
    _check_bw(bandwidth)
    p = leaves * per_leaf
    pairs = [(i, p + i // per_leaf) for i in range(p)]
    pairs += [(p + a, p + leaves + s) for a in range(leaves) for s in range(spines)]
    src, dst, bw = _duplex(pairs, bandwidth)
    table = shortest_path_table(p, leaves + spines, src, dst, ties)
    return Topology("fat_tree", p, leaves + spines, src, dst, bw, table, _hops(table, dst, p), per_leaf=per_leaf)


def _strides(dims: tuple[int, ...]) -> list[int]:
    out, s = [], 1
    for k in dims:
        out.append(s)
        s *= k
    return out


def torus_coords(dims: tuple[int, ...]) -> np.ndarray:
    """Coordinates of node ids (dimension 0 varies fastest)."""
    p = int(np.prod(dims))
    ids = np.arange(p)
    return np.stack([(ids // s) % k for s, k in zip(_strides(dims), dims)], axis=1).astype(np.int64)


def torus(dims: tuple[int, ...] = (8, 8), bandwidth: float = 1.25e9, routing: str = "dimension_order",
          ties: str = "lowest_id") -> Topology:
    """A torus of nodes (k-ary n-cube when every size is k); see module doc."""
    dims = tuple(int(k) for k in dims)
    if not dims or min(dims) < 1:
        raise ValueError(f"torus dims must be positive sizes, got {dims}")
    if routing not in ("dimension_order", "shortest"):
        raise ValueError(f"torus routing {routing!r} not one of dimension_order, shortest")
    _check_bw(bandwidth)
    coords = torus_coords(dims)
    strides = _strides(dims)
    pairs = []
    for a in range(int(np.prod(dims))):
        for dim, k in enumerate(dims):
            if k == 1:
                continue
            b = a + ((coords[a, dim] + 1) % k - coords[a, dim]) * strides[dim]
            if k == 2 and coords[a, dim] == 1:
                continue            # the single pair of a size-2 dimension was added from coordinate 0
            pairs.append((a, int(b)))
    p = int(np.prod(dims))
    src, dst, bw = _duplex(pairs, bandwidth)
    if p == 1:
        table = np.full((1, 1), -1, np.int64)
    elif routing == "dimension_order":
        table = dimension_order_table(dims, src, dst)
    else:
        table = shortest_path_table(p, 0, src, dst, ties)
    return Topology("torus", p, 0, src, dst, bw, table, _hops(table, dst, p), dims=dims, coords=coords)


def kary_ncube(k: int = 4, n: int = 3, bandwidth: float = 1.25e9, routing: str = "dimension_order",
               ties: str = "lowest_id") -> Topology:
    """The k-ary n-cube: a torus of n dimensions of size k (``kind`` stays "torus")."""
    if k < 1 or n < 1:
        raise ValueError(f"kary_ncube needs k >= 1 and n >= 1, got k={k}, n={n}")
    return torus((k,) * n, bandwidth, routing, ties)


def kary_ntree(k: int = 4, n: int = 3, bandwidth: float = 1.25e9, ties: str = "lowest_id") -> Topology:
    """k-ary n-tree; switch ``<w, l>`` is device ``P + l * k**(n-1) + index(w)``, level n-1 the leaves."""
    if k < 1 or n < 1:
        raise ValueError(f"kary_ntree needs k >= 1 and n >= 1, got k={k}, n={n}")
    _check_bw(bandwidth)
    p = k ** n
    per_level = k ** (n - 1)
    # digit 0 is the most significant, so every subtree holds consecutive node ids:
    # w's digit i is (index // k**(n-2-i)) % k; node p's leaf word (p_0 … p_{n-2}) is p // k
    pairs = [(i, p + (n - 1) * per_level + i // k) for i in range(p)]
    for lev in range(n - 1):
        stride = k ** (n - 2 - lev)
        for w in range(per_level):
            digit = (w // stride) % k
            for d in range(k):
                w2 = w + (d - digit) * stride
                pairs.append((p + lev * per_level + w, p + (lev + 1) * per_level + w2))
    src, dst, bw = _duplex(pairs, bandwidth)
    table = shortest_path_table(p, n * per_level, src, dst, ties)
    return Topology("kary_ntree", p, n * per_level, src, dst, bw, table, _hops(table, dst, p),
                    tree_k=k, tree_n=n, per_leaf=k)


def make(kind: str, size: tuple[int, ...] = (), bandwidth: float = 1.25e9, ties: str = "lowest_id",
         routing: str = "") -> Topology:
    """A topology by name and sizes (empty ``size`` = the spec's default sizes)."""
    if kind == "star":
        return star(*(size or (64,)), bandwidth=bandwidth)
    if kind == "fat_tree":
        return fat_tree(*(size or (8, 8, 4)), bandwidth=bandwidth, ties=ties)
    if kind == "torus":
        return torus(tuple(size or (8, 8)), bandwidth, routing or "dimension_order", ties)
    if kind == "kary_ncube":
        return kary_ncube(*(size or (4, 3)), bandwidth=bandwidth, routing=routing or "dimension_order", ties=ties)
    if kind == "kary_ntree":
        return kary_ntree(*(size or (4, 3)), bandwidth=bandwidth, ties=ties)
    raise ValueError(f"topology {kind!r} not one of {', '.join(KINDS)}")
