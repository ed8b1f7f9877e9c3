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


def _pusher(heap: list):
    """``push(t, prio, item)`` onto ``heap`` in (time, priority, insertion) order (SimPy's)."""
    seq = [0]

    def push(t, prio, item):
        heapq.heappush(heap, (t, prio, seq[0], item))
        seq[0] += 1
    return push


def packet_sim(next_link, link_dst, link_time, t_routing, msgs):
    """msgs: list of (t_send, src, dst, npk) in send order. Returns arrival times."""
    heap: list = []
    push = _pusher(heap)
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


def spmd_sim(next_link, link_dst, link_time, t_routing, jobs, node_speed, sizes, targets):
    """Plain-Python SPMD jobs on the packet network (the spec's "Jobs" semantics).

    jobs: list of (start, nodes per process, iters, pattern name, tau), started in list
    order at equal times; ``sizes(j, it, u, v)`` the packets of a message and
    ``targets(j, it, u, n)`` the Random pattern's receiver. Returns the jobs' end times.
    Computation ends follow the documented exact chain: origin + (tau/s) * ((i+1-k0)/iters).
    """
    heap: list = []
    push = _pusher(heap)
    n_dev = len(next_link)
    in_q = [deque() for _ in range(n_dev)]
    router = [None] * n_dev
    link_q = [deque() for _ in range(len(link_dst))]
    link = [None] * len(link_dst)
    msgs = []                          # [dst node, packets left, job, receiver, iteration]
    arrived = {}                       # (job, receiver, iteration) -> count
    state = {}                         # (job, u) -> dict(iter, post, origin, k0)
    left = [len(j[1]) for j in jobs]
    end = [None] * len(jobs)

    def succ(j, u, it):
        n, pat = len(jobs[j][1]), jobs[j][3]
        if n < 2:
            return []
        if pat == "random":
            return [targets(j, it, u, n)]
        if pat == "ring":
            return [(u + 1) % n]
        if pat == "pairs":
            return [u ^ 1] if (u ^ 1) < n else []
        if pat == "one_to_all":
            return [v for v in range(n) if v != u] if u == 0 else []
        return [v for v in range(n) if v != u]

    def expected(j, u, it):
        n = len(jobs[j][1])
        return sum(1 for w in range(n) if u in succ(j, w, it))

    def try_route(d, t):
        if router[d] is None and in_q[d]:
            router[d] = in_q[d].popleft()
            push(t + t_routing, 3, ("route", d))

    def try_link(l, t):
        if link[l] is None and link_q[l]:
            link[l] = link_q[l].popleft()
            push(t + link_time[l], 2, ("link", l))

    def compute(j, u, t):
        s = state[(j, u)]
        iters, tau = jobs[j][2], jobs[j][4]
        work = tau / node_speed[jobs[j][1][u]]
        if t != s["origin"] + work * ((s["iter"] - s["k0"]) / iters):
            s["origin"], s["k0"] = t, s["iter"]
        push(s["origin"] + work * ((s["iter"] + 1 - s["k0"]) / iters), 4, ("compute", (j, u)))

    def begin(j, u, it, t):
        s = state[(j, u)]
        s["iter"], s["post"] = it, t
        nodes = jobs[j][1]
        for v in succ(j, u, it):
            msgs.append([nodes[v], sizes(j, it, u, v), j, v, it])
            for _ in range(msgs[-1][1]):
                in_q[nodes[u]].append(len(msgs) - 1)
            try_route(nodes[u], t)
        if arrived.get((j, u, it), 0) == expected(j, u, it):
            compute(j, u, t)

    for j, job in enumerate(jobs):
        push(job[0], 5, ("start", j))
    while heap:
        t, _p, _s, (what, x) = heapq.heappop(heap)
        if what == "start":
            for u in range(len(jobs[x][1])):
                state[(x, u)] = {"iter": 0, "post": t, "origin": t, "k0": 0}
            for u in range(len(jobs[x][1])):
                begin(x, u, 0, t)
        elif what == "link":
            m, link[x] = link[x], None
            d2 = link_dst[x]
            in_q[d2].append(m)
            try_route(d2, t)
            try_link(x, t)
        elif what == "route":
            m, router[x] = router[x], None
            dst, _, j, v, it = msgs[m]
            if x == dst:
                msgs[m][1] -= 1
                if msgs[m][1] == 0:
                    arrived[(j, v, it)] = arrived.get((j, v, it), 0) + 1
                    s = state[(j, v)]
                    if s["iter"] == it and arrived[(j, v, it)] == expected(j, v, it):
                        compute(j, v, t)
            else:
                l = next_link[x][dst]
                link_q[l].append(m)
                try_link(l, t)
            try_route(x, t)
        else:
            j, u = x
            s = state[(j, u)]
            if s["iter"] + 1 < jobs[j][2]:
                begin(j, u, s["iter"] + 1, t)
            else:
                left[j] -= 1
                if left[j] == 0:
                    end[j] = t
    return end


def shared_nodes(start, end, allocs):
    """Pairs of jobs that run at the same time on a common node (brute force over all pairs).

    A topology-aware method gives each job whole nodes, so two jobs overlapping in time
    [start, end) must have disjoint node sets. Returns the offending (j, k, nodes) triples."""
    bad = []
    n = len(start)
    for j in range(n):
        for k in range(j + 1, n):
            if start[j] < end[k] and start[k] < end[j]:
                common = set(int(x) for x in allocs[j]) & set(int(x) for x in allocs[k])
                if common:
                    bad.append((j, k, sorted(common)))
    return bad
