#!/usr/bin/env python3
"""Benchmark of the ``cyclic`` workload: cycles per second per core for each method.

Runs ``run_batch`` in this process (one core) on consecutive seeds after a warm-up cycle
(numba compilation and cache loading excluded) and measures process CPU time, which on a
shared machine is closer to what one dedicated core would do than wall time. Also shows
the share of a cycle spent in the scheduling itself (``schedule_time``; the rest is the
environment, the batch and the metrics).

    python benchmarks/bench_cyclic.py --nodes 24 150 --cycles 200 --repeat 3

``--combination search sequential``: both combination steps with shared alternatives, back to back.

``--specs``: estimated CPU time of whole sweeps, every cell of each spec measured on
``--cycles`` cycles and scaled to the spec's replications (its ``[[zip]]`` rows included):

    python benchmarks/bench_cyclic.py --specs jobs/cyclic-*.toml --cycles 80 --repeat 1
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import results  # noqa: E402
from schedsweep.workloads._contract import defaults  # noqa: E402
from schedsweep.workloads.cyclic import DISJOINT_MODEL, PARAMS, run_batch  # noqa: E402
from schedsweep.workloads.cyclic.cycle import METHODS  # noqa: E402


def measure(params: dict, cycles: int, repeat: int) -> tuple[float, float, float]:
    """Best of ``repeat`` runs: (cycles per CPU second, median scheduling time in us, wall seconds)."""
    run_batch(params, np.array([10**9], np.uint64))          # warm-up: compile / load cache
    seeds = np.arange(cycles, dtype=np.uint64)
    best = (0.0, np.nan, np.nan)
    for _ in range(repeat):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        out = run_batch(params, seeds)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if cycles / cpu > best[0]:
            best = (cycles / cpu, float(np.median(out["schedule_time"])), wall)
    return best


def spec_cpu_seconds(path: str, cycles: int, repeat: int) -> tuple[int, float]:
    """(cells, estimated CPU seconds) of a sweep spec of the cyclic workload."""
    with open(path, "rb") as fh:
        spec = tomllib.load(fh)
    base = defaults(PARAMS)
    base.update(spec.get("params", {}))
    sweep = spec.get("sweep", {})
    zip_rows = [[dict(zip(z, values)) for values in zip(*z.values())] for z in spec.get("zip", [])]
    cells, total = 0, 0.0
    for combo in itertools.product(*sweep.values()):
        for rows in itertools.product(*zip_rows):
            params = dict(base, **dict(zip(sweep, combo)))
            for row in rows:
                params.update(row)
            rate, _, _ = measure(params, cycles, repeat)
            total += spec["replications"] / rate
            cells += 1
    return cells, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", default=[24, 150])
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--cycles", type=int, default=300, help="cycles measured per method and size")
    ap.add_argument("--repeat", type=int, default=3, help="runs per point; the fastest is shown "
                    "(other processes only ever slow a run down)")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--n-css", type=int, default=10, help="css_bf: jobs of the cyclic part")
    ap.add_argument("--specs", nargs="+", help="estimate whole sweeps of these spec files instead")
    ap.add_argument("--combination", nargs="+", default=["search"], choices=("search", "sequential"),
                    help="combination step(s) with shared alternatives, measured back to back")
    ap.add_argument("--disjoint", action="store_true",
                    help="the spec's model: disjoint alternatives (workloads.cyclic.DISJOINT_MODEL)")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_cyclic.json "
                                                          "(bench_cyclic_disjoint.json with --disjoint)")
    args = ap.parse_args()
    load_before = results.load()
    figures = []
    if args.specs:
        for path in args.specs:
            cells, seconds = spec_cpu_seconds(path, args.cycles, args.repeat)
            print(f"{path}: {cells} cells, about {seconds:.0f} CPU-seconds", flush=True)
        return
    print(f"{'nodes':>5} {'jobs':>4} {'method':>7} {'combination':>11} {'cycles/s/core':>13} {'s per 5000':>10} "
          f"{'sched us':>9} {'wall s':>7}")
    for nodes in args.nodes:
        for method in args.methods:
            for combination in args.combination:
                params = defaults(PARAMS)
                if args.disjoint:
                    params.update(DISJOINT_MODEL)
                params.update(nodes=nodes, jobs=args.jobs, method=method, n_css=min(args.n_css, args.jobs),
                              combination=combination)
                rate, sched, wall = measure(params, args.cycles, args.repeat)
                print(f"{nodes:>5} {args.jobs:>4} {method:>7} {combination:>11} {rate:>13.0f} {5000 / rate:>10.1f} "
                      f"{sched:>9.0f} {wall:>7.2f}", flush=True)
                figures.append((f"{method} at {nodes} nodes, {args.jobs} jobs ({combination}): CPU per 5000 cycles, "
                                f"from {args.cycles} cycles (best of {args.repeat})", round(5000 / rate, 1), "CPU-s"))
    if args.record:
        model = "the spec's disjoint model (`DISJOINT_MODEL`)" if args.disjoint else "the calibrated defaults"
        print(results.record("bench_cyclic" + ("_disjoint" if args.disjoint else ""), figures, load_before,
                             note=f"`run_batch` in one process on consecutive seeds, {model}; process CPU, "
                                  "compilation excluded (a warm-up cycle first)."))


if __name__ == "__main__":
    main()
