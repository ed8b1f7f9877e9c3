"""A test workload: mm1 that raises for every seed divisible by ``fail_every``.

Used by the pipeline tests as ``workload = "tests.flaky_workload"`` (a dotted name).
"""
from __future__ import annotations

import numpy as np

from schedsweep.workloads import mm1
from schedsweep.workloads._contract import Param

PARAMS = mm1.PARAMS + (Param("fail_every", "int", 5, "seeds divisible by this raise", low=1),)
METRICS = mm1.METRICS
REASONS = mm1.REASONS


def run_batch(params, seeds):
    bad = [int(s) for s in seeds if int(s) % params["fail_every"] == 0]
    if bad:
        raise RuntimeError(f"deliberate failure for seed {bad[0]}")
    return mm1.run_batch({k: v for k, v in params.items() if k != "fail_every"}, np.asarray(seeds))
