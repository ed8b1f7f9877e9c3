"""Plain-Python restatement of the sequential combination rule (``combination = "sequential"``),
written from the rule's description, not from the code of ``workloads/cyclic/sequential.py``.

Jobs in priority order; job i with no alternative left is postponed (-1). Otherwise, over the
jobs i..N that still have alternatives (only the alternatives left), every combination is
enumerated; those whose total level is within the limit left are feasible; the best total value
wins, ties to the lexicographically first combination (itertools.product order = each job's
lowest index first, the DP's tie rule); job i takes its element. With none feasible: flagged,
job i takes its smallest-quantity alternative left (lowest index on ties). Then every alternative
of a later job that conflicts with job i's choice is removed and the limit drops by its level.
"""
from __future__ import annotations

import itertools
import math


def sequential_choice(offsets, v, g, maximize, resolution, conflict):
    """Returns (choice list, flagged)."""
    J = len(offsets) - 1
    gq = [math.ceil(x / resolution) for x in g]
    limit = sum(math.floor(sum(g[offsets[i]:offsets[i + 1]]) / (offsets[i + 1] - offsets[i])) for i in range(J))
    rem = math.floor(limit / resolution)
    alive = [list(range(offsets[i], offsets[i + 1])) for i in range(J)]
    choice = [-1] * J
    flagged = False
    for i in range(J):
        if not alive[i]:
            continue
        jobs = [k for k in range(i, J) if alive[k]]
        best, best_val = None, None
        for combo in itertools.product(*[alive[k] for k in jobs]):
            if sum(gq[a] for a in combo) > rem:
                continue
            val = sum(v[a] for a in combo)
            if best is None or (val > best_val if maximize else val < best_val):
                best, best_val = combo, val
        if best is None:
            flagged = True
            a = min(alive[i], key=lambda b: (g[b], b))
        else:
            a = best[0]
        choice[i] = a - offsets[i]
        rem -= gq[a]
        for k in range(i + 1, J):
            alive[k] = [b for b in alive[k] if not conflict[a][b]]
    return choice, flagged
