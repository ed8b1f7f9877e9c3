"""Pipeline overhead per replication and parallel efficiency.

For replications of about 1, 10 and 100 ms of pure CPU work (``benchmarks.spin``), run a
sweep through ``pipeline.run`` on a LocalCluster of 1 and of 2 workers (cluster start-up
excluded) and compare with the same replications called in a plain loop.

    python -m benchmarks.bench_pipeline [--seconds 8]

overhead  = (wall on 1 worker − plain loop time) / replications, also as % of a replication
pipeline overhead = (wall × workers − time inside run_batch on the workers) / replications:
            what the pipeline adds around the work (scheduling, transfer, store writes, idle
            workers at start and end), free of the worker-vs-client speed difference
efficiency = wall on 1 worker / (2 × wall on 2 workers)
"""
from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import numpy as np

from schedsweep import pipeline
from benchmarks import results, spin

SPEC = """
name = "spin"
workload = "benchmarks.spin"
replications = {reps}
seed = 1
[params]
iterations = {iterations}
[run]
batch_seconds = 2.0
"""


def calibrate(target_ms: float) -> int:
    spin._spin(np.uint64(1), 10)
    n = 1_000_000
    t = time.perf_counter()
    spin._spin(np.uint64(1), n)
    per_it = (time.perf_counter() - t) / n
    return max(1, int(target_ms / 1e3 / per_it))


def plain(iterations: int, reps: int) -> float:
    seeds = np.arange(reps, dtype=np.uint64)
    t = time.perf_counter()
    spin.run_batch({"iterations": iterations}, seeds)
    return time.perf_counter() - t


def through_pipeline(iterations: int, reps: int, address: str, tmp: Path, tag: str) -> tuple[float, float]:
    """Wall time of the sweep, and the time its tasks spent inside run_batch on the workers."""
    spec = tmp / f"{tag}.toml"
    spec.write_text(SPEC.format(reps=reps, iterations=iterations))
    t = time.perf_counter()
    path = pipeline.run(spec, tmp / f"{tag}.zarr", scheduler=address, progress=False)
    wall = time.perf_counter() - t
    return wall, float(pipeline.open_store(path)["cell_seconds"].sum())


def main() -> None:
    from distributed import LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="CPU seconds of work per configuration")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_pipeline.json")
    args = parser.parse_args()
    load_before = results.load()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        clusters = {w: LocalCluster(n_workers=w, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                    silence_logs=logging.ERROR) for w in (1, 2)}
        try:
            for ms in (1, 10, 100):
                iterations = calibrate(ms)
                reps = int(args.seconds * 1e3 / ms)
                base = plain(iterations, reps)
                runs = {w: through_pipeline(iterations, reps, c.scheduler_address, tmp, f"{ms}-{w}")
                        for w, c in clusters.items()}
                walls = {w: r[0] for w, r in runs.items()}
                per_rep = base / reps
                overhead = (walls[1] - base) / reps
                inner = {w: (walls[w] * w - r[1]) / reps for w, r in runs.items()}
                rows.append((ms, reps, per_rep * 1e3, walls[1], walls[2], overhead * 1e3,
                             100 * overhead / per_rep, inner[1] * 1e3, 100 * inner[1] / per_rep,
                             inner[2] * 1e3, 100 * inner[2] / per_rep, 100 * walls[1] / (2 * walls[2])))
        finally:
            for c in clusters.values():
                c.close()
    print("| target ms | reps | plain ms/rep | wall 1 worker s | wall 2 workers s | vs plain loop ms/rep | % "
          "| pipeline overhead 1 worker ms/rep | % | pipeline overhead 2 workers ms/rep | % | efficiency 2 workers % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| {} | {} | {:.3f} | {:.2f} | {:.2f} | {:.4f} | {:.1f} | {:.4f} | {:.1f} | {:.4f} | {:.1f} | {:.1f} |"
              .format(*r))
    if args.record:
        figures = []
        for r in rows:
            figures += [(f"pipeline overhead, {r[0]} ms replications, 1 worker", round(r[8], 2), "%"),
                        (f"pipeline overhead, {r[0]} ms replications, 2 workers", round(r[10], 2), "%"),
                        (f"parallel efficiency, {r[0]} ms replications, 2 workers", round(r[11], 2), "%")]
        print(results.record("bench_pipeline", figures, load_before,
                             note="Overhead = (wall x workers - time inside run_batch) / replications, as a "
                                  "share of a replication; efficiency = wall of 1 worker / (2 x wall of 2)."))


if __name__ == "__main__":
    main()
