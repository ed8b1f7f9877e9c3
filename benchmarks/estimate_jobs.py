"""Measure the run-time estimates shipped with the specs and write ``jobs/estimates.json``.

For every spec in ``jobs/`` (or those given): seconds per replication on one core, the mean
over the cells ``schedsweep jobs --estimate`` would pilot (:func:`pipeline.read.catalogue.pilot`,
run here in this process after a warm-up replication, so compile time is not in it); and for
every workload the CPU seconds of its cold numba compile (the worst spec of
``benchmarks.bench_compile``, a fresh process with an empty cache). ``schedsweep jobs``
scales the per-replication figure by cells, replications and this machine's cores; a first
``schedsweep run`` names the compile time.

    python -m benchmarks.estimate_jobs                       # every spec and workload (minutes)
    python -m benchmarks.estimate_jobs jobs/mm1.toml --no-compile   # refresh one spec

Run it on a quiet machine: the figures are per core, and load inflates them.
"""
from __future__ import annotations

import argparse
import json
import platform
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "jobs" / "estimates.json"


def spec_rates(paths: list[Path], seconds: float) -> dict[str, dict]:
    """{file name: {seconds_per_replication, cells, identity}} for the given specs."""
    from schedsweep.pipeline.read.catalogue import pilot, pilot_cells
    from schedsweep.pipeline.spec.estimates import spec_key
    from schedsweep.pipeline.spec.sweep import load
    from schedsweep.workloads.kernel_support.stdio import stdout_to_stderr

    out = {}
    for path in paths:
        spec = load(path)
        with stdout_to_stderr():  # solver banners must not mix into the table
            rate = pilot(spec, seconds)
        out[path.name] = {"seconds_per_replication": float(f"{rate:.4g}"), "cells": len(pilot_cells(spec)),
                          "identity": spec_key(spec.text)}
        print(f"{path.name:<44} {rate * 1e3:10.3g} ms per replication", flush=True)
    return out


def compile_seconds() -> dict[str, float]:
    """{workload: cold compile CPU-s of its worst spec} (benchmarks.bench_compile.WORST)."""
    from benchmarks.bench_compile import WORST, measure
    from schedsweep.pipeline.spec.sweep import load

    out = {}
    for spec, overrides in WORST.items():
        with tempfile.TemporaryDirectory() as cache:
            cold = measure(spec, overrides, Path(cache))
        workload = load(ROOT / spec, overrides, shallow=True).workload
        seconds = round(cold["first"] - cold["second"], 1)
        out[workload] = max(out.get(workload, 0.0), seconds)  # the workload's worst spec
        print(f"{workload:<20} cold compile {seconds:6.1f} CPU-s ({spec})", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", type=Path, help="spec files (default: every jobs/*.toml)")
    parser.add_argument("--seconds", type=float, default=0.5, help="pilot seconds per cell (default 0.5)")
    parser.add_argument("--no-compile", action="store_true", help="keep the stored compile figures")
    args = parser.parse_args()
    try:
        data = json.loads(OUT.read_text())
    except (OSError, ValueError):
        data = {}
    paths = args.specs or sorted((ROOT / "jobs").glob("*.toml"))
    data.setdefault("specs", {}).update(spec_rates(paths, args.seconds))
    if not args.no_compile:
        data["compile_cpu_seconds"] = compile_seconds()
    data["about"] = ("seconds per replication on one core (mean over the piloted cells) and cold numba compile "
                     "CPU seconds per workload; written by python -m benchmarks.estimate_jobs")
    data["machine"] = f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
