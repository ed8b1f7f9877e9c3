"""The dispatch policies: names, kernel codes and the LP eligibility tables.

The selection rules themselves run inside the kernel (:mod:`.simulator`):

* ``fcfs``: the task that has waited longest, any class;
* ``pst``: the oldest task of the class with the largest ``mu[i, j]``;
* ``gcmu``: the oldest task of the class maximising ``D_i(t) * mu[i, j]``;
* ``lpas_dg`` / ``lpas_dg_robust``: Gcµ restricted to the classes ``S_j`` that the LP
  allocates to machine j (simplex vertex / maximal-support solution).

This module builds, for the LP policies, the eligibility matrix ``elig[key, i, j]`` of each
distinct (available set, CPU estimates) key of the run, solving the LP once per key in the
order the keys first occur (so the algorithm stream's draws are reproducible).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .lp import ZERO_TOL, AllocationLP, solve_states, solve_states_robust
from .choices import LP_POLICIES, POLICIES  # handed on from here too
from .simulator import POLICY_CODE


@dataclass
class EligibilityTable:
    """Per key: which classes each machine may take, and the LP's figures."""

    elig: np.ndarray          # (K, N, M) uint8
    lambda_star: np.ndarray   # (K,) float (NaN for non-LP policies)
    n_zeros: np.ndarray       # (K,) int
    z0: np.ndarray            # (K,) int
    lp_solves: int = 0        # HiGHS runs, search and robust runs included
    robust_fallbacks: int = 0
    robust_cache_hits: int = 0
    wall_s: float = 0.0


def all_eligible(n: int, m: int) -> EligibilityTable:
    return EligibilityTable(np.ones((1, n, m), np.uint8), np.full(1, np.nan),
                            np.full(1, -1), np.full(1, -1))


def lp_eligibility(policy: str, mu_nom: np.ndarray, alpha: np.ndarray, states: np.ndarray,
                   rng: np.random.Generator, degenerate: str = "search", tries: int = 20,
                   zero_tol: float = ZERO_TOL, lp_solver: str = "simplex",
                   robust_solver: str = "face") -> EligibilityTable:
    """Solve the LP for every state (row: estimate of each available machine, -1 if not
    available) and threshold its support into eligibility. ``lp_solver`` (``lpas_dg``):
    ``simplex`` (all states in one numba call) or ``highs`` (one highspy re-solve per
    state). ``robust_solver`` (``lpas_dg_robust``): ``face`` (numba simplex vertex, then
    the exact maximal support of the optimal face, all states in one call) or ``ipm``
    (HiGHS vertex, then HiGHS interior point without crossover, thresholded)."""
    t0 = time.perf_counter()
    n, m = mu_nom.shape
    if robust_solver not in ("face", "ipm"):
        raise ValueError(f"robust_solver {robust_solver!r}: allowed 'face' or 'ipm'")
    if policy == "lpas_dg" and lp_solver == "simplex":
        sol, counts = solve_states(mu_nom, alpha, states, rng, degenerate, tries, zero_tol)
        return EligibilityTable(sol.elig, sol.lambda_star, sol.n_zeros, sol.z0, counts["solves"],
                                0, 0, time.perf_counter() - t0)
    if policy == "lpas_dg_robust" and robust_solver == "face":
        sol, counts = solve_states_robust(mu_nom, alpha, states, rng, degenerate, tries, zero_tol)
        return EligibilityTable(sol.elig, sol.lambda_star, sol.n_zeros, sol.z0, counts["solves"],
                                counts["fallbacks"], 0, time.perf_counter() - t0)
    if lp_solver not in ("simplex", "highs"):
        raise ValueError(f"lp_solver {lp_solver!r}: allowed 'simplex' or 'highs'")
    method = "robust" if policy == "lpas_dg_robust" else "vertex"
    lp = AllocationLP(mu_nom, alpha, method=method, degenerate=degenerate, tries=tries,
                      zero_tol=zero_tol, rng=rng)
    k = states.shape[0]
    elig = np.zeros((k, n, m), np.uint8)
    lam = np.empty(k)
    nz = np.empty(k, np.int64)
    z0 = np.empty(k, np.int64)
    for r in range(k):
        available = states[r] >= 0.0
        sol = lp.solve(available, np.where(available, states[r], 1.0))
        elig[r] = sol.support
        lam[r], nz[r], z0[r] = sol.lambda_star, sol.n_zeros, sol.z0
    return EligibilityTable(elig, lam, nz, z0, lp.solves, lp.robust_fallbacks,
                            lp.robust_cache_hits, time.perf_counter() - t0)
