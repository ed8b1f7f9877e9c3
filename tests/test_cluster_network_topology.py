"""Topologies and routing tables: every routed path is valid, shortest and of the right shape."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from schedsweep.workloads.cluster import topology as T
from tests.naive_cluster_network import bfs_hops

SETTINGS = settings(max_examples=15, deadline=None)


def _walk(topo, s, t):
    """Devices visited from node s to node t, checking each link leaves the current device."""
    devs, d = [s], s
    for link in topo.path(s, t):
        assert topo.link_src[link] == d
        d = int(topo.link_dst[link])
        devs.append(d)
    assert d == t
    return devs


def _check_shortest(topo, pairs):
    for s, t in pairs:
        devs = _walk(topo, s, t)
        assert len(devs) - 1 == bfs_hops(topo.n_devices, topo.link_src, topo.link_dst, s, t) == topo.hops[s, t]
        assert all(d >= topo.n_nodes for d in devs[1:-1]) or topo.kind == "torus"   # indirect nets: no node transit


def _pairs(p, rng, k=40):
    return [(int(a), int(b)) for a, b in rng.integers(0, p, (k, 2))]


@SETTINGS
@given(dims=st.lists(st.integers(1, 5), min_size=1, max_size=3), seed=st.integers(0, 2**32 - 1))
def test_torus_dimension_order_paths_are_shortest_and_ordered(dims, seed):
    topo = T.torus(tuple(dims))
    rng = np.random.default_rng(seed)
    _check_shortest(topo, _pairs(topo.n_nodes, rng))
    for s, t in _pairs(topo.n_nodes, rng):
        devs = _walk(topo, s, t)
        last_dim = -1
        for a, b in zip(devs, devs[1:]):
            diff = np.nonzero(topo.coords[a] != topo.coords[b])[0]
            assert diff.size == 1                          # a hop moves along one dimension
            dim = int(diff[0])
            k = dims[dim]
            assert (topo.coords[b, dim] - topo.coords[a, dim]) % k in (1, k - 1)
            assert dim >= last_dim                         # dimension order: never back to an earlier one
            last_dim = dim


def test_torus_half_way_tie_goes_to_lower_next_id():
    topo = T.torus((4,))
    assert topo.link_dst[topo.next_link[1, 3]] == 0       # 1 -> 3: via 0 or 2, 0 is lower
    assert topo.link_dst[topo.next_link[0, 2]] == 1       # 0 -> 2: via 1 or 3


@SETTINGS
@given(leaves=st.integers(1, 4), per_leaf=st.integers(1, 4), spines=st.integers(1, 3),
       ties=st.sampled_from(T.TIES), seed=st.integers(0, 2**32 - 1))
def test_fat_tree_paths_shortest_up_down(leaves, per_leaf, spines, ties, seed):
    topo = T.fat_tree(leaves, per_leaf, spines, ties=ties)
    p = topo.n_nodes
    for s, t in _pairs(p, np.random.default_rng(seed)):
        _check_shortest(topo, [(s, t)])
        devs = _walk(topo, s, t)
        same_leaf = s // per_leaf == t // per_leaf
        assert len(devs) - 1 == (0 if s == t else 2 if same_leaf else 4)
        if len(devs) == 5:                                # node, leaf, spine, leaf, node
            assert devs[1] == p + s // per_leaf and devs[3] == p + t // per_leaf and devs[2] >= p + leaves


@SETTINGS
@given(k=st.integers(2, 3), n=st.integers(1, 3), ties=st.sampled_from(T.TIES), seed=st.integers(0, 2**32 - 1))
def test_kary_ntree_paths_go_up_then_down(k, n, ties, seed):
    topo = T.kary_ntree(k, n, ties=ties)
    p, per_level = topo.n_nodes, k ** (n - 1)
    assert p == k ** n and topo.n_switches == n * per_level

    def level(d):
        return n if d < p else (d - p) // per_level     # nodes below level n-1 (leaves)
    for s, t in _pairs(p, np.random.default_rng(seed)):
        _check_shortest(topo, [(s, t)])
        lv = [level(d) for d in _walk(topo, s, t)]
        top = lv.index(min(lv))
        assert all(a - b == 1 for a, b in zip(lv[:top], lv[1:top + 1]))      # strictly up ...
        assert all(b - a == 1 for a, b in zip(lv[top:], lv[top + 1:]))       # ... then strictly down
        # nearest common ancestor: the first digit (most significant) where s and t differ
        digits = lambda x: [(x // k ** (n - 1 - i)) % k for i in range(n)]
        ds, dt = digits(s), digits(t)
        common = next((i for i in range(n) if ds[i] != dt[i]), n)
        assert min(lv) == (n if s == t else common)


def test_star_and_defaults():
    s = T.star(5)
    assert s.n_links == 10 and (s.hops == 2 * (1 - np.eye(5))).all()
    assert T.make("fat_tree").n_nodes == 64 and T.make("kary_ntree").n_switches == 48
    assert T.make("torus", (4, 4, 4)).n_links == 64 * 6
    assert T.torus((2, 2)).n_links == 8                   # size-2 dimensions have one link pair
    cube = T.make("kary_ncube", (2, 4))                   # the 4-D hypercube: 4 neighbours each
    assert cube.kind == "torus" and cube.n_nodes == 16 and cube.n_links == 64 and cube.hops.max() == 4
    a = T.fat_tree(2, 2, 1).adjacency()
    assert (a == a.T).all() and (a > 0).sum() == 2 * (4 + 2)  # full duplex: 4 node links, 2 leaf-spine links
    with pytest.raises(ValueError, match="topology"):
        T.make("ring")
