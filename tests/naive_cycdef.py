"""Plain-Python oracle for the cyclic conflict-free search (workloads/cyclic/dp.py ``_feasible``):
the counting version it replaced (per alternative, how many chosen ones conflict with
it; per job, how many are left), tries counted the same way. The bitset kernel must make the
same tries in the same order, so it returns the same ``(choice, found, complete)`` at any
``limit``, capped searches included."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


def cross_job(conflict: np.ndarray, sizes) -> np.ndarray:
    """``conflict`` made symmetric and kept only between alternatives of different jobs (job i
    owns ``sizes[i]`` consecutive alternatives): the shape of every conflict matrix the
    combination step sees."""
    owner = np.repeat(np.arange(len(sizes)), sizes)
    return (conflict | conflict.T) & (owner[:, None] != owner[None, :])


def drawn_call(data, sizes):
    """A random call of the conflict-free search drawn by hypothesis: ``(offsets, key, gq, G,
    conflict)``, job i owning ``sizes[i]`` alternatives, keys and levels 1-12, a cross-job
    conflict matrix of density 0.15, 0.35 or 0.6, and a limit between a third of the levels'
    sum and all of it."""
    from schedsweep.workloads.cyclic.dp import levels

    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    A = int(offsets[-1])
    key = np.array(data.draw(st.lists(st.integers(1, 12).map(float), min_size=A, max_size=A)))
    gq = levels(np.array(data.draw(st.lists(st.integers(1, 12).map(float), min_size=A, max_size=A))), 1.0)
    density = data.draw(st.sampled_from([0.15, 0.35, 0.6]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    conflict = cross_job(rng.random((A, A)) < density, sizes)
    G = np.int64(data.draw(st.integers(int(gq.sum()) // 3, int(gq.sum()))))
    return offsets, key, gq, G, conflict


def slot_call(rng, J, nodes, horizon):
    """A call shaped like the workload's: each alternative holds ``n_i`` of ``nodes`` nodes over
    an interval of its job's length; two alternatives of different jobs conflict when they share a
    node at overlapping times. ``(offsets, conflict)``."""
    sizes = rng.integers(3, 7, J)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    owner = np.repeat(np.arange(J), sizes)
    n_i, length = rng.integers(1, 4, J), rng.integers(2, 5, J)
    use = np.zeros((len(owner), nodes), bool)
    for a, i in enumerate(owner):
        use[a, rng.choice(nodes, n_i[i], replace=False)] = True
    start, ln = rng.integers(0, horizon, len(owner)), length[owner]
    share = (use[:, None, :] & use[None, :, :]).any(-1)
    overlap = (start[:, None] < start[None, :] + ln[None, :]) & (start[None, :] < start[:, None] + ln[:, None])
    return offsets, share & overlap & (owner[:, None] != owner[None, :])


def counting_feasible(offsets, key, gq, G, conflict, limit, weighted=False):
    """A conflict-free combination with total level <= ``G``: ``(choice, found, complete)``.

    Depth-first with forward checking: the next job is the one with the fewest alternatives
    left that conflict with none chosen (ties: priority order), its alternatives tried by
    ascending ``key``; a choice is undone at once when it leaves some job without an
    alternative or when its level plus the smallest levels of the jobs still open exceeds
    ``G``. Stops after ``limit`` choices tried (complete False). ``choice`` indexes each job's
    own list. ``weighted``: dom/wdeg, a try that leaves open jobs without an alternative raises
    the weight of the first of them by 1, and the next job is the one with the fewest alternatives
    left per weight.
    """
    J = offsets.shape[0] - 1
    A = offsets[J]
    choice = np.full(J, -1, np.int64)
    if J == 0:
        return choice, True, True
    owner = np.empty(A, np.int64)
    mn = np.empty(J, np.int64)
    width = 1
    rest = 0
    for i in range(J):
        mn[i] = gq[offsets[i]]
        for a in range(offsets[i], offsets[i + 1]):
            owner[a] = i
            mn[i] = min(mn[i], gq[a])
        width = max(width, offsets[i + 1] - offsets[i])
        rest += mn[i]
    if rest > G:
        return choice, False, True
    # conflict lists (CSR)
    deg = np.zeros(A + 1, np.int64)
    for a in range(A):
        for b in range(A):
            if conflict[a, b]:
                deg[a + 1] += 1
    for a in range(A):
        deg[a + 1] += deg[a]
    adj = np.empty(deg[A], np.int64)
    fill = deg[:A].copy()
    for a in range(A):
        for b in range(A):
            if conflict[a, b]:
                adj[fill[a]] = b
                fill[a] += 1
    blocked = np.zeros(A, np.int64)
    alive = np.empty(J, np.int64)
    for i in range(J):
        alive[i] = offsets[i + 1] - offsets[i]
    open_ = np.ones(J, np.bool_)
    weight = np.ones(J, np.float64)
    job_at = np.full(J, -1, np.int64)
    cand = np.empty((J, width), np.int64)
    ncand = np.zeros(J, np.int64)
    pos = np.zeros(J, np.int64)
    picked = np.full(J, -1, np.int64)
    gsum = 0
    d = 0
    entering = True
    tried = 0
    while True:
        if d == J:
            for e in range(J):
                choice[job_at[e]] = picked[e] - offsets[job_at[e]]
            return choice, True, True
        if entering:
            j = -1
            for i in range(J):
                if open_[i] and (j < 0 or alive[i] / weight[i] < alive[j] / weight[j]):
                    j = i
            job_at[d] = j
            c = 0
            for a in range(offsets[j], offsets[j + 1]):
                if blocked[a] == 0:
                    cand[d, c] = a
                    c += 1
            keys = np.empty(c, np.float64)
            for p in range(c):
                keys[p] = key[cand[d, p]]
            srt = np.argsort(keys, kind="mergesort")
            tmp = cand[d, :c].copy()
            for p in range(c):
                cand[d, p] = tmp[srt[p]]
            ncand[d] = c
            pos[d] = 0
            open_[j] = False
            rest -= mn[j]
            entering = False
        else:
            a = picked[d]           # undo the choice at this depth, try the next
            for p in range(deg[a], deg[a + 1]):
                b = adj[p]
                blocked[b] -= 1
                if blocked[b] == 0:
                    alive[owner[b]] += 1
            gsum -= gq[a]
            picked[d] = -1
            pos[d] += 1
        j = job_at[d]
        went = False
        while pos[d] < ncand[d]:
            tried += 1
            if tried > limit:
                return choice, False, False
            a = cand[d, pos[d]]
            if blocked[a] > 0 or gsum + gq[a] + rest > G:
                pos[d] += 1
                continue
            ok = True
            for p in range(deg[a], deg[a + 1]):
                b = adj[p]
                if blocked[b] == 0:
                    alive[owner[b]] -= 1
                    if open_[owner[b]] and alive[owner[b]] == 0:
                        ok = False
                blocked[b] += 1
            if not ok:
                if weighted:
                    weight[next(k for k in range(J) if open_[k] and alive[k] == 0)] += 1.0
                for p in range(deg[a], deg[a + 1]):
                    b = adj[p]
                    blocked[b] -= 1
                    if blocked[b] == 0:
                        alive[owner[b]] += 1
                pos[d] += 1
                continue
            picked[d] = a
            gsum += gq[a]
            went = True
            break
        if went:
            d += 1
            entering = True
            continue
        open_[j] = True          # no alternative of this job fits: back up one depth
        rest += mn[j]
        d -= 1
        if d < 0:
            return choice, False, True


def documented_choice(offsets, v, g, maximize, conflict):
    """``(choice, flagged, rule)`` of ``dp.choose`` with conflicts, by brute force over every combination,
    as its docstring states the rules (integer levels at resolution 1; for calls small enough that
    every search completes):

    - no conflict-free combination of every job: jobs in priority order take their
      least-quantity alternative (ties: lower index) conflicting with none taken before; a job
      with none left is postponed (-1); flagged;
    - else, none within the limit: the conflict-free combination of every job found first by the
      search in the order "fewest conflicts first, then smallest quantity" (the counting search
      above); flagged;
    - else the optimum over conflict-free combinations within the limit; ties: the combination
      the feasibility search (alternatives by best value first) finds first if it is optimal,
      else the first optimal one in priority order, alternatives in index order.
    """
    import itertools
    import math

    offsets = np.asarray(offsets, np.int64)
    J = len(offsets) - 1
    g = np.asarray(g, np.float64)
    v = np.asarray(v, np.float64)
    gq = np.ceil(g).astype(np.int64)
    G = int(math.floor(float(np.floor(np.add.reduceat(g, offsets[:-1]) / np.diff(offsets)).sum())))

    def clean(combo):
        return not any(conflict[a, b] for a, b in itertools.combinations(combo, 2))

    combos = list(itertools.product(*[range(offsets[i], offsets[i + 1]) for i in range(J)]))
    free = [c for c in combos if clean(c)]
    if not free:
        choice, taken = np.full(J, -1, np.int64), []
        for i in range(J):
            rows = sorted(range(offsets[i], offsets[i + 1]), key=lambda a: (g[a], a))
            ok = [a for a in rows if not any(conflict[a, b] for b in taken)]
            if ok:
                taken.append(ok[0])
                choice[i] = ok[0] - offsets[i]
        return choice, True, "greedy"
    within = [c for c in free if sum(gq[a] for a in c) <= G]
    if not within:
        degree = conflict.sum(axis=1).astype(np.float64)
        loose = degree * (float(np.abs(g).max()) + 1.0) + g
        choice, found, complete = counting_feasible(offsets, loose, gq, np.int64(gq.sum()), conflict, 10**9)
        assert found and complete
        return choice, True, "found first"
    sign = 1.0 if maximize else -1.0
    best = max(sign * sum(v[a] for a in c) for c in within)
    start, found, complete = counting_feasible(offsets, -sign * v, gq, np.int64(G), conflict, 10**9)
    assert found and complete
    first = next(c for c in within if sign * sum(v[a] for a in c) == best)
    first = np.array([a - offsets[i] for i, a in enumerate(first)], np.int64)
    if sign * sum(v[offsets[i] + start[i]] for i in range(J)) == best:
        return start, False, ("start" if np.array_equal(first, start) else "start, not the first optimum")
    return first, False, "first optimum"
