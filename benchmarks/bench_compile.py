"""Compile time of what one spec needs, cold and cached.

For each spec, a fresh process with an empty ``NUMBA_CACHE_DIR`` runs one replication of
every cell of the spec (sizes reduced with ``--set`` so that running costs little), each
twice: the CPU of the first call minus the second is what compiling cost. A second fresh
process with the same cache directory does the same: what loading the cache costs.

    python -m benchmarks.bench_compile                 # the worst case of each workload
    python -m benchmarks.bench_compile jobs/mm1.toml --set params.customers=100   # any specs
    python -m benchmarks.bench_compile --repeat 3      # the median of 3 cold runs per spec

This machine's CPU-s for the same compile move by up to ±20% from run to run (measured: one
spec read 25.2 and 37.3 CPU-s ten minutes apart, load 1.0), so compare medians of repeats,
and two versions of the code in alternating runs.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import results

# Per workload the spec whose cells select the most kernels, made small.
WORST = {
    "jobs/cluster-network-queues.toml": ["params.jobs=30"],   # every queue policy with the packet network
    "jobs/cluster-lublin-load.toml": ["params.jobs=30"],
    "jobs/desktop-grid-estimation-error.toml": ["params.horizon=300.0", "params.warmup=30.0"],
    "jobs/ga-time-to-solution.toml": ["sweep.density=[1]", "params.max_generations=20"],
    "jobs/cyclic-frsm-vs-css.toml": ["params.jobs=10"],
    "jobs/slot-selection.toml": [],
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(spec_path: str, overrides: list[str]) -> None:
    """In the fresh process: compile CPU (first call minus second) over every cell."""
    t0 = _cpu()
    from schedsweep.pipeline.spec.sweep import load, workload_of

    spec = load(spec_path, overrides)
    module = workload_of(spec)
    imports = _cpu() - t0
    import numpy as np

    seed = np.array([12345], np.uint64)
    first = second = 0.0
    for _, params in spec.cells():
        a = _cpu()
        module.run_batch(params, seed)
        b = _cpu()
        module.run_batch(params, seed)
        c = _cpu()
        first += b - a
        second += c - b
    print(json.dumps({"imports": imports, "first": first, "second": second, "cells": len(dict(spec.cells()))}))


def measure(spec: str, overrides: list[str], cache: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-m", "benchmarks.bench_compile", "--child", spec, *overrides],
                         env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{spec}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", help="spec files (default: the worst case of each workload)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override for the specs given (as schedsweep run --set)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="cold runs per spec, each with an empty cache (the median is reported)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_compile.json")
    args = parser.parse_args()
    load_before = results.load()
    figures = []
    if args.child:
        child(args.child[0], args.child[1:])
        return
    specs = {s: args.set for s in args.specs} if args.specs else WORST
    if args.repeat < 1:
        raise SystemExit(f"--repeat must be >= 1, got {args.repeat}")
    print("| spec (reduced) | cells | cold compile CPU s | cached: load CPU s | imports CPU s |")
    print("|---|---|---|---|---|")
    for spec, overrides in specs.items():
        colds = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as d:
                cold = measure(spec, overrides, Path(d))
                colds.append(cold["first"] - cold["second"])
                if len(colds) == 1:
                    warm = measure(spec, overrides, Path(d))
        label = spec + (f" ({', '.join(overrides)})" if overrides else "")
        runs = f" ({', '.join(f'{c:.1f}' for c in colds)})" if len(colds) > 1 else ""
        print(f"| {label} | {cold['cells']} | {statistics.median(colds):.1f}{runs} | "
              f"{warm['first'] - warm['second']:.2f} | {cold['imports']:.2f} |", flush=True)
        name = Path(spec).stem + (f" ({', '.join(f'`{o}`' for o in overrides)})" if overrides else "")
        figures += [(f"{name}: cold compile (median of {len(colds)})", round(statistics.median(colds), 1), "CPU-s"),
                    (f"{name}: cached, load", round(warm["first"] - warm["second"], 2), "CPU-s")]
    if args.record:
        print(results.record("bench_compile", figures, load_before,
                             note="Per spec a fresh process with an empty numba cache runs one replication of "
                                  "every cell twice (compile = CPU of the first calls minus the second); then a "
                                  "second process with the same cache (what loading costs)."))


if __name__ == "__main__":
    main()
