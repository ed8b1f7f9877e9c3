"""``benchmarks.peer_grid``: the SimPy desktop grid of the peer ``desktop_grid_simpy.py`` (outside the
repository, benchmarks/outside.py)
as a workload of one's own, the way a researcher would wrap an existing simulator.

One replication = one run of the peer's ``Grid`` (per-group machines 5, failures f = 0.002,
d = 50, LP by scipy), with the peer's own seed handling. Needs ``simpy`` (the bench extra).
"""
from __future__ import annotations

import importlib.util
import sys

import numpy as np

from schedsweep.workloads._contract import Metric, Param, empty_outputs


PARAMS = (
    Param("policy", "str", "Gcmu", "the peer's dispatch policy", choices=("FCFS", "PST", "Gcmu", "LPAS_DG")),
    Param("load", "float", 0.7, "arrival rates as a fraction of the largest sustainable", low=0.01, high=0.99),
    Param("horizon", "float", 2000.0, "simulated time (model time units)", low=1.0),
)
METRICS = (Metric("W", "1", "mean completion time of measured tasks (model time units)"),)
REASONS = {0: ("none", ""), 1: ("no_tasks", "no measured task completed")}


def _peer():
    if "desktop_grid_simpy" not in sys.modules:
        from benchmarks.outside import peer   # outside the repository: a clear error without it

        spec = importlib.util.spec_from_file_location("desktop_grid_simpy", peer("desktop_grid_simpy.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["desktop_grid_simpy"] = module
        spec.loader.exec_module(module)
    return sys.modules["desktop_grid_simpy"]


def one(policy: str, load: float, horizon: float, seed: int) -> float:
    """The peer's main() for one seed: mean completion time W, NaN if no task completed."""
    p = _peer()
    mu = p.build_system(5)
    m = len(mu[0])
    up_frac = (1 / 0.002) / (1 / 0.002 + 50.0)
    lam_star, _ = p.solve_lp([[x * up_frac for x in row] for row in mu], p.CLASS_MIX, list(range(m)), "scipy")
    alpha = [load * lam_star * c for c in p.CLASS_MIX]
    env = p.CountingEnv()
    grid = p.Grid(env, mu, alpha, policy, 0.002, 50.0, 0.1 * horizon, horizon, seed, "scipy")
    env.run(until=horizon)
    if grid.pending > 0:
        grid.stop = env.event()
        env.run(until=p.simpy.AnyOf(env, [grid.stop, env.timeout(0.25 * horizon)]))
    done = sum(grid.cnt)
    return sum(grid.sum_w) / done if done else float("nan")


def run_batch(params, seeds):
    out = empty_outputs(METRICS, len(seeds))
    for r, seed in enumerate(seeds):
        out["W"][r] = one(params["policy"], params["load"], params["horizon"], int(seed % np.uint64(2**32)))
        out["reason"][r] = 1 if np.isnan(out["W"][r]) else 0
    return out
