"""Wall time of the GA's islands in one process against islands as tasks on a Dask LocalCluster.

The same replications (same seeds, so the same generations and exchanges) run alternately
in-process (``run_replications`` in this process) and with ``island_execution = "dask"`` as
sweep tasks on a LocalCluster (``run_isolated`` on a worker: the replication drives its islands
from its child process, each island epoch a task). Prints the workload's timing metrics per
run: wall time per generation and per exchange, and the replication's wall time.

    python benchmarks/bench_ga_dask.py --density 2 --islands 4 --repeats 2 --workers 2
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import results  # noqa: E402
from schedsweep import workloads  # noqa: E402
from schedsweep.workloads._contract import defaults  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--density", type=float, default=2.0)
    ap.add_argument("--islands", type=int, default=4)
    ap.add_argument("--interval", type=int, default=50, help="I_m")
    ap.add_argument("--periods", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_ga_dask.json")
    args = ap.parse_args(argv)
    load_before = results.load()

    from schedsweep.pipeline.execution.executors import open_executor
    from schedsweep.pipeline.execution.tasks import run_isolated, run_replications

    ga = workloads.get("ga")
    params = {**defaults(ga.PARAMS), "density": args.density, "islands": args.islands,
              "migration_interval": args.interval, "periods": args.periods}
    seeds = np.array([args.seed], np.uint64)
    rows = []
    with open_executor(workers=args.workers, cluster="dask") as executor:
        executor.results([executor.submit(run_isolated, "ga", {**params, "island_execution": "dask"}, seeds,
                                          3600.0, key="warm-up")])   # workers' replication processes started
        run_replications("ga", params, seeds)                         # this process's kernels loaded
        for r in range(args.repeats):
            for mode in ("in_process", "dask"):
                t0 = time.perf_counter()
                if mode == "dask":
                    out = executor.results([executor.submit(run_isolated, "ga", {**params, "island_execution": "dask"},
                                                            seeds, 3600.0, key=f"dask-{r}")])[0]
                else:
                    out = run_replications("ga", params, seeds)
                wall = time.perf_counter() - t0
                o = out["outputs"]
                rows.append((r, mode, o["generations"][0], o["migrations"][0], o["wall_per_generation"][0] * 1e3,
                             o["wall_per_migration"][0] * 1e3, o["wall_seconds"][0], wall))
    print(f"D = {args.density:g}, P = {args.islands}, I_m = {args.interval}, periods = {args.periods}, "
          f"seed {args.seed}, {args.workers} Dask workers\n")
    print("| repeat | islands | generations | exchanges | ms per generation | ms per exchange | GA wall s | task wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| {} | {} | {:.0f} | {:.0f} | {:.3g} | {:.3g} | {:.3g} | {:.3g} |".format(*row))
    if args.record:
        print(results.record("bench_ga_dask", _fewest(rows), load_before,
                             note=f"D = {args.density:g}, P = {args.islands} islands, I_m = {args.interval}, "
                                  f"{args.periods} period(s), seed {args.seed}, {args.workers} Dask workers; the "
                                  f"fewest of {args.repeats} alternating runs of each."))
    return 0


def _fewest(rows: list[tuple]) -> list[tuple[str, float, str]]:
    """Per mode, the fewest ms per generation and per exchange over the repeats."""
    out = []
    for mode, label in (("in_process", "in one process"), ("dask", "islands as Dask tasks")):
        mine = [r for r in rows if r[1] == mode]
        out += [(f"{label}: wall per generation", round(min(r[4] for r in mine), 3), "ms"),
                (f"{label}: wall per exchange", round(min(r[5] for r in mine), 3), "ms")]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
