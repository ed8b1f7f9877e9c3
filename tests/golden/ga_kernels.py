"""Write ``ga_kernels.json``: the ``ga`` workload's metrics on small cells that run every
kernel of the GA: non-parallel and parallel jobs, with and without dependencies (the fast
paths and the general ones), every built-in objective, both dockings, one and two islands,
and the FCFS and Backfill baselines (the initial populations of the GA, too).

The stored file was written by the code before the compile-structure change
(main at c9e7ab0): ``tests/test_ga_kernels_golden.py`` checks that the kernels give the
same values, bit for bit. Metrics that depend on the time-to-solution target rule (chosen
in Python, not by the kernels) are left out. Run from the repository root:

    python -m tests.golden.ga_kernels
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

SEEDS = (1, 2)
BASE = dict(units=8, groups=2, width_high=4, density=3.0, periods=2, population=10, pc=0.5, pm=0.02,
            max_generations=40, stall_generations=20, migration_interval=10, init_mutations=5,
            target="own_final")
# chosen by the target rule (Python), not by the kernels
TARGET_METRICS = ("generations_to_solution", "time_to_solution", "generations_to_own_final", "reason",
                  "time_to_solution_within")
OBJECTIVES = ("gmean", "makespan", "weighted_completion")
# the time on P modules, computed in Python from the run's counts (tests/test_ga_parallel.py)
MODEL_TIME_METRICS = ("model_time_to_solution", "model_speedup", "model_time_one_island", "model_time",
                      "migrations_to_solution", "genes_to_solution", "migrations")


def cells() -> list[dict]:
    """The parameter sets, in a fixed order."""
    out = []
    for k, (parallel, dep_prob, objective) in enumerate(itertools.product((False, True), (0.0, 0.3), OBJECTIVES)):
        out.append(dict(BASE, algorithm="ga", parallel=parallel, dep_prob=dep_prob, objective=objective,
                        docking=("tau_first", "idle_genes_only")[k % 2], islands=1 + k % 3 // 2))
    for algorithm, parallel, dep_prob in itertools.product(("fcfs", "backfill"), (False, True), (0.0, 0.3)):
        out.append(dict(BASE, algorithm=algorithm, parallel=parallel, dep_prob=dep_prob))
    return out


def values(params: dict) -> dict[str, list]:
    """Every non-timing metric of ``params`` over ``SEEDS`` but the target rule's, as lists (NaN kept)."""
    from schedsweep.workloads import ga
    from schedsweep.workloads._contract import defaults

    res = ga.run_batch({**defaults(ga.PARAMS), **params}, np.array(SEEDS, np.uint64))
    skip = {m.name for m in ga.METRICS if m.timing} | set(TARGET_METRICS) | set(MODEL_TIME_METRICS)
    return {k: np.asarray(v, np.float64).ravel().tolist() for k, v in res.items() if k not in skip}


def main() -> None:
    path = Path(__file__).with_suffix(".json")
    data = [{"params": p, "values": values(p)} for p in cells()]
    path.write_text("[\n" + ",\n".join(json.dumps(c, separators=(",", ":")) for c in data) + "\n]\n")  # a cell a line
    print(f"wrote {path} ({len(data)} cells)")


if __name__ == "__main__":
    main()
