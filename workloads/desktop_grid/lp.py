"""The LPAS_DG allocation LP (``docs/models/desktop_grid.md``, policy ``lpas_dg``).

    maximise lambda
    s.t.  sum_j delta[i, j] * mu[i, j] >= lambda * alpha[i]   for every class i
          sum_i delta[i, j] <= 1                               for every available machine j
          delta >= 0

Two ways to state and solve it:

* ``tests/naive_desktop_grid.py`` states it with pulp and solves it with HiGHS through
  pulp: the reference statement the tests compare the fast paths against (several
  milliseconds per solve in model building, too much for thousands of solves; pulp is a
  test dependency only).
* :class:`AllocationLP` is the re-solvable model used by the simulator, with two solvers
  (``solver``, the workload parameter ``lp_solver``):

  - ``simplex`` (default for ``lpas_dg``): the dense numba simplex of :mod:`.simplex`, in
    which every state change is a right-hand-side change, so each re-solve is a
    warm-started dual simplex of a few pivots (5-10 microseconds per state for 4 x 30);
    :func:`solve_states` solves all states of a replication in one compiled call;
  - ``highs``: one persistent ``highspy`` model over all M machines per replication; an
    unavailable machine's columns are fixed to 0 and a changed CPU estimate changes that
    machine's coefficients, so every re-solve is a warm-started dual simplex from the
    previous basis (about 0.1 ms for 4 x 30, in Python).

  Both apply the spec's degenerate-vertex rule the same way (same random objectives from
  the same draws). Where the optimal vertex is unique the two give the same support; where
  the optimal face has several vertices (groups of identical or proportional machines)
  they may return different optimal vertices, each meeting the rule.

``lpas_dg_robust`` (maximal support of the optimal face) has two paths, the workload
parameter ``robust_solver``:

* ``face`` (default): :func:`solve_states_robust`, the vertex step of the
  numba simplex followed by the exact maximal support of the optimal face on its warm
  tableau (:mod:`.face`), all states in one compiled call (~0.1 ms per state for 4 x 30). Its
  support equals :func:`max_support` (per-entry maximisation over the face, the spec's
  solver-independent rule).
* ``ipm`` (the former path): :class:`AllocationLP` with ``method = robust``: HiGHS vertex,
  then the HiGHS interior point without crossover, thresholded (1.3-4 ms per state). Its
  support differs from :func:`max_support` on ~1% of the states: nearly always on entries
  whose face maximum is within a factor 30 of the threshold (where the support depends on
  where the IPM stops), on ~0.2% on an entry well inside the face that the IPM's point
  leaves below 1e-8 (benchmarks/lpas.md).

Variable order: ``delta[i, j]`` at column ``i*M + j``, ``lambda`` last. Rows: N class rows,
then M machine rows.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass

import highspy
import numpy as np

from ..kernel_support.stdio import stdout_silenced
from . import face as _face
from . import simplex as _sx
from . import states as _states
from .choices import ZERO_TOL  # handed on from here too

LP_SOLVERS = ("simplex", "highs")
# lambda >= lambda*(1 - OPT_SLACK) on the optimal face. The spec says 1e-9, but that slack
# lets entries that are 0 on the face reach ~1e-7 of max delta, the size of zero_tol, so a
# smaller slack keeps the two apart (HiGHS feasibility tolerance absorbs the rounding).
OPT_SLACK = 1e-12
_INF = highspy.kHighsInf

# Interior-point supports by (problem, available set, CPU factors), shared by every
# AllocationLP of the process. An IPM run starts from scratch (no warm start), so its
# result is a function of the LP data alone and the cache cannot change any result; it
# only skips repeated solves of sets seen in earlier replications (40-80% of the keys of
# the paper's cases over 30 replications). Bounded, least recently used out first.
_ROBUST_CACHE: OrderedDict[bytes, np.ndarray] = OrderedDict()
ROBUST_CACHE_SIZE = 200_000


@dataclass
class LPSolution:
    """One solution of the allocation LP over the available machines."""

    lambda_star: float
    delta: np.ndarray        # (N, M); 0 on unavailable machines
    support: np.ndarray      # (N, M) bool: delta > zero_tol * max(delta), available machines only
    n_zeros: int             # entries of delta on available machines that are not in the support
    z0: int                  # N*M_avail + 1 - N - M_avail: zeros of a non-degenerate vertex


def z0(n_classes: int, n_available: int) -> int:
    """Zeros of a non-degenerate optimal vertex: ``N*M + 1 - N - M``."""
    return n_classes * n_available + 1 - n_classes - n_available


def support_of(delta: np.ndarray, available: np.ndarray, zero_tol: float = ZERO_TOL) -> np.ndarray:
    """``delta_ij > zero_tol * max(delta)`` on available machines."""
    top = float(delta.max()) if delta.size else 0.0
    return (delta > zero_tol * top) & available[None, :] if top > 0 else np.zeros(delta.shape, bool)


def _solution(lam: float, delta: np.ndarray, available: np.ndarray, zero_tol: float) -> LPSolution:
    sup = support_of(delta, available, zero_tol)
    n_av = int(available.sum())
    n = delta.shape[0]
    return LPSolution(lam, delta, sup, n * n_av - int(sup.sum()), z0(n, n_av))


def max_throughput(mu: np.ndarray, alpha: np.ndarray, available: np.ndarray | None = None) -> float:
    """``lambda*`` of the allocation LP (used to scale generated systems)."""
    return AllocationLP(mu, alpha).solve(available).lambda_star


# --------------------------------------------------------------------------- fast path
def _highs_model(mu: np.ndarray, alpha: np.ndarray) -> highspy.HighsLp:
    n, m = mu.shape
    nc = n * m + 1
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = nc, n + m
    cost = np.zeros(nc)
    cost[-1] = -1.0                                   # HiGHS minimises: minimise -lambda
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(nc)
    lp.col_upper_ = np.full(nc, _INF)
    lp.row_lower_ = np.r_[np.zeros(n), np.full(m, -_INF)]
    lp.row_upper_ = np.r_[np.full(n, _INF), np.ones(m)]
    ii, jj = np.divmod(np.arange(n * m), m)
    index = np.empty(2 * n * m + n, np.int32)
    value = np.empty(2 * n * m + n)
    index[0:2 * n * m:2], index[1:2 * n * m:2] = ii, n + jj
    value[0:2 * n * m:2], value[1:2 * n * m:2] = mu.ravel(), 1.0
    index[2 * n * m:] = np.arange(n)
    value[2 * n * m:] = -np.asarray(alpha, float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.r_[np.arange(0, 2 * n * m + 1, 2), 2 * n * m + n].astype(np.int32)
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    return lp


def _new_highs(lp: highspy.HighsLp, ipm: bool = False) -> highspy.Highs:
    # highspy (1.8 and later) prints its banner once per process from C++ to descriptor 1,
    # inside the constructor, before silent() can act: dropped, as silent() would have
    with stdout_silenced():
        h = highspy.Highs()
    h.silent()
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("threads", 1)
    if ipm:
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "off")
        # the default 1e-8 leaves entries that are 0 on the optimal face at up to ~1e-5 of
        # max delta on degenerate instances (found by the maximal-support property test)
        for name in ("ipm_optimality_tolerance", "primal_feasibility_tolerance",
                     "dual_feasibility_tolerance"):
            h.setOptionValue(name, 1e-10)
    h.passModel(lp)
    return h


class AllocationLP:
    """Re-solvable allocation LP over a fixed machine list; see the module docstring.

    ``solve(available, a)`` solves over the machines with ``available[j]`` and effective
    rates ``mu_nom[i, j] * a[j]``. ``method``: ``vertex`` (simplex; ``degenerate`` =
    ``search`` looks for a vertex with exactly ``z0`` zeros by random objectives drawn from
    ``rng``, ``accept`` keeps the first) or ``robust`` (interior point without crossover,
    maximal support; falls back to the vertex when that support is complete).
    ``solver``: ``highs`` (default here) or ``simplex`` (numba, vertex only; see the module
    docstring).
    One object per replication: the warm basis makes the chosen vertex depend on the
    order of solves, which is fixed by the replication's seed.
    """

    def __init__(self, mu_nom: np.ndarray, alpha: np.ndarray, method: str = "vertex",
                 degenerate: str = "search", tries: int = 20, zero_tol: float = ZERO_TOL,
                 rng: np.random.Generator | None = None, solver: str = "highs") -> None:
        if method not in ("vertex", "robust"):
            raise ValueError(f"method {method!r}: allowed 'vertex' or 'robust'")
        if solver not in LP_SOLVERS:
            raise ValueError(f"lp_solver {solver!r}: allowed {', '.join(map(repr, LP_SOLVERS))}")
        if solver == "simplex" and method == "robust":
            raise ValueError("lp_solver 'simplex' gives vertex solutions only; the robust "
                             "(interior-point) solution needs lp_solver 'highs'")
        if degenerate not in ("search", "accept"):
            raise ValueError(f"degenerate {degenerate!r}: allowed 'search' or 'accept'")
        self.mu_nom = np.ascontiguousarray(mu_nom, float)
        self.alpha = np.asarray(alpha, float)
        if self.alpha.shape != (self.mu_nom.shape[0],) or (self.alpha < 0).any() or not (self.alpha > 0).any():
            raise ValueError("alpha must have one non-negative rate per class, at least one positive")
        self.n, self.m = self.mu_nom.shape
        self.method, self.degenerate, self.tries, self.zero_tol = method, degenerate, tries, zero_tol
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.solver = solver
        if solver == "simplex":
            self._sx = _SimplexModel(self.mu_nom, self.alpha)
        else:
            self._lp = _highs_model(self.mu_nom, self.alpha)
            self._h = _new_highs(self._lp)
        self._ipm = _new_highs(self._lp, ipm=True) if method == "robust" else None
        self._avail = np.ones(self.m, bool)
        self._a = np.ones(self.m)
        self._problem_id = hashlib.sha1(self.mu_nom.tobytes() + self.alpha.tobytes()
                                        + np.float64(zero_tol).tobytes()).digest()
        self.solves = 0
        self.search_solves = 0
        self.robust_cache_hits = 0
        self.robust_fallbacks = 0

    # -- model edits (applied to every HiGHS object) --------------------------------------
    def _models(self):
        return (self._h,) if self._ipm is None else (self._h, self._ipm)

    def _update(self, available: np.ndarray, a: np.ndarray) -> None:
        n, m = self.n, self.m
        a = np.where(available, a, self._a)     # an unavailable machine's column is fixed to 0
        for j in np.flatnonzero(a != self._a):
            for h in self._models():
                for i in range(n):
                    h.changeCoeff(i, i * m + j, float(self.mu_nom[i, j] * a[j]))
        changed = np.flatnonzero(available != self._avail)
        if changed.size:
            cols = (np.arange(n)[:, None] * m + changed[None, :]).ravel().astype(np.int32)
            upper = np.repeat(np.where(available[changed], _INF, 0.0)[None, :], n, axis=0).ravel()
            for h in self._models():
                h.changeColsBounds(cols.size, cols, np.zeros(cols.size), upper)
        self._avail, self._a = available.copy(), a.copy()

    def _run(self, h: highspy.Highs) -> np.ndarray:
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"allocation LP: HiGHS status {h.modelStatusToString(status)}")
        self.solves += 1
        return np.asarray(h.getSolution().col_value)

    def _split(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        delta = np.maximum(x[:-1].reshape(self.n, self.m), 0.0) * self._avail[None, :]
        return float(x[-1]), delta

    # -- solutions -------------------------------------------------------------------------
    def solve(self, available: np.ndarray | None = None, a: np.ndarray | None = None) -> LPSolution:
        """Solve over ``available`` (bool (M,), default all) with CPU factors ``a`` (default 1)."""
        available = np.ones(self.m, bool) if available is None else np.asarray(available, bool)
        a = np.ones(self.m) if a is None else np.asarray(a, float)
        if self.solver == "simplex":
            return self._solve_simplex(available, a)
        self._update(available, a)
        if not available.any():
            return _solution(0.0, np.zeros((self.n, self.m)), available, self.zero_tol)
        lam, delta = self._split(self._run(self._h))
        vertex = _solution(lam, delta, available, self.zero_tol)
        if vertex.n_zeros > vertex.z0 and self.degenerate == "search":
            vertex = self._search(vertex, available)
        if self.method == "robust":
            robust = self._robust(lam, available)
            if robust is not None:
                return robust
            self.robust_fallbacks += 1
        return vertex

    def _solve_simplex(self, available: np.ndarray, a: np.ndarray) -> LPSolution:
        state = np.where(available, a, -1.0)[None, :]
        t = self._sx.solve(state, self.rng, self.degenerate == "search", self.tries,
                           self.zero_tol, keep_delta=True)
        self.solves, self.search_solves = self._sx.solves, self._sx.search_solves
        return LPSolution(float(t.lambda_star[0]), t.delta[0], t.elig[0].astype(bool),
                          int(t.n_zeros[0]), int(t.z0[0]))

    @contextmanager
    def _with_optimal_face(self, lam: float, h: highspy.Highs):
        """lambda >= lambda*(1 - OPT_SLACK) on ``h``; bounds and costs restored after."""
        nc = self.n * self.m + 1
        h.changeColBounds(nc - 1, lam * (1.0 - OPT_SLACK), _INF)
        try:
            yield h
        finally:
            h.changeColBounds(nc - 1, 0.0, _INF)
            cost = np.zeros(nc)
            cost[-1] = -1.0
            h.changeColsCost(nc, np.arange(nc, dtype=np.int32), cost)

    def _search(self, first: LPSolution, available: np.ndarray) -> LPSolution:
        """Random objectives over the optimal face until a vertex has exactly z0 zeros."""
        best = first
        nc = self.n * self.m + 1
        cols = np.arange(nc, dtype=np.int32)
        with self._with_optimal_face(first.lambda_star, self._h) as h:
            for _ in range(self.tries):
                cost = np.zeros(nc)
                cost[:-1] = self.rng.random(nc - 1)
                h.changeColsCost(nc, cols, cost)
                _, delta = self._split(self._run(h))
                self.search_solves += 1
                cand = _solution(first.lambda_star, delta, available, self.zero_tol)
                if cand.n_zeros < best.n_zeros:
                    best = cand
                if best.n_zeros == best.z0:
                    break
        return best

    def _robust(self, lam_vertex: float, available: np.ndarray) -> LPSolution | None:
        """Interior point without crossover, thresholded; None when the support is complete.
        ``delta`` of the returned solution is the IPM point (zeros for a cached support)."""
        key = self._problem_id + np.where(available, self._a, -1.0).tobytes()
        support = _ROBUST_CACHE.get(key)
        if support is not None:
            _ROBUST_CACHE.move_to_end(key)
            self.robust_cache_hits += 1
            self.solves += 1        # counted as solved, so the count does not depend on the batch
            delta = np.zeros((self.n, self.m))
        else:
            self._ipm.clearSolver()          # no warm start for IPM: each solve from scratch
            _, delta = self._split(self._run(self._ipm))
            support = support_of(delta, available, self.zero_tol)
            _ROBUST_CACHE[key] = support
            if len(_ROBUST_CACHE) > ROBUST_CACHE_SIZE:
                _ROBUST_CACHE.popitem(last=False)
        n_av = int(available.sum())
        n_zeros = self.n * n_av - int(support.sum())
        if n_zeros == 0:
            return None
        return LPSolution(lam_vertex, delta, support.copy(), n_zeros, z0(self.n, n_av))


@dataclass
class StateSolutions:
    """Vertex solutions of a sequence of states (see :func:`solve_states`)."""

    elig: np.ndarray          # (K, N, M) uint8: support of the chosen vertex
    lambda_star: np.ndarray   # (K,)
    n_zeros: np.ndarray       # (K,) int64
    z0: np.ndarray            # (K,) int64
    delta: np.ndarray         # (K, N, M), or (1, N, M) (last state) unless keep_delta


class _SimplexModel:
    """Scaled LP and warm tableau of the numba simplex (:mod:`.simplex`) for one replication."""

    def __init__(self, mu_nom: np.ndarray, alpha: np.ndarray) -> None:
        self.n, self.m = mu_nom.shape
        self.mu_nom, self.alpha = mu_nom, np.asarray(alpha, float)
        self.A, self.cost = _sx.build_matrix(mu_nom, alpha)
        self.ptr, self.row, self.val = _sx.compressed_columns(self.A)
        self.has_alpha = np.asarray(alpha, float) > 0
        self.lam_unit = _sx.lambda_scale(mu_nom, np.asarray(alpha, float))
        self.work = _sx.new_state(self.n, self.m)
        self.counts = np.zeros(5, np.int64)
        self.face_counts = np.zeros(5, np.int64)
        self.redos = 0            # states whose face step could not be certified (HiGHS support)

    @property
    def solves(self) -> int:
        return int(self.counts[_sx.C_SOLVES])

    @property
    def search_solves(self) -> int:
        return int(self.counts[_sx.C_SEARCH])

    def solve(self, states: np.ndarray, rng: np.random.Generator, search: bool, tries: int,
              zero_tol: float, keep_delta: bool = False, robust: bool = False) -> StateSolutions:
        """Vertex solutions of ``states`` (see :func:`solve_states`), or with ``robust`` the
        maximal supports of :mod:`.face` (see :func:`solve_states_robust`)."""
        states = np.ascontiguousarray(states, float)
        k, n, m = states.shape[0], self.n, self.m
        if states.shape[1] != m:
            raise ValueError(f"states have {states.shape[1]} machines, the LP has {m}")
        out = StateSolutions(np.zeros((k, n, m), np.uint8), np.zeros(k), np.zeros(k, np.int64),
                             np.zeros(k, np.int64), np.zeros((k if keep_delta else 1, n, m)))
        w = self.work
        redo = np.zeros(k, np.bool_)
        bad = _states.solve_states(self.A, self.ptr, self.row, self.val, self.cost, self.has_alpha,
                                   self.lam_unit, states, w["Binv"], w["xb"], w["d"], w["head"],
                                   w["pos"], w["istate"], w["bcur"], bool(search), int(tries),
                                   float(zero_tol), OPT_SLACK, bool(robust), rng, out.elig, out.delta,
                                   out.lambda_star, out.n_zeros, out.z0, self.counts, self.face_counts,
                                   redo)
        what = (("robust_solver 'face'", "robust_solver 'ipm'") if robust else
                ("lp_solver 'simplex'", "lp_solver 'highs'"))
        if bad >= 0:
            raise RuntimeError(f"allocation LP ({what[0]}): no certified optimum for "
                               f"state {bad} (estimates {states[bad].tolist()}); use {what[1]}")
        if redo.any():
            self._redo_by_highs(states, np.flatnonzero(redo), zero_tol, keep_delta, out)
        return out

    def _redo_by_highs(self, states: np.ndarray, ks: np.ndarray, zero_tol: float, keep_delta: bool,
                       out: StateSolutions) -> None:
        """Last resort for states whose face step could not be certified (estimates of about
        1e-8 and below: the face objective's costs 1/a_j reach 1e8 and more, beyond what the
        certificate's tolerances can hold): the maximal support by its definition,
        :func:`max_support` (one HiGHS LP per entry on the face of HiGHS's lambda*; exact
        up to HiGHS's tolerances), or the simplex vertex's (already in ``out``) where that
        support is complete. lambda* stays the simplex's. Rare (a few states in 1e5), so the
        N*M LPs do not matter."""
        for k in ks:
            self.redos += 1
            available = states[k] >= 0.0
            mua = self.mu_nom * np.where(available, states[k], 1.0)[None, :]
            try:
                fmax = face_maxima(mua, self.alpha, available)
            except RuntimeError as err:     # HiGHS may end "Unknown" at such estimates too
                raise RuntimeError(f"allocation LP (robust_solver 'face'): no certified optimum for "
                                   f"state {k} (estimates {states[k].tolist()}), nor by HiGHS "
                                   f"({err}); use robust_solver 'ipm'") from err
            support = support_of(fmax, available, zero_tol)
            if support[:, available].all():
                self.face_counts[_face.F_FALLBACK] += 1
                continue
            out.elig[k] = support
            out.n_zeros[k] = self.n * int(available.sum()) - int(support.sum())
            if keep_delta:
                out.delta[k] = fmax


def solve_states(mu_nom: np.ndarray, alpha: np.ndarray, states: np.ndarray, rng: np.random.Generator,
                 degenerate: str = "search", tries: int = 20, zero_tol: float = ZERO_TOL,
                 keep_delta: bool = False) -> tuple[StateSolutions, dict]:
    """Vertex solutions of every state (row: estimate of each available machine, -1 if not
    available), in order, warm-started, in one compiled call of the numba simplex. Same
    degenerate rule and random draws as ``AllocationLP(..., solver="highs")`` solving the
    states one by one. Returns the solutions and counters (solves, search_solves, pivots,
    refactors)."""
    if degenerate not in ("search", "accept"):
        raise ValueError(f"degenerate {degenerate!r}: allowed 'search' or 'accept'")
    model = _SimplexModel(np.ascontiguousarray(mu_nom, float), np.asarray(alpha, float))
    out = model.solve(states, rng, degenerate == "search", tries, zero_tol, keep_delta)
    c = model.counts
    return out, {"solves": int(c[_sx.C_SOLVES]), "search_solves": int(c[_sx.C_SEARCH]),
                 "pivots": int(c[_sx.C_PIVOTS]), "refactors": int(c[_sx.C_REFACTORS])}


def solve_states_robust(mu_nom: np.ndarray, alpha: np.ndarray, states: np.ndarray,
                        rng: np.random.Generator, degenerate: str = "search", tries: int = 20,
                        zero_tol: float = ZERO_TOL, keep_delta: bool = False) -> tuple[StateSolutions, dict]:
    """``lpas_dg_robust`` with ``robust_solver = face``: for every state, in order, the
    vertex step of :func:`solve_states` (same warm simplex, degenerate search and draws from
    ``rng``), then the maximal support of the optimal face computed exactly on the warm
    tableau (:mod:`.face`; equals :func:`max_support`). ``elig`` is that support, or the
    chosen vertex's where it is complete (a fallback); ``n_zeros`` the zeros of what is used;
    ``lambda_star`` the vertex's; ``delta`` (with ``keep_delta``) the per-entry face maxima
    behind the threshold (lower bounds, exact near it). Counters: solves, search_solves,
    face_rounds (max-sum LPs), entry_solves (single-entry maxima), ambiguous_keys (keys that
    needed them for U), top_keys (keys whose largest face maximum was computed), fallbacks,
    redos (states whose face step could not be certified: their support is
    :func:`max_support`'s, by HiGHS, :meth:`_SimplexModel._redo_by_highs`)."""
    if degenerate not in ("search", "accept"):
        raise ValueError(f"degenerate {degenerate!r}: allowed 'search' or 'accept'")
    model = _SimplexModel(np.ascontiguousarray(mu_nom, float), np.asarray(alpha, float))
    out = model.solve(states, rng, degenerate == "search", tries, zero_tol, keep_delta, robust=True)
    c, f = model.counts, model.face_counts
    return out, {"solves": int(c[_sx.C_SOLVES]), "search_solves": int(c[_sx.C_SEARCH]),
                 "pivots": int(c[_sx.C_PIVOTS]), "refactors": int(c[_sx.C_REFACTORS]),
                 "face_rounds": int(f[_face.F_ROUNDS]), "entry_solves": int(f[_face.F_ENTRY]),
                 "ambiguous_keys": int(f[_face.F_AMBIGUOUS]), "top_keys": int(f[_face.F_TOP]),
                 "fallbacks": int(f[_face.F_FALLBACK]), "redos": model.redos}


def face_maxima(mu: np.ndarray, alpha: np.ndarray, available: np.ndarray | None = None) -> np.ndarray:
    """Per entry, the largest ``delta_ij`` on the optimal face ``lambda >= lambda*(1 -
    OPT_SLACK)``, by HiGHS (one LP per available entry; 0 on unavailable machines)."""
    lp = AllocationLP(mu, alpha, degenerate="accept")
    available = np.ones(mu.shape[1], bool) if available is None else np.asarray(available, bool)
    first = lp.solve(available)
    n, m = mu.shape
    nc = n * m + 1
    best = np.zeros((n, m))
    with lp._with_optimal_face(first.lambda_star, lp._h) as h:
        for i in range(n):
            for j in np.flatnonzero(available):
                cost = np.zeros(nc)
                cost[i * m + j] = -1.0
                h.changeColsCost(nc, np.arange(nc, dtype=np.int32), cost)
                best[i, j] = lp._split(lp._run(h))[1][i, j]
    return best


def max_support(mu: np.ndarray, alpha: np.ndarray, available: np.ndarray | None = None,
                zero_tol: float = ZERO_TOL) -> np.ndarray:
    """Maximal-support set of the optimal face, solver-independently: with
    ``lambda >= lambda*(1 - OPT_SLACK)`` maximise each ``delta_ij`` in turn
    (:func:`face_maxima`); the support is the set whose maximum exceeds ``zero_tol`` times
    the largest maximum. (N*M LPs: for tests.)"""
    available = np.ones(mu.shape[1], bool) if available is None else np.asarray(available, bool)
    return support_of(face_maxima(mu, alpha, available), available, zero_tol)
