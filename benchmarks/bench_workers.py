"""Sizing for many workers: sleeping replications on W Dask workers of this machine, the
busy fraction measured, the client's and the scheduler's CPU per task measured, and the
busy fraction of 1,000 workers extrapolated with those costs and the pilot's task-length
rule (``pipeline.execution.sizing.task_seconds``).

A warm-up sweep starts every worker's replication process first. The scheduler and its
workers run in a process of their own (a LocalCluster started by a
child Python), so the client's CPU (this process: the client, the result path, the store
writes) and the scheduler's are read apart, from /proc. A sleeping replication uses no CPU,
so 64 workers fit on a 2-core machine; what they measure is the per-task cost around the work.

    python -m benchmarks.bench_workers [--workers 64] [--replications 10000] [--seconds 0.1]

Busy fraction = replication seconds slept / (workers x wall time of the run, pilot and
store creation included). The extrapolation: T = task_seconds(work, W, 2, c) with c the
larger of the measured client and scheduler costs per task; waves = ceil(tasks / W); wall =
max(waves x T, tasks x c_client, tasks x c_scheduler), once the sweep runs (its fixed cost of
start-up and pilot, measured here as wall minus work / workers, is reported apart).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from schedsweep import pipeline
from schedsweep.pipeline.execution import sizing

SPEC = """
name = "sleepers"
workload = "benchmarks.sleeper"
replications = {reps}
seed = 1
[params]
seconds = {seconds}
[sweep]
cell = [0, 1, 2, 3]
"""

_CLUSTER = """
import json, logging, sys, time
from distributed import LocalCluster
cluster = LocalCluster(n_workers={workers}, threads_per_worker=1, processes=True, host="127.0.0.1",
                       dashboard_address=None, silence_logs=logging.ERROR)
print(json.dumps({{"address": cluster.scheduler_address}}), flush=True)
sys.stdin.read()  # until the benchmark closes our stdin
cluster.close()
"""


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (not its children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(workers: int, replications: int, seconds: float) -> dict:
    """One sweep of 4 cells x ``replications`` sleeping replications on ``workers`` workers."""
    child = subprocess.Popen([sys.executable, "-c", _CLUSTER.format(workers=workers)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    try:
        address = json.loads(child.stdout.readline())["address"]
        with tempfile.TemporaryDirectory() as tmp:
            # A first sweep starts every worker's replication process and the imports in it (on a
            # small machine that is most of a cold run); the sweep measured is the second.
            warm = Path(tmp) / "warm.toml"
            warm.write_text(SPEC.format(reps=2 * workers, seconds=0.0))
            pipeline.run(warm, Path(tmp) / "warm.zarr", scheduler=address, progress=False, batch_size=1)
            spec = Path(tmp) / "s.toml"
            spec.write_text(SPEC.format(reps=replications, seconds=seconds))
            client0, sched0, t0 = _cpu_seconds(os.getpid()), _cpu_seconds(child.pid), time.perf_counter()
            store = pipeline.run(spec, Path(tmp) / "s.zarr", scheduler=address, progress=False)
            wall = time.perf_counter() - t0
            client, sched = _cpu_seconds(os.getpid()) - client0, _cpu_seconds(child.pid) - sched0
            ds = pipeline.open_store(store)
            slept = float(ds["slept"].sum())
            tasks = _tasks(ds)
    finally:
        child.stdin.close()
        child.wait(timeout=120)
    work = 4 * replications * seconds
    return {"workers": workers, "replications": 4 * replications, "seconds": seconds, "wall": wall,
            "busy": slept / (workers * wall), "tasks": tasks, "client_per_task": client / tasks,
            "scheduler_per_task": sched / tasks, "fixed": wall - work / workers}


def _tasks(ds) -> int:
    """Tasks of the sweep: each cell's replications over its batch size (the pilot's parts included)."""
    import numpy as np

    reps = np.asarray(ds.attrs["batch_reps"], dtype=float)
    return int(np.ceil(ds.sizes["replication"] / reps).sum())


def extrapolate(workers: int, replications: int, seconds: float, client: float, scheduler: float) -> dict:
    """The busy fraction the task-length rule gives ``workers`` with the measured costs, once
    the sweep runs (the fixed cost of starting it, workers and pilot, is left out: it does not
    grow with the sweep and is reported apart)."""
    work = replications * seconds
    cost = max(client, scheduler)
    t = sizing.task_seconds(work, workers, 2.0, cost)
    tasks = max(1, math.ceil(work / t))
    wall = max(math.ceil(tasks / workers) * t, tasks * client, tasks * scheduler)
    return {"workers": workers, "replications": replications, "task_seconds": t, "tasks": tasks,
            "tasks_per_s": tasks / wall, "client_load": tasks * client / wall, "busy": work / (workers * wall)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--replications", type=int, default=10_000, help="per cell (4 cells)")
    parser.add_argument("--seconds", type=float, default=0.1)
    args = parser.parse_args()
    m = measure(args.workers, args.replications, args.seconds)
    print(f"{m['workers']} workers, {m['replications']} replications of {m['seconds']} s: wall {m['wall']:.1f} s, "
          f"busy {m['busy']:.1%}, {m['tasks']} tasks; client {m['client_per_task'] * 1e3:.2f} ms and scheduler "
          f"{m['scheduler_per_task'] * 1e3:.2f} ms of CPU per task; fixed cost {m['fixed']:.1f} s")
    for n in (10 ** 5, 10 ** 6):
        e = extrapolate(1000, n, args.seconds, m["client_per_task"], m["scheduler_per_task"])
        print(f"model, 1000 workers, {n} replications of {args.seconds} s: tasks of {e['task_seconds']:.2f} s, "
              f"{e['tasks_per_s']:.0f} tasks/s, client {e['client_load']:.0%} of a core, busy {e['busy']:.1%}")


if __name__ == "__main__":
    main()
