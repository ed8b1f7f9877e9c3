"""Maximal support of the allocation LP's optimal face, exactly, on the warm numba simplex
(``lpas_dg_robust`` with ``robust_solver = face``, the default).

The robust policy uses the support of the relative interior of the optimal face (spec:
"maximal support"): ``(i, j)`` is in it when the largest ``delta_ij`` over the face
``{lambda >= lambda* (1 - opt_slack)}`` exceeds ``zero_tol`` times the largest such maximum
over all entries (``lp.max_support`` computes this with N*M LPs). Here, per state, after the
vertex step of :mod:`.simplex` (same solve, same degenerate search and draws):

1. ``fmax`` = the vertex's delta (a point of the face), ``top`` = its maximum; the entries
   not above ``zero_tol * top`` form the candidate set U.
2. On the face, maximise ``sum_{U} delta`` (primal simplex warm from the current basis).
   Every entry of U is at most that optimum ``S`` on the face, so if ``S <= zero_tol * top``
   the rest of U is out of the support: stop. Otherwise the entries of U the optimum lifts
   above ``zero_tol * top`` leave U (``fmax`` keeps, per entry, the largest value seen on
   any point found); repeat. Each round removes at least one entry.
3. Exactness at the threshold (rare): if a round lifts no entry above the threshold while
   ``S`` is above it, each remaining entry of U gets its own LP (its maximum); so does an
   entry shown positive whose largest value seen is not above ``zero_tol * top`` (``top``
   may have grown since). Finally, if some entry's value lies in
   ``(zero_tol * top, zero_tol]`` while ``top < 1`` (delta never exceeds 1, so the largest
   face maximum may still be above ``top`` and exclude it), every entry's maximum is
   computed, which makes ``top`` exact. So the support equals ``lp.max_support`` up to the
   solvers' tolerances.

The basis of the max-lambda optimum is restored afterwards, so the next state starts from
it, as in :func:`.simplex.solve_states`. A complete support falls back to the vertex (spec,
*our rule*). Every LP is certified against the original data (``simplex._solve``).
"""
from __future__ import annotations

import numba
import numpy as np

from .simplex import (_I_PIVOTS, C_FAILED, C_SOLVES, _copy_basis, _delta, _face_rhs, _solve, _state_rhs,
                      _vertex)

TOP_UB = 1.0 + 1e-9     # delta_ij <= sum_i delta_ij <= 1 (machine rows), up to the feasibility tolerance
TOP_KNOWN = 1.0 - 1e-9  # a point with max delta this close to 1 fixes the largest face maximum

# face counts slots
F_ROUNDS, F_ENTRY, F_AMBIGUOUS, F_TOP, F_FALLBACK = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def _face_point(A, ptr, row, val, b_face, bcur, avail, a, n, Binv, xb, d, head, pos, istate, w,
                alpha_r, y, cols, cost_face, delta, fmax, counts, fcounts, slot):
    """Optimum of ``cost_face`` on the face into ``delta``; ``fmax`` = max(fmax, delta).
    Returns (certified, max of delta)."""
    m = a.shape[0]
    if not _solve(A, ptr, row, val, cost_face, b_face, bcur, True, Binv, xb, d, head, pos, istate,
                  w, alpha_r, y, cols, counts):
        counts[C_FAILED] += 1
        return False, 0.0
    counts[C_SOLVES] += 1
    fcounts[slot] += 1
    top = _delta(xb, head, avail, a, n, m, delta)
    for i in range(n):
        for j in range(m):
            if delta[i, j] > fmax[i, j]:
                fmax[i, j] = delta[i, j]
    return True, top


@numba.njit(cache=True)
def _entry_max(A, ptr, row, val, b_face, bcur, avail, a, n, i, j, Binv, xb, d, head, pos, istate,
               w, alpha_r, y, cols, cost_face, delta, fmax, exact, counts, fcounts):
    """The maximum of ``delta[i, j]`` on the face, into ``fmax[i, j]`` (exact). Returns
    (certified, max of delta at that optimum)."""
    m = a.shape[0]
    cost_face[:] = 0.0
    cost_face[i * m + j] = -1.0 / a[j]
    ok, top = _face_point(A, ptr, row, val, b_face, bcur, avail, a, n, Binv, xb, d, head, pos,
                          istate, w, alpha_r, y, cols, cost_face, delta, fmax, counts, fcounts, F_ENTRY)
    if ok:
        fmax[i, j] = delta[i, j]     # the optimum itself (not a larger rounding seen elsewhere)
        exact[i, j] = True
    return ok, top


@numba.njit(cache=True)
def _face_support(A, ptr, row, val, has_alpha, b, avail, a, lam, Binv, xb, d, head, pos, istate,
                  bcur, zero_tol, opt_slack, w, alpha_r, y, cols, b_face, cost_face, delta, fmax,
                  exact, in_u, support, counts, fcounts):
    """Maximal support of the optimal face from the max-lambda optimal basis (module
    docstring, steps 1-3) into ``support``; ``fmax`` holds the per-entry face maxima (lower
    bounds, exact where ``exact``). The basis is left elsewhere on the face (the caller
    restores it). Returns (certified, largest face maximum found)."""
    n = has_alpha.shape[0]
    m = a.shape[0]
    _face_rhs(b, has_alpha, lam, opt_slack, b_face)
    top = _delta(xb, head, avail, a, n, m, fmax)
    exact[:, :] = False
    n_u = 0
    for i in range(n):
        for j in range(m):
            in_u[i, j] = avail[j] and not fmax[i, j] > zero_tol * top
            n_u += in_u[i, j]
    clean = True                    # U holds only entries proven <= zero_tol * top
    while n_u > 0:
        cost_face[:] = 0.0
        for i in range(n):
            for j in range(m):
                if in_u[i, j]:
                    cost_face[i * m + j] = -1.0 / a[j]
        ok, t = _face_point(A, ptr, row, val, b_face, bcur, avail, a, n, Binv, xb, d, head, pos,
                            istate, w, alpha_r, y, cols, cost_face, delta, fmax, counts, fcounts, F_ROUNDS)
        if not ok:
            return False, top
        top = max(top, t)
        s = 0.0
        for i in range(n):
            for j in range(m):
                if in_u[i, j]:
                    s += delta[i, j]
        if not s > zero_tol * top:
            break
        lifted = 0
        for i in range(n):
            for j in range(m):
                if in_u[i, j] and fmax[i, j] > zero_tol * top:
                    in_u[i, j] = False
                    lifted += 1
        n_u -= lifted
        if lifted == 0:
            clean = False
            break
    if not clean:                   # every entry of U to its own maximum
        fcounts[F_AMBIGUOUS] += 1
        for i in range(n):
            for j in range(m):
                if in_u[i, j]:
                    ok, t = _entry_max(A, ptr, row, val, b_face, bcur, avail, a, n, i, j, Binv, xb, d,
                                       head, pos, istate, w, alpha_r, y, cols, cost_face, delta, fmax,
                                       exact, counts, fcounts)
                    if not ok:
                        return False, top
                    top = max(top, t)
                    in_u[i, j] = False
    # an entry shown positive whose value seen is not above the threshold: its own maximum
    for i in range(n):
        for j in range(m):
            if avail[j] and not in_u[i, j] and not exact[i, j] and not fmax[i, j] > zero_tol * top:
                ok, t = _entry_max(A, ptr, row, val, b_face, bcur, avail, a, n, i, j, Binv, xb, d,
                                   head, pos, istate, w, alpha_r, y, cols, cost_face, delta, fmax,
                                   exact, counts, fcounts)
                if not ok:
                    return False, top
                top = max(top, t)
    # the largest face maximum, when a decision depends on it (then every entry is exact)
    if top < TOP_KNOWN:
        doubt = False
        for i in range(n):
            for j in range(m):
                if avail[j] and not in_u[i, j] and zero_tol * top < fmax[i, j] <= zero_tol * TOP_UB:
                    doubt = True
        if doubt:
            fcounts[F_TOP] += 1
            for i in range(n):
                for j in range(m):
                    if avail[j] and not in_u[i, j] and not exact[i, j]:
                        ok, t = _entry_max(A, ptr, row, val, b_face, bcur, avail, a, n, i, j, Binv,
                                           xb, d, head, pos, istate, w, alpha_r, y, cols, cost_face,
                                           delta, fmax, exact, counts, fcounts)
                        if not ok:
                            return False, top
                        top = max(top, t)
            for i in range(n):
                for j in range(m):
                    top = max(top, fmax[i, j])
    for i in range(n):
        for j in range(m):
            support[i, j] = avail[j] and not in_u[i, j] and top > 0.0 and fmax[i, j] > zero_tol * top
    return True, top


@numba.njit(cache=True)
def solve_states_face(A, ptr, row, val, cost, has_alpha, lam_unit, states, Binv, xb, d, head, pos,
                      istate, bcur, search, tries, zero_tol, opt_slack, rng, elig, delta_out, lam_out,
                      nz_out, z0_out, counts, fcounts):
    """The robust policy's eligibility for every state in order (as
    :func:`.simplex.solve_states`, same vertex step and draws): the maximal support of the
    optimal face, or the chosen vertex's support where that is complete (``fcounts``
    counts the fallbacks). ``delta_out`` (if it has K rows): the per-entry face maxima
    used for the threshold (the vertex's delta on a fallback). ``nz_out``: zeros of the
    support used. Returns -1, or the index of a state whose LP could not be certified."""
    n_states, m = states.shape
    n = has_alpha.shape[0]
    nr, ncol = A.shape
    keep_delta = delta_out.shape[0] == n_states
    w = np.zeros(nr)
    cols = np.zeros(nr, np.int64)
    alpha_r = np.zeros(ncol)
    y = np.zeros(nr)
    b = np.zeros(nr)
    b_face = np.zeros(nr)
    cost_face = np.zeros(ncol)
    avail = np.zeros(m, np.bool_)
    a = np.zeros(m)
    delta = np.zeros((n, m))
    best = np.zeros((n, m))
    fmax = np.zeros((n, m))
    exact = np.zeros((n, m), np.bool_)
    in_u = np.zeros((n, m), np.bool_)
    support = np.zeros((n, m), np.bool_)
    Binv0 = np.empty_like(Binv)
    xb0 = np.empty_like(xb)
    d0 = np.empty_like(d)
    head0 = np.empty_like(head)
    pos0 = np.empty_like(pos)
    for k in range(n_states):
        m_av = _state_rhs(states, k, n, avail, a, b)
        kd = k if keep_delta else 0
        if m_av == 0:
            lam_out[k], nz_out[k], z0_out[k] = 0.0, 0, 1 - n
            elig[k] = 0
            delta_out[kd] = 0.0
            continue
        ok, lam, best_top, best_nz = _vertex(A, ptr, row, val, cost, has_alpha, b, avail, a, m_av,
                                             Binv, xb, d, head, pos, istate, bcur, search, tries,
                                             zero_tol, opt_slack, rng, w, alpha_r, y, cols, b_face,
                                             cost_face, delta, best, Binv0, xb0, d0, head0, pos0,
                                             counts)
        if not ok:
            return k
        _copy_basis(Binv, xb, d, head, pos, Binv0, xb0, d0, head0, pos0)
        pivots0 = istate[_I_PIVOTS]
        ok, _top = _face_support(A, ptr, row, val, has_alpha, b, avail, a, lam, Binv, xb, d, head,
                                 pos, istate, bcur, zero_tol, opt_slack, w, alpha_r, y, cols, b_face,
                                 cost_face, delta, fmax, exact, in_u, support, counts, fcounts)
        # the basis, and its count of pivots since the last rebuild, as before the face step:
        # the next state then starts exactly as in simplex.solve_states (same vertices)
        _copy_basis(Binv0, xb0, d0, head0, pos0, Binv, xb, d, head, pos)
        istate[_I_PIVOTS] = pivots0
        bcur[:] = b
        if not ok:
            return k
        n_sup = 0
        for i in range(n):
            for j in range(m):
                n_sup += support[i, j]
        lam_out[k], z0_out[k] = lam * lam_unit, n * m_av + 1 - n - m_av
        if n_sup == n * m_av:       # complete support: the vertex instead (spec, our rule)
            fcounts[F_FALLBACK] += 1
            nz_out[k] = best_nz
            for i in range(n):
                for j in range(m):
                    elig[k, i, j] = 1 if (avail[j] and best_top > 0.0 and best[i, j] > zero_tol * best_top) else 0
            delta_out[kd] = best
        else:
            nz_out[k] = n * m_av - n_sup
            for i in range(n):
                for j in range(m):
                    elig[k, i, j] = 1 if support[i, j] else 0
            delta_out[kd] = fmax
    return -1
