"""The network inside part 1's event simulator (``netsim``): a delay-free star gives part 1's
schedule for every queue policy, and with a real network it equals the Python-scheduler path."""
from __future__ import annotations

import numpy as np
import pytest

from schedsweep.workloads.cluster import flow, netsched as NS, netsim, simulate

QUEUES = ["fcfs", "mpfs_scan", "easy", "conservative"]


def _inputs(seed, **kw):
    base = dict(jobs=120, nodes=16, cores=2, layout="star:16", iters_max=3, message_mean=3000.0, load=0.9)
    base.update(kw)
    p = NS._with_defaults(base)
    _, aseed = flow(p, seed)
    f, comm = NS.replication_inputs(p, seed)
    return p, f, comm, aseed


def _netsim(p, f, comm, aseed, queue, alloc="first_fit"):
    return netsim.simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores, f.node_mem,
                           f.node_disk, f.node_speed, queue, alloc, aseed, NS._topology(p), comm[0], comm[1], comm[2],
                           p["message_mean"], p["packet_size"], p["header"], p["t_routing"], p["cl_mask"])


@pytest.mark.parametrize("queue", QUEUES)
@pytest.mark.parametrize("speeds", ["homogeneous", "heterogeneous"])
def test_delay_free_star_gives_part1_schedule(queue, speeds):
    p, f, comm, aseed = _inputs(4, bandwidth=float("inf"), t_routing=0.0, speeds=speeds)
    res, sim = _netsim(p, f, comm, aseed, queue)
    ref = simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores, f.node_mem,
                   f.node_disk, f.node_speed, queue, "first_fit", aseed, p["cl_mask"])
    assert sim.net.acc[2] > 0                                 # the messages were simulated
    assert res.start.tolist() == ref.start.tolist() and res.end.tolist() == ref.end.tolist()
    assert res.killed.tolist() == ref.killed.tolist()
    assert np.allclose(res.node_core_util, ref.node_core_util, rtol=1e-12, atol=1e-15)
    assert np.isclose(res.cl_integral, ref.cl_integral, rtol=1e-12)


@pytest.mark.parametrize("queue", ["fcfs", "mpfs_scan"])
def test_kernel_equals_python_scheduler_with_network(queue):
    p, f, comm, aseed = _inputs(7, layout="torus:4x4", time_scale=1e-4, queue=queue)
    res, sim = _netsim(p, f, comm, aseed, queue)
    ref, rsim, _, _ = NS.simulate_network(p, f, comm, NS._topology(p))
    assert (res.end - res.start > f.tau / res.min_speed).any() and res.killed.sum() > 0   # network mattered
    assert res.start.tolist() == ref.start.tolist() and res.end.tolist() == ref.end.tolist()
    assert res.killed.tolist() == ref.killed.tolist()
    assert sim.net.acc.tolist() == rsim.net.acc.tolist()


@pytest.mark.parametrize("queue", ["easy", "conservative"])
def test_backfilling_with_network_keeps_invariants(queue):
    p, f, comm, aseed = _inputs(8, layout="torus:4x4", time_scale=1e-4)
    res, sim = _netsim(p, f, comm, aseed, queue)
    assert not np.isnan(res.end).any() and (res.start >= f.submit).all()
    real = res.end - res.start
    assert (real >= f.tau / res.min_speed * (1 - 1e-12)).all()
    k = res.killed == 1
    assert np.allclose(real[k], f.estimate[k] / res.min_speed[k], rtol=1e-12)
    for t in np.unique(res.start):
        on = (res.start <= t) & (res.end > t)
        used = np.zeros(16, int)
        for j in np.nonzero(on)[0]:
            a, m = res.alloc_ptr[j], res.nodes_used[j]
            np.add.at(used, res.alloc_node[a:a + m], res.alloc_k[a:a + m])
        assert (used <= f.node_cores).all()
