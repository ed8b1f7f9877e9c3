"""Where a task's time goes on the result path (issue 20 item 4).

Tiny tasks (``benchmarks.spin`` with one iteration, one replication per task) isolate the
per-task cost of everything around the work:

- ``dask round trip``: ``client.submit`` of a no-op over the same cluster, results gathered
  as they complete (scheduler + transfer + client);
- ``child call``: :func:`pipeline.tasks.run_isolated` on one seed in this process (the
  killable child process the replications run in);
- ``store write``: :meth:`pipeline.store.Writer.write_batch` + ``add_failures`` of one
  batch in the client;
- ``end to end, per task``: ``pipeline.run`` with ``--batch-size 1`` of N/4 and of N tasks:
  the slope (wall(N) - wall(N/4)) / (3N/4), free of the fixed cost of a sweep;
- ``fixed per sweep``: wall(N/4) - N/4 x slope (spec, store creation, pilot, clean-up).

    python -m benchmarks.bench_tasks [--tasks 400] [--workers 2]
    python -m benchmarks.bench_tasks --slurm slurm/local.yaml   # the local Slurm of slurm/start.sh
"""
from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import numpy as np

from schedsweep import pipeline

SPEC = """
name = "tiny"
workload = "benchmarks.spin"
replications = {reps}
seed = 1
[sweep]
iterations = {cells}
"""


def _noop(x: int) -> int:
    return x


def dask_round_trip(client, n: int) -> float:
    from distributed import as_completed

    t = time.perf_counter()
    futures = [client.submit(_noop, i, pure=False) for i in range(n)]
    for f in as_completed(futures):
        f.result()
    return (time.perf_counter() - t) / n


def many_pending(client, n: int) -> tuple[float, float, float]:
    """``n`` no-op tasks submitted at once, as a sweep submits its batches: (tasks per second
    end to end, ms to submit one, KB of this process's memory per pending task; with a
    LocalCluster this process holds the scheduler too)."""
    import os

    def rss() -> float:
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e3

    before, t = rss(), time.perf_counter()
    futures = [client.submit(_noop, i, pure=False, key=f"pending-{i}") for i in range(n)]
    submitted, grown = time.perf_counter() - t, rss() - before
    client.gather(futures)
    return n / (time.perf_counter() - t), submitted / n * 1e3, grown / n


def child_call(n: int) -> float:
    from schedsweep.pipeline.tasks import run_isolated

    run_isolated("benchmarks.spin", {"iterations": 1}, np.arange(1, dtype=np.uint64), 60.0)  # warm
    t = time.perf_counter()
    for i in range(n):
        run_isolated("benchmarks.spin", {"iterations": 1}, np.arange(i, i + 1, dtype=np.uint64), 60.0)
    return (time.perf_counter() - t) / n


def spec_text(n: int) -> tuple[str, int]:
    cells = max(1, n // 10)
    return SPEC.format(reps=10, cells=list(range(1, cells + 1))), cells * 10


def store_write(tmp: Path, n: int) -> float:
    from schedsweep.pipeline import store as store_mod
    from schedsweep.pipeline.spec import load as load_spec
    from schedsweep.pipeline.execute import provenance

    text, n = spec_text(n)
    (tmp / "w.toml").write_text(text)
    spec = load_spec(tmp / "w.toml")
    from schedsweep import workloads

    module = workloads.get(spec.workload)
    path = tmp / "w.zarr"
    store_mod.create(path, spec, module, 1, provenance(spec, module))
    writer = store_mod.Writer(path, spec, module)
    out = {"value": np.ones(1), "reason": np.zeros(1, np.int8)}
    t = time.perf_counter()
    for cell_i in range(n // 10):
        for r in range(10):
            writer.write_batch((cell_i,), r, np.array([r], np.uint64), out, {}, 0.001)
            writer.add_failures([])
    return (time.perf_counter() - t) / n


def end_to_end(tmp: Path, n: int, **where) -> tuple[float, int]:
    """Wall time of a sweep of ``n`` one-replication tasks (rounded to cells of 10), and the tasks."""
    text, n = spec_text(n)
    tag = f"e{n}"
    (tmp / f"{tag}.toml").write_text(text)
    t = time.perf_counter()
    pipeline.run(tmp / f"{tag}.toml", tmp / f"{tag}.zarr", batch_size=1, progress=False, **where)
    return time.perf_counter() - t, n


def slope(tmp: Path, n: int, **where) -> tuple[float, float]:
    """(seconds per task, fixed seconds per sweep) from sweeps of n/4 and n tasks."""
    small, n1 = end_to_end(tmp, n // 4, **where)
    large, n2 = end_to_end(tmp, n, **where)
    per_task = (large - small) / (n2 - n1)
    return per_task, small - n1 * per_task


def main() -> None:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pending", type=int, default=20000, help="tasks of the scheduler-load measurement")
    parser.add_argument("--slurm", metavar="PROFILE", help="run the end-to-end sweeps on Slurm with this profile")
    args = parser.parse_args()
    rows, extra = [], []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.slurm:
            import yaml

            profile = yaml.safe_load(Path(args.slurm).read_text())
            profile["min_jobs"] = profile.get("jobs", 1)  # every worker from the start: a steady rate to measure
            (tmp / "profile.yaml").write_text(yaml.safe_dump(profile))
            where = {"cluster": "slurm", "slurm_options": {"profile": str(tmp / "profile.yaml")}}
            label = f"Slurm, profile {args.slurm}"
            from schedsweep.pipeline.slurm import make_cluster

            with make_cluster(profile=args.slurm) as slurm_cluster, Client(slurm_cluster) as client:
                jobs = slurm_cluster.schedsweep_options.jobs
                slurm_cluster.adapt(minimum_jobs=jobs, maximum_jobs=jobs)  # all workers, not adaptive
                client.wait_for_workers(slurm_cluster.max_workers, timeout=300)
                dask_round_trip(client, 50)
                rows.append((f"dask round trip (no-op task, {slurm_cluster.max_workers} Slurm workers, TLS)",
                             dask_round_trip(client, args.tasks)))
            (tmp / "warm").mkdir()
            end_to_end(tmp / "warm", 20, **where)  # the worker's numba cache warm
        else:
            label = f"Dask LocalCluster of {args.workers}"
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, host="127.0.0.1",
                                   dashboard_address=None, silence_logs=logging.ERROR)
            where = {"scheduler": cluster.scheduler_address}
            with Client(cluster) as client:
                rows.append(("dask round trip (no-op task)", dask_round_trip(client, args.tasks)))
                rate, submit_ms, kb = many_pending(client, args.pending)
                extra = [f"{args.pending} no-op tasks submitted at once: {rate:.0f} tasks/s, {submit_ms:.2f} ms to "
                         f"submit one, {kb:.1f} KB per pending task (client and scheduler)"]
            (tmp / "warm").mkdir()
            end_to_end(tmp / "warm", 20, **where)  # the children and the kernel warm
        rows.append(("child call", child_call(min(args.tasks, 200))))
        rows.append(("store write, one batch per group", store_write(tmp, args.tasks)))
        (tmp / "e").mkdir()
        per_task, fixed = slope(tmp / "e", args.tasks, **where)
        rows += [(f"end to end, per task ({label})", per_task), (f"fixed per sweep ({label})", fixed)]
        if not args.slurm:
            cluster.close()
            (tmp / "p").mkdir()
            per_task, fixed = slope(tmp / "p", args.tasks, workers=args.workers)
            rows += [(f"end to end, per task (--cluster local: {args.workers} processes, no Dask)", per_task),
                     ("fixed per sweep (--cluster local)", fixed)]
    print(f"| part ({args.tasks} tiny tasks) | ms |")
    print("|---|---|")
    for name, sec in rows:
        print(f"| {name} | {sec * 1e3:.2f} |")
    for line in extra:
        print(line)


if __name__ == "__main__":
    main()
