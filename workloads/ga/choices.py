"""The names the GA workload's choice parameters take, without numba (the declarations read
them here; the modules that implement each choice hand them on)."""
from __future__ import annotations

#: schedulers (planning.py)
METHODS = ("ga", "backfill", "fcfs")
#: built-in objectives (objectives.py)
OBJECTIVES = ("gmean", "makespan", "weighted_completion")
#: docking rules (islands.py)
DOCKING = ("tau_first", "idle_genes_only")
#: Tolerances above the target at which time to solution is also recorded (metric
#: time_to_solution_within), so one run shows how the measure depends on the tolerance.
WITHIN_LEVELS = (0.01, 0.02, 0.05, 0.1, 0.2)
