"""Topology-aware allocation and the network code path: no core given twice, exact
reproduction of part 1's schedules on a delay-free star, method-specific shapes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import schedsweep.workloads.cluster as C
from schedsweep.workloads.cluster import flow, simulate
from schedsweep.workloads.cluster import netsched as NS, network, topo_allocation as A, topology as T

TOPOS = {"torus": T.torus((4, 4)), "star": T.star(16), "fat_tree": T.fat_tree(4, 4, 2), "kary_ntree": T.kary_ntree(2, 4)}
MAY_FAIL = {"contiguous", "quasi_contiguous"}      # may refuse although enough nodes are idle


def _assert_within_nodes(res, allocs, f, times) -> None:
    """At every instant of ``times``: processes per node <= cores, memory within the node."""
    p = len(f.node_cores)
    for t in times:
        on = (res.start <= t) & (res.end > t)
        used = np.zeros(p, int)
        mem = np.zeros(p)
        for j in np.nonzero(on)[0]:
            np.add.at(used, allocs[j], 1)
            np.add.at(mem, allocs[j], f.mem_req[j])
        assert (used <= f.node_cores).all() and (mem <= f.node_mem * (1 + 1e-12)).all()


@settings(max_examples=40, deadline=None)
@given(method=st.sampled_from(sorted(A.METHODS)), seed=st.integers(0, 2**32 - 1), m=st.integers(1, 16),
       idle_p=st.floats(0.2, 1.0))
def test_methods_return_distinct_idle_nodes(method, seed, m, idle_p):
    kinds = A.METHODS[method][1]
    topo = TOPOS[kinds[int(seed) % len(kinds)]]
    idle = np.random.default_rng(seed).random(topo.n_nodes) < idle_p
    got = A.choose(method, topo, idle, m)
    if got is None:
        assert idle.sum() < m or method in MAY_FAIL
        return
    assert got.size == m and np.unique(got).size == m and idle[got].all()
    if method == "contiguous":
        assert (np.diff(got) == 1).all()
    if method == "quasi_contiguous":
        size = next(s for s in A._subtree_sizes(topo) if got.max() // s == got.min() // s)
        counts = idle.reshape(-1, size).sum(axis=1)
        smaller = [s for s in A._subtree_sizes(topo) if s < size]
        assert all((idle.reshape(-1, s).sum(axis=1) < m).all() for s in smaller)   # smallest subtree that fits
        assert counts[got.min() // size] == counts[counts >= m].min()           # and the fullest of that size


def test_shapes_on_an_empty_torus():
    topo = T.torus((8, 8))
    idle = np.ones(64, bool)
    box = A.choose("mc", topo, idle, 6)                    # 3 x 2 box at the origin, cost 0
    assert sorted(box.tolist()) == [0, 1, 2, 8, 9, 10]
    blk = A.choose("mbs", topo, idle, 16)                  # one aligned 4 x 4 buddy block
    c = topo.coords[blk]
    assert (c.max(axis=0) - c.min(axis=0) == 3).all() and (c.min(axis=0) % 4 == 0).all()
    assert A.choose("paging", topo, idle, 5).tolist() == [0, 1, 2, 3, 4]
    pages = A.choose("paging", topo, idle, 5, page_side=2)
    assert sorted(pages.tolist()) == [0, 1, 2, 8, 9]       # pages {0,1,8,9} then {2,3,10,11}
    gabl = A.choose("gabl", topo, idle, 9)
    assert sorted(gabl.tolist()) == [0, 1, 2, 8, 9, 10, 16, 17, 18]
    for name in ("anca", "manhattan_median"):
        got = A.choose(name, topo, idle, 4)                 # a 2 x 2 box is the most compact
        assert topo.hops[np.ix_(got, got)].sum() == 16, name    # ordered pairs; a plus gives 18, a line 20
    plus = A.choose("modified_mc", topo, idle, 5)          # MC1x1 on hops: a centre and its 4 neighbours
    assert topo.hops[plus[0], plus].sum() == 4
    ring = A.choose("mc_incremental", topo, idle, 9)       # MC1x1 with Chebyshev shells: a full 3 x 3 ring
    c = topo.coords[ring]
    assert topo.hops[np.ix_(ring, ring)].max() == 4 and len({tuple(x) for x in c}) == 9
    with pytest.raises(ValueError, match="works on"):
        A.choose("mbs", T.star(4), np.ones(4, bool), 2)


def _params(**kw):
    base = dict(jobs=80, nodes=16, cores=2, topology="torus", topology_size=[4, 4], iters_max=3,
                message_mean=3000.0, load=0.9)
    base.update(kw)
    return NS._with_defaults(base)


def _run(p, seed):
    _, aseed = flow(p, seed)
    f, comm = NS.replication_inputs(p, seed)
    res, sim, allocs, _ = NS.simulate_network(p, f, comm, NS._topology(p))
    return f, aseed, res, sim, allocs


@pytest.mark.parametrize("method", ["first_fit", "paging", "mbs", "anca", "gabl", "mc", "mc_incremental",
                                    "manhattan_median", "modified_mc", "tree:node_sorting", "tree:contiguous",
                                    "tree:quasi_contiguous", "tree:modified_mc"])
def test_network_schedule_never_overcommits(method):
    if method.startswith("tree:"):
        p = _params(allocation=method[5:], topology="kary_ntree", topology_size=[2, 4])
    else:
        p = _params(allocation=method)
    f, _, res, sim, allocs = _run(p, 11)
    assert not np.isnan(res.start).any() and (res.start >= f.submit).all()
    # every instant: processes per node <= cores, memory and disk within the node
    _assert_within_nodes(res, allocs, f, np.unique(np.concatenate([res.start, res.end])))
    # network only delays: real time >= computation on the slowest node; kills exactly at the estimate
    real = res.end - res.start
    assert (real >= f.tau / res.min_speed * (1 - 1e-12)).all()
    k = res.killed == 1
    assert np.allclose(real[k], f.estimate[k] / res.min_speed[k], rtol=1e-12)
    assert (real[~k] <= f.estimate[~k] / res.min_speed[~k] * (1 + 1e-12)).all()


@pytest.mark.parametrize("queue", ["mpfs_scan", "fcfs"])
@pytest.mark.parametrize("speeds", ["homogeneous", "heterogeneous"])
def test_delay_free_star_reproduces_part1_schedule(queue, speeds):
    p = _params(topology="star", topology_size=[16], bandwidth=float("inf"), t_routing=0.0, queue=queue,
                speeds=speeds, allocation="first_fit", jobs=120)
    f, aseed, res, sim, _ = _run(p, 5)
    ref = simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores, f.node_mem,
                   f.node_disk, f.node_speed, queue, "first_fit", aseed, p["cl_mask"])
    assert sim.net.ctr[0] == 0 and sim.net.acc[3] == 0 or speeds == "heterogeneous"
    assert sim.net.acc[2] > 0                                   # messages were really simulated
    assert res.start.tolist() == ref.start.tolist() and res.end.tolist() == ref.end.tolist()
    assert res.killed.tolist() == ref.killed.tolist()
    assert np.allclose(res.node_core_util, ref.node_core_util, rtol=1e-12, atol=1e-15)
    assert np.isclose(res.cl_integral, ref.cl_integral, rtol=1e-12)


@pytest.mark.parametrize("engine", [dict(allocation="mc"), dict(allocation="first_fit", queue="easy")])
def test_run_batch_reproducible_and_network_costs_time(engine):
    p = dict(jobs=40, nodes=16, cores=2, topology="torus", topology_size=[4, 4], iters_max=3, message_mean=3000.0,
             **engine)
    seeds = np.array([3, 4], np.uint64)
    a, b = NS.run_batch(p, seeds), NS.run_batch(p, seeds)
    for m in C.METRICS:
        if not m.timing:
            assert np.array_equal(a[m.name], b[m.name], equal_nan=True), m.name
    assert (a["contention"] >= 1.0).all() and (a["mb"] > 0).all() and (a["packet_events"] > 0).all()
    assert C.check_params(dict(network="packet", topology="star", allocation="mbs"))     # names the mismatch
    assert C.check_params(dict(network="packet", topology="torus", topology_size=[4, 4], nodes=64))


def test_coupled_run_equals_standalone_network_run():
    """Replaying the scheduler's starts and allocations through the bare SPMD driver gives
    the same job ends: the scheduler path handles network events exactly like it."""
    from schedsweep.workloads.cluster import spmd
    p = _params(allocation="mc", time_scale=1e-4, message_mean=500.0, iters_max=2, jobs=60)
    f, _, res, sim, allocs = _run(p, 2)
    assert res.killed.sum() == 0 and sim.net.acc[2] > 0
    _, comm = NS.replication_inputs(p, 2)
    alone = spmd.simulate_jobs(NS._topology(p), res.start, allocs, f.cores_req, comm[0], comm[1], f.tau,
                               f.node_speed, comm[2], mean_bytes=p["message_mean"], packet_size=p["packet_size"],
                               header=p["header"], t_routing=p["t_routing"])
    assert alone.jbf[spmd.JF_END].tolist() == res.end.tolist()
    assert (res.end - res.start > f.tau / res.min_speed).any()        # the network did delay some job


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31), case=st.integers(0, 10**6))
def test_random_configurations_keep_invariants(seed, case):
    rng = np.random.default_rng(case)
    layout, method = [("torus:4x4", "gabl"), ("torus:2x2x4", "mbs"), ("fat_tree:4x4x2", "node_sorting"),
                      ("kary_ntree:2x4", "contiguous"), ("star:16", "modified_mc"), ("torus:4x4", "first_fit"),
                      ("torus:4x4", "paging")][int(rng.integers(7))]
    p = NS._with_defaults(dict(jobs=30, nodes=16, cores=int(rng.integers(1, 3)), layout=layout, allocation=method,
                               queue=["fcfs", "mpfs_scan"][int(rng.integers(2))], iters_max=3,
                               speeds=["homogeneous", "heterogeneous"][int(rng.integers(2))],
                               message_mean=float(rng.choice([300.0, 3000.0])), time_scale=1e-4,
                               t_routing=float(rng.choice([0.0, 1e-6])), mem_high=4e6, node_memory=8e6))
    assert C.check_params(p) == []
    f, comm = NS.replication_inputs(p, seed)
    res, sim, allocs, _ = NS.simulate_network(p, f, comm, NS._topology(p))
    assert not np.isnan(res.end).any() and (res.start >= f.submit).all() and (res.end > res.start).all()
    _assert_within_nodes(res, allocs, f, np.unique(res.start))
    assert sim.net.ctr[network.C_MUSED] == 0 or res.killed.any()    # every message delivered unless a job died
