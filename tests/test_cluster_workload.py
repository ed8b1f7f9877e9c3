"""The cluster workload's contract: run_batch outputs, reproducibility, eq. (8) load,
hand-worked metrics, parameter checks, event order and allocation policies."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedsweep import workloads
import schedsweep.workloads.cluster as C
from schedsweep.workloads.cluster import allocation, events, metrics, simulator

SMALL = {"jobs": 120, "nodes": 8, "cores": 4}


def test_contract_shapes_and_reasons():
    mod = workloads.get("cluster")
    seeds = np.array([3, 4, 5], dtype=np.uint64)
    out = mod.run_batch(SMALL, seeds)
    assert set(out) == {m.name for m in mod.METRICS} | {"reason"}
    shapes = {m.name: (3, *m.shape) for m in mod.METRICS} | {"reason": (3,)}
    assert all(v.shape == shapes[k] for k, v in out.items())
    assert out["reason"].dtype == np.int8 and set(out["reason"]) <= set(mod.REASONS)
    assert np.all(out["jobs_simulated"] == 120) and np.all(out["killed_jobs"] == 0)


@pytest.mark.parametrize("queue", C.QUEUE_NAMES)
def test_reproducible_and_batch_independent(queue):
    p = dict(SMALL, queue=queue, allocation="random_first", speeds="heterogeneous")
    seeds = np.array([11, 12, 13], dtype=np.uint64)
    whole = C.run_batch(p, seeds)
    parts = [C.run_batch(p, seeds[i:i + 1]) for i in range(3)]
    timing = {m.name for m in C.METRICS if m.timing}
    for name in whole:
        if name in timing:
            continue
        joined = np.concatenate([q[name] for q in parts])
        np.testing.assert_array_equal(whole[name], joined, err_msg=name)


@pytest.mark.parametrize("arrivals", ["poisson", "lublin_daily"])
def test_load_is_exact(arrivals):
    for load in (0.3, 0.9):
        out = C.run_batch(dict(SMALL, load=load, arrivals=arrivals, speeds="heterogeneous"),
                          np.array([7], dtype=np.uint64))
        assert abs(out["offered_load"][0] - 100 * load) < 1e-9


def test_policies_share_the_flow():
    """Common random numbers: every policy sees the same jobs and cluster for a seed."""
    flows = [C.flow(C._with_defaults(dict(SMALL, queue=q, allocation=a)), 9)[0]
             for q in C.QUEUE_NAMES for a in C.ALLOCATIONS]
    for f in flows[1:]:
        np.testing.assert_array_equal(f.submit, flows[0].submit)
        np.testing.assert_array_equal(f.cores_req, flows[0].cores_req)
        np.testing.assert_array_equal(f.mem_req, flows[0].mem_req)


def _hand_run(cl_mask):
    # 2 single-core nodes; A (1 core, 10 s) and B (2 cores, 5 s) arrive at 0.
    r = simulator.simulate(np.zeros(2), np.array([1, 2]), np.array([100.0, 50.0]), np.zeros(2),
                           np.array([10.0, 5.0]), np.array([10.0, 5.0]), np.ones(2, np.int64),
                           np.full(2, 400.0), np.full(2, 1.0), np.ones(2), "fcfs", "first_fit", 1, cl_mask)
    return r, metrics.compute(r, np.zeros(2), np.array([1, 2]), np.ones(2), np.ones(2), 10.0)


def test_metrics_by_hand():
    r, (m, reason) = _hand_run("queue_nonempty_and_not_all_idle")
    assert reason == 0
    assert list(r.start) == [0.0, 10.0] and list(r.end) == [10.0, 15.0]
    # queue non-empty on [0, 10): node 0 busy, node 1 idle
    assert m["utilization"] == 50.0 and m["var_core_util"] == 2500.0
    assert m["cluster_loss"] == 50.0
    assert m["mem_util"] == 12.5          # node 0 uses 100 of 400 KB, node 1 nothing
    assert m["makespan"] == 15.0 and m["mean_wait"] == 5.0 and m["max_wait"] == 10.0 and m["var_wait"] == 25.0
    assert m["mean_bsld"] == 1.25 and m["max_bsld"] == 1.5
    assert m["spread"] == 1.0
    _r, (m2, _) = _hand_run("queue_nonempty")
    assert m2["cluster_loss"] == 50.0


def test_no_queue_reason():
    # one job on an empty cluster never waits: the delta mask is never 1
    r = simulator.simulate(np.zeros(1), np.array([1]), np.zeros(1), np.zeros(1), np.ones(1), np.ones(1),
                           np.ones(2, np.int64), np.ones(2), np.ones(2), np.ones(2), "easy", "first_fit", 1)
    m, reason = metrics.compute(r, np.zeros(1), np.array([1]), np.ones(2), np.ones(2), 10.0)
    assert reason == 1 and np.isnan(m["utilization"]) and np.isnan(m["cluster_loss"]) and m["mean_wait"] == 0


def test_check_params():
    d = C._with_defaults({})
    assert C.check_params(d) == []
    assert any("trace" in e for e in C.check_params(dict(d, source="swf")))
    bad = dict(d, queue="easy", mem_high=4_000_000.0)
    msgs = C.check_params(bad)
    assert len(msgs) == 1 and "mem_high" in msgs[0] and "node_memory" in msgs[0]
    assert C.check_params(dict(bad, queue="mpfs_scan")) == []
    assert any("mem_low" in e for e in C.check_params(dict(d, mem_low=3e6)))


def test_event_order_time_priority_sequence():
    heap = events.heap_new(4)
    ctr = np.zeros(2, np.int64)          # size, sequence
    pushed = [(2.0, events.JOB_START, 0), (1.0, events.COMPUTE_END, 1), (1.0, events.JOB_START, 2),
              (1.0, events.LINK_END, 3), (1.0, events.COMPUTE_END, 4), (0.5, events.KILL, 5)]
    for t, kind, d in pushed:
        if ctr[0] == heap[0].size:
            heap = events.heap_grow(*heap)
        events.push_kind(heap, ctr, 0, 1, t, kind, d)
    order = []
    while ctr[0]:
        _t, k, d, ctr[0] = events.pop(*heap, ctr[0])
        order.append((d, events.key_kind(k)))
    assert order == [(5, events.KILL), (3, events.LINK_END), (1, events.COMPUTE_END), (4, events.COMPUTE_END),
                     (2, events.JOB_START), (0, events.JOB_START)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([1, 2, 3, 4, 5, 6])), min_size=1, max_size=80),
       st.integers(0, 80))
def test_heap_pops_in_time_priority_sequence_order(evs, pops_between):
    """The 4-ary heap against a sort by (time, priority, sequence), with pops interleaved."""
    heap = events.heap_new(4)
    ctr = np.zeros(2, np.int64)
    live, got, want = [], [], []
    for seq, (t, kind) in enumerate(evs):
        if ctr[0] == heap[0].size:
            heap = events.heap_grow(*heap)
        events.push_kind(heap, ctr, 0, 1, float(t), kind, seq)
        live.append((float(t), int(events.PRIORITY[kind]), seq, kind))
        if seq == pops_between:           # pop half now, the rest at the end
            for _ in range(len(live) // 2):
                live.sort()
                want.append(live.pop(0))
                t0, k, d, ctr[0] = events.pop(*heap, ctr[0])
                got.append((t0, int(events.key_priority(k)), d, int(events.key_kind(k))))
    live.sort()
    want += live
    while ctr[0]:
        t0, k, d, ctr[0] = events.pop(*heap, ctr[0])
        got.append((t0, int(events.key_priority(k)), d, int(events.key_kind(k))))
    assert got == want


def _choose(policy, n, free, speed, mr=0.0, mem=None, seed=1):
    free = np.asarray(free, np.int64)
    p = free.size
    speed = np.asarray(speed, float)
    mem = np.full(p, 1e9) if mem is None else np.asarray(mem, float)
    order, _rank, bits = allocation.scan_state(policy, speed, free)
    out_n, out_k = np.zeros(p, np.int64), np.zeros(p, np.int64)
    m = allocation.choose(policy, n, mr, 0.0, free, mem, np.full(p, 1e9), speed, order, bits,
                          np.zeros(p, np.int64), np.array([seed], np.uint64), out_n, out_k)
    return list(zip(out_n[:max(m, 0)].tolist(), out_k[:max(m, 0)].tolist())), m


def test_allocation_policies_by_hand():
    free, speed = [2, 0, 3, 1, 4], [1.0, 1.0, 1.5, 2.0, 1.2]
    assert _choose(allocation.FIRST_FIT, 4, free, speed)[0] == [(0, 2), (2, 2)]
    assert _choose(allocation.BEST_FIT, 3, free, speed)[0] == [(2, 3)]          # tightest single node
    assert _choose(allocation.BEST_FIT, 6, free, speed)[0] == [(4, 4), (0, 2)]  # largest, then tightest
    assert _choose(allocation.FASTEST_FIRST, 3, free, speed)[0] == [(3, 1), (2, 2)]
    assert _choose(allocation.FIRST_FIT, 11, free, speed)[1] == -1
    # memory limits processes per node: 250 KB each, 600 KB nodes -> 2 per node
    assert _choose(allocation.FIRST_FIT, 4, [4, 4, 4], [1, 1, 1], mr=250.0, mem=[600, 100, 600])[0] == [(0, 2), (2, 2)]
    for seed in range(5):
        got, m = _choose(allocation.RANDOM_FIRST, 5, free, speed, seed=seed)
        assert sum(k for _, k in got) == 5 and all(k <= free[i] for i, k in got)
        assert len({i for i, _ in got}) == len(got)
        assert got == _choose(allocation.RANDOM_FIRST, 5, free, speed, seed=seed)[0]


def test_random_first_is_uniform_over_nodes():
    counts = np.zeros(4)
    for seed in range(4000):
        got, _ = _choose(allocation.RANDOM_FIRST, 1, [1, 1, 1, 1], [1, 1, 1, 1], seed=seed + 1)
        counts[got[0][0]] += 1
    assert np.all(np.abs(counts / 4000 - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 4000))
