"""Slow, obvious Python oracles for the cluster queue policies (cores only, speed 1).

Jobs are (submit, cores, estimate, run) in queue order; the machine has ``m`` cores.
Semantics as the spec and the peer: all events of a time (ends, arrivals), then one
scheduling pass; conservative also wakes up at reservation times. Free cores in the
future are recomputed from scratch from the list of windows every time they are needed.
"""
from __future__ import annotations

import math


def _events_loop(jobs, m, policy):
    n = len(jobs)
    start = [None] * n
    end = [None] * n
    bound = [None] * n
    res = [None] * n
    queue: list[int] = []
    pending = {j[0] for j in jobs}
    nxt = 0

    def running_at(t):
        return [k for k in range(n) if start[k] is not None and start[k] <= t < end[k]]

    while True:
        if not pending:
            break
        now = min(pending)
        pending.discard(now)
        arrived = [k for k in range(nxt, n) if jobs[k][0] == now]
        nxt += len(arrived)
        queue.extend(arrived)
        ended_early = any(end[k] == now and start[k] + jobs[k][2] > now for k in range(n) if end[k] is not None)
        free = m - sum(jobs[k][1] for k in running_at(now))
        newly = []
        if policy == "fcfs":
            while queue and jobs[queue[0]][1] <= free:
                newly.append(queue.pop(0))
                free -= jobs[newly[-1]][1]
        elif policy == "mpfs_scan":
            order = sorted(queue, key=lambda k: (-jobs[k][1], k))
            for k in order:
                if jobs[k][1] <= free:
                    newly.append(k)
                    free -= jobs[k][1]
                    queue.remove(k)
        elif policy == "easy":
            newly = _easy(jobs, m, now, queue, start, end, free, bound)
        else:
            newly = _conservative(jobs, m, now, queue, start, end, res, bound, arrived, ended_early, pending)
        for k in newly:
            start[k] = now
            end[k] = now + jobs[k][3]
            pending.add(end[k])
    return start, end, bound


def _easy(jobs, m, now, queue, start, end, free, bound):
    newly = []
    while queue and jobs[queue[0]][1] <= free:
        k = queue.pop(0)
        newly.append(k)
        free -= jobs[k][1]
    if not queue:
        return newly
    head = queue[0]
    running = [k for k in range(len(jobs)) if start[k] is not None and start[k] <= now < end[k]] + newly
    est_end = {k: (start[k] if start[k] is not None else now) + jobs[k][2] for k in running}
    # shadow: the earliest estimated end t at which free + all jobs ending by t >= head's cores
    shadow, extra = math.inf, 0
    for t in sorted(set(est_end.values())):
        avail = free + sum(jobs[k][1] for k in running if est_end[k] <= t)
        if avail >= jobs[head][1]:
            shadow, extra = t, avail - jobs[head][1]
            break
    if bound[head] is None:
        bound[head] = shadow
    for k in list(queue[1:]):
        c, e = jobs[k][1], jobs[k][2]
        if c <= free and (now + e <= shadow or c <= extra):
            if now + e > shadow:
                extra -= c
            free -= c
            queue.remove(k)
            newly.append(k)
    return newly


def _free_at(t, windows, m):
    return m - sum(c for (a, b, c) in windows if a <= t < b)


def _fits(s, c, d, windows, m):
    points = [s] + [a for (a, b, _) in windows if s < a < s + d]
    return all(_free_at(p, windows, m) >= c for p in points)


def _earliest(now, c, d, windows, m):
    cands = sorted({now} | {b for (_, b, _) in windows if b > now})
    for s in cands:
        if _fits(s, c, d, windows, m):
            return s
    raise AssertionError("no fit")


def _conservative(jobs, m, now, queue, start, end, res, bound, arrived, ended_early, pending):
    n = len(jobs)
    running = [(start[k], start[k] + jobs[k][2], jobs[k][1]) for k in range(n)
               if start[k] is not None and end[k] > now]
    windows = {k: (res[k], res[k] + jobs[k][2], jobs[k][1]) for k in queue if res[k] is not None}
    todo = list(queue) if ended_early else list(arrived)
    for k in todo:
        windows.pop(k, None)
        others = running + list(windows.values())
        s = _earliest(now, jobs[k][1], jobs[k][2], others, m)
        assert res[k] is None or s <= res[k]
        res[k] = s
        if bound[k] is None:
            bound[k] = s
        windows[k] = (s, s + jobs[k][2], jobs[k][1])
        if s > now:
            pending.add(s)
    newly = [k for k in queue if res[k] == now]
    for k in newly:
        queue.remove(k)
    return newly


def simulate(jobs, m, policy):
    """Start, end and guaranteed start (EASY first shadow, conservative first reservation) per job."""
    return _events_loop(jobs, m, policy)
