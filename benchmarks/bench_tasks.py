"""Where a task's time goes on the result path.

Tiny tasks (``benchmarks.spin`` with one iteration, one replication per task) isolate the
per-task cost of everything around the work:

- ``dask round trip``: ``client.submit`` of a no-op over the same cluster, results gathered
  as they complete (scheduler + transfer + client);
- ``child call``: :func:`pipeline.execution.tasks.run_isolated` on one seed in this process (the
  killable child process the replications run in);
- ``store write``: :meth:`pipeline.store.zarrstore.Writer.write_batch` + ``add_failures`` of one
  batch in the client;
- ``end to end, per task``: ``pipeline.run`` with ``--batch-size 1`` of N/5 and of N tasks
  (``--sweep-tasks N``, default 4000), ``--repeat`` times alternating: the median slope
  (wall(N) - wall(N/5)) / (4N/5), free of the fixed cost of a sweep. The fixed cost of a
  Slurm sweep (jobs queued, workers started and connected) moves by 1-2 s from run to run, so
  a slope over a few hundred tasks is mostly that noise (measured: 200 against 800 tasks read
  4.3-8.5 ms per task on Slurm where 800 against 4000 read 2.8-3.0);
- ``first to last result``: in the sweep of N, the time from the first batch written to the
  last over the batches in between (median over the repeats): the rate the sweep keeps
  once it runs, without start-up and clean-up;
- ``fixed per sweep``: wall(N/5) - N/5 x slope (spec, store creation, pilot, clean-up);
- where the end-to-end milliseconds go, as slopes the same way: the client's CPU (its
  process: client and store writes; with a LocalCluster, its scheduler too), the wall and CPU
  time inside the store writes, and the CPU of Slurm's scheduler process, of the worker
  processes (Dask nanny and worker) and of their replication processes, sampled from /proc
  every 0.25 s;
- ``--fetch``: no-op tasks whose results are fetched one by one as each finishes against a
  gather per group of finished tasks, alternating three times;
- ``--wide``: the store write of one batch of ``cluster``'s every metric (one chunk file each).

    python -m benchmarks.bench_tasks [--tasks 800] [--sweep-tasks 4000] [--repeat 3] [--workers 2] [--fetch] [--wide] [--record]
    python -m benchmarks.bench_tasks --slurm slurm/local.yaml   # the local Slurm of slurm/start.sh
    python -m benchmarks.bench_tasks --local-only --record      # --cluster local only (no Dask)
"""
from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import results
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


def fetch_each(client, n: int) -> float:
    """No-op tasks whose results are fetched one by one as each finishes (as_completed with_results)."""
    from distributed import as_completed

    t = time.perf_counter()
    done = as_completed(with_results=True, raise_errors=False)
    for i in range(n):
        done.add(client.submit(_noop, i, pure=False))
    for _ in done.batches():
        pass
    return (time.perf_counter() - t) / n


def fetch_per_group(client, n: int) -> float:
    """No-op tasks whose results are fetched by one gather per group of finished tasks (what a sweep does)."""
    from distributed import as_completed

    t = time.perf_counter()
    done = as_completed()
    for i in range(n):
        done.add(client.submit(_noop, i, pure=False))
    for group in done.batches():
        client.gather(group)
    return (time.perf_counter() - t) / n


def wide_store_write(tmp: Path, batches: int = 20) -> tuple[int, float, float]:
    """A one-replication batch of ``cluster`` (its every metric) written alone, as in
    :func:`store_write`: (metrics, wall and CPU seconds per batch). One chunk file per metric."""
    from schedsweep import workloads
    from schedsweep.pipeline.base import seeding
    from schedsweep.pipeline.store import zarrstore as store_mod
    from schedsweep.pipeline.execution.execute import provenance
    from schedsweep.pipeline.spec.sweep import parse

    spec = parse('name = "wide"\nworkload = "cluster"\nreplications = 10\nseed = 1\n'
                 '[sweep]\nqueue = ["fcfs", "easy"]\n')
    module = workloads.get("cluster")
    path = tmp / "wide.zarr"
    store_mod.create(path, spec, module, 1, provenance(spec, module))
    writer = store_mod.Writer(path, spec, module)
    rng = np.random.default_rng(0)
    t, c = time.perf_counter(), time.process_time()
    for k in range(batches):
        cell, r = (k % 2,), k // 2
        out = {m.name: rng.random((1, *m.shape)) for m in module.METRICS}
        out["reason"] = np.zeros(1, np.int8)
        writer.write_batch(cell, r, seeding.replication_seeds(1, r, r + 1), out, {}, 0.001)
    return len(module.METRICS), (time.perf_counter() - t) / batches, (time.process_time() - c) / batches


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
    from schedsweep.pipeline.execution.tasks import run_isolated

    run_isolated("benchmarks.spin", {"iterations": 1}, np.arange(1, dtype=np.uint64), 60.0)  # warm
    t = time.perf_counter()
    for i in range(n):
        run_isolated("benchmarks.spin", {"iterations": 1}, np.arange(i, i + 1, dtype=np.uint64), 60.0)
    return (time.perf_counter() - t) / n


def spec_text(n: int) -> tuple[str, int]:
    cells = max(1, n // 10)
    return SPEC.format(reps=10, cells=list(range(1, cells + 1))), cells * 10


def store_write(tmp: Path, n: int) -> float:
    from schedsweep.pipeline.base import seeding
    from schedsweep.pipeline.store import zarrstore as store_mod
    from schedsweep.pipeline.spec.sweep import load as load_spec
    from schedsweep.pipeline.execution.execute import provenance

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
            seeds = writer.seeds((cell_i,), r, r + 1) if hasattr(writer, "seeds") else \
                seeding.replication_seeds(spec.seed, r, r + 1)  # the store's own seeds, as a sweep writes
            writer.write_batch((cell_i,), r, seeds, out, {}, 0.001)
            writer.add_failures([])
    return (time.perf_counter() - t) / n


class _Costs:
    """CPU seconds of this process, time inside the store writes, and CPU of the worker
    processes (and their replication processes) while a sweep runs."""

    def __init__(self) -> None:
        import threading

        from schedsweep.pipeline.store import zarrstore as store_mod

        self.write_wall = self.write_cpu = 0.0
        self.groups = 0
        self._cpu: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        write = store_mod.Writer.write_batches

        self.written: list[tuple[float, int]] = []  # (time, batches) after each write group

        def timed(writer, batches):
            t, c = time.perf_counter(), time.process_time()
            write(writer, batches)
            self.write_wall += time.perf_counter() - t
            self.write_cpu += time.process_time() - c
            self.groups += 1
            self.written.append((time.perf_counter(), len(batches)))

        store_mod.Writer.write_batches = timed
        self._sampled = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()
        self._sampled.wait()  # the processes' CPU so far is the baseline, not part of the first sweep

    def _sample(self) -> None:
        """Last seen CPU time of the scheduler's process of a cluster this process started (Slurm's),
        of every worker process (a Dask worker started by Slurm or by this process, its nanny) and
        of their replication processes (``pipeline.execution.child``)."""
        import os

        import psutil

        me = os.getpid()
        workers: set[int] = set()  # every worker process seen (a child names its parent's pid last)
        while True:
            procs = [p.info for p in psutil.process_iter(["pid", "ppid", "cmdline", "cpu_times"])]
            cmd = {p["pid"]: p["cmdline"] or [] for p in procs}
            nannies = {p["pid"] for p in procs if "distributed.cli.dask_worker" in cmd[p["pid"]]}
            workers |= nannies | {p["pid"] for p in procs if p["ppid"] in nannies
                                  or (p["ppid"] == me and "multiprocessing" in " ".join(cmd[p["pid"]]))}
            for p in procs:
                c = cmd[p["pid"]]
                kind = "scheduler" if p["ppid"] == me and "schedsweep.pipeline.execution.scheduler" in c else \
                    "worker" if p["pid"] in workers else (
                    "child" if "schedsweep.pipeline.execution.child" in c and c[-1].isdigit() and int(c[-1]) in workers | {me}
                    else None)
                if kind and p["cpu_times"]:
                    self._cpu[p["pid"]] = (kind, p["cpu_times"].user + p["cpu_times"].system)
            self._sampled.set()
            if self._stop.wait(0.25):
                return

    def snapshot(self) -> dict[str, Any]:
        return {"client cpu": time.process_time(), "write wall": self.write_wall, "write cpu": self.write_cpu,
                "write groups": self.groups, "processes": dict(self._cpu)}

    @staticmethod
    def spent(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
        """What was spent between two snapshots (a process that started since counts from 0)."""
        out = {k: after[k] - before[k] for k in after if k != "processes"}
        out.update({"scheduler cpu": 0.0, "worker cpu": 0.0, "child cpu": 0.0})
        for pid, (kind, cpu) in after["processes"].items():
            out[f"{kind} cpu"] += cpu - before["processes"].get(pid, (kind, 0.0))[1]
        return out


COSTS: _Costs | None = None


def end_to_end(tmp: Path, n: int, **where) -> tuple[float, int, dict[str, float]]:
    """Wall time of a sweep of ``n`` one-replication tasks (rounded to cells of 10), the tasks,
    and what the sweep cost (:class:`_Costs`, differences)."""
    text, n = spec_text(n)
    tag = f"e{n}"
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / f"{tag}.toml").write_text(text)
    before = COSTS.snapshot() if COSTS else {}
    marks = len(COSTS.written) if COSTS else 0
    t = time.perf_counter()
    pipeline.run(tmp / f"{tag}.toml", tmp / f"{tag}.zarr", batch_size=1, progress=False, **where)
    wall = time.perf_counter() - t
    if not COSTS:
        return wall, n, {}
    written = COSTS.written[marks:]
    time.sleep(0.3)  # one more sample of the workers (a Slurm cluster's are gone by now: their last one counts)
    spent = COSTS.spent(before, COSTS.snapshot())
    # first batch written to last, over the batches written after the first group
    spent["first to last"] = (written[-1][0] - written[0][0]) / max(1, n - written[0][1])
    return wall, n, spent


def slope(tmp: Path, n: int, repeat: int = 1, **where) -> tuple[float, float, dict[str, float], list[float]]:
    """(seconds per task, fixed seconds per sweep, each cost per task, every repeat's slope) from
    sweeps of n/5 and n tasks, ``repeat`` times alternating; medians over the repeats."""
    global TASKS_PER_GROUP
    slopes, fixed, costs, groups = [], [], [], []
    for k in range(repeat):
        small, n1, c1 = end_to_end(tmp / f"r{k}", n // 5, **where)
        large, n2, c2 = end_to_end(tmp / f"r{k}", n, **where)
        slopes.append((large - small) / (n2 - n1))
        fixed.append(small - n1 * slopes[-1])
        per = {key: (c2[key] - c1[key]) / (n2 - n1) for key in c1 if key != "first to last"}
        per["first to last"] = c2["first to last"]
        costs.append(per)
        groups.append(n2 / c2["write groups"] if c2.get("write groups") else float("nan"))
    TASKS_PER_GROUP = float(np.median(groups))
    return (float(np.median(slopes)), float(np.median(fixed)),
            {key: float(np.median([c[key] for c in costs])) for key in costs[0]}, slopes)



TASKS_PER_GROUP = float("nan")  # in the larger sweeps of the last slope (median)


def cost_rows(costs: dict[str, float]) -> list[tuple[str, float]]:
    rows = [(f"  of which {k}, per task", v) for k, v in costs.items() if k not in ("write groups", "first to last")]
    return [("  first to last result, per task", costs["first to last"]), *rows]


def main() -> None:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=800, help="tasks of the round-trip, child and store measurements")
    parser.add_argument("--sweep-tasks", type=int, default=4000, help="tasks of the larger end-to-end sweep (the smaller has a fifth)")
    parser.add_argument("--repeat", type=int, default=3, help="end-to-end sweep pairs, alternating; medians reported")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pending", type=int, default=20000, help="tasks of the scheduler-load measurement")
    parser.add_argument("--slurm", metavar="PROFILE", help="run the end-to-end sweeps on Slurm with this profile")
    parser.add_argument("--fetch", action="store_true", help="also time fetching results one by one against a gather per group")
    parser.add_argument("--wide", action="store_true", help="also time the store write of a batch of cluster's every metric")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_tasks.json (with "
                        "--local-only; bench_tasks_dask.json or bench_tasks_slurm.json otherwise)")
    parser.add_argument("--local-only", action="store_true", help="only --cluster local (no Dask): child call, store "
                        "write and the end-to-end slope")
    args = parser.parse_args()
    load_before = results.load()
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
            from schedsweep.pipeline.execution.slurm import make_cluster

            with make_cluster(profile=args.slurm) as slurm_cluster, Client(slurm_cluster) as client:
                jobs = slurm_cluster.schedsweep_options.jobs
                slurm_cluster.adapt(minimum_jobs=jobs, maximum_jobs=jobs)  # all workers, not adaptive
                client.wait_for_workers(slurm_cluster.max_workers, timeout=300)
                dask_round_trip(client, 50)
                rows.append((f"dask round trip (no-op task, {slurm_cluster.max_workers} Slurm workers, TLS)",
                             dask_round_trip(client, args.tasks)))
                if args.fetch:
                    for _ in range(3):  # alternating: the load of other processes hits both alike
                        rows.append(("  results fetched one by one (with_results)", fetch_each(client, args.tasks)))
                        rows.append(("  results fetched by a gather per group", fetch_per_group(client, args.tasks)))
            (tmp / "warm").mkdir()
            end_to_end(tmp / "warm", 20, **where)  # the worker's numba cache warm
        elif not args.local_only:
            label = f"Dask LocalCluster of {args.workers}"
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, host="127.0.0.1",
                                   dashboard_address=None, silence_logs=logging.ERROR)
            where = {"scheduler": cluster.scheduler_address}
            with Client(cluster) as client:
                rows.append(("dask round trip (no-op task)", dask_round_trip(client, args.tasks)))
                if args.fetch:
                    for _ in range(3):
                        rows.append(("  results fetched one by one (with_results)", fetch_each(client, args.tasks)))
                        rows.append(("  results fetched by a gather per group", fetch_per_group(client, args.tasks)))
                rate, submit_ms, kb = many_pending(client, args.pending)
                extra = [f"{args.pending} no-op tasks submitted at once: {rate:.0f} tasks/s, {submit_ms:.2f} ms to "
                         f"submit one, {kb:.1f} KB per pending task (client and scheduler)"]
            (tmp / "warm").mkdir()
            end_to_end(tmp / "warm", 20, **where)  # the children and the kernel warm
        else:
            (tmp / "warm").mkdir()
            end_to_end(tmp / "warm", 20, workers=args.workers)  # the children and the kernel warm
        rows.append(("child call", child_call(min(args.tasks, 200))))
        rows.append(("store write, one batch per group", store_write(tmp, args.tasks)))
        if args.wide:
            metrics, wall, cpu = wide_store_write(tmp)
            rows += [(f"store write, one batch per group, cluster's {metrics} metrics", wall), ("  of which CPU", cpu)]
        (tmp / "e").mkdir()
        global COSTS
        COSTS = _Costs()
        n, rep = args.sweep_tasks, args.repeat
        if not args.local_only:
            per_task, fixed, costs, each = slope(tmp / "e", n, rep, **where)
            rows += [(f"end to end, per task ({label})", per_task), *cost_rows(costs),
                     (f"fixed per sweep ({label})", fixed)]
            extra.append(f"{label}: slopes {', '.join(f'{x * 1e3:.2f}' for x in each)} ms per task; "
                         f"{TASKS_PER_GROUP:.1f} tasks per write group in the sweeps of {n}")
        if not args.slurm:
            if not args.local_only:
                cluster.close()
            per_task, fixed, costs, each = slope(tmp / "p", n, rep, workers=args.workers)
            rows += [(f"end to end, per task (--cluster local: {args.workers} processes, no Dask)", per_task),
                     *[r for r in cost_rows(costs) if "worker" not in r[0]], ("fixed per sweep (--cluster local)", fixed)]
            extra.append(f"--cluster local: slopes {', '.join(f'{x * 1e3:.2f}' for x in each)} ms per task; "
                         f"{TASKS_PER_GROUP:.1f} tasks per write group in the sweeps of {n}")
    print(f"| part ({args.tasks} tiny tasks; end to end: sweeps of {args.sweep_tasks // 5} and "
          f"{args.sweep_tasks}, median of {args.repeat}) | ms |")
    print("|---|---|")
    for name, sec in rows:
        print(f"| {name} | {sec * 1e3:.2f} |")
    for line in extra:
        print(line)
    if args.record:
        # one file per mode: the pages include --cluster local's (bench_tasks) apart from Dask's and Slurm's
        mode = "bench_tasks" + ("_slurm" if args.slurm else "" if args.local_only else "_dask")
        print(results.record(mode, [(name.strip(), round(sec * 1e3, 4), "ms") for name, sec in rows],
                             load_before, note=" ".join(f"{line}." for line in extra)))


if __name__ == "__main__":
    main()
