"""Sizing for many workers: sleeping replications on W Dask workers of this machine; the busy
fraction, the client's and the scheduler's CPU per task and the workers' idle time per task
measured; and a model (:func:`model`) that extrapolates them to 1,000 workers through the
pilot's task-length rule (``pipeline.execution.sizing.task_seconds``).

The cluster is ``--cluster dask``'s (``pipeline.execution.executors.local_cluster``: the scheduler in a
process of its own), held by a child Python, so this process is the client alone (the
client, the result path, the store writes) and the three read apart from /proc: client,
scheduler, and the nannies (in the child). A sleeping replication uses no CPU, so many
workers fit on a small machine; what they measure is the cost per task around the work.

    python -m benchmarks.bench_workers [--workers 16 32] [--per-worker 100] [--record]

For each W: a warm-up sweep starts every worker's replication process; then two sweeps of
4 cells of 0.1 s replications, ``per_worker`` x W replications per cell and a quarter of
that, with tasks of ``--batch-seconds`` (0.25 s: many tasks, to measure their cost). The
costs are slopes between the two sweeps (their fixed part, start and pilot, cancels):
client and scheduler CPU per task = difference of CPU / difference of tasks; idle per task
= (W x difference of wall - difference of slept) / difference of tasks. Busy fraction =
replication seconds slept / (W x wall), the pilot and store creation included (``busy``), and
between the two sweeps (``steady``).
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
from schedsweep.pipeline.execution.sizing import TaskCost

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
CELLS = 4

_CLUSTER = """
import json, os, sys
from distributed import Client
from schedsweep.pipeline.execution.executors import local_cluster
if __name__ == "__main__":
    with local_cluster({workers}) as cluster, Client(cluster) as client:
        pid = client.run_on_scheduler(os.getpid)
        print(json.dumps({{"address": cluster.scheduler_address, "scheduler_pid": pid}}), flush=True)
        sys.stdin.read()  # until the benchmark closes our stdin
"""


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (not its children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sweep(tmp: Path, name: str, address: str, pids: dict[str, int], reps: int, seconds: float,
           **run: object) -> dict:
    """One sweep of CELLS cells x ``reps`` replications through the scheduler at ``address``:
    wall, CPU of each process in ``pids`` and of this one, seconds slept, tasks."""
    spec = tmp / f"{name}.toml"
    spec.write_text(SPEC.format(reps=reps, seconds=seconds))
    cpu0 = {k: _cpu_seconds(p) for k, p in pids.items()}
    client0, t0 = _cpu_seconds(os.getpid()), time.perf_counter()
    store = pipeline.run(spec, tmp / f"{name}.zarr", scheduler=address, progress=False, **run)
    wall = time.perf_counter() - t0
    out = {k: _cpu_seconds(p) - cpu0[k] for k, p in pids.items()}
    ds = pipeline.open_store(store)
    out.update(wall=wall, client=_cpu_seconds(os.getpid()) - client0, slept=float(ds["slept"].sum()),
               tasks=_tasks(ds))
    return out


def _tasks(ds) -> int:
    """Tasks of the sweep: each cell's replications over its batch size (the pilot's parts included)."""
    import numpy as np

    reps = np.asarray(ds.attrs["batch_reps"], dtype=float)
    return int(np.ceil(ds.sizes["replication"] / reps).sum())


def measure(workers: int, per_worker: int, seconds: float, batch_seconds: float) -> dict:
    """The figures of W = ``workers`` (module docstring): two sweeps and their slopes."""
    child = subprocess.Popen([sys.executable, "-c", _CLUSTER.format(workers=workers)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    t0 = time.perf_counter()
    try:
        hello = json.loads(child.stdout.readline())
        start = time.perf_counter() - t0
        pids = {"scheduler": hello["scheduler_pid"], "nannies": child.pid}
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            # The first sweep starts every worker's replication process and the imports in it.
            _sweep(tmp, "warm", hello["address"], pids, 2 * workers // CELLS + 1, 0.0, batch_size=1)
            reps = per_worker * workers
            small = _sweep(tmp, "small", hello["address"], pids, reps // 4, seconds, batch_seconds=batch_seconds)
            large = _sweep(tmp, "large", hello["address"], pids, reps, seconds, batch_seconds=batch_seconds)
    finally:
        child.stdin.close()
        child.wait(timeout=300)
    d = {k: large[k] - small[k] for k in large}
    return {"workers": workers, "start": start, "replications": CELLS * reps, "seconds": seconds,
            "tasks": large["tasks"], "wall": large["wall"], "busy": large["slept"] / (workers * large["wall"]),
            "steady": d["slept"] / (workers * d["wall"]), "task_seconds": large["slept"] / large["tasks"],
            "client_per_task": d["client"] / d["tasks"], "scheduler_per_task": d["scheduler"] / d["tasks"],
            "nannies_per_task": d["nannies"] / d["tasks"],
            "idle_per_task": (workers * d["wall"] - d["slept"]) / d["tasks"]}


def model(workers: int, replications: int, seconds: float, cost: TaskCost, idle: float,
          batch_seconds: float = 2.0, rule: TaskCost | None = None) -> dict:
    """The busy fraction of ``workers`` running ``replications`` of ``seconds`` each, once the
    sweep runs (start-up and pilot left out: they do not grow with the sweep).

    With work S = replications x seconds, W workers, per-task CPU c_client and c_scheduler
    (``cost``), and g the idle time of a worker per task (result out, next task in):

        T     = task_seconds(S, W, batch_seconds, cost)      the pilot's rule
        n     = ceil(S / T)                                  tasks
        wall  = max(ceil(n / W) x (T + g),                   rounds of tasks on the workers
                    n x c_client, n x c_scheduler)           one core each at most
                    (n x (c_client + c_scheduler) where they share a process)
        busy  = S / (W x wall)

    Every worker runs whole rounds (the rule sees to that); the client and the scheduler
    each take at most one core, so whichever needs more time than the workers sets the wall.
    ``rule``: the costs the pilot's rule was given, when not the true ones (default ``cost``).
    """
    work = replications * seconds
    t = sizing.task_seconds(work, workers, batch_seconds, rule or cost)
    tasks = max(1, math.ceil(work / t * (1 - 1e-12)))
    processes = [cost.client + cost.scheduler] if cost.shared else [cost.client, cost.scheduler]
    wall = max([math.ceil(tasks / workers * (1 - 1e-12)) * (t + idle)] + [tasks * c for c in processes])
    return {"workers": workers, "replications": replications, "task_seconds": t, "tasks": tasks,
            "tasks_per_s": tasks / wall, "client_load": tasks * cost.client / wall,
            "scheduler_load": tasks * cost.scheduler / wall, "busy": work / (workers * wall)}


def _figures(runs: list[dict], seconds: float, batch_seconds: float) -> tuple[list[tuple[str, float, str]], list[str]]:
    """The results file's figures and the lines printed."""
    figures, lines = [], []
    for m in runs:
        w = m["workers"]
        lines.append(f"{w} workers: started in {m['start']:.1f} s; {m['replications']} replications of {seconds} s "
                     f"in {m['tasks']} tasks of {m['task_seconds']:.2f} s, wall {m['wall']:.1f} s, busy "
                     f"{m['busy']:.1%} (steady {m['steady']:.1%}); per task: client {m['client_per_task'] * 1e3:.2f} ms, "
                     f"scheduler {m['scheduler_per_task'] * 1e3:.2f} ms, nannies {m['nannies_per_task'] * 1e3:.2f} ms "
                     f"of CPU, workers idle {m['idle_per_task'] * 1e3:.0f} ms")
        figures += [(f"{w} workers: start of the cluster", m["start"], "s"),
                    (f"{w} workers: busy, pilot and store creation included", 100 * m["busy"], "%"),
                    (f"{w} workers: busy, steady (between the two sweeps)", 100 * m["steady"], "%"),
                    (f"{w} workers: task length the pilot chose", m["task_seconds"], "s"),
                    (f"{w} workers: client CPU per task", 1e3 * m["client_per_task"], "ms"),
                    (f"{w} workers: scheduler CPU per task", 1e3 * m["scheduler_per_task"], "ms"),
                    (f"{w} workers: nannies' CPU per task", 1e3 * m["nannies_per_task"], "ms"),
                    (f"{w} workers: worker idle per task", 1e3 * m["idle_per_task"], "ms")]
    # The model on the highest costs measured, on this machine's 2 shared cores (a pessimistic c).
    c_client = max(m["client_per_task"] for m in runs)
    c_sched = max(m["scheduler_per_task"] for m in runs)
    idle = max(0.0, max(m["idle_per_task"] for m in runs))  # a slope below 0 is noise: no idle
    for m in runs:  # the model against what it models (the client's rule costs an external scheduler as Slurm's)
        e = model(m["workers"], m["replications"], seconds, TaskCost(c_client, c_sched), idle, batch_seconds,
                  rule=sizing.TASK_COST["slurm"])
        lines.append(f"model of the sweep measured, {m['workers']} workers: tasks of {e['task_seconds']:.2f} s, "
                     f"busy {e['busy']:.1%} once running (measured: steady {m['steady']:.1%})")
    for shared, route in ((False, "scheduler apart"), (True, "scheduler in the client's process")):
        for n in (10 ** 5, 10 ** 6):
            e = model(1000, n, seconds, TaskCost(c_client, c_sched, shared), idle)
            lines.append(f"model, 1000 workers, {n} replications of {seconds} s, {route}: tasks of "
                         f"{e['task_seconds']:.2f} s, {e['tasks_per_s']:.0f} tasks/s, client {e['client_load']:.0%} "
                         f"and scheduler {e['scheduler_load']:.0%} of a core, busy {e['busy']:.1%}")
            figures += [(f"model, 1,000 workers, {n:,} replications of {seconds:g} s, {route}: task length",
                         e["task_seconds"], "s"),
                        (f"model, 1,000 workers, {n:,} replications of {seconds:g} s, {route}: busy",
                         100 * e["busy"], "%")]
    return figures, lines


def main() -> None:
    from benchmarks import results

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--per-worker", type=int, default=100, help="replications per cell per worker (large sweep)")
    parser.add_argument("--seconds", type=float, default=0.1)
    parser.add_argument("--batch-seconds", type=float, default=0.25)
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/workers.json")
    args = parser.parse_args()
    load_before = results.load()
    runs = []
    for w in args.workers:
        runs.append(measure(w, args.per_worker, args.seconds, args.batch_seconds))
        print(json.dumps(runs[-1]), flush=True)
    figures, lines = _figures(runs, args.seconds, args.batch_seconds)
    print("\n".join(lines))
    if args.record:
        note = ("The model (benchmarks/bench_workers.py, `model`) takes the highest client and scheduler CPU per task "
                "and worker idle time per task measured above, at 1,000 workers, start-up and pilot left out.")
        print(results.record("workers", figures, load_before, note=note))


if __name__ == "__main__":
    main()
