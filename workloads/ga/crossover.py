"""Crossover (source; details our rule) and the re-placement of the processes it drops.

The child is assembled from segments of both parents between two break points over unit
indices; processes already placed are dropped, and whatever is missing is put back:
parallel jobs by mask-Backfill into the child's idle gaps (:func:`_backfill_missing`, also
used by compaction), non-parallel processes by mask-FCFS on the unit loads
(:func:`_append_missing`).
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import inline_kernel, kernel
from .sorting import argsort, sort_ints, wth_smallest_in_group


@kernel
def crossover(body_a, header_a, body_b, header_b, P, rng, body, header, scratch):
    """Two-point crossover over unit indices (source; details our rule).

    Break points ``c1 < c2`` are uniform; the child takes parent B's units ``c1 .. c2-1``
    and parent A's other units. Walking the units in order, a process already placed is
    dropped. A parallel job whose processes do not all come from one parent is removed.
    Removed parallel jobs are re-placed in arrival order by mask-Backfill into the idle
    gaps of the child (:func:`_backfill_missing`). Missing non-parallel processes are
    appended in arrival order by mask-FCFS on the child's unit loads (``ready`` + sum of
    slot lengths): each to the allowed unit with the least load (ties: lower index). If
    the kept part of a parallel child cannot be timed, its removed jobs are appended the
    same way, to the ``w`` least-loaded allowed units of the group where the ``w``-th
    smallest load is least (the child is then usually inconsistent and dropped). The
    child is written into ``body`` and ``header`` (recomputed).
    """
    C = header_a.shape[0]
    c1 = rng.integers(0, C)
    c2 = rng.integers(c1 + 1, C + 1)
    if P[11]:   # every job non-parallel, no dependencies: the same child, fewer passes
        _crossover_simple(body_a, header_a, body_b, header_b, P[0], P[2], P[5], P[8], P[12], c1, c2, body, header,
                          scratch[2], scratch[9], scratch[10], scratch[11])
    else:
        _crossover_general(body_a, header_a, body_b, header_b, P, c1, c2, body, header, scratch)


@inline_kernel
def _crossover_simple(body_a, header_a, body_b, header_b, speed, ready, length, mask, anywhere, c1, c2, body, header,
                      unit_of, missing, load, work):
    """:func:`crossover` between break points ``c1 < c2`` when every job is one process
    (``proc_job[u] == u``) and none has a predecessor; gives exactly the child of
    :func:`_crossover_general`. Kept processes are written straight into ``body`` in walk
    order (which is unit order); then, if some are missing, the loads are summed in
    process order as :func:`_append_missing` does, the missing processes are placed by
    the same rule (least load, ties to the lower index), each unit's kept segment is moved
    right to its final offset and the appended processes fill the gaps. Work arrays:
    ``unit_of[N]``, ``missing[N]``, ``load[C]``, ``work[2C]`` (scratch 2, 9, 10, 11)."""
    C = header_a.shape[0]
    N = body_a.shape[0]
    kept_n = work[:C]            # kept processes per unit
    added = work[C:2 * C]        # appended processes per unit
    unit_of[:] = -1
    s = 0
    lo_a = 0
    lo_b = 0
    for m in range(C):
        if c1 <= m < c2:
            parent = body_b
            lo = lo_b
            hi = lo + header_b[m]
        else:
            parent = body_a
            lo = lo_a
            hi = lo + header_a[m]
        lo_a += header_a[m]
        lo_b += header_b[m]
        k0 = s
        for i in range(lo, hi):
            u = parent[i]
            if unit_of[u] < 0:
                unit_of[u] = m
                body[s] = u
                s += 1
        kept_n[m] = s - k0
    if s == N:
        for m in range(C):
            header[m] = kept_n[m]
        return
    load[:] = 0.0
    n_miss = 0
    for u in range(N):
        m = unit_of[u]
        if m >= 0:
            load[m] += length[u]
        else:
            missing[n_miss] = u
            n_miss += 1
    for m in range(C):
        load[m] = ready[m] + load[m] / speed[m]
        added[m] = 0
    for i in range(n_miss):
        u = missing[i]
        best = -1
        if anywhere[u]:
            best = 0
            for m in range(1, C):
                if load[m] < load[best]:
                    best = m
        else:
            for m in range(C):
                if mask[u, m] and (best < 0 or load[m] < load[best]):
                    best = m
        unit_of[u] = best
        added[best] += 1
        load[best] += length[u] / speed[best]
    # final offsets (computed from the top down) and the kept segments moved right
    end_old = s
    end_new = N
    for m in range(C - 1, -1, -1):
        header[m] = kept_n[m] + added[m]
        start_old = end_old - kept_n[m]
        start_new = end_new - header[m]
        if start_new != start_old:
            for i in range(kept_n[m] - 1, -1, -1):
                body[start_new + i] = body[start_old + i]
        added[m] = start_new + kept_n[m]   # now: where the unit's next appended process goes
        end_old = start_old
        end_new = start_new
    for i in range(n_miss):
        u = missing[i]
        m = unit_of[u]
        body[added[m]] = u
        added[m] += 1


@inline_kernel
def _crossover_general(body_a, header_a, body_b, header_b, P, c1, c2, body, header, scratch):
    """:func:`crossover` between break points ``c1 < c2``, any problem."""
    speed, group, ready, prev_end, width, length, prio, pred, mask, proc_job, job_first, _, anywhere = P
    C = header_a.shape[0]
    N = body_a.shape[0]
    J = width.shape[0]
    unit_of, src, walk, load = scratch[2], scratch[8], scratch[9], scratch[10]
    unit_of[:] = -1
    s = 0   # walk: kept processes in walk order, then appended ones
    lo_a = 0
    lo_b = 0
    for m in range(C):
        from_b = c1 <= m < c2
        parent = body_b if from_b else body_a
        tag = 1 if from_b else 0
        lo = lo_b if from_b else lo_a
        hi = lo + (header_b[m] if from_b else header_a[m])
        lo_a += header_a[m]
        lo_b += header_b[m]
        for i in range(lo, hi):
            u = parent[i]
            if unit_of[u] < 0:
                unit_of[u] = m
                src[u] = tag
                walk[s] = u
                s += 1
    for j in range(J):
        if width[j] == 1:
            continue
        f = job_first[j]
        whole = unit_of[f] >= 0
        for u in range(f + 1, f + width[j]):
            if unit_of[u] < 0 or src[u] != src[f]:
                whole = False
        if not whole:
            for u in range(f, f + width[j]):
                unit_of[u] = -1
    kept = np.int64(0)   # typed int64 from the start: a literal 0 makes numba compile the callees twice
    for i in range(s):
        if unit_of[walk[i]] >= 0:
            walk[kept] = walk[i]
            kept += 1
    s = kept
    if s < N:
        # parallel jobs are re-placed by mask-Backfill into the idle gaps (source); when
        # that cannot be done (the kept part cannot be timed) or for non-parallel jobs,
        # missing processes are appended by mask-FCFS on the loads
        if P[4].max() > 1 and _backfill_missing(P, unit_of, walk, s, body, header):
            return
        _append_missing(P, unit_of, walk, s, load)
    # a unit's processes keep their walk order, appended ones come last
    header[:] = 0
    for u in range(N):
        header[unit_of[u]] += 1
    fill = scratch[4]
    fill[0] = 0
    for m in range(C):
        fill[m + 1] = fill[m] + header[m]
    for i in range(N):
        u = walk[i]
        body[fill[unit_of[u]]] = u
        fill[unit_of[u]] += 1


@kernel
def _backfill_missing(P, unit_of, walk, s, body, header) -> bool:
    """Insert the missing jobs, in arrival order, into the idle gaps of the kept part.

    The kept processes (``walk[:s]``, per unit in walk order) are timed semi-actively,
    a missing predecessor not constraining (our rule). Each missing job then goes to the
    earliest time ``t`` (after its predecessor's end) at which, in one group, ``w`` allowed
    units are idle from ``t`` for the job's duration; the units idle longest are taken
    (ties: faster, then lower index). A unit's last gap is endless, so a place always
    exists. Writes the child into ``body``/``header``; False if the kept part cannot be
    timed (a cycle), leaving them untouched.
    """
    speed, group, ready, prev_end, width, length, prio, pred, mask, proc_job, job_first, _, anywhere = P
    C = speed.shape[0]
    N = proc_job.shape[0]
    J = width.shape[0]
    cnt = np.zeros(C, np.int64)
    seqs = np.empty((C, N), np.int64)
    kept = np.zeros(J, np.bool_)
    for i in range(s):
        u = walk[i]
        m = unit_of[u]
        seqs[m, cnt[m]] = u
        cnt[m] += 1
        kept[proc_job[u]] = True
    start = np.full(J, np.nan)
    dur = np.zeros(J)
    remaining = 0
    for j in range(J):
        if kept[j]:
            remaining += 1
            mink = np.inf
            for u in range(job_first[j], job_first[j] + width[j]):
                mink = min(mink, speed[unit_of[u]])
            dur[j] = length[j] / mink
    ptr = np.zeros(C, np.int64)
    avail = ready.copy()
    progress = True
    while progress and remaining > 0:
        progress = False
        for m in range(C):
            while ptr[m] < cnt[m]:
                j = proc_job[seqs[m, ptr[m]]]
                p = pred[j]
                if p >= 0 and kept[p] and np.isnan(start[p]):
                    break
                t = avail[m]
                at_heads = True
                for u in range(job_first[j], job_first[j] + width[j]):
                    m2 = unit_of[u]
                    if ptr[m2] >= cnt[m2] or seqs[m2, ptr[m2]] != u:
                        at_heads = False
                        break
                    t = max(t, avail[m2])
                if not at_heads:
                    break
                if p >= 0 and kept[p]:
                    t = max(t, start[p] + dur[p])
                start[j] = t
                remaining -= 1
                progress = True
                for u in range(job_first[j], job_first[j] + width[j]):
                    avail[unit_of[u]] = t + dur[j]
                    ptr[unit_of[u]] += 1
    if remaining > 0:
        return False
    n_groups = group.max() + 1
    cands = np.empty(N + C + 1)   # predecessor end, ready times, slot ends of one group
    idle_m = np.empty(C, np.int64)
    idle_until = np.empty(C)
    idle_pos = np.empty(C, np.int64)
    for j in range(J):
        if kept[j]:
            continue
        w = width[j]
        p = pred[j]
        pe = start[p] + dur[p] if p >= 0 and not np.isnan(start[p]) else -np.inf
        best_t = np.inf
        best_d = 0.0
        best_units = np.empty(w, np.int64)
        best_pos = np.empty(w, np.int64)
        for g in range(n_groups):
            n_allowed = 0
            nc = 0
            if pe > -np.inf:
                cands[nc] = pe
                nc += 1
            for m in range(C):
                if group[m] == g and mask[j, m]:
                    n_allowed += 1
                    cands[nc] = ready[m]
                    nc += 1
                    for k in range(cnt[m]):
                        cands[nc] = start[proc_job[seqs[m, k]]] + dur[proc_job[seqs[m, k]]]
                        nc += 1
            if n_allowed < w:
                continue
            by_time = argsort(cands[:nc])
            for q in range(nc):
                t = cands[by_time[q]]
                if t < pe or t >= best_t:
                    continue
                n_idle = 0
                for m in range(C):
                    if group[m] != g or not mask[j, m] or t < ready[m]:
                        continue
                    k = 0
                    while k < cnt[m] and start[proc_job[seqs[m, k]]] < t:
                        k += 1
                    if k > 0:
                        jb = proc_job[seqs[m, k - 1]]
                        if start[jb] + dur[jb] > t:
                            continue
                    idle_m[n_idle] = m
                    idle_until[n_idle] = start[proc_job[seqs[m, k]]] if k < cnt[m] else np.inf
                    idle_pos[n_idle] = k
                    n_idle += 1
                if n_idle < w:
                    continue
                key = np.empty(n_idle)
                for i in range(n_idle):
                    key[i] = -speed[idle_m[i]]
                first = argsort(key)           # faster first, then index
                for i in range(n_idle):
                    key[i] = -idle_until[first[i]]
                then = argsort(key)            # idle longest first (stable: then faster, index)
                order = np.empty(n_idle, np.int64)
                for i in range(n_idle):
                    order[i] = first[then[i]]
                mink = np.inf
                for i in range(w):
                    mink = min(mink, speed[idle_m[order[i]]])
                d = length[j] / mink
                fits = True
                for i in range(w):
                    if idle_until[order[i]] < t + d:
                        fits = False
                if fits:
                    best_t = t
                    best_d = d
                    sel = order[:w].copy()
                    sort_ints(sel)   # by unit index
                    for i in range(w):
                        best_units[i] = idle_m[sel[i]]
                        best_pos[i] = idle_pos[sel[i]]
                    break
        if best_t == np.inf:
            return False
        start[j] = best_t
        dur[j] = best_d
        for i in range(w):
            m = best_units[i]
            k = best_pos[i]
            for q in range(cnt[m], k, -1):
                seqs[m, q] = seqs[m, q - 1]
            seqs[m, k] = job_first[j] + i
            cnt[m] += 1
            unit_of[job_first[j] + i] = m
    i = 0
    for m in range(C):
        header[m] = cnt[m]
        for k in range(cnt[m]):
            body[i] = seqs[m, k]
            i += 1
    return True


@kernel
def _lower_load(a, b, load):
    """The unit of lower load (ties: ``a``, the lower index); -1 is an empty leaf."""
    if b < 0:
        return a
    if a < 0:
        return b
    return b if load[b] < load[a] else a


@kernel
def _append_missing(P, unit_of, walk, s, load):
    """Place the jobs whose processes have ``unit_of < 0``, appending them to ``walk``."""
    speed, group, ready, prev_end, width, length, prio, pred, mask, proc_job, job_first, _, anywhere = P
    C = speed.shape[0]
    N = proc_job.shape[0]
    J = width.shape[0]
    load[:] = 0.0
    for u in range(N):
        if unit_of[u] >= 0:
            load[unit_of[u]] += length[proc_job[u]]
    for m in range(C):  # one division per unit: sum of lengths / speed
        load[m] = ready[m] + load[m] / speed[m]
    n_groups = group.max() + 1
    # a min-tree over the unit loads (leaves = units, ties to the lower index) finds the
    # least-loaded unit in O(log C) for jobs allowed everywhere; others scan their mask
    size = 1
    while size < C:
        size *= 2
    tree = np.full(2 * size, -1, np.int64)
    fr = np.empty(C)              # loads of one group's allowed units
    cand = np.empty(C, np.int64)  # those units
    for m in range(C):
        tree[size + m] = m
    for i in range(size - 1, 0, -1):
        tree[i] = _lower_load(tree[2 * i], tree[2 * i + 1], load)
    for j in range(J):
        f = job_first[j]
        if unit_of[f] >= 0:
            continue
        w = width[j]
        if w == 1:
            if anywhere[j]:
                best = tree[1]
            else:
                best = -1
                for m in range(C):
                    if mask[j, m] and (best < 0 or load[m] < load[best]):
                        best = m
            unit_of[f] = best
            walk[s] = f
            s += 1
            load[best] += length[j] / speed[best]
            i = (size + best) // 2
            while i >= 1:
                tree[i] = _lower_load(tree[2 * i], tree[2 * i + 1], load)
                i //= 2
            continue
        best_g = -1
        best_t = np.inf
        for g in range(n_groups):
            wth = wth_smallest_in_group(load, group, g, mask[j], w, fr)   # inf: too few units
            if wth < best_t:
                best_t = wth
                best_g = g
        n = 0
        for m in range(C):
            if group[m] == best_g and mask[j, m]:
                cand[n] = m
                fr[n] = load[m]
                n += 1
        order = argsort(fr[:n])
        chosen = np.empty(w, np.int64)
        for i in range(w):
            chosen[i] = cand[order[i]]
        sort_ints(chosen)
        mink = np.inf
        t = -np.inf
        for m in chosen:
            mink = min(mink, speed[m])
            t = max(t, load[m])
        for i in range(w):
            unit_of[f + i] = chosen[i]
            walk[s] = f + i
            s += 1
            load[chosen[i]] = t + length[j] / mink
