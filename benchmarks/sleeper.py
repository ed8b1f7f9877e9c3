"""``benchmarks.sleeper``: a replication that sleeps a fixed time and uses no CPU, so that
many workers on a small machine measure what the pipeline, the client and the scheduler cost
per task (``benchmarks/bench_workers.py``)."""
from __future__ import annotations

import time

import numpy as np

from schedsweep.workloads._contract import Metric, Param, empty_outputs

PARAMS = (Param("seconds", "float", 0.1, "seconds each replication sleeps", low=0.0),
          Param("cell", "int", 0, "a label that makes cells", low=0))
METRICS = (Metric("slept", "s", "seconds the replication slept"),)
REASONS = {0: ("none", "")}


def run_batch(params, seeds):
    out = empty_outputs(METRICS, len(seeds))
    for r in range(len(seeds)):
        t0 = time.perf_counter()
        time.sleep(params["seconds"])
        out["slept"][r] = time.perf_counter() - t0
    out["reason"][:] = np.int8(0)
    return out
