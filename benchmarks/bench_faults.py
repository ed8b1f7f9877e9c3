"""What running replications in a killable child process costs (pipeline.execution.child).

For mm1 batches of several sizes: the median wall time of ``run_replications`` in this
process against ``run_isolated`` (the same call in the warm child process, with its
time limit), and the time to start a child and load the model (paid once per worker and
after every timeout or crash).

    python benchmarks/bench_faults.py [--customers 10000] [--repeats 30]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from schedsweep.pipeline.execution import child
from schedsweep.pipeline.execution.tasks import run_isolated, run_replications


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=10_000, help="customers per mm1 replication")
    parser.add_argument("--repeats", type=int, default=30, help="calls per measurement (median)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100], help="replications per batch")
    args = parser.parse_args()
    params = {"arrival_rate": 0.5, "service_rate": 1.0, "customers": args.customers, "warmup": 100}
    run_replications("mm1", params, np.arange(1, 2, dtype=np.uint64))  # compile or load here first

    child.close_all()
    t0 = time.perf_counter()
    run_isolated("mm1", params, np.arange(1, 2, dtype=np.uint64), 600.0)
    start = time.perf_counter() - t0

    print(f"child start + model load + first replication: {start * 1e3:.0f} ms")
    print(f"{'batch':>6} {'in process ms':>14} {'in child ms':>12} {'overhead ms':>12} {'overhead %':>11}")
    for size in args.sizes:
        seeds = np.arange(1, size + 1, dtype=np.uint64)
        here = _median_seconds(lambda: run_replications("mm1", params, seeds), args.repeats)
        there = _median_seconds(lambda: run_isolated("mm1", params, seeds, 600.0), args.repeats)
        print(f"{size:>6} {here * 1e3:>14.2f} {there * 1e3:>12.2f} {(there - here) * 1e3:>12.2f} "
              f"{100 * (there - here) / here:>10.1f}%")
    child.close_all()


if __name__ == "__main__":
    main()
