"""The names the cyclic workload's choice parameters take, without numba: the workload's
declarations (``PARAMS``) and ``schedsweep workloads`` read them here; the modules that
implement each choice hand them on (``from .dp import STRATEGIES`` still works)."""
from __future__ import annotations

#: scheduling methods (cycle.py)
METHODS = ("css", "css_s", "frsm", "bf", "css_bf")
#: strategy -> (value v, constraint quantity g, maximise v?) (dp.py)
STRATEGIES = {
    "max_income": ("cost", "time", True),
    "min_time": ("time", "cost", False),
    "min_cost": ("cost", "time", False),
    "min_idle": ("time", "time", True),
}
#: what 'time' is in the DP (frsm.py)
TIME_QUANTITIES = ("proc_time", "runtime", "finish")
#: the combination step with shared alternatives: the conflict-free search of :mod:`.dp`, or the
#: sequential rule of :mod:`.sequential` (our rule)
COMBINATIONS = ("search", "sequential")
#: backfilling variants and budget rules (backfilling.py)
VARIANTS = ("conservative", "easy")
BUDGET_RULES = ("ignore", "enforce")
#: the quantity a plug-in VO criterion's combination limits (plugins.py)
VO_LIMITS = ("cost", "time")
