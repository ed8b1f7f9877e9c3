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

:func:`.states.solve_states` restores the basis of the max-lambda optimum afterwards, so the
next state starts from it as without the face step, and falls back to the vertex where the
support is complete (spec, *our rule*). Every LP is certified against the original data
(``simplex._solve``). ``_solve`` is called directly here, not through helpers: numba
re-optimises a callee's code inside every compiled function that reaches it, so each helper
around ``_solve`` would cost seconds of cold compilation.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from .simplex import C_FAILED, C_SOLVES, _delta, _new_cost, _solve

TOP_UB = 1.0 + 1e-9     # delta_ij <= sum_i delta_ij <= 1 (machine rows), up to the feasibility tolerance
TOP_KNOWN = 1.0 - 1e-9  # a point with max delta this close to 1 fixes the largest face maximum

# face counts slots
F_ROUNDS, F_ENTRY, F_AMBIGUOUS, F_TOP, F_FALLBACK = 0, 1, 2, 3, 4
# step 3 phases: U left ambiguous by the rounds, entries not above the threshold, every entry
_P_U, _P_LOW, _P_ALL, _P_DONE = 0, 1, 2, 3


@kernel
def _raise_to(fmax, delta):
    """``fmax = max(fmax, delta)``."""
    n, m = fmax.shape
    for i in range(n):
        for j in range(m):
            if delta[i, j] > fmax[i, j]:
                fmax[i, j] = delta[i, j]


@kernel
def _next_entry(phase, in_u, exact, fmax, avail, threshold):
    """The first entry ``i*M + j`` that needs its own maximum in ``phase``, or -1."""
    n, m = fmax.shape
    for i in range(n):
        for j in range(m):
            if phase == _P_U:
                need = in_u[i, j]
            else:
                need = avail[j] and not in_u[i, j] and not exact[i, j]
                if phase == _P_LOW:
                    need = need and not fmax[i, j] > threshold
            if need:
                return i * m + j
    return -1


@kernel
def _top_in_doubt(in_u, fmax, avail, zero_tol, top):
    """Whether an entry's value lies in ``(zero_tol * top, zero_tol * TOP_UB]``: in the
    support unless the largest face maximum is above ``top``."""
    n, m = fmax.shape
    for i in range(n):
        for j in range(m):
            if avail[j] and not in_u[i, j] and zero_tol * top < fmax[i, j] <= zero_tol * TOP_UB:
                return True
    return False


@kernel
def _face_support(A, ptr, row, val, b_face, bcur, avail, a, Binv, xb, d, head, pos, istate,
                  zero_tol, w, alpha_r, y, cols, cost_face, delta, fmax, exact, in_u, support,
                  counts, fcounts):
    """Maximal support of the optimal face (right-hand side ``b_face``, :func:`.simplex._face_rhs`)
    from an optimal basis (module docstring, steps 1-3) into ``support``; ``fmax`` holds the
    per-entry face maxima (lower bounds, exact where ``exact``). The basis is left elsewhere
    on the face (the caller restores it). Returns (certified, largest face maximum)."""
    n, m = fmax.shape
    top = _delta(xb, head, avail, a, n, m, fmax)
    exact[:, :] = False
    n_u = 0
    for i in range(n):
        for j in range(m):
            in_u[i, j] = avail[j] and not fmax[i, j] > zero_tol * top
            n_u += in_u[i, j]
    clean = True                    # U holds only entries proven <= zero_tol * top
    while n_u > 0:                  # step 2: maximise sum_U delta
        cost_face[:] = 0.0
        for i in range(n):
            for j in range(m):
                if in_u[i, j]:
                    cost_face[i * m + j] = -1.0 / a[j]
        _new_cost(Binv, cost_face, head, pos, ptr, row, val, y, d)
        if not _solve(A, ptr, row, val, cost_face, b_face, bcur, Binv, xb, d, head, pos, istate, w,
                      alpha_r, y, cols, counts):
            counts[C_FAILED] += 1
            return False, top
        counts[C_SOLVES] += 1
        fcounts[F_ROUNDS] += 1
        top = max(top, _delta(xb, head, avail, a, n, m, delta))
        _raise_to(fmax, delta)
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
    # step 3: single-entry maxima where a decision is still open
    phase = _P_LOW
    if not clean:
        phase = _P_U
        fcounts[F_AMBIGUOUS] += 1
    while phase != _P_DONE:
        k = _next_entry(phase, in_u, exact, fmax, avail, zero_tol * top)
        if k < 0:
            if phase == _P_U:
                phase = _P_LOW
            elif phase == _P_LOW and top < TOP_KNOWN and _top_in_doubt(in_u, fmax, avail, zero_tol, top):
                fcounts[F_TOP] += 1
                phase = _P_ALL
            else:
                phase = _P_DONE
            continue
        i, j = k // m, k % m
        cost_face[:] = 0.0
        cost_face[k] = -1.0 / a[j]
        _new_cost(Binv, cost_face, head, pos, ptr, row, val, y, d)
        if not _solve(A, ptr, row, val, cost_face, b_face, bcur, Binv, xb, d, head, pos, istate, w,
                      alpha_r, y, cols, counts):
            counts[C_FAILED] += 1
            return False, top
        counts[C_SOLVES] += 1
        fcounts[F_ENTRY] += 1
        top = max(top, _delta(xb, head, avail, a, n, m, delta))
        _raise_to(fmax, delta)
        fmax[i, j] = delta[i, j]    # the optimum itself, not a larger rounding seen elsewhere
        exact[i, j] = True
        in_u[i, j] = False
    for i in range(n):
        for j in range(m):
            support[i, j] = avail[j] and not in_u[i, j] and top > 0.0 and fmax[i, j] > zero_tol * top
    return True, top
