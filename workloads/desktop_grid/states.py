"""The LP of every state of a replication in one compiled call: the vertex of ``lpas_dg``
(:mod:`.simplex`, degenerate search included) and, for ``lpas_dg_robust`` with
``robust_solver = face``, the maximal support of the optimal face (:mod:`.face`).

One kernel serves both policies (a runtime flag), so a sweep with both compiles it once;
``_solve`` is called here directly, not through a per-state helper, for the same reason as
in :mod:`.face` (every compiled function that reaches ``_solve`` re-optimises its code).
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from .face import F_FALLBACK, _face_support
from .simplex import (_I_PIVOTS, C_FAILED, C_SEARCH, C_SOLVES, _copy_basis, _delta, _face_rhs,
                      _lambda_of, _new_cost, _solve, _state_rhs, _zeros)


@kernel
def solve_states(A, ptr, row, val, cost, has_alpha, lam_unit, states, Binv, xb, d, head, pos,
                 istate, bcur, search, tries, zero_tol, opt_slack, robust, rng, elig, delta_out,
                 lam_out, nz_out, z0_out, counts, fcounts, redo):
    """Solve the LP of every state in order (row: estimate of each available machine, -1
    if unavailable), warm-starting each from the previous max-lambda optimum.

    Vertex (``robust`` False): ``elig[k]`` = support of the chosen vertex (the max-lambda
    optimum, or with ``search`` the degenerate search's, simplex module docstring).
    ``robust``: after the same vertex step (same draws from ``rng``), ``elig[k]`` = the
    maximal support of the optimal face (:mod:`.face`), or the chosen vertex's where that is
    complete (``fcounts[F_FALLBACK]``); the basis and its pivot count are restored after
    the face step, so the vertices are those of the vertex path. ``lam_out``, ``nz_out``
    (zeros of what ``elig`` holds), ``z0_out`` per state; ``delta_out``, if it has K rows,
    the chosen vertex's delta (robust: the face maxima behind the threshold). Returns -1, or
    the index of a state whose vertex LP could not be certified (the caller raises). A state
    whose face step could not be certified gets the vertex's outputs and ``redo[k]`` True
    (the caller computes its support by HiGHS, ``lp.max_support``); the next state starts from the
    restored vertex basis as usual."""
    n_states, m = states.shape
    n = has_alpha.shape[0]
    nr, ncol = A.shape
    nv = n * m
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
        if m_av == 0:                  # nothing to solve (as the HiGHS path)
            lam_out[k], nz_out[k], z0_out[k] = 0.0, 0, 1 - n
            elig[k] = 0
            delta_out[kd] = 0.0
            continue
        # -- the vertex: max lambda, warm-started
        if not _solve(A, ptr, row, val, cost, b, bcur, Binv, xb, d, head, pos, istate, w,
                      alpha_r, y, cols, counts):
            counts[C_FAILED] += 1
            return k
        counts[C_SOLVES] += 1
        lam = _lambda_of(xb, head, nv)     # in units of lam_unit
        top = _delta(xb, head, avail, a, n, m, delta)
        nz = _zeros(delta, top, avail, zero_tol)
        z0 = n * m_av + 1 - n - m_av
        best[:, :] = delta
        best_top, best_nz = top, nz
        _face_rhs(b, has_alpha, lam, opt_slack, b_face)
        face_step = search and nz > z0 and tries > 0
        if face_step or robust:
            _copy_basis(Binv, xb, d, head, pos, Binv0, xb0, d0, head0, pos0)
        # -- degenerate: random objectives over the optimal face
        if face_step:
            for _t in range(tries):
                r = rng.random(nv)
                cost_face[:] = 0.0
                for i in range(n):
                    for j in range(m):
                        cost_face[i * m + j] = r[i * m + j] / a[j] if avail[j] and a[j] > 0.0 else r[i * m + j]
                _new_cost(Binv, cost_face, head, pos, ptr, row, val, y, d)
                if not _solve(A, ptr, row, val, cost_face, b_face, bcur, Binv, xb, d, head, pos,
                              istate, w, alpha_r, y, cols, counts):
                    counts[C_FAILED] += 1
                    return k
                counts[C_SOLVES] += 1
                counts[C_SEARCH] += 1
                top = _delta(xb, head, avail, a, n, m, delta)
                nz = _zeros(delta, top, avail, zero_tol)
                if nz < best_nz:
                    best[:, :] = delta
                    best_top, best_nz = top, nz
                if best_nz == z0:
                    break
            _copy_basis(Binv0, xb0, d0, head0, pos0, Binv, xb, d, head, pos)
            bcur[:] = b
        # -- robust: the maximal support of the optimal face, then back to the vertex basis
        n_sup = -1
        if robust:
            pivots0 = istate[_I_PIVOTS]    # the search's pivots count, as on the vertex path
            ok, _top = _face_support(A, ptr, row, val, b_face, bcur, avail, a, Binv, xb, d, head,
                                     pos, istate, zero_tol, w, alpha_r, y, cols, cost_face, delta,
                                     fmax, exact, in_u, support, counts, fcounts)
            _copy_basis(Binv0, xb0, d0, head0, pos0, Binv, xb, d, head, pos)
            istate[_I_PIVOTS] = pivots0
            bcur[:] = b
            if not ok:                 # the vertex's outputs; the caller redoes the support
                redo[k] = True
            else:
                n_sup = 0
                for i in range(n):
                    for j in range(m):
                        n_sup += support[i, j]
                if n_sup == n * m_av:  # complete support: the vertex instead (spec, our rule)
                    fcounts[F_FALLBACK] += 1
                    n_sup = -1
        lam_out[k], z0_out[k] = lam * lam_unit, z0
        if n_sup >= 0:
            nz_out[k] = n * m_av - n_sup
            for i in range(n):
                for j in range(m):
                    elig[k, i, j] = 1 if support[i, j] else 0
            delta_out[kd] = fmax
        else:
            nz_out[k] = best_nz
            for i in range(n):
                for j in range(m):
                    elig[k, i, j] = 1 if (avail[j] and best_top > 0.0 and best[i, j] > zero_tol * best_top) else 0
            delta_out[kd] = best
    return -1
