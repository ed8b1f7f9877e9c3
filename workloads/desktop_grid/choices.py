"""The names (and the one default) the desktop grid workload's declarations need, without
numba or HiGHS: ``PARAMS`` and ``schedsweep workloads`` read them here; the modules that
implement each choice hand them on (``from .simulator import POLICY_CODE`` still works)."""
from __future__ import annotations

#: dispatch policies and their kernel codes (simulator.py)
FCFS, PST, GCMU, LPAS = 0, 1, 2, 3
POLICY_CODE = {"fcfs": FCFS, "pst": PST, "gcmu": GCMU, "lpas_dg": LPAS, "lpas_dg_robust": LPAS}
POLICIES = tuple(POLICY_CODE)
LP_POLICIES = ("lpas_dg", "lpas_dg_robust")
#: distributions of a task's nominal work and their kernel codes (simulator.py)
WORK_EXP, WORK_DET, WORK_UNIF = 0, 1, 2
WORK_CODE = {"exponential": WORK_EXP, "deterministic": WORK_DET, "uniform": WORK_UNIF}
#: test systems (systems.py)
SYSTEMS = ("A", "B", "C", "D", "E", "testbed_hihi", "testbed_lolo", "G1", "G2", "generated", "custom")
V_HIGH, V_LOW = 0.9, 0.1
HETEROGENEITY = {"HiHi": (V_HIGH, V_HIGH), "HiLo": (V_HIGH, V_LOW),
                 "LoHi": (V_LOW, V_HIGH), "LoLo": (V_LOW, V_LOW)}  # (V_task, V_mach)
#: delta_ij counts as zero when <= ZERO_TOL * max delta (lp.py)
ZERO_TOL = 1e-7
