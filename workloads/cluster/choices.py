"""The names the cluster workload's choice parameters take, without numba: the declarations
(``PARAMS``, ``network_params``) and ``schedsweep workloads`` read them here; the modules that
implement each choice hand them on (``from .bookkeeping import QUEUE_NAMES`` still works)."""
from __future__ import annotations

#: queue policies, in the order of their codes (bookkeeping.py: FCFS, MPFS_SCAN, EASY, CONSERVATIVE)
QUEUE_NAMES = ("fcfs", "mpfs_scan", "easy", "conservative")
#: when the performance loss CL is counted (bookkeeping.py)
CL_MASKS = ("queue_nonempty_and_not_all_idle", "queue_nonempty")
#: part 1's allocation policies, in the order of their codes (allocation.py: FIRST_FIT, BEST_FIT, ...)
ALLOCATION_NAMES = ("first_fit", "best_fit", "fastest_first", "random_first")
#: topology-aware allocation methods (the keys of topo_allocation.METHODS, in order; a test checks)
TOPO_METHODS = ("node_sorting", "contiguous", "quasi_contiguous", "paging", "mbs", "anca", "gabl", "mc",
                "mc_incremental", "manhattan_median", "modified_mc")
#: SPMD communication patterns (spmd.py)
PATTERNS = ("random", "pairs", "ring", "one_to_all", "all_to_all")
