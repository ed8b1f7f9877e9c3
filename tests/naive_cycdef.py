"""Plain-Python oracle for the cyclic conflict-free search (workloads/cyclic/dp.py ``_feasible``):
the counting version it replaced on 26 Nov (per alternative, how many chosen ones conflict with
it; per job, how many are left), tries counted the same way. The bitset kernel must make the
same tries in the same order, so it returns the same ``(choice, found, complete)`` at any
``limit``, capped searches included."""
from __future__ import annotations

import numpy as np


def counting_feasible(offsets, key, gq, G, conflict, limit):
    """A conflict-free combination with total level <= ``G``: ``(choice, found, complete)``.

    Depth-first with forward checking: the next job is the one with the fewest alternatives
    left that conflict with none chosen (ties: priority order), its alternatives tried by
    ascending ``key``; a choice is undone at once when it leaves some job without an
    alternative or when its level plus the smallest levels of the jobs still open exceeds
    ``G``. Stops after ``limit`` choices tried (complete False). ``choice`` indexes each job's
    own list.
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
                if open_[i] and (j < 0 or alive[i] < alive[j]):
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
