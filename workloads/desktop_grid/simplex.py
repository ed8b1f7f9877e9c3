"""A small dense simplex in numba for the allocation LP of ``lpas_dg`` (``lp_solver = simplex``)
and for the vertex step of ``lpas_dg_robust`` (``robust_solver = face``, :mod:`.face`).

The LP of one state (available set, CPU estimates ``a``) is solved in the scaled variables
``y[i, j] = delta[i, j] * a[j]`` (time fraction times CPU share):

    maximise lambda
    s.t.  -sum_j (mu_nom[i, j] / alpha[i]) y[i, j] + lambda + t_i = 0     class rows
           sum_i y[i, j] + s_j = b_j                                      machine rows
           y, lambda, t, s >= 0

with ``b_j = a_j`` for an available machine and ``b_j = 0`` for an unavailable one. The
matrix never changes: a failure, a repair or a new CPU estimate only changes the right-hand
side, so the optimal basis of the previous state stays dual feasible and the next state is
a warm-started dual simplex of a few pivots. ``delta = y / a`` maps feasible sets, vertices
and zero patterns one to one (``a_j > 0``), so vertices with exactly ``NM+1-N-M`` zeros are
the same as in the unscaled LP. (A class with ``alpha_i = 0`` has no lambda term; its row is
scaled by its largest rate instead. lambda is carried in units of :func:`lambda_scale`, so
that absolute tolerances suit any unit of time.)

Revised simplex with the basis inverse ``B^-1`` kept explicitly ((N+M)^2) over all M
machines (N+M rows, NM+1+N+M columns, the matrix in compressed columns): a new right-hand
side costs one (N+M)^2 product, a pivot one row of ``B^-1 A``, one column and a rank-one
update. ``B^-1`` is rebuilt from the original matrix every ``REFACTOR`` pivots, and every
solution is certified against the original data (primal residual, dual feasibility of
``c - yA``, duality gap); a failed certificate rebuilds ``B^-1`` and solves again, then
restarts from the slack basis (Bland's rule after a run of degenerate pivots prevents
cycling).

The per-state driver is :func:`.states.solve_states` (this module holds the solver).
Degenerate vertices (more than ``z0 = N*M_av + 1 - N - M_av`` zeros) follow the spec's
``search`` rule there exactly as the HiGHS path does: ``lambda >= lambda*(1 - opt_slack)``,
minimise ``sum r_ij delta_ij`` with ``r ~ U(0, 1)`` drawn as ``rng.random(N*M)`` per try (all
machines, row-major, the HiGHS path's draws), up to ``tries`` times, keep the first vertex
with exactly z0 zeros, else the one with the fewest. The basis of the max-lambda optimum
is restored after the search, so the next state starts dual feasible.
"""
from __future__ import annotations

import numpy as np
from ..kernel_support.jit import kernel

PTOL = 1e-9        # primal feasibility (scaled units: y <= 1, lambda in multiples of alpha)
DTOL = 1e-9        # dual feasibility (reduced costs)
PIVTOL = 1e-9      # smallest pivot element accepted
CERT_TOL = 1e-8    # certificate: residuals, dual infeasibility, duality gap (relative)
REFACTOR = 64      # pivots between rebuilds of B^-1 (at least 2 (N+M): a rebuild costs (N+M)^3)
BLAND_AFTER = 30   # consecutive degenerate primal pivots before Bland's rule

# istate slots
_I_INIT, _I_PIVOTS = 0, 1
# counts slots
C_SOLVES, C_SEARCH, C_FAILED, C_PIVOTS, C_REFACTORS = 0, 1, 2, 3, 4


def lambda_scale(mu_nom: np.ndarray, alpha: np.ndarray) -> float:
    """``1 / sum_i alpha_i / sum_j mu_nom[i, j]``: lambda* within a factor of about N (the
    LP's lambda variable is lambda / this, so it is of order 1 whatever the units)."""
    total = mu_nom.sum(axis=1)
    pos = alpha > 0
    if not pos.any() or (total[pos] <= 0).any():
        return 1.0
    return float(1.0 / np.sum(alpha[pos] / total[pos]))


def build_matrix(mu_nom: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The constraint matrix ``[A | I]`` (N+M, NM+1+N+M) of the scaled LP and the max-lambda
    cost vector (minimise ``-lambda``). Column ``i*M + j`` = y[i, j], then lambda (in units
    of :func:`lambda_scale`), the N class slacks and the M machine slacks."""
    n, m = mu_nom.shape
    nv = n * m
    ncol = nv + 1 + n + m
    a_mat = np.zeros((n + m, ncol))
    lam_unit = lambda_scale(mu_nom, alpha)
    for i in range(n):
        if alpha[i] > 0:
            scale = alpha[i] * lam_unit
            a_mat[i, nv] = 1.0
        else:
            top = float(np.max(mu_nom[i])) if m else 0.0
            scale = top if top > 0 else 1.0
        a_mat[i, i * m:(i + 1) * m] = -mu_nom[i] / scale
        a_mat[i, nv + 1 + i] = 1.0
    for j in range(m):
        a_mat[n + j, j:nv:m] = 1.0
        a_mat[n + j, nv + 1 + n + j] = 1.0
    cost = np.zeros(ncol)
    cost[nv] = -1.0
    return a_mat, cost


def compressed_columns(a_mat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, row, val)`` of the nonzeros of ``a_mat`` by column."""
    nz = a_mat.T != 0.0
    ptr = np.r_[0, np.cumsum(nz.sum(axis=1))].astype(np.int64)
    cols, rows = np.nonzero(nz)
    return ptr, rows.astype(np.int64), a_mat[rows, cols].astype(float)


def new_state(n: int, m: int) -> dict:
    """Work arrays of one warm-started solver (basis, its inverse, values, reduced costs)."""
    nr, ncol = n + m, n * m + 1 + n + m
    return dict(Binv=np.zeros((nr, nr)), xb=np.zeros(nr), d=np.zeros(ncol),
                head=np.zeros(nr, np.int64), pos=np.full(ncol, -1, np.int64), bcur=np.zeros(nr),
                istate=np.zeros(2, np.int64))


# --------------------------------------------------------------------------- revised simplex kernels
# The basis inverse ``Binv`` (nr, nr) is kept explicitly; the constraint matrix is used in
# compressed columns (``ptr``, ``row``, ``val``): a pivot costs one row of ``Binv A`` (about
# 2NM products), one column ``Binv a_k`` and a rank-one update of ``Binv`` (nr^2).
@kernel
def _row_of_binv_a(Binv, r, ptr, row, val, out):
    """``out[c] = (Binv A)[r, c]`` for every column c."""
    for c in range(ptr.shape[0] - 1):
        s = 0.0
        for p in range(ptr[c], ptr[c + 1]):
            s += Binv[r, row[p]] * val[p]
        out[c] = s


@kernel
def _col_of_binv_a(Binv, k, ptr, row, val, out):
    """``out = Binv a_k``."""
    nr = Binv.shape[0]
    for i in range(nr):
        out[i] = 0.0
    for p in range(ptr[k], ptr[k + 1]):
        q, v = row[p], val[p]
        for i in range(nr):
            out[i] += Binv[i, q] * v


@kernel
def _pivot(Binv, xb, d, head, pos, r, k, w, alpha_r, cols):
    """Basis change: column k enters in row r. ``w = Binv a_k`` and ``alpha_r = (Binv A)[r]``
    taken before the change; ``cols`` is scratch (nr,) int64."""
    nr = Binv.shape[0]
    piv = w[r]
    step = xb[r] / piv
    for i in range(nr):
        xb[i] -= step * w[i]
    xb[r] = step
    inv = 1.0 / piv
    nnz = 0                       # rows of B^-1 are sparse here: update their nonzeros only
    for c in range(nr):
        v = Binv[r, c]
        if v != 0.0:
            Binv[r, c] = v * inv
            cols[nnz] = c
            nnz += 1
    for i in range(nr):
        if i != r:
            f = w[i]
            if f != 0.0:
                for q in range(nnz):
                    c = cols[q]
                    Binv[i, c] -= f * Binv[r, c]
    dstep = d[k] / alpha_r[k]
    if dstep != 0.0:
        for c in range(d.shape[0]):
            if pos[c] < 0:
                d[c] -= dstep * alpha_r[c]
    d[head[r]] = -dstep
    d[k] = 0.0
    pos[head[r]] = -1
    head[r] = k
    pos[k] = r


@kernel
def _slack_basis(Binv, head, pos, slack0):
    nr = Binv.shape[0]
    Binv[:, :] = 0.0
    pos[:] = -1
    for i in range(nr):
        Binv[i, i] = 1.0
        head[i] = slack0 + i
        pos[slack0 + i] = i


@kernel
def _refactor(A, Binv, head):
    """``Binv = B^-1`` for the basic columns ``head`` (Gauss-Jordan, partial pivoting).
    False if the basis is numerically singular."""
    nr = A.shape[0]
    M = np.zeros((nr, 2 * nr))
    for i in range(nr):
        for q in range(nr):
            M[i, q] = A[i, head[q]]
        M[i, nr + i] = 1.0
    for q in range(nr):
        r, best = -1, 0.0
        for i in range(q, nr):
            if abs(M[i, q]) > best:
                best, r = abs(M[i, q]), i
        if r < 0 or best < 1e-11:
            return False
        if r != q:
            for c in range(2 * nr):
                M[q, c], M[r, c] = M[r, c], M[q, c]
        inv = 1.0 / M[q, q]
        for c in range(2 * nr):
            M[q, c] *= inv
        for i in range(nr):
            if i != q:
                f = M[i, q]
                if f != 0.0:
                    for c in range(2 * nr):
                        M[i, c] -= f * M[q, c]
    Binv[:, :] = M[:, nr:]
    return True


@kernel
def _rhs(Binv, b, xb):
    nr = Binv.shape[0]
    for i in range(nr):
        s = 0.0
        for r in range(nr):
            if b[r] != 0.0:
                s += Binv[i, r] * b[r]
        xb[i] = s


@kernel
def _duals(Binv, cost, head, y):
    nr = Binv.shape[0]
    y[:] = 0.0
    for i in range(nr):
        cb = cost[head[i]]
        if cb != 0.0:
            for r in range(nr):
                y[r] += cb * Binv[i, r]


@kernel
def _reduced_costs(Binv, cost, head, pos, ptr, row, val, y, d):
    _duals(Binv, cost, head, y)
    for c in range(d.shape[0]):
        if pos[c] >= 0:
            d[c] = 0.0
        else:
            s = cost[c]
            for p in range(ptr[c], ptr[c + 1]):
                s -= y[row[p]] * val[p]
            d[c] = s


@kernel
def _new_cost(Binv, cost, head, pos, ptr, row, val, y, d):
    """Reduced costs ``d`` of a new objective ``cost`` for the current basis (before
    :func:`_solve` with it)."""
    _reduced_costs(Binv, cost, head, pos, ptr, row, val, y, d)


@kernel
def _dual_simplex(Binv, xb, d, head, pos, ptr, row, val, w, alpha_r, cols, maxit, counts):
    """Dual simplex from a dual feasible basis. 0 optimal, 1 infeasible, 2 iteration limit,
    4 numerical trouble."""
    nr = Binv.shape[0]
    ncol = d.shape[0]
    for _ in range(maxit):
        r, worst = np.int64(-1), -PTOL  # np.int64, not the literal: one compile of the callees
        for i in range(nr):
            if xb[i] < worst:
                worst, r = xb[i], i
        if r < 0:
            return 0
        _row_of_binv_a(Binv, r, ptr, row, val, alpha_r)
        theta = np.inf
        for c in range(ncol):
            if pos[c] < 0:
                a = alpha_r[c]
                if a < -PIVTOL:
                    v = max(d[c], 0.0) / -a
                    if v < theta:
                        theta = v
        if theta == np.inf:
            return 1
        k, big = np.int64(-1), 0.0     # ties of the ratio test: the largest pivot element
        lim = theta + 1e-12 * (1.0 + theta)
        for c in range(ncol):
            if pos[c] < 0:
                a = alpha_r[c]
                if a < -PIVTOL and max(d[c], 0.0) / -a <= lim and -a > big:
                    big, k = -a, c
        _col_of_binv_a(Binv, k, ptr, row, val, w)
        if abs(w[r] - alpha_r[k]) > 1e-7 * (1.0 + abs(w[r])):
            return 4
        _pivot(Binv, xb, d, head, pos, r, k, w, alpha_r, cols)
        counts[C_PIVOTS] += 1
    return 2


@kernel
def _primal_simplex(Binv, xb, d, head, pos, ptr, row, val, w, alpha_r, cols, maxit, counts):
    """Primal simplex from a primal feasible basis (Dantzig, then Bland after a run of
    degenerate pivots). 0 optimal, 2 iteration limit, 3 unbounded, 4 numerical trouble."""
    nr = Binv.shape[0]
    ncol = d.shape[0]
    degenerate = 0
    for _ in range(maxit):
        bland = degenerate >= BLAND_AFTER
        k, best = np.int64(-1), -DTOL
        for c in range(ncol):
            if pos[c] < 0 and d[c] < best:
                k, best = c, d[c]
                if bland:
                    break
        if k < 0:
            return 0
        _col_of_binv_a(Binv, k, ptr, row, val, w)
        theta = np.inf
        for i in range(nr):
            a = w[i]
            if a > PIVTOL:
                v = max(xb[i], 0.0) / a
                if v < theta:
                    theta = v
        if theta == np.inf:
            return 3
        r = np.int64(-1)
        big = 0.0
        lim = theta + 1e-12 * (1.0 + theta)
        for i in range(nr):
            a = w[i]
            if a > PIVTOL and max(xb[i], 0.0) / a <= lim:
                if bland:
                    if r < 0 or head[i] < head[r]:
                        r = i
                elif a > big:
                    big, r = a, i
        _row_of_binv_a(Binv, r, ptr, row, val, alpha_r)
        if abs(w[r] - alpha_r[k]) > 1e-7 * (1.0 + abs(w[r])):
            return 4
        degenerate = degenerate + 1 if theta <= PTOL else 0
        _pivot(Binv, xb, d, head, pos, r, k, w, alpha_r, cols)
        counts[C_PIVOTS] += 1
    return 2


@kernel
def _certified(cost, b, Binv, xb, head, ptr, row, val, y):
    """Optimality certificate against the original data: ``x >= 0``, ``Ax = b``,
    ``c - yA >= 0`` with ``y = c_B B^-1``, and ``c x = y b`` (all within CERT_TOL, relative to
    the scale of the terms: residuals to ``sum |a_ic x_c|``, reduced costs to ``max |y|``, the
    gap to ``sum |y_r b_r|``)."""
    nr = Binv.shape[0]
    ncol = cost.shape[0]
    x = np.zeros(ncol)
    for i in range(nr):
        if xb[i] < -CERT_TOL:
            return False
        x[head[i]] = max(xb[i], 0.0)
    res = np.zeros(nr)
    size = np.zeros(nr)          # sum |a_ic x_c|: the residual's scale (lambda* may be large)
    for c in range(ncol):
        if x[c] != 0.0:
            for p in range(ptr[c], ptr[c + 1]):
                res[row[p]] += val[p] * x[c]
                size[row[p]] += abs(val[p] * x[c])
    for i in range(nr):
        if abs(res[i] - b[i]) > CERT_TOL * (1.0 + abs(b[i]) + size[i]):
            return False
    _duals(Binv, cost, head, y)
    scale = 1.0
    for r in range(nr):
        scale = max(scale, abs(y[r]))
    primal, dual, terms = 0.0, 0.0, 0.0
    for c in range(ncol):
        dc = cost[c]
        for p in range(ptr[c], ptr[c + 1]):
            dc -= y[row[p]] * val[p]
        if dc < -CERT_TOL * scale:
            return False
        primal += cost[c] * x[c]
    for r in range(nr):
        dual += y[r] * b[r]
        terms += abs(y[r] * b[r])
    # the gap relative to the terms of y b (as the residuals to ``size``): a face objective
    # with a tiny estimate a_j has costs 1/a_j and duals ~1e8 whose products with b cancel to
    # an objective of order 1, so a gap relative to |primal| alone fails on rounding
    return abs(primal - dual) <= CERT_TOL * (1.0 + abs(primal) + terms)


@kernel
def _solve(A, ptr, row, val, cost, b, bcur, Binv, xb, d, head, pos, istate, w,
           alpha_r, y, cols, counts):
    """Optimal basis for (cost, b) from the current one, whose values ``xb`` belong to the
    right-hand side ``bcur`` and reduced costs ``d`` to ``cost`` (after changing the
    objective the caller recomputes them: :func:`_new_cost`). True when certified; ``bcur``
    is then ``b``. (No flag argument: a literal flag would compile this, the largest
    kernel, once per value.)"""
    nr, ncol = A.shape
    slack0 = ncol - nr
    maxit = 50 * (nr + ncol)
    for attempt in range(3):
        fresh = True
        if istate[_I_INIT] == 0 or attempt == 2:
            _slack_basis(Binv, head, pos, slack0)
            istate[_I_INIT] = 1
            istate[_I_PIVOTS] = 0
        elif attempt == 1 or istate[_I_PIVOTS] >= max(REFACTOR, 2 * nr):
            counts[C_REFACTORS] += 1
            istate[_I_PIVOTS] = 0
            if not _refactor(A, Binv, head):
                _slack_basis(Binv, head, pos, slack0)
        else:
            fresh = False
        if fresh:
            _rhs(Binv, b, xb)
        else:                 # xb += B^-1 (b - bcur): a state change touches a few rows
            for r in range(nr):
                db = b[r] - bcur[r]
                if db != 0.0:
                    for i in range(nr):
                        xb[i] += Binv[i, r] * db
        bcur[:] = b
        if fresh:
            _reduced_costs(Binv, cost, head, pos, ptr, row, val, y, d)
        before = counts[C_PIVOTS]
        status = 0
        for _phase in range(4):
            pinf = False
            for i in range(nr):
                if xb[i] < -PTOL:
                    pinf = True
            dinf = False
            for c in range(ncol):
                if pos[c] < 0 and d[c] < -DTOL:
                    dinf = True
            if not pinf and not dinf:
                break
            if pinf and dinf:           # neither: restart from the slack basis (primal feasible for b >= 0)
                _slack_basis(Binv, head, pos, slack0)
                _rhs(Binv, b, xb)
                _reduced_costs(Binv, cost, head, pos, ptr, row, val, y, d)
                continue
            if pinf:
                status = _dual_simplex(Binv, xb, d, head, pos, ptr, row, val, w, alpha_r, cols, maxit,
                                       counts)
            else:
                status = _primal_simplex(Binv, xb, d, head, pos, ptr, row, val, w, alpha_r, cols, maxit,
                                         counts)
            if status != 0:
                break
        istate[_I_PIVOTS] += counts[C_PIVOTS] - before
        if status == 0 and _certified(cost, b, Binv, xb, head, ptr, row, val, y):
            return True
    return False


# --------------------------------------------------------------------------- per state
@kernel
def _delta(xb, head, avail, a, n, m, out):
    """delta = y / a on available machines (0 elsewhere); returns max delta."""
    nv = n * m
    out[:, :] = 0.0
    for i in range(xb.shape[0]):
        c = head[i]
        if c < nv:
            j = c % m
            if avail[j] and a[j] > 0.0 and xb[i] > 0.0:
                out[c // m, j] = xb[i] / a[j]
    top = 0.0
    for i in range(n):
        for j in range(m):
            top = max(top, out[i, j])
    return top


@kernel
def _zeros(delta, top, avail, zero_tol):
    """Entries of delta on available machines not above zero_tol * max delta."""
    n, m = delta.shape
    nz = 0
    for j in range(m):
        if avail[j]:
            for i in range(n):
                if not (top > 0.0 and delta[i, j] > zero_tol * top):
                    nz += 1
    return nz


@kernel
def _state_rhs(states, k, n, avail, a, b):
    """Available set, estimates and right-hand side of state k; returns the number of
    available machines."""
    m = states.shape[1]
    m_av = 0
    for j in range(m):
        avail[j] = states[k, j] >= 0.0
        a[j] = states[k, j] if avail[j] else 1.0
        m_av += avail[j]
    b[:] = 0.0
    for j in range(m):
        if avail[j] and a[j] > 0.0:
            b[n + j] = a[j]
    return m_av


@kernel
def _face_rhs(b, has_alpha, lam, opt_slack, b_face):
    """Right-hand side of the optimal face ``lambda >= lam (1 - opt_slack)``: lambda = that
    bound + lambda' (lam in units of lam_unit)."""
    b_face[:] = b
    for i in range(has_alpha.shape[0]):
        if has_alpha[i]:
            b_face[i] = -lam * (1.0 - opt_slack)


@kernel
def _copy_basis(Binv, xb, d, head, pos, Binv0, xb0, d0, head0, pos0):
    """``(Binv0, xb0, d0, head0, pos0) = (Binv, xb, d, head, pos)``."""
    Binv0[:, :] = Binv
    xb0[:] = xb
    d0[:] = d
    head0[:] = head
    pos0[:] = pos


@kernel
def _lambda_of(xb, head, nv):
    lam = 0.0
    for i in range(xb.shape[0]):
        if head[i] == nv:
            lam = max(xb[i], 0.0)
    return lam
