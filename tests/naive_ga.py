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
