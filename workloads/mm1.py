"""``mm1``: a single-server FIFO queue with Poisson arrivals and exponential service.

It exists to validate the pipeline statistically: the stationary mean time in system is
``1 / (mu - lambda)`` and the mean wait ``lambda / (mu (mu - lambda))``.

Random streams, in this order: inter-arrival times, service times.

The numba kernel (the Lindley recursion) is in ``_lindley.py``, imported by :func:`run_batch`
only: declaring the workload (``schedsweep workloads``) does not import numba.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ._contract import QUANTILES, Metric, Param, empty_outputs, quantiles, substreams

PARAMS = (
    Param("arrival_rate", "float", 0.5, "Poisson arrival rate lambda (customers per time unit)", low=1e-9),
    Param("service_rate", "float", 1.0, "exponential service rate mu (customers per time unit)", low=1e-9),
    Param("customers", "int", 10_000, "customers simulated per replication, warm-up included", low=1),
    Param("warmup", "int", 1_000, "customers discarded at the start of each replication", low=0),
)

METRICS = (
    Metric("mean_wait", "time", "mean waiting time in queue of the customers after warm-up"),
    Metric("mean_time_in_system", "time", "mean wait plus service of the customers after warm-up"),
    Metric("time_in_system_quantiles", "time", "percentiles over the customers after warm-up of wait plus "
           "service (stationary: exponential with rate mu - lambda)", dims=QUANTILES),
)

REASONS = {0: ("none", "the replication produced every metric")}


def check_params(params: Mapping[str, Any]) -> list[str]:
    if params["warmup"] >= params["customers"]:
        return [f"warmup ({params['warmup']}) must be smaller than customers ({params['customers']})"]
    return []


def run_batch(params: Mapping[str, Any], seeds: np.ndarray) -> dict[str, np.ndarray]:
    from ._lindley import lindley   # the numba kernel: not imported to declare (schedsweep workloads)

    out = empty_outputs(METRICS, len(seeds))
    lam, mu, n, warmup = params["arrival_rate"], params["service_rate"], params["customers"], params["warmup"]
    for r, seed in enumerate(seeds):
        arrivals, services = substreams(seed, 2)
        interarrival = arrivals.exponential(1.0 / lam, n)
        service = services.exponential(1.0 / mu, n)
        sojourn = np.empty(n - warmup)
        out["mean_wait"][r], out["mean_time_in_system"][r] = lindley(interarrival, service, warmup, sojourn)
        out["time_in_system_quantiles"][r] = quantiles(sojourn)
    return out
