"""``benchmarks.napper``: a replication that sleeps a fixed time (no CPU) and reports a number
drawn from its seed, so that a sweep of it is the same store bit for bit wherever and however
often it runs. Walltime changeovers of Slurm worker jobs are measured and tested with it
(``benchmarks/bench_walltime.py``, ``tests/test_slurm_multihost.py``): the sleep is the work,
the draw proves every replication ran exactly once from its own seed."""
from __future__ import annotations

import time

import numpy as np

from schedsweep.workloads._contract import Metric, Param, empty_outputs

PARAMS = (Param("seconds", "float", 0.25, "seconds each replication sleeps", low=0.0),
          Param("cell", "int", 0, "a label that makes cells", low=0))
METRICS = (Metric("draw", "", "a uniform number drawn from the replication's seed"),)
REASONS = {0: ("none", "")}


def run_batch(params, seeds):
    out = empty_outputs(METRICS, len(seeds))
    for r, seed in enumerate(seeds):
        time.sleep(params["seconds"])
        out["draw"][r] = np.random.default_rng(int(seed)).random()
    out["reason"][:] = np.int8(0)
    return out
