"""Slow, obvious oracles for the cluster network (plain Python, heapq).

``packet_sim`` simulates every packet of every message through FIFO single-server
routing stages and link channels, exactly as the spec's "Network" section says, with a
(time, priority, sequence) heap; ``idle_formula`` is the spec's contention-free time;
``bfs_hops`` the hop distance by breadth-first search on the link list.
"""
from __future__ import annotations

import heapq
from collections import deque


def idle_formula(path_link_times: list[float], npk: int, t_routing: float) -> float:
    """sum over links (g/b) + (K+1) t_routing + (Np-1) max(t_routing, max g/b)."""
    k = len(path_link_times)
    return sum(path_link_times) + (k + 1) * t_routing + (npk - 1) * max([t_routing] + path_link_times)


def packet_sim(next_link, link_dst, link_time, t_routing, msgs):
    """msgs: list of (t_send, src, dst, npk) in send order. Returns arrival times."""
    heap: list = []
    seq = [0]

    def push(t, prio, item):
        heapq.heappush(heap, (t, prio, seq[0], item))
        seq[0] += 1

    n_dev = len(next_link)
    in_q = [deque() for _ in range(n_dev)]
    router_busy = [False] * n_dev
    link_q = [deque() for _ in range(len(link_dst))]
    link_busy = [False] * len(link_dst)
    left = [m[3] for m in msgs]
    arrival = [None] * len(msgs)

    def try_route(d, t):
        if not router_busy[d] and in_q[d]:
            router_busy[d] = True
            push(t + t_routing, 3, ("route", d, in_q[d].popleft()))

    def try_link(l, t):
        if not link_busy[l] and link_q[l]:
            link_busy[l] = True
            push(t + link_time[l], 2, ("link", l, link_q[l].popleft()))

    for i, (t, src, dst, npk) in enumerate(msgs):
        push(t, 1, ("send", src, i))
    while heap:
        t, _prio, _s, (what, where, m) = heapq.heappop(heap)
        if what == "send":
            for _ in range(msgs[m][3]):
                in_q[where].append(m)
            try_route(where, t)
        elif what == "link":
            link_busy[where] = False
            d2 = link_dst[where]
            in_q[d2].append(m)
            try_route(d2, t)
            try_link(where, t)
        else:
            router_busy[where] = False
            dst = msgs[m][2]
            if where == dst:
                left[m] -= 1
                if left[m] == 0:
                    arrival[m] = t
            else:
                l = next_link[where][dst]
                link_q[l].append(m)
                try_link(l, t)
            try_route(where, t)
    return arrival


def bfs_hops(n_dev, link_src, link_dst, s, t):
    adj = [[] for _ in range(n_dev)]
    for a, b in zip(link_src, link_dst):
        adj[a].append(b)
    dist = {s: 0}
    q = deque([s])
    while q:
        v = q.popleft()
        for w in adj[v]:
            if w not in dist:
                dist[w] = dist[v] + 1
                q.append(w)
    return dist[t]


def spmd_no_contention_end(start, tau, iters, speeds):
    """A job's end on a network without delay: every process computes tau/s in iters steps."""
    return start + tau / min(speeds)
