"""A test workload: mm1 whose worker process dies the first time it sees a marked seed.

The marker file (param ``marker``) records that the death happened, so the rerun of the
lost batch on a fresh worker succeeds: the store must end complete and correct.
"""
from __future__ import annotations

import os

import numpy as np

from schedsweep.workloads import mm1
from schedsweep.workloads._contract import Param

PARAMS = mm1.PARAMS + (Param("marker", "str", "", "file created when the worker has died once"),
                       Param("die_at_seed_mod", "int", 7, "die on the first seed divisible by this", low=1))
METRICS = mm1.METRICS
REASONS = mm1.REASONS


def run_batch(params, seeds):
    marker = params["marker"]
    if marker and not os.path.exists(marker) and any(int(s) % params["die_at_seed_mod"] == 0 for s in seeds):
        open(marker, "w").close()
        os._exit(1)  # the whole worker process dies, as under a Slurm walltime kill
    return mm1.run_batch({k: params[k] for k in ("arrival_rate", "service_rate", "customers", "warmup")},
                         np.asarray(seeds))
