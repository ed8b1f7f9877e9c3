"""The packet network and SPMD jobs: idle formula, hand-checked contention, naive oracle."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from schedsweep.workloads.cluster import network as N, spmd as S, topology as T
from tests.naive_cluster_network import idle_formula, packet_sim

G, B = 1024.0, 1.25e9


def _alone(topo, s, t, npk, tr, g=G):
    arr, st_ = N.simulate_messages(topo, [s], [t], [npk], [0.0], packet_size=g, t_routing=tr)
    return arr[0], st_


def test_idle_message_equals_formula_routing_and_link_bottleneck():
    topo = T.torus((4, 4))
    for tr in (1e-6, 1e-7, 0.0):                  # routing-bound, link-bound, no routing
        for s, t, npk in ((0, 10, 5), (3, 12, 1), (5, 6, 17)):
            got, st_ = _alone(topo, s, t, npk, tr)
            want = idle_formula([G / B] * int(topo.hops[s, t]), npk, tr)
            assert abs(got - want) <= 1e-12 * want      # same sum in another order
            assert abs(st_.acc[N.A_FREETIME] - got) <= 1e-12 * want   # the kernel's formula agrees


def test_local_message_takes_np_routings():
    topo = T.fat_tree(2, 2, 1)
    got, _ = _alone(topo, 1, 1, 7, 3e-6)
    assert abs(got - 7 * 3e-6) < 1e-18


def test_two_messages_sharing_a_link_hand_checked():
    """Ring of 4; m0: 0->2 (links 0->1, 1->2), m1: 1->2 (link 1->2), 3 packets each, both at t=0.

    t_r = 0.1 us, g/b = 0.8192 us. m1's packets leave node 1's router at 0.1, 0.2, 0.3 and
    hold link 1->2 during [0.1, 2.5576] us; m0's first packet reaches node 1 at 0.9192, is
    routed by 1.0192 and waits for that link until 2.5576; its three packets cross it by
    5.0152 and the last is routed at node 2 at 5.1152 us. m1 ends at 2.5576 + 0.1.
    """
    topo = T.torus((4,))
    tr, g = 1e-7, G / B
    arr, st_ = N.simulate_messages(topo, [0, 1], [2, 2], [3, 3], [0.0, 0.0], t_routing=tr)
    m0_expected = 2.5576e-6 + 3 * g + tr
    m1_expected = 2.5576e-6 + tr
    assert abs(arr[0] - m0_expected) < 1e-15 and abs(arr[1] - m1_expected) < 1e-15
    alone0, _ = _alone(topo, 0, 2, 3, tr)
    alone1, _ = _alone(topo, 1, 2, 3, tr)
    assert arr[0] > alone0 and arr[1] == alone1    # m1 was first on the shared link
    assert abs((arr[0] - alone0) - (m0_expected - idle_formula([g, g], 3, tr))) < 1e-15
    assert abs(st_.acc[N.A_MSGTIME] - st_.acc[N.A_FREETIME] - (arr[0] - alone0)) < 1e-15


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["star", "fat_tree", "torus", "kary_ntree"]), seed=st.integers(0, 2**32 - 1),
       tr=st.sampled_from([1e-6, 1e-7, 0.0]))
def test_kernel_equals_naive_packet_simulation(kind, seed, tr):
    size = {"star": (6,), "fat_tree": (2, 3, 2), "torus": (3, 4), "kary_ntree": (2, 3)}[kind]
    topo = T.make(kind, size)
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 25))
    src, dst = rng.integers(0, topo.n_nodes, m), rng.integers(0, topo.n_nodes, m)
    npk = rng.integers(1, 6, m)
    t = np.sort(rng.choice([0.0, 1e-6, 2.5e-6, 4e-6], m))       # repeated times exercise the tie order
    got, st_ = N.simulate_messages(topo, src, dst, npk, t, t_routing=tr)
    link_time = (G / topo.link_bw).tolist()
    want = packet_sim(topo.next_link.tolist(), topo.link_dst.tolist(), link_time, tr,
                      list(zip(t.tolist(), src.tolist(), dst.tolist(), npk.tolist())))
    assert got.tolist() == want
    assert st_.ctr[N.C_PKUSED] == 0 and st_.ctr[N.C_MUSED] == 0     # every record returned
    hops = topo.hops[src, dst]
    assert st_.ctr[N.C_EVENTS] == int((npk * (2 * hops + 1)).sum())   # one link and one routing end per hop


def test_no_delay_star_gives_network_free_job_times():
    topo = T.star(4, bandwidth=np.inf)
    speed = np.array([1.0, 2.0, 1.5, 1.2])
    tau = np.array([1e-3, 2e-3, 0.7, 3.3])
    sim = S.simulate_jobs(topo, [0.0, 0.5, 0.1, 0.1], [[0, 1, 2, 3], [1, 1], [3, 2, 1], [1]], [4, 2, 3, 1],
                          [3, 7, 5, 2], [S.ALL_TO_ALL, S.RING, S.RANDOM, S.PAIRS], tau, speed, seed=3, t_routing=0.0)
    want = [0.0 + tau[0] / 1.0, 0.5 + tau[1] / 2.0, 0.1 + tau[2] / 1.2, 0.1 + tau[3] / 2.0]
    assert sim.jbf[S.JF_END].tolist() == want                    # bit-equal: the exact chain
    assert sim.net.acc[N.A_MSGS] > 0
    # faster processes wait for slower ones; on equal speeds nobody ever blocks
    same = S.simulate_jobs(topo, [0.0], [[0, 1, 2, 3]], [4], [5], [S.ALL_TO_ALL], [1e-3], np.ones(4), t_routing=0.0)
    assert same.net.acc[N.A_BLOCK] == 0.0 and same.jbf[S.JF_END, 0] == 1e-3


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pattern=st.integers(0, 4), n=st.integers(1, 6))
def test_spmd_message_counts_and_lower_bound(seed, pattern, n):
    topo = T.torus((3, 3))
    rng = np.random.default_rng(seed)
    nodes = rng.integers(0, 9, n).tolist()
    iters, tau = int(rng.integers(1, 4)), 1e-5
    sim = S.simulate_jobs(topo, [0.0], [nodes], [n], [iters], [pattern], [tau], np.ones(9), seed=seed)
    deg = sum(int(S.out_degree(pattern, n, u)) for u in range(n))
    assert sim.net.acc[N.A_MSGS] == deg * iters == sim.net.acc[N.A_RECVS]
    assert sim.jbf[S.JF_END, 0] >= tau                           # computation alone is a lower bound
    if deg == 0:
        assert sim.jbf[S.JF_END, 0] == tau
    # messages are a function of (seed, job, iteration, sender, receiver): same on a star
    other = S.simulate_jobs(T.star(9), [0.0], [nodes], [n], [iters], [pattern], [tau], np.ones(9), seed=seed)
    assert other.net.acc[N.A_PACKETS] == sim.net.acc[N.A_PACKETS]


def test_random_pattern_targets_are_others_and_uniform():
    seed, n = np.uint64(7), 5
    hits = np.zeros((n, n), int)
    for it in range(2000):
        for u in range(n):
            hits[u, S.random_target(seed, 0, it, u, n)] += 1
    assert (np.diag(hits) == 0).all()
    expected = 2000 / (n - 1)
    off = hits[~np.eye(n, dtype=bool)]
    assert ((off - expected) ** 2 / expected).sum() < 60          # chi2(20 dof) 99.99% ≈ 52


def test_place_from_alloc_fills_ranks_in_allocation_order():
    sim = S.SpmdSim(T.star(4), [2, 5], [1, 1], [S.RING, S.RING], [1.0, 1.0], np.ones(4), seed=0)
    alloc_node = np.array([9, 9, 3, 0, 2])          # job 1's allocation starts at slot 2
    alloc_k = np.array([0, 0, 2, 1, 2])
    S.place_from_alloc(1, 2, 3, alloc_node, alloc_k, sim.pr, sim.jb)
    assert sim.pr[S.P_NODE, 2:7].tolist() == [3, 3, 0, 2, 2]
    assert S.next_time(sim.net.heap, sim.net.ctr) == np.inf


def test_growing_pools_changes_nothing():
    """Start from one-record pools: every growth path runs, results equal a roomy run."""
    topo = T.torus((3, 3))
    args = ([0.0, 0.0, 1e-6], [[0, 1, 2, 3, 4, 5], [6, 7, 8], [0, 4, 8, 2]], [6, 3, 4], [3, 2, 2],
            [S.ALL_TO_ALL, S.RANDOM, S.ONE_TO_ALL], [1e-5, 2e-5, 1e-5], np.ones(9))
    small = S.simulate_jobs(topo, *args, seed=9, mean_bytes=5000.0, pool=1)
    big = S.simulate_jobs(topo, *args, seed=9, mean_bytes=5000.0, pool=100_000)
    assert small.net.pk.shape[1] < big.net.pk.shape[1]
    assert small.jbf[S.JF_END].tolist() == big.jbf[S.JF_END].tolist()
    assert small.net.acc.tolist() == big.net.acc.tolist()


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tr=st.sampled_from([1e-6, 1e-7]))
def test_spmd_kernel_equals_naive_simulation(seed, tr):
    from tests.naive_cluster_network import spmd_sim
    topo = T.torus((3, 3))
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 4))
    n = rng.integers(1, 6, k)
    nodes = [rng.integers(0, 9, int(x)).tolist() for x in n]
    iters = rng.integers(1, 4, k)
    pattern = rng.integers(0, 5, k)
    tau = rng.choice([1e-6, 1e-5, 4e-5], k)
    start = np.sort(rng.choice([0.0, 0.0, 3e-6, 1e-5], k))
    speed = rng.choice([1.0, 1.5, 2.0], 9)
    mseed, mean, payload = np.uint64(seed), 3000.0, 960.0
    sim = S.simulate_jobs(topo, start, nodes, n, iters, pattern, tau, speed, seed=int(seed), mean_bytes=mean,
                          t_routing=tr)
    want = spmd_sim(topo.next_link.tolist(), topo.link_dst.tolist(), (G / topo.link_bw).tolist(), tr,
                    [(start[j], nodes[j], int(iters[j]), S.PATTERNS[pattern[j]], tau[j]) for j in range(k)],
                    speed.tolist(), lambda j, it, u, v: int(S.message_packets(mseed, j, it, u, v, mean, payload)),
                    lambda j, it, u, nn: int(S.random_target(mseed, j, it, u, nn)))
    assert sim.jbf[S.JF_END].tolist() == want


@settings(max_examples=15, deadline=None)
@given(kind=st.sampled_from(["star", "fat_tree", "torus", "kary_ntree", "kary_ncube"]), seed=st.integers(0, 2**32 - 1),
       tr=st.sampled_from([2e-6, 1e-6, 1e-7, 0.0]), g=st.sampled_from([256.0, 1024.0, 4096.0]))
def test_idle_formula_on_random_paths(kind, seed, tr, g):
    topo = T.make(kind, {"star": (5,), "fat_tree": (3, 2, 2), "torus": (3, 5), "kary_ntree": (3, 2),
                         "kary_ncube": (2, 3)}[kind])
    rng = np.random.default_rng(seed)
    s, t = (int(x) for x in rng.integers(0, topo.n_nodes, 2))
    npk = int(rng.integers(1, 30))
    got, _ = _alone(topo, s, t, npk, tr, g)
    want = idle_formula([g / B] * len(topo.path(s, t)), npk, tr)
    assert abs(got - want) <= 1e-12 * max(want, 1e-30)
    if s == t:
        assert abs(got - npk * tr) <= 1e-12 * max(want, 1e-30)
