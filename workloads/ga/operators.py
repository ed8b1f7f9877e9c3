"""GA operators on chromosomes, and the numba kernel that evolves one island.

Every operator keeps the chromosome consistent and mask-respecting: a change that would
break the mask is not made, and a change whose unit orders and dependencies form a cycle
(:func:`model.decode` fails) is undone (mutation) or replaced by a copy of the first
parent (crossover). Random draws come only from the island's ``rng``.

* Mutation, non-parallel jobs (source, per gene with probability ``pm``, our rule): the
  gene swaps places with a uniformly chosen other slot of the chromosome if both masks
  allow; slot lengths follow the unit (``|s_h| = |s_m| k_m / k_h``). Hit genes are found
  by geometric skips, which has the per-gene Bernoulli law with one draw per hit.
* Mutation, parallel jobs (source): the job of a hit gene swaps its slot set with a
  uniformly chosen other job of the same width (our rule) if both masks allow; the
  semi-active timing shifts the rest of each unit's schedule. Compaction (source): each
  of the two jobs then moves into the earliest idle gap it fits, if that delays no job
  (:func:`compact_job`).
* Crossover (source, details our rule): two break points over unit indices; see
  :func:`crossover`.
* Selection: tournaments of size 2 (our rule). Elitism: the best ``n_elite`` survive.
"""
from __future__ import annotations

import numba
import numpy as np

from .model import decode_into, segment_starts
from .objectives import better, fitness, tau as docking_gap


@numba.njit(cache=True)
def unit_at_positions(header):
    """The unit of each body position."""
    seg = segment_starts(header)
    out = np.empty(seg[-1], np.int64)
    for m in range(header.shape[0]):
        out[seg[m]:seg[m + 1]] = m
    return out


@numba.njit(cache=True)
def make_scratch(N, C, J):
    """Work arrays shared by the operators: start, dur, unit_of (decode's outputs), then
    decode's own (pos_of, seg, ptr, avail, done) and crossover's (src, walk, load)."""
    return (np.zeros(J), np.zeros(J), np.zeros(N, np.int64), np.zeros(N, np.int64), np.zeros(C + 1, np.int64),
            np.zeros(C, np.int64), np.zeros(C), np.zeros(J, np.bool_), np.zeros(N, np.int64),
            np.zeros(N, np.int64), np.zeros(C))


@numba.njit(cache=True)
def _consistent(body, header, P, scratch) -> bool:
    return decode_into(body, header, P, scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5],
                       scratch[6], scratch[7])


@numba.njit(cache=True)
def _try_gene_swap(body, header, unit_at, P, a, rng, has_deps, scratch) -> bool:
    """Swap the gene at position ``a`` with a random other one (non-parallel jobs)."""
    width, mask, proc_job = P[4], P[8], P[9]
    N = body.shape[0]
    if N < 2:
        return False
    b = rng.integers(0, N - 1)
    if b >= a:
        b += 1
    ja, jb = proc_job[body[a]], proc_job[body[b]]
    if width[ja] != 1 or width[jb] != 1:
        return False
    if not (mask[ja, unit_at[b]] and mask[jb, unit_at[a]]):
        return False
    body[a], body[b] = body[b], body[a]
    if has_deps and not _consistent(body, header, P, scratch):
        body[a], body[b] = body[b], body[a]
        return False
    return True


@numba.njit(cache=True)
def _try_job_swap(body, header, unit_at, P, a, rng, by_width, offsets, index_in_width, scratch) -> bool:
    """Swap the slot set of the job at position ``a`` with a random job of its width."""
    width, mask, proc_job, job_first = P[4], P[8], P[9], P[10]
    ja = proc_job[body[a]]
    w = width[ja]
    lo, hi = offsets[w], offsets[w + 1]
    if hi - lo < 2:
        return False
    k = rng.integers(0, hi - lo - 1)
    if k >= index_in_width[ja]:
        k += 1
    jb = by_width[lo + k]
    pos_a = np.empty(w, np.int64)
    pos_b = np.empty(w, np.int64)
    found_a = 0
    found_b = 0
    for i in range(body.shape[0]):
        j = proc_job[body[i]]
        if j == ja:
            pos_a[body[i] - job_first[ja]] = i
            found_a += 1
        elif j == jb:
            pos_b[body[i] - job_first[jb]] = i
            found_b += 1
    for i in range(w):
        if not (mask[ja, unit_at[pos_b[i]]] and mask[jb, unit_at[pos_a[i]]]):
            return False
    for i in range(w):
        body[pos_a[i]], body[pos_b[i]] = body[pos_b[i]], body[pos_a[i]]
    if not _consistent(body, header, P, scratch):
        for i in range(w):
            body[pos_a[i]], body[pos_b[i]] = body[pos_b[i]], body[pos_a[i]]
        return False
    compact_job(body, header, P, ja, scratch)
    compact_job(body, header, P, jb, scratch)
    return True


@numba.njit(cache=True)
def compact_job(body, header, P, j, scratch) -> bool:
    """Compaction (parallel jobs): move job ``j`` into the earliest idle gap, after its
    predecessor, where it fits (mask-Backfill re-insertion). Kept only if the result is
    consistent, ``j`` starts earlier and no other job starts later; the body and header
    stay in place (a unit's slot counts can change). Returns whether ``j`` moved."""
    proc_job = P[9]
    N = body.shape[0]
    C = header.shape[0]
    if not _consistent(body, header, P, scratch):
        return False
    before = scratch[0].copy()
    unit_of = np.empty(N, np.int64)
    walk = np.empty(N, np.int64)
    s = 0
    i = 0
    for m in range(C):
        for _ in range(header[m]):
            u = body[i]
            i += 1
            if proc_job[u] == j:
                unit_of[u] = -1
            else:
                unit_of[u] = m
                walk[s] = u
                s += 1
    new_b = np.empty_like(body)
    new_h = np.empty_like(header)
    if not _backfill_missing(P, unit_of, walk, s, new_b, new_h):
        return False
    if not _consistent(new_b, new_h, P, scratch):
        return False
    after = scratch[0]
    if not after[j] < before[j]:
        return False
    for k in range(after.shape[0]):
        if after[k] > before[k]:
            return False
    body[:] = new_b
    header[:] = new_h
    return True


@numba.njit(cache=True)
def _try_swap(body, header, unit_at, P, a, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch):
    if parallel:
        return _try_job_swap(body, header, unit_at, P, a, rng, by_width, offsets, index_in_width, scratch)
    return _try_gene_swap(body, header, unit_at, P, a, rng, has_deps, scratch)


@numba.njit(cache=True)
def mutate(body, header, P, pm, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch) -> int:
    """Per-gene mutation with probability ``pm``; returns the number of swaps made."""
    N = body.shape[0]
    if pm <= 0.0 or N == 0:
        return 0
    unit_at = np.empty(0, np.int64)
    done = 0
    a = -1
    while True:
        a += rng.geometric(pm)
        if a >= N:
            break
        if unit_at.shape[0] == 0:  # built on the first hit: most children get none
            unit_at = unit_at_positions(header)
        if _try_swap(body, header, unit_at, P, a, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch):
            done += 1
            if parallel:  # compaction may have changed the header
                unit_at = unit_at_positions(header)
    return done


@numba.njit(cache=True)
def random_swaps(body, header, P, n, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch) -> int:
    """``n`` swap attempts at uniform positions (perturbs the initial individuals)."""
    N = body.shape[0]
    unit_at = unit_at_positions(header)
    done = 0
    for _ in range(n):
        a = rng.integers(0, N)
        if _try_swap(body, header, unit_at, P, a, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch):
            done += 1
            if parallel:  # compaction may have changed the header
                unit_at = unit_at_positions(header)
    return done


@numba.njit(cache=True)
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
    speed, group, ready, prev_end, width, length, prio, pred, mask, proc_job, job_first, _, anywhere = P
    C = header_a.shape[0]
    N = body_a.shape[0]
    J = width.shape[0]
    c1 = rng.integers(0, C)
    c2 = rng.integers(c1 + 1, C + 1)
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
    kept = 0
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


@numba.njit(cache=True)
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
            ts = np.sort(cands[:nc])
            for t in ts:
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
                order = np.argsort(key, kind="mergesort")           # faster first, then index
                order = order[np.argsort(-idle_until[:n_idle][order], kind="mergesort")]  # idle longest first
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
                    sel = np.sort(order[:w])   # by unit index
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


@numba.njit(cache=True)
def _lower_load(a, b, load):
    """The unit of lower load (ties: ``a``, the lower index); -1 is an empty leaf."""
    if b < 0:
        return a
    if a < 0:
        return b
    return b if load[b] < load[a] else a


@numba.njit(cache=True)
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
            fr = np.sort(load[(group == g) & mask[j]])
            if fr.shape[0] >= w and fr[w - 1] < best_t:
                best_t = fr[w - 1]
                best_g = g
        cand = np.where((group == best_g) & mask[j])[0]
        order = np.argsort(load[cand], kind="mergesort")
        chosen = np.sort(cand[order[:w]])
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


@numba.njit(cache=True)
def evaluate(body, header, P, objective, use_tau, period_end, scratch):
    """``(consistent, tau, fitness)``; tau is 0 when docking does not rank (``use_tau``)."""
    start, dur = scratch[0], scratch[1]
    if not _consistent(body, header, P, scratch):
        return False, np.inf, np.inf
    t = docking_gap(body, header, P, start) if use_tau else 0.0
    return True, t, fitness(body, header, P, start, dur, objective, period_end)


@numba.njit(cache=True)
def ranking(taus, fits):
    """Indices from best to worst by ``(tau, fitness)``; ties keep index order."""
    order = np.argsort(fits, kind="mergesort")
    return order[np.argsort(taus[order], kind="mergesort")]


@numba.njit(cache=True)
def _tournament(taus, fits, rng) -> int:
    Z = taus.shape[0]
    i = rng.integers(0, Z)
    j = rng.integers(0, Z)
    return j if better(taus[j], fits[j], taus[i], fits[i]) else i


@numba.njit(cache=True)
def evolve(bodies, headers, taus, fits, P, n_gens, rng, pc, pm, n_elite, objective, use_tau,
           period_end, parallel, has_deps, by_width, offsets, index_in_width, hist_tau, hist_fit, counters):
    """Run ``n_gens`` generations of one island in place.

    ``hist_tau[g], hist_fit[g]`` get the island's best after generation g. ``counters``
    accumulates [evaluations, crossovers, crossover fallbacks to parent A, mutation swaps].
    """
    Z = bodies.shape[0]
    N = bodies.shape[1]
    J = P[4].shape[0]
    scratch = make_scratch(N, headers.shape[1], J)
    # two generations' buffers used in turn; the result is copied back once at the end
    cur_b, cur_h, cur_t, cur_f = bodies, headers, taus, fits
    new_b = np.empty_like(bodies)
    new_h = np.empty_like(headers)
    new_t = np.empty_like(taus)
    new_f = np.empty_like(fits)
    for g in range(n_gens):
        order = ranking(cur_t, cur_f)
        for e in range(n_elite):
            new_b[e] = cur_b[order[e]]
            new_h[e] = cur_h[order[e]]
            new_t[e] = cur_t[order[e]]
            new_f[e] = cur_f[order[e]]
        k = n_elite
        while k < Z:
            a = _tournament(cur_t, cur_f, rng)
            b = _tournament(cur_t, cur_f, rng)
            do_cx = rng.random() < pc
            for child in range(2):
                if k >= Z:
                    break
                p1, p2 = (a, b) if child == 0 else (b, a)
                t, f = cur_t[p1], cur_f[p1]
                copy_parent = True
                if do_cx:
                    crossover(cur_b[p1], cur_h[p1], cur_b[p2], cur_h[p2], P, rng, new_b[k], new_h[k], scratch)
                    counters[1] += 1
                    ok, t2, f2 = evaluate(new_b[k], new_h[k], P, objective, use_tau, period_end, scratch)
                    if ok:
                        counters[0] += 1
                        t, f = t2, f2
                        copy_parent = False
                    else:
                        counters[2] += 1
                if copy_parent:
                    new_b[k] = cur_b[p1]
                    new_h[k] = cur_h[p1]
                swaps = mutate(new_b[k], new_h[k], P, pm, rng, parallel, has_deps, by_width, offsets,
                               index_in_width, scratch)
                counters[3] += swaps
                if swaps > 0:
                    ok, t, f = evaluate(new_b[k], new_h[k], P, objective, use_tau, period_end, scratch)
                    counters[0] += 1
                new_t[k] = t
                new_f[k] = f
                k += 1
        cur_b, new_b = new_b, cur_b
        cur_h, new_h = new_h, cur_h
        cur_t, new_t = new_t, cur_t
        cur_f, new_f = new_f, cur_f
        best = 0
        for i in range(1, Z):
            if better(cur_t[i], cur_f[i], cur_t[best], cur_f[best]):
                best = i
        hist_tau[g] = cur_t[best]
        hist_fit[g] = cur_f[best]
    if n_gens % 2 == 1:
        bodies[:] = cur_b
        headers[:] = cur_h
        taus[:] = cur_t
        fits[:] = cur_f
