"""EASY and conservative backfilling for the topology-aware methods (``topo_backfill.py``).

(a) Where a topology-aware method *is* first fit on whole nodes (node sorting or the
modified MC on a star, one core per node: both take the lowest idle ids), the Python
scheduler reproduces the numba kernel's first_fit schedule exactly (starts, ends, kills,
guarantees) for every queue policy, with the network on; and the Python scheduler's own
first_fit (cores as the unit, two cores per node) equals the kernel under EASY and
conservative. (b) Invariants on random small flows for every method x {easy,
conservative}. (c) A hand-built fragmentation case: the shape-delay rule.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import schedsweep.workloads.cluster as C
from naive_cluster_network import shared_nodes
from schedsweep.workloads.cluster import Flow, flow, netsched as NS, netsim, topo_allocation as A


def _inputs(seed, **kw):
    base = dict(jobs=150, nodes=16, cores=1, layout="star:16", iters_max=3, message_mean=3000.0, load=1.2,
                time_scale=1e-4)
    base.update(kw)
    p = NS._with_defaults(base)
    assert C.check_params(p) == []
    _, aseed = flow(p, seed)
    f, comm = NS.replication_inputs(p, seed)
    return p, f, comm, aseed


def _kernel(p, f, comm, aseed):
    return netsim.simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores, f.node_mem,
                           f.node_disk, f.node_speed, p["queue"], "first_fit", aseed, NS._topology(p), comm[0],
                           comm[1], comm[2], p["message_mean"], p["packet_size"], p["header"], p["t_routing"],
                           p["cl_mask"])


def _overtakes(start):
    """Pairs (j < k) where the later arrival k started first: backfilling (or MPFS) happened."""
    return int(sum(np.sum(start[j + 1:] < start[j]) for j in range(start.size)))


def _same(res, ref):
    assert res.start.tolist() == ref.start.tolist()
    assert res.end.tolist() == ref.end.tolist()
    assert res.killed.tolist() == ref.killed.tolist()
    assert np.array_equal(res.bound, ref.bound, equal_nan=True)       # same guarantees (shadows, reservations)


@pytest.mark.parametrize("queue", ["fcfs", "mpfs_scan", "easy", "conservative"])
@pytest.mark.parametrize("method,speeds", [("node_sorting", "homogeneous"), ("node_sorting", "heterogeneous"),
                                           ("modified_mc", "homogeneous")])
def test_topology_method_equal_to_first_fit_gives_the_kernel_schedule(queue, method, speeds):
    p, f, comm, aseed = _inputs(7, queue=queue, allocation=method, speeds=speeds)
    ref, _ = _kernel(p, f, comm, aseed)
    res, sim, allocs, _ = NS.simulate_network(p, f, comm, NS._topology(p))
    _same(res, ref)
    assert res.unplaceable == 0
    assert (res.end - res.start > f.tau / res.min_speed).any()          # the network delayed some job
    if queue != "fcfs":
        assert _overtakes(ref.start) > 100                              # real backfilling, not FCFS in disguise
    if queue in ("easy", "conservative"):
        assert np.isfinite(ref.bound).sum() > 10                        # many guarantees compared


@pytest.mark.parametrize("queue", ["easy", "conservative"])
@pytest.mark.parametrize("speeds", ["homogeneous", "heterogeneous"])
def test_python_first_fit_backfilling_equals_kernel_on_cores(queue, speeds):
    """Two cores per node: the unit is the core, jobs share nodes, as in part 1."""
    p, f, comm, aseed = _inputs(5, queue=queue, speeds=speeds, cores=2, layout="torus:4x4", allocation="first_fit")
    ref, rsim = _kernel(p, f, comm, aseed)
    res, sim, _, _ = NS.simulate_network(p, f, comm, NS._topology(p))
    _same(res, ref)
    assert sim.net.acc.tolist() == rsim.net.acc.tolist()
    assert _overtakes(ref.start) > 50 and ref.killed.sum() > 0


# every method with a topology it accepts (16 nodes)
CASES = [("torus:4x4", m) for m in ("paging", "mbs", "anca", "gabl", "mc", "mc_incremental", "manhattan_median",
                                     "modified_mc")] + \
        [("fat_tree:4x4x2", m) for m in ("node_sorting", "contiguous", "quasi_contiguous")] + \
        [("kary_ntree:2x4", "contiguous"), ("kary_ntree:2x4", "quasi_contiguous"), ("star:16", "contiguous")]


@pytest.mark.parametrize("queue", ["easy", "conservative"])
@pytest.mark.parametrize("case", CASES, ids=[f"{m}@{l}" for l, m in CASES])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31), cores=st.integers(1, 2), speeds=st.sampled_from(["homogeneous", "heterogeneous"]),
       load=st.sampled_from([0.7, 1.5]))
def test_backfilling_invariants_every_method(case, queue, seed, cores, speeds, load):
    layout, method = case
    p, f, comm, _ = _inputs(seed, jobs=40, layout=layout, allocation=method, queue=queue, cores=cores,
                            speeds=speeds, load=load)
    res, sim, allocs, _ = NS.simulate_network(p, f, comm, NS._topology(p))
    assert not np.isnan(res.end).any() and (res.end > res.start).all()     # every job ran and finished
    assert (res.start >= f.submit).all()
    assert shared_nodes(res.start, res.end, allocs) == []                 # no node given twice at any time
    for j, a in enumerate(allocs):                                        # whole nodes, cap processes each
        cap = int(f.node_cores.min())
        assert np.bincount(a).max() <= cap and np.unique(a).size == A.nodes_needed(int(f.cores_req[j]), cap)
    k = res.killed == 1
    assert np.allclose((res.end - res.start)[k], f.estimate[k] / res.min_speed[k], rtol=1e-12)
    if queue == "conservative":
        assert np.isfinite(res.bound).all()                               # every job got a reservation
    if res.unplaceable == 0:                                              # no shape delay: guarantees hold
        has = ~np.isnan(res.bound)
        assert (res.start[has] <= res.bound[has]).all()
    else:
        assert method in ("contiguous", "quasi_contiguous")               # the others place any m idle nodes


def _hand_flow(arrive, n, est):
    k = len(n)
    z = np.zeros(k)
    return Flow(np.asarray(arrive, float), np.asarray(n, np.int64), z, z, np.asarray(est, float),
                np.asarray(est, float), np.ones(4, np.int64), np.full(4, 1e9), np.full(4, 1e9), np.ones(4))


@pytest.mark.parametrize("queue", ["easy", "conservative"])
def test_fragmentation_delays_the_guarantee_and_is_counted(queue):
    """star:4, contiguous, one core per node. At 0: A, B, C (1 node; 10, 1, 10 s) take nodes
    0, 1, 2; D (2 nodes, 5 s) is guaranteed t = 1 (B's end frees a second node). At 1 the idle
    nodes are {1, 3}: 2 nodes but no 2 consecutive ids, so D waits for A and C (t = 10) and
    then gets nodes 0, 1. E (1 node, 0.5 s, arrives 2): EASY backfills it at once onto node 1
    (it ends before D's new shadow, 10); conservative keeps D's 2 nodes in the profile on a
    window sliding with D ([2, 7) at E's arrival), so E is reserved at 7 and starts then."""
    f = _hand_flow([0, 0, 0, 0, 2], [1, 1, 1, 2, 1], [10, 1, 10, 5, 0.5])
    p = NS._with_defaults(dict(nodes=4, cores=1, layout="star:4", allocation="contiguous", queue=queue))
    comm = (np.ones(5, np.int64), np.zeros(5, np.int64), 0)
    res, _, allocs, _ = NS.simulate_network(p, f, comm, NS._topology(p))
    e = 2.0 if queue == "easy" else 7.0
    assert res.start.tolist() == [0, 0, 0, 10, e] and res.end.tolist() == [10, 1, 10, 15, e + 0.5]
    assert res.bound[3] == 1.0 and res.unplaceable == 1 and C.late_starts(res) == 1
    assert allocs[3].tolist() == [0, 1] and allocs[4].tolist() == [1]


def test_workload_runs_topology_methods_with_backfilling_and_part1_unchanged():
    seeds = np.array([3, 4], np.uint64)
    net = dict(network="packet", jobs=40, nodes=16, cores=1, layout="torus:4x4", iters_max=3, message_mean=3000.0,
               allocation="gabl", queue="conservative", time_scale=1e-4)
    assert C.check_params(net) == []
    a, b = C.run_batch(net, seeds), NS.run_batch(net, seeds)
    for m in C.METRICS:
        if not m.timing:
            assert np.array_equal(a[m.name], b[m.name], equal_nan=True), m.name
    assert (a["contention"] >= 1).all() and (a["shape_delays"] == 0).all() and (a["late_starts"] == 0).all()
    # network off: network parameters are ignored, network metrics NaN, reason untouched
    off = dict(jobs=60, nodes=8, cores=4, queue="easy")
    x = C.run_batch(off, seeds)
    y = C.run_batch(dict(off, layout="torus:4x4", bandwidth=1.0, message_mean=1.0, iters_max=7), seeds)
    for m in C.METRICS:
        if not m.timing:
            assert np.array_equal(x[m.name], y[m.name], equal_nan=True), m.name
    assert np.isnan(x["sd"]).all() and np.isnan(x["mb"]).all() and np.isnan(x["packet_events"]).all()
    assert (x["reason"] == 0).all() and (x["late_starts"] == 0).all() and np.isfinite(x["mean_job_time"]).all()


def test_check_params_names_network_and_allocation():
    msgs = C.check_params(dict(allocation="mc"))
    assert len(msgs) == 1 and "network" in msgs[0] and "allocation" in msgs[0] and "first_fit" in msgs[0]
    assert C.check_params(dict(network="packet", allocation="mc", layout="torus:8x8", cores=1, queue="easy")) == []
    assert any("source" in e for e in C.check_params(dict(network="packet", source="swf", trace="x.swf")))
    assert any("layout" in e for e in C.check_params(dict(network="packet", layout="torus:axb")))
