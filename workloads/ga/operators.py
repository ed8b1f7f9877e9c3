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
  :mod:`.crossover`.
* Selection: tournaments, of size 2 by default (our rule). Elitism: the best ``n_elite`` survive.

Compile time: numba compiles each kernel with every kernel it calls linked in
and optimises that whole tree again, so a kernel that only dispatches to others (a swap
chooser, a crossover or evaluation switch) costs as much as the tree below it. The
branches are therefore written out where the GA calls them, and each kernel keeps one
specialisation (no literal-0 counts, no array-to-array slice assignments whose shape
errors compile numba's string formatting): ``tests/test_ga_compile.py``,
``python -m benchmarks.bench_compile``.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import inline_kernel, kernel
from .crossover import _backfill_missing, _crossover_general, _crossover_simple, crossover
from .model import decode_into, segment_starts
from .sorting import argsort
from .objectives import MAKESPAN, better, fitness, tau as docking_gap


@kernel
def unit_at_positions(header):
    """The unit of each body position."""
    seg = segment_starts(header)
    out = np.empty(seg[-1], np.int64)
    for m in range(header.shape[0]):
        out[seg[m]:seg[m + 1]] = m
    return out


def make_scratch(N: int, C: int, J: int) -> tuple:
    """Work arrays shared by the operators: start, dur, unit_of (decode's outputs), then
    decode's own (pos_of, seg, ptr, avail, done) and crossover's (src, walk, load, work[2C]).
    Made in Python and passed to the kernels (a kernel building them cost about 1 CPU-s of
    compilation)."""
    return (np.zeros(J), np.zeros(J), np.zeros(N, np.int64), np.zeros(N, np.int64), np.zeros(C + 1, np.int64),
            np.zeros(C, np.int64), np.zeros(C), np.zeros(J, np.bool_), np.zeros(N, np.int64),
            np.zeros(N, np.int64), np.zeros(C), np.zeros(2 * C, np.int64))


@inline_kernel
def _consistent(body, header, P, scratch) -> bool:
    return decode_into(body, header, P, scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5],
                       scratch[6], scratch[7])


@inline_kernel
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


@inline_kernel
def _try_job_swap(body, header, unit_at, P, a, rng, by_width, offsets, index_in_width, scratch) -> bool:
    """Swap the slot set of the job at position ``a`` with a random job of its width, then
    compact both (:func:`compact_job`, first the job at ``a``)."""
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
    for t in range(2):   # one call site, so compact_job's code is inlined once
        compact_job(body, header, P, ja if t == 0 else jb, scratch)
    return True


@inline_kernel
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
    s = np.int64(0)   # typed int64 from the start: a literal 0 makes numba compile the callee twice
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
    for i in range(N):
        body[i] = new_b[i]
    for m in range(C):
        header[m] = new_h[m]
    return True


@kernel
def _swaps(body, header, P, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch, pm, a, n) -> int:
    """Swap attempts, the one kernel of both mutations: with ``n < 0`` per-gene mutation
    (:func:`mutate`) after its first draw, which hit the gene at position ``a < N`` (the
    next hits by geometric skips of ``pm``); with ``n >= 0``, ``n`` attempts at uniform
    positions (:func:`random_swaps`). Returns the number of swaps made.

    One kernel, so numba and LLVM compile the swaps and the compaction under it once per
    spec instead of once for each caller."""
    N = body.shape[0]
    unit_at = unit_at_positions(header)
    done = 0
    tries = 0
    while True:
        if n < 0:
            if tries > 0:
                a += rng.geometric(pm)
            if a >= N:
                break
        else:
            if tries >= n:
                break
            a = rng.integers(0, N)
        tries += 1
        if parallel:   # (chosen here, not by a kernel of its own: see the module's notes)
            swapped = _try_job_swap(body, header, unit_at, P, a, rng, by_width, offsets, index_in_width, scratch)
        else:
            swapped = _try_gene_swap(body, header, unit_at, P, a, rng, has_deps, scratch)
        if swapped:
            done += 1
            if parallel:  # compaction may have changed the header
                unit_at = unit_at_positions(header)
    return done


@kernel
def mutate(body, header, P, pm, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch) -> int:
    """Per-gene mutation with probability ``pm``; returns the number of swaps made."""
    N = body.shape[0]
    if pm <= 0.0 or N == 0:
        return 0
    a = rng.geometric(pm) - 1
    if a >= N:
        return 0
    return _swaps(body, header, P, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch, pm, a,
                  np.int64(-1))


@kernel
def _mutate_from(body, header, P, pm, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch, a) -> int:
    """:func:`mutate` after its first draw, which hit the gene at position ``a < N``."""
    return _swaps(body, header, P, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch, pm, a,
                  np.int64(-1))


@inline_kernel
def _mutate_simple(body, header, pm, rng, mask, a, unit_at) -> int:
    """:func:`_mutate_from` when every job is one process (``proc_job[u] == u``) and none
    has a predecessor: the same draws and swaps as :func:`_try_gene_swap`, with only the
    arrays it uses (``unit_at[N]`` is work space). The header does not change."""
    N = body.shape[0]
    i = 0
    for m in range(header.shape[0]):
        for _ in range(header[m]):
            unit_at[i] = m
            i += 1
    done = 0
    while a < N:
        if N >= 2:   # (one gene: no partner, no draw)
            b = rng.integers(0, N - 1)
            if b >= a:
                b += 1
            ja, jb = body[a], body[b]
            if mask[ja, unit_at[b]] and mask[jb, unit_at[a]]:
                body[a], body[b] = jb, ja
                done += 1
        a += rng.geometric(pm)
    return done


def random_swaps(body, header, P, n, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch) -> int:
    """``n`` swap attempts at uniform positions (perturbs the initial individuals)."""
    return _swaps(body, header, P, rng, parallel, has_deps, by_width, offsets, index_in_width, scratch, 0.0,
                  np.int64(0), np.int64(n))


@kernel
def evaluate(body, header, P, objective, use_tau, period_end, scratch, plugin=None):
    """``(consistent, tau, fitness)``; tau is 0 when docking does not rank (``use_tau``);
    ``plugin``: a plug-in objective (:func:`.objectives.fitness`)."""
    start, dur = scratch[0], scratch[1]
    if not _consistent(body, header, P, scratch):
        return False, np.inf, np.inf
    t = docking_gap(body, header, P, start) if use_tau else 0.0
    return True, t, fitness(body, header, P, start, dur, objective, period_end, plugin)


@kernel
def evaluate_simple(body, header, P, objective, use_tau, period_end, scratch, plugin=None):
    """:func:`evaluate` of a chromosome known to be consistent, when every job is one
    process and none has a predecessor (``P[11]``): each unit's slots run back to back
    from ``ready``, so one pass gives the same floats as :func:`model.decode` (the same
    divisions and additions in the same order). Makespan needs no per-job arrays; the
    other objectives get ``start`` and ``dur`` filled as decode fills them."""
    speed, ready, prev_end, length = P[0], P[2], P[3], P[5]
    C = header.shape[0]
    t_gap = _tau_simple(header, ready, prev_end) if use_tau else 0.0
    if objective == MAKESPAN:
        return True, t_gap, _makespan_simple(body, header, speed, ready, length, period_end)
    start, dur = scratch[0], scratch[1]
    i = 0
    for m in range(C):
        t = ready[m]
        for _ in range(header[m]):
            j = body[i]
            start[j] = t
            dur[j] = length[j] / speed[m]
            t += dur[j]
            i += 1
    return True, t_gap, fitness(body, header, P, start, dur, objective, period_end, plugin)


@kernel
def _tau_simple(header, ready, prev_end) -> float:
    """Docking gap when a unit's first slot starts at ``ready`` (as :func:`objectives.tau`)."""
    total = 0.0
    for m in range(header.shape[0]):
        if header[m] > 0 and not np.isnan(prev_end[m]):
            total += ready[m] - prev_end[m]
    return total


@kernel
def _makespan_simple(body, header, speed, ready, length, period_end) -> float:
    """Makespan of back-to-back units (process = job), the same floats as decode + makespan."""
    best = -np.inf
    i = 0
    for m in range(header.shape[0]):
        n = header[m]
        if n == 0:
            continue
        t = ready[m]
        for _ in range(n):
            t += length[body[i]] / speed[m]
            i += 1
        best = max(best, t)
    return best - period_end


@kernel
def _copy_row(src_b, src_h, i, dst_b, dst_h, k):
    for x in range(src_b.shape[1]):
        dst_b[k, x] = src_b[i, x]
    for x in range(src_h.shape[1]):
        dst_h[k, x] = src_h[i, x]


@kernel
def _same(body_a, header_a, body_b, header_b) -> bool:
    for m in range(header_a.shape[0]):
        if header_a[m] != header_b[m]:
            return False
    for i in range(body_a.shape[0]):
        if body_a[i] != body_b[i]:
            return False
    return True


@kernel
def ranking(taus, fits):
    """Indices from best to worst by ``(tau, fitness)``; ties keep index order."""
    order = argsort(fits)
    return order[argsort(taus[order])]


@kernel
def _tournament(taus, fits, rng, size) -> int:
    """Best of ``size`` uniform draws (with replacement); ties: the earlier draw."""
    Z = taus.shape[0]
    best = rng.integers(0, Z)
    for _ in range(size - 1):
        c = rng.integers(0, Z)
        if better(taus[c], fits[c], taus[best], fits[best]):
            best = c
    return best


@kernel
def evolve(bodies, headers, taus, fits, P, n_gens, rng, pc, pm, n_elite, tournament, objective, use_tau,
           period_end, parallel, has_deps, by_width, offsets, index_in_width, hist_tau, hist_fit, counters, scratch,
           plugin=None):
    """Run ``n_gens`` generations of one island in place.

    ``plugin``: a plug-in objective (``objective`` is then ``PLUGIN``); when it returns NaN
    the run stops at once with ``hist_tau[g:]`` and ``hist_fit[g:]`` NaN (g = that
    generation; the population is then unusable and the replication fails). With
    ``plugin=None`` numba prunes these branches.

    ``hist_tau[g], hist_fit[g]`` get the island's best after generation g. ``counters``
    accumulates [evaluations, crossovers, crossover fallbacks to parent A, mutation swaps].
    ``scratch``: work arrays (:func:`make_scratch`).
    A crossover of equal parents (no parallel jobs) counts as a crossover and an evaluation
    though its child is parent A, whose values are reused.

    Non-parallel problems without dependencies (``P[11]``) take fast paths that give the
    same draws and bit-identical results (``tests/test_ga_fastpaths.py``): numba calls that
    pass the problem tuple cost ~0.3 us each, so the hot loop calls kernels with only the
    arrays they use.
    """
    Z = bodies.shape[0]
    N = bodies.shape[1]
    speed, ready, prev_end, length, mask, anywhere = P[0], P[2], P[3], P[5], P[8], P[12]
    unit_of, missing, load, work = scratch[2], scratch[9], scratch[10], scratch[11]
    fast_makespan = P[11] and objective == MAKESPAN
    unit_at = scratch[8]   # the simple mutation's unit of each body position
    # two generations' buffers used in turn; the result is copied back once at the end
    cur_b, cur_h, cur_t, cur_f = bodies, headers, taus, fits
    new_b = np.empty_like(bodies)
    new_h = np.empty_like(headers)
    new_t = np.empty_like(taus)
    new_f = np.empty_like(fits)
    for g in range(n_gens):
        order = ranking(cur_t, cur_f)
        for e in range(n_elite):
            _copy_row(cur_b, cur_h, order[e], new_b, new_h, e)
            new_t[e] = cur_t[order[e]]
            new_f[e] = cur_f[order[e]]
        k = n_elite
        while k < Z:
            # two tournaments as :func:`_tournament` (written out: the calls cost more)
            a = rng.integers(0, Z)
            for _ in range(tournament - 1):
                c = rng.integers(0, Z)
                if better(cur_t[c], cur_f[c], cur_t[a], cur_f[a]):
                    a = c
            b = rng.integers(0, Z)
            for _ in range(tournament - 1):
                c = rng.integers(0, Z)
                if better(cur_t[c], cur_f[c], cur_t[b], cur_f[b]):
                    b = c
            do_cx = rng.random() < pc
            for child in range(2):
                if k >= Z:
                    break
                p1, p2 = (a, b) if child == 0 else (b, a)
                t, f = cur_t[p1], cur_f[p1]
                copy_parent = True
                if do_cx and not parallel and (p1 == p2 or _same(cur_b[p1], cur_h[p1], cur_b[p2], cur_h[p2])):
                    # equal parents without parallel jobs: every process stays where it
                    # is, so the child is parent A (same draws, same counts; the
                    # evaluation's result is A's values)
                    C = cur_h.shape[1]
                    c1 = rng.integers(0, C)
                    rng.integers(c1 + 1, C + 1)
                    counters[1] += 1
                    counters[0] += 1
                elif do_cx:
                    # crossover() written out; a non-parallel problem without dependencies
                    # (P[11]) gets its child from the kernel taking only the arrays it uses
                    C = cur_h.shape[1]
                    c1 = rng.integers(0, C)
                    c2 = rng.integers(c1 + 1, C + 1)
                    if P[11]:
                        _crossover_simple(cur_b[p1], cur_h[p1], cur_b[p2], cur_h[p2], speed, ready, length, mask,
                                          anywhere, c1, c2, new_b[k], new_h[k], unit_of, missing, load, work)
                    else:
                        _crossover_general(cur_b[p1], cur_h[p1], cur_b[p2], cur_h[p2], P, c1, c2, new_b[k], new_h[k],
                                           scratch)
                    counters[1] += 1
                    if fast_makespan:   # evaluate_simple() with the arrays it uses
                        ok = True
                        t2 = _tau_simple(new_h[k], ready, prev_end) if use_tau else 0.0
                        f2 = _makespan_simple(new_b[k], new_h[k], speed, ready, length, period_end)
                    elif P[11]:   # operators keep chromosomes of such problems consistent by construction
                        ok, t2, f2 = evaluate_simple(new_b[k], new_h[k], P, objective, use_tau, period_end, scratch,
                                                     plugin)
                    else:
                        ok, t2, f2 = evaluate(new_b[k], new_h[k], P, objective, use_tau, period_end, scratch, plugin)
                    if plugin is not None and ok and np.isnan(f2):
                        hist_tau[g:] = np.nan
                        hist_fit[g:] = np.nan
                        return
                    if ok:
                        counters[0] += 1
                        t, f = t2, f2
                        copy_parent = False
                    else:
                        counters[2] += 1
                if copy_parent:
                    _copy_row(cur_b, cur_h, p1, new_b, new_h, k)
                # mutate()'s first draw here: most children get no hit and need no call
                swaps = 0
                if pm > 0.0 and N > 0:
                    a0 = rng.geometric(pm) - 1
                    if a0 < N and P[11]:
                        swaps = _mutate_simple(new_b[k], new_h[k], pm, rng, mask, a0, unit_at)
                    elif a0 < N:
                        swaps = _swaps(new_b[k], new_h[k], P, rng, parallel, has_deps, by_width, offsets,
                                       index_in_width, scratch, pm, a0, np.int64(-1))
                counters[3] += swaps
                if swaps > 0 and fast_makespan:
                    t = _tau_simple(new_h[k], ready, prev_end) if use_tau else 0.0
                    f = _makespan_simple(new_b[k], new_h[k], speed, ready, length, period_end)
                    counters[0] += 1
                elif swaps > 0:
                    if P[11]:
                        ok, t, f = evaluate_simple(new_b[k], new_h[k], P, objective, use_tau, period_end, scratch,
                                                   plugin)
                    else:
                        ok, t, f = evaluate(new_b[k], new_h[k], P, objective, use_tau, period_end, scratch, plugin)
                    counters[0] += 1
                    if plugin is not None and np.isnan(f):
                        hist_tau[g:] = np.nan
                        hist_fit[g:] = np.nan
                        return
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
        for i in range(Z):
            _copy_row(cur_b, cur_h, i, bodies, headers, i)
            taus[i] = cur_t[i]
            fits[i] = cur_f[i]
