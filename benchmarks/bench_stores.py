"""``schedsweep stores`` over a folder of 1,000 stores: the target is under 2 s (wall, the
whole command, start-up included).

One real small store is run (mm1, 2 cells x 4 replications, in this process), then copied
``--stores`` times into a temporary folder, a tenth of them into sub-folders (the search is
recursive), each copy with its own name in its root metadata. The command is then run
``--repeats`` times in fresh processes; the fewest seconds are printed (wall and CPU of the
child), with the number of rows listed, which must be ``--stores``::

    python -m benchmarks.bench_stores --stores 1000 --repeats 3
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import results

ROOT = Path(__file__).resolve().parents[1]
SPEC = """name = "bench"
workload = "mm1"
replications = 4
seed = 1
[params]
customers = 200
warmup = 10
[sweep]
arrival_rate = [0.3, 0.5]
"""


def make_stores(folder: Path, n: int) -> None:
    """One store run for real, copied ``n`` times (renamed in its metadata)."""
    from schedsweep import pipeline

    spec = folder / "bench.toml"
    spec.write_text(SPEC)
    first = folder / "first.zarr"
    pipeline.run(spec, first, workers=0, batch_size=4, progress=False)
    meta = json.loads((first / "zarr.json").read_text())
    for k in range(n):
        target = folder / ("deep" if k % 10 == 0 else "") / f"s{k:04d}.zarr"
        shutil.copytree(first, target)
        meta["attributes"]["name"] = f"bench{k}"
        (target / "zarr.json").write_text(json.dumps(meta))
    shutil.rmtree(first)


def measure(folder: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, rows) of one ``schedsweep stores FOLDER --format csv`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "schedsweep", "stores", str(folder), "--format", "csv"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, len(out.splitlines()) - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_stores.json")
    args = parser.parse_args()
    load_before = results.load()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_stores(folder, args.stores)
        (folder / "bench.toml").unlink()
        runs = [measure(folder) for _ in range(args.repeats)]
        wall, cpu, rows = min(runs)
        load = os.getloadavg()[0]
        print(f"schedsweep stores: {rows} stores listed in {wall:.2f} s wall, {cpu:.2f} CPU-s "
              f"(fewest of {args.repeats}; load {load:.1f}); target < 2 s")
    if args.record:
        label = f"`schedsweep stores` over {rows:,} stores (fewest of {args.repeats})"
        print(results.record("bench_stores", [(f"{label}, wall", round(wall, 3), "s"),
                                              (f"{label}, CPU", round(cpu, 3), "CPU-s")], load_before,
                             note=f"{args.stores:,} copies of a 2-cell mm1 store, a tenth in a sub-folder; "
                                  "wall and CPU of the whole command in a fresh process, start-up included."))


if __name__ == "__main__":
    main()
