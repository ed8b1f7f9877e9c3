"""A plain-Python desktop-grid simulator: the obvious loop, no heaps, no numba.

It takes the same precomputed inputs as the kernel (availability changes, LP eligibility
per key, the policy's CPU estimates) and the random generators in the same state, draws
in the same order (first inter-arrival; per arrival: class uniform, work, next
inter-arrival; per interrupted task: a fresh work), and applies the rules of
``docs/models/desktop_grid.md`` written out directly. Constant CPU availability only.
"""
from __future__ import annotations

import math

import numpy as np
import pulp


def _work(rng, work_dist):
    if work_dist == "exponential":
        return rng.exponential(1.0)
    if work_dist == "uniform":
        return rng.uniform(0.0, 2.0)
    return 1.0


def naive_simulate(policy, mu_nom, a_true, view0, alpha, changes, elig, arr_rng, work_rng,
                   rework_rng, horizon, warmup=0.0, work_dist="exponential", requeue_now=False):
    """Return ``(sum_w per class, count per class, resubmissions, events)``.

    ``changes``: list of (time, machine, up, key, view); ``elig[key][i][j]`` truthy when
    machine j may take class i.
    """
    n, m = len(mu_nom), len(mu_nom[0])
    total = sum(alpha)
    cdf, acc = [], 0.0
    for a in alpha:
        acc += a
        cdf.append(acc / total)
    lp = policy in ("lpas_dg", "lpas_dg_robust")
    view = list(view0)
    available = [True] * m
    running = [None] * m        # task dict or None
    finish = [math.inf] * m
    idle = [True] * m
    idle_since = [0.0] * m
    waiting = []                # tasks: dict(arr, seq, cls, work)
    key = 0
    sum_w, cnt = [0.0] * n, [0] * n
    resub = events = seq = 0
    next_arrival = arr_rng.exponential(1.0 / total)
    c = 0

    def mu_view(i, j):
        return mu_nom[i][j] * view[j]

    def start(j, task, now):
        idle[j] = False
        running[j] = task
        finish[j] = now + task["work"] / (mu_nom[task["cls"]][j] * a_true[j])

    def dispatch(task, now):
        i = task["cls"]
        cands = [j for j in range(m) if idle[j] and elig[key][i][j]]
        if not cands:
            waiting.append(task)
            return
        if policy == "fcfs":
            best = min(cands, key=lambda j: (idle_since[j], j))
        else:
            best = min(cands, key=lambda j: (-mu_view(i, j), idle_since[j], j))
        start(best, task, now)

    def pull(j, now):
        cands = [t for t in waiting if elig[key][t["cls"]][j]]
        if not cands:
            return
        oldest = {}
        for t in cands:
            i = t["cls"]
            if i not in oldest or (t["key"], t["seq"]) < (oldest[i]["key"], oldest[i]["seq"]):
                oldest[i] = t
        if policy == "fcfs":
            chosen = min(oldest.values(), key=lambda t: (t["key"], t["seq"]))
        else:
            best_i, best_v = None, None
            for i in sorted(oldest):
                v = mu_view(i, j)
                if policy != "pst":
                    v = v * (now - oldest[i]["key"])
                if best_v is None or v > best_v:
                    best_i, best_v = i, v
            chosen = oldest[best_i]
        waiting.remove(chosen)
        start(j, chosen, now)

    while True:
        cands = [(next_arrival, 0), (changes[c][0] if c < len(changes) else math.inf, 1)]
        cands += [(finish[j], 2 + j) for j in range(m)]
        now, slot = min(cands)
        if now > horizon:
            break
        events += 1
        if slot == 0:
            u = arr_rng.random()
            i = 0
            while i < n - 1 and u > cdf[i]:
                i += 1
            task = {"arr": now, "key": now, "seq": seq, "cls": i, "work": _work(work_rng, work_dist)}
            seq += 1
            next_arrival = now + arr_rng.exponential(1.0 / total)
            dispatch(task, now)
        elif slot == 1:
            _, j, up, key, v = changes[c]
            c += 1
            if up:
                available[j] = True
                view[j] = v
                idle[j] = True
                idle_since[j] = now
                for jj in (range(m) if lp else [j]):
                    if idle[jj]:
                        pull(jj, now)
            else:
                available[j] = False
                idle[j] = False
                task = running[j]
                running[j], finish[j] = None, math.inf
                if task is not None:
                    resub += 1
                    task["work"] = _work(rework_rng, work_dist)
                    if requeue_now:
                        task["key"] = now
                    dispatch(task, now)
                if lp:
                    for jj in range(m):
                        if idle[jj]:
                            pull(jj, now)
        else:
            j = slot - 2
            task = running[j]
            running[j], finish[j] = None, math.inf
            if now >= warmup:
                sum_w[task["cls"]] += now - task["arr"]
                cnt[task["cls"]] += 1
            idle[j] = True
            idle_since[j] = now
            pull(j, now)
    return sum_w, cnt, resub, events


# The allocation LP of workloads/desktop_grid/lp.py stated the obvious way, with pulp
def pulp_problem(mu: np.ndarray, alpha: np.ndarray, available: np.ndarray | None = None):
    """The allocation LP stated with pulp: ``(problem, lambda variable, {(i, j): delta})``."""
    n, m = mu.shape
    up = range(m) if available is None else np.flatnonzero(available)
    prob = pulp.LpProblem("lpas_dg", pulp.LpMaximize)
    lam = pulp.LpVariable("lam", lowBound=0)
    d = {(i, j): pulp.LpVariable(f"d_{i}_{j}", lowBound=0) for i in range(n) for j in up}
    prob += lam
    for i in range(n):
        prob += pulp.lpSum(float(mu[i, j]) * d[i, j] for j in up) >= float(alpha[i]) * lam, f"class_{i}"
    for j in up:
        prob += pulp.lpSum(d[i, j] for i in range(n)) <= 1, f"machine_{j}"
    return prob, lam, d


def solve_pulp(mu: np.ndarray, alpha: np.ndarray, available: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Solve the pulp statement with HiGHS (through pulp): ``(lambda*, delta (N, M))``."""
    prob, lam, d = pulp_problem(mu, alpha, available)
    prob.solve(pulp.HiGHS(msg=False))
    if pulp.LpStatus[prob.status] != "Optimal":
        raise RuntimeError(f"allocation LP: pulp/HiGHS status {pulp.LpStatus[prob.status]}")
    delta = np.zeros(mu.shape)
    for (i, j), var in d.items():
        delta[i, j] = var.value() or 0.0
    return float(lam.value()), delta
