#!/usr/bin/env python3
"""Our conflict-free searches against general exact solvers (CDCL SAT, CP-SAT) on recorded calls.

The combination step with shared alternatives (``workloads/cyclic/dp.py``) asks two questions
per call: does a conflict-free combination of every job exist (regardless of the limit), and does
one exist within the limit. Both are answered by :func:`dp._feasible`, a depth-first search
with forward checking; every calibrated CSS call needs 10^4-10^7 of its tries. This script asks
whether a general solver would answer them faster: it records the calls of ``--cycles`` cycles
(calibrated defaults, seeds 0 ...), then answers each question with our search exactly as
``dp._choose_conflicts`` runs it, and with each solver named on one core:

- CDCL SAT through python-sat (``cd19`` CaDiCaL, ``g4`` Glucose 4, ``m22`` MiniSat 2.2): one
  variable per alternative, a clause per job (at least one of its alternatives), a binary
  clause per conflicting pair. "Every job" only (the limit is not a clause).
- CP-SAT of OR-tools (``cpsat``): the same clauses, and for "within the limit" the linear
  constraint ``sum gq <= G`` (levels as ``dp.py`` rounds them).

Reported: CPU-s of the answers (solvers: the solve alone, the model building apart), the answers
where ours completed and whether they agree (they must), and the solvers' answers on the calls
our search left undecided at its caps.

    pip install python-sat ortools     # not dependencies of schedsweep; for this script only
    python studies/bench_cyclic_solvers.py --method css --cycles 100 --solvers cd19 g4 m22 cpsat
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.bench_cyclic_clique import searches  # noqa: E402
from studies.bench_cyclic_sequential import record  # noqa: E402
from schedsweep.workloads._contract import defaults  # noqa: E402
from schedsweep.workloads.cyclic import PARAMS  # noqa: E402
from schedsweep.workloads.cyclic import dp  # noqa: E402

SAT_SOLVERS = ("cd19", "g4", "m22")


def ours(call) -> tuple[tuple[bool, bool], tuple[bool, bool], float, float]:
    """(found, complete) for every job and within the limit, as ``_choose_conflicts`` runs them, and
    the CPU-s of each."""
    every_args, limit_args = searches(call)
    t = time.process_time()
    _, found, complete = dp._feasible(*every_args, dp.ANY_PLAIN_LIMIT, False, 0, 0)
    if not complete:
        _, found, complete = dp._feasible(*every_args, dp.ANY_LIMIT, True, 0, 0)
    every = (found, complete)
    within = (False, complete)
    t_every = time.process_time() - t
    if found:
        _, f2, c2 = dp._feasible(*limit_args, dp.FEASIBLE_LIMIT, False, dp.NOGOOD_BITS, dp.NOGOOD_DEPTH)
        within = (f2, c2)
    return every, within, t_every, time.process_time() - t - t_every


def sat(call, name: str) -> tuple[bool, float, float]:
    """Every job by a CDCL solver: (found, build CPU-s, solve CPU-s)."""
    from pysat.solvers import Solver
    offsets, _, _, _, _, conflict = call
    t0 = time.process_time()
    s = Solver(name=name)
    for i in range(len(offsets) - 1):
        s.add_clause([int(a) + 1 for a in range(offsets[i], offsets[i + 1])])
    for a, b in zip(*np.nonzero(np.triu(conflict))):
        s.add_clause([-int(a) - 1, -int(b) - 1])
    t1 = time.process_time()
    found = bool(s.solve())
    t2 = time.process_time()
    s.delete()
    return found, t1 - t0, t2 - t1


def cpsat(call, within: bool) -> tuple[bool | None, float, float]:
    """Every job, or within the limit, by CP-SAT on one worker: (found or None, build CPU-s, solve CPU-s)."""
    from ortools.sat.python import cp_model
    offsets, v, g, _, resolution, conflict = call
    offsets, v, g, _, G = dp.prepared(offsets, v, g, resolution)
    t0 = time.process_time()
    m = cp_model.CpModel()
    x = [m.NewBoolVar(f"x{a}") for a in range(int(offsets[-1]))]
    for i in range(len(offsets) - 1):
        m.AddBoolOr(x[offsets[i]:offsets[i + 1]])
    for a, b in zip(*np.nonzero(np.triu(conflict))):
        m.AddBoolOr([x[int(a)].Not(), x[int(b)].Not()])
    if within:
        m.Add(sum(int(q) * xa for q, xa in zip(dp.levels(g, resolution), x)) <= G)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 30.0
    t1 = time.process_time()
    status = solver.Solve(m)
    t2 = time.process_time()
    found = {cp_model.OPTIMAL: True, cp_model.FEASIBLE: True, cp_model.INFEASIBLE: False}.get(status)
    return found, t1 - t0, t2 - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=24)
    ap.add_argument("--method", default="css", choices=["css", "frsm"])
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--solvers", nargs="*", default=["cd19", "cpsat"], choices=[*SAT_SOLVERS, "cpsat"])
    args = ap.parse_args()
    params = defaults(PARAMS)
    params.update(nodes=args.nodes, method=args.method, combination="search")
    calls, _ = record(params, args.cycles)
    ours(calls[0])                                          # warm-up (cache load)
    base = [ours(c) for c in calls]
    every = [b[0] for b in base]
    within = [b[1] for b in base]
    print(f"{args.method}: {len(calls)} calls; ours {sum(b[2] for b in base):.2f} CPU-s every job, "
          f"{sum(b[3] for b in base):.2f} within the limit; every job: "
          f"found {sum(f for f, c in every)}, ruled out {sum(c and not f for f, c in every)}, "
          f"undecided {sum(not c for f, c in every)}; within the limit (where every job found): "
          f"found {sum(f for f, c in within)}, ruled out {sum(c and not f for (f, c), (e, _) in zip(within, every) if e)}, "
          f"undecided {sum(not c for (f, c), (e, _) in zip(within, every) if e)}", flush=True)
    for name in args.solvers:
        questions = ["every"] + (["within"] if name == "cpsat" else [])
        for q in questions:
            try:
                if name == "cpsat":
                    rows = [cpsat(c, q == "within") if (q == "every" or e[0]) else None
                            for c, e in zip(calls, every)]
                else:
                    rows = [sat(c, name) for c in calls]
            except ImportError as exc:
                print(f"  {name}: not installed ({exc}); pip install python-sat ortools")
                break
            ref = every if q == "every" else within
            pairs = [(r, o) for r, o in zip(rows, ref) if r is not None]
            wrong = sum(o[1] and r[0] is not None and r[0] != o[0] for r, o in pairs)
            undecided = [r[0] for r, o in pairs if not o[1]]
            print(f"  {name:>5} {q:>6}: solve {sum(r[2] for r, _ in pairs):7.2f} CPU-s, build {sum(r[1] for r, _ in pairs):6.2f}; "
                  f"disagree with ours where ours completed: {wrong}; on ours' undecided: "
                  f"found {sum(u is True for u in undecided)}, ruled out {sum(u is False for u in undecided)}, "
                  f"undecided {sum(u is None for u in undecided)}", flush=True)


if __name__ == "__main__":
    main()
