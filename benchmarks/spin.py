"""``benchmarks.spin``: a replication that does a fixed amount of CPU work and nothing else,
so that the pipeline's own cost per replication can be measured against it."""
from __future__ import annotations

import numba
import numpy as np

from schedsweep.workloads._contract import Metric, Param, empty_outputs

PARAMS = (Param("iterations", "int", 1_000_000, "loop iterations per replication", low=1),)
METRICS = (Metric("value", "1", "a number that depends on the seed and the work"),)
REASONS = {0: ("none", "")}


@numba.njit(cache=True)
def _spin(seed: np.uint64, iterations: int) -> float:
    x = seed
    acc = 0.0
    for _ in range(iterations):
        x = x * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        acc += (x >> np.uint64(40)) * 1e-12
    return acc


def run_batch(params, seeds):
    out = empty_outputs(METRICS, len(seeds))
    for r, seed in enumerate(seeds):
        out["value"][r] = _spin(np.uint64(seed), params["iterations"])
    return out
