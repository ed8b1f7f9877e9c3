"""A small sweep side by side with joblib.

The anchor a researcher would otherwise run with joblib: the SimPy desktop grid of the
peers as a workload of one's own (``benchmarks.peer_grid``), policies PST and Gcmu × loads
0.5/0.7/0.9 × 30 replications, horizon 2000 (about 55 ms each), on 2 workers. Each variant
runs as its own ``python`` process, timed from start to exit as a user would time it; its
CPU is the sum over the process and every descendant (sampled from /proc every 20 ms).

    python -m benchmarks.bench_small [--repeats 3]

serial: a plain loop; joblib: ``Parallel(n_jobs=2)``; schedsweep: ``pipeline.run(workers=2)``.
Ratios are against the serial run of the same repeat.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import statistics
import time
from pathlib import Path

from benchmarks import results

POLICIES, LOADS, REPS, HORIZON = ("PST", "Gcmu"), (0.5, 0.7, 0.9), 30, 2000.0

SPEC = f"""
name = "anchor"
workload = "benchmarks.peer_grid"
replications = {REPS}
seed = 1
[params]
horizon = {HORIZON}
[sweep]
policy = {list(POLICIES)!r}
load = {list(LOADS)!r}
"""


def _cells():
    """Every (policy, load, seed) of the sweep, with the seeds the sweep hands the workload
    (``peer_grid.run_batch``: the store's seed mod 2**32), so that every variant does the
    same work: the model's cost per replication depends on its random path, and over 180
    replications other seeds (0-29) moved the serial time by several per cent."""
    from schedsweep.pipeline.base.seeding import replication_seed

    seeds = [int(replication_seed(1, r) % 2**32) for r in range(REPS)]
    return [(p, load, s) for p in POLICIES for load in LOADS for s in seeds]


def serial() -> None:
    from benchmarks.peer_grid import one

    for p, load, s in _cells():
        one(p, load, HORIZON, s)


def joblib_run() -> None:
    from joblib import Parallel, delayed
    from joblib.externals.loky import get_reusable_executor

    from benchmarks.peer_grid import one

    Parallel(n_jobs=2)(delayed(one)(p, load, HORIZON, s) for p, load, s in _cells())
    get_reusable_executor().shutdown(wait=True)


def schedsweep_run() -> None:
    from schedsweep import pipeline

    with tempfile.TemporaryDirectory() as d:
        spec = Path(d) / "anchor.toml"
        spec.write_text(SPEC)
        pipeline.run(spec, Path(d) / "anchor.zarr", workers=2, progress=False)


VARIANTS = {"serial": serial, "joblib": joblib_run, "schedsweep": schedsweep_run}


def _cpu_of_tree(root: int, seen: dict[int, float]) -> None:
    """Record the CPU seconds (user + system) of ``root`` and its descendants now."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    for pid in times:
        p = pid
        while p and p != root and p in parents:
            p = parents[p]
        if p == root:
            seen[pid] = max(seen.get(pid, 0.0), times[pid])


def measure(variant: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one variant in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_small", "--variant", variant], env=env)
    seen: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            _cpu_of_tree(proc.pid, seen)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    proc.wait()
    wall = time.perf_counter() - t
    done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"{variant} failed with exit code {proc.returncode}")
    return wall, sum(seen.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_small.json")
    args = parser.parse_args()
    load_before = results.load()
    if args.variant:
        VARIANTS[args.variant]()
        return
    missing = [m for m in ("simpy", "joblib") if importlib.util.find_spec(m) is None]
    if missing:  # else every replication of the peer model fails inside the sweep
        raise SystemExit(f"bench_small needs {' and '.join(missing)}: pip install -e '.[bench]'")
    measure("schedsweep")  # numba caches and the OS file cache warm, as on a second run
    rows = []
    for k in range(args.repeats):
        got = {v: measure(v) for v in ("serial", "joblib", "schedsweep")}
        s_wall, s_cpu = got["serial"]
        for v, (wall, cpu) in got.items():
            rows.append((k + 1, v, wall, cpu, wall / s_wall, 100 * (cpu / s_cpu - 1)))
    print("| repeat | variant | wall s | CPU s | wall / serial | extra CPU vs serial |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| {} | {} | {:.2f} | {:.2f} | {:.3f} | {:+.0f}% |".format(*r))
    if args.record:
        print(results.record("bench_small", _medians(rows, args.repeats), load_before,
                             note=f"{len(POLICIES) * len(LOADS)} cells x {REPS} replications of the SimPy desktop "
                                  "grid (horizon 2000), 2 workers; each variant a fresh process, CPU summed over "
                                  "its process tree; ratios against the serial run of the same repeat."))


def _medians(rows: list[tuple], repeats: int) -> list[tuple[str, float, str]]:
    """Per parallel variant, the median over the repeats of wall / serial and of extra CPU."""
    out = []
    for v in ("schedsweep", "joblib"):
        mine = [r for r in rows if r[1] == v]
        out += [(f"{v}: wall over the serial loop's (median of {repeats})",
                 round(statistics.median(r[4] for r in mine), 3), ""),
                (f"{v}: extra CPU over the serial loop's (median of {repeats})",
                 round(statistics.median(r[5] for r in mine), 1), "%")]
    return out


if __name__ == "__main__":
    main()
