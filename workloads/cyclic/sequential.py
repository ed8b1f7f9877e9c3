"""The sequential combination rule with shared alternatives (``combination = "sequential"``).

*(our rule, defined as "a chosen alternative removes the slots it
uses from the others")*: with shared alternatives the combination step (``docs/models/cyclic.md`` CSS step 2)
is no longer separable by jobs. Instead of a search over conflict-free combinations
(:func:`.dp.choose`, ``combination = "search"``), the jobs take their alternatives one by one in
priority order, each by the spec's backward DP over the jobs still to place:

for job i = 1 ... N:

1. if job i has no alternative left, it is postponed (choice -1);
2. otherwise run the DP (:func:`.dp._dp`: the same integer levels, rounding and tie rule) over the
   jobs i ... N that still have an alternative, each with only its alternatives left, under the
   limit ``G`` minus the levels of the alternatives already chosen; job i takes the DP's choice;
3. if no combination of those jobs meets that limit, the combination is flagged and job i takes
   its smallest-quantity alternative left (ties: the lower index), the DP's own fallback;
4. every alternative of a later job that conflicts with job i's choice is removed.

With no conflicts this is exactly the DP's choice (and flag): the DP over jobs i ... N under the
limit left equals the tail of the first DP's trace-back (the same Phi values, the same ties).
That is also why a DP is re-run only after a choice removed some alternative: until then the
last trace-back is followed. Cost: at most N DPs a call, each over the jobs left; no search.
"""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel
from .dp import Combination, _dp, levels, placed_value, prepared


@kernel
def _sequential(offsets, v, gq, g, G, maximize, conflict):
    """The rule of the module docstring on integer levels ``gq`` and limit ``G``.

    ``g``: the quantities (for the smallest-quantity fallback). Returns ``(choice, flagged)``,
    ``choice`` indexing each job's own list, -1 for a postponed job.
    """
    J = offsets.shape[0] - 1
    A = offsets[J]
    alive = np.ones(A, np.bool_)
    choice = np.full(J, -1, np.int64)
    plan = np.full(J, -1, np.int64)      # the last DP's trace-back (global alternative indices)
    plan_ok = False                     # still valid: no alternative removed since that DP
    flagged = False
    rem = G
    sub_off = np.zeros(J + 1, np.int64)
    sub_v = np.empty(A, np.float64)
    sub_g = np.empty(A, np.int64)
    sub_a = np.empty(A, np.int64)
    sub_job = np.empty(J, np.int64)
    for i in range(J):
        left = False
        for a in range(offsets[i], offsets[i + 1]):
            if alive[a]:
                left = True
                break
        if not left:
            continue                    # postponed; a DP without it is the DP over the jobs after it
        if not plan_ok:
            m = 0
            n = 0
            for k in range(i, J):
                first = n
                for a in range(offsets[k], offsets[k + 1]):
                    if alive[a]:
                        sub_v[n] = v[a]
                        sub_g[n] = gq[a]
                        sub_a[n] = a
                        n += 1
                if n > first:
                    sub_job[m] = k
                    m += 1
                    sub_off[m] = n
            sub, feasible = _dp(sub_off[:m + 1].copy(), sub_v[:n].copy(), sub_g[:n].copy(), rem, maximize)
            if feasible:
                for p in range(m):
                    plan[sub_job[p]] = sub_a[sub_off[p] + sub[p]]
                plan_ok = True
            else:
                flagged = True
                best = -1
                for a in range(offsets[i], offsets[i + 1]):
                    if alive[a] and (best < 0 or g[a] < g[best]):
                        best = a
                plan[i] = best
        a = plan[i]
        choice[i] = a - offsets[i]
        rem -= gq[a]
        for b in range(offsets[i + 1], A):
            if alive[b] and conflict[a, b]:
                alive[b] = False
                plan_ok = False
    return choice, flagged


def choose_sequential(offsets: np.ndarray, v: np.ndarray, g: np.ndarray, maximize: bool,
                      resolution: float, conflict: np.ndarray) -> Combination:
    """Choose at most one alternative per job by the sequential rule (module docstring).

    Same arguments and result as :func:`.dp.choose` with ``conflict`` (bool[A, A]): ``choice`` -1
    marks a postponed job, ``value`` is the total v of the jobs placed.
    """
    offsets, v, g, limit, G = prepared(offsets, v, g, resolution)
    conflict = np.ascontiguousarray(conflict, np.bool_)
    if conflict.shape != (len(v), len(v)):
        raise ValueError(f"conflict must be bool[{len(v)}, {len(v)}], got shape {conflict.shape}")
    choice, flagged = _sequential(offsets, v, levels(g, resolution), g, np.int64(G), bool(maximize), conflict)
    return Combination(choice, bool(flagged), limit, placed_value(offsets, v, choice))
