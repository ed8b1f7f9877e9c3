"""Slow, obvious reference code for the ``ga`` workload's tests (plain Python, no numba)."""
from __future__ import annotations

import itertools
import math

import numpy as np


def unit_lists(body, header) -> list[list[int]]:
    """The processes of each unit in execution order."""
    out, i = [], 0
    for n in header:
        out.append([int(u) for u in body[i:i + int(n)]])
        i += int(n)
    return out


def procs_of(problem) -> list[list[int]]:
    first, out = 0, []
    for w in problem.width:
        out.append(list(range(first, first + int(w))))
        first += int(w)
    return out


def naive_timing(problem, body, header):
    """Semi-active timing by relaxation; None if the unit orders and dependencies cycle."""
    units = unit_lists(body, header)
    job_of = [j for j, ps in enumerate(procs_of(problem)) for _ in ps]
    where = {u: (m, i) for m, lst in enumerate(units) for i, u in enumerate(lst)}
    J = len(problem.width)
    dur = [0.0] * J
    for j, ps in enumerate(procs_of(problem)):
        dur[j] = problem.length[j] / min(problem.speed[where[u][0]] for u in ps)
    start: dict[int, float] = {}
    for _ in range(J + 1):
        changed = False
        for j, ps in enumerate(procs_of(problem)):
            if j in start:
                continue
            p = int(problem.pred[j])
            if p >= 0 and p not in start:
                continue
            t, ready = -math.inf, True
            for u in ps:
                m, i = where[u]
                if i == 0:
                    t = max(t, problem.ready[m])
                else:
                    before = job_of[units[m][i - 1]]
                    if before not in start:
                        ready = False
                        break
                    t = max(t, start[before] + dur[before])
            if not ready:
                continue
            if p >= 0:
                t = max(t, start[p] + dur[p])
            start[j] = t
            changed = True
        if not changed:
            break
    if len(start) < J:
        return None
    return np.array([start[j] for j in range(J)]), np.array(dur)


def check_schedule(problem, body, header, start, dur) -> list[str]:
    """Every consistency rule of the spec, checked directly; the list of violations."""
    errs = []
    units = unit_lists(body, header)
    placed = sorted(u for lst in units for u in lst)
    if placed != list(range(int(problem.width.sum()))):
        return ["not every process exactly once"]
    unit_of = {u: m for m, lst in enumerate(units) for u in lst}
    job_of = [j for j, ps in enumerate(procs_of(problem)) for _ in ps]
    for j, ps in enumerate(procs_of(problem)):
        ms = [unit_of[u] for u in ps]
        if len(set(ms)) != len(ms):
            errs.append(f"job {j} twice on one unit")
        if len({int(problem.group[m]) for m in ms}) != 1:
            errs.append(f"job {j} spans groups")
        if not all(problem.mask[j, m] for m in ms):
            errs.append(f"job {j} violates its mask")
        if not math.isclose(dur[j], problem.length[j] / min(problem.speed[m] for m in ms), rel_tol=1e-12):
            errs.append(f"job {j} has the wrong length")
        p = int(problem.pred[j])
        if p >= 0 and start[j] < start[p] + dur[p]:
            errs.append(f"job {j} starts before its predecessor {p} ends")
    for m, lst in enumerate(units):
        t = problem.ready[m]
        if lst and not (t >= problem.period_end and (math.isnan(problem.prev_end[m]) or t >= problem.prev_end[m])):
            errs.append(f"unit {m} ready time before docking point")
        for u in lst:
            j = job_of[u]
            if start[j] < t:
                errs.append(f"unit {m}: job {j} overlaps the previous slot or the idle gene")
            t = start[j] + dur[j]
    return errs


def naive_log_gmean(problem, body, header, dur) -> float:
    """log of (prod over used units of sum_l p_l**d * |s_l|) ** (1 / C)."""
    job_of = [j for j, ps in enumerate(procs_of(problem)) for _ in ps]
    total = 0.0
    for lst in unit_lists(body, header):
        if lst:
            total += math.log(sum(int(problem.prio[job_of[u]]) ** (d + 1) * dur[job_of[u]]
                                  for d, u in enumerate(lst)))
    return total / len(header)


def naive_tau(problem, body, header, start) -> float:
    job_of = [j for j, ps in enumerate(procs_of(problem)) for _ in ps]
    return sum(start[job_of[lst[0]]] - problem.prev_end[m]
               for m, lst in enumerate(unit_lists(body, header)) if lst and not math.isnan(problem.prev_end[m]))


def naive_objective(problem, body, header, objective: str):
    """The objective of a chromosome, or None if it cannot be timed."""
    timing = naive_timing(problem, body, header)
    if timing is None:
        return None
    start, dur = timing
    if objective == "gmean":
        return naive_log_gmean(problem, body, header, dur)
    if objective == "makespan":
        return max(start + dur) - problem.period_end
    w = problem.prio * problem.width
    return float(sum(w * (start + dur - problem.period_end)) / sum(w))


def brute_force(problem, objective: str):
    """Lexicographic minimum of (tau, objective) over every chromosome of a non-parallel
    problem: every order of the processes cut into the units in every way."""
    N, C = int(problem.width.sum()), len(problem.speed)
    best = None
    for perm in itertools.permutations(range(N)):
        for cuts in itertools.combinations_with_replacement(range(N + 1), C - 1):
            bounds = (0, *cuts, N)
            header = np.array([bounds[i + 1] - bounds[i] for i in range(C)])
            body = np.array(perm)
            if not all(problem.mask[int(problem.proc_job[u]), m]
                       for m, lst in enumerate(unit_lists(body, header)) for u in lst):
                continue
            timing = naive_timing(problem, body, header)
            if timing is None:
                continue
            value = (naive_tau(problem, body, header, timing[0]), naive_objective(problem, body, header, objective))
            if best is None or value < best:
                best = value
    return best


def naive_fcfs(problem):
    """FCFS with the mask, in plain Python: ``(start[J], units of each job)``."""
    C = len(problem.speed)
    free = [float(x) for x in problem.ready]
    start, dur, units_of = [], [], []
    for j in range(len(problem.width)):
        w = int(problem.width[j])
        p = int(problem.pred[j])
        earliest = start[p] + dur[p] if p >= 0 else -math.inf
        best = None
        for g in sorted(set(int(x) for x in problem.group)):
            allowed = [m for m in range(C) if problem.group[m] == g and problem.mask[j, m]]
            if len(allowed) < w:
                continue
            t = max(sorted(free[m] for m in allowed)[w - 1], earliest)
            if best is None or t < best[0]:
                best = (t, g, allowed)
        t, g, allowed = best
        if w == 1:   # the allowed unit free earliest, lowest index on ties, over all groups
            t = min(max(free[m], earliest) for m in range(C) if problem.mask[j, m])
            units = [min(m for m in range(C) if problem.mask[j, m] and max(free[m], earliest) == t)]
        else:        # the w fastest allowed units of the group free by t
            ready_units = sorted((-problem.speed[m], m) for m in allowed if free[m] <= t)
            units = sorted(m for _, m in ready_units[:w])
        d = problem.length[j] / min(problem.speed[m] for m in units)
        for m in units:
            free[m] = t + d
        start.append(t)
        dur.append(d)
        units_of.append(units)
    return np.array(start), units_of


def naive_backfill(problem):
    """The source's Backfill with our tie rules, in plain Python: ``(start[J], units)``."""
    C, J = len(problem.speed), len(problem.width)
    free = [float(x) for x in problem.ready]
    start, dur, units_of = [None] * J, [0.0] * J, [None] * J
    while any(s is None for s in start):
        windows = {}
        for m in range(C):
            windows.setdefault((int(problem.group[m]), free[m]), []).append(m)
        order = sorted(windows, key=lambda k: (-len(windows[k]), k[1], k[0]))
        placed = False
        for g, t in order:
            best = None
            for j in range(J):
                p = int(problem.pred[j])
                if start[j] is not None or (p >= 0 and (start[p] is None or start[p] + dur[p] > t)):
                    continue
                ok = [m for m in windows[(g, t)] if problem.mask[j, m]]
                if len(ok) < problem.width[j]:
                    continue
                if best is None or (problem.width[j], problem.length[j]) > (problem.width[best], problem.length[best]):
                    best = j
            if best is None:
                continue
            j = best
            ok = sorted((-problem.speed[m], m) for m in windows[(g, t)] if problem.mask[j, m])
            units = sorted(m for _, m in ok[:problem.width[j]])
            start[j], dur[j], units_of[j] = t, problem.length[j] / min(problem.speed[m] for m in units), units
            for m in units:
                free[m] = t + dur[j]
            placed = True
            break
        if not placed:
            low = min(free)
            nxt = min(f for f in free if f > low)
            free = [nxt if f == low else f for f in free]
    return np.array(start), units_of
