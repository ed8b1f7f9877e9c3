"""Files per store and client CPU per batch against the store's size, before and after store
format 2 (sharded, checksummed, written through a journal): benchmarks/store.md.

The client's write path alone (``pipeline.store.zarrstore.Writer``), no workers: batches of one
replication (a store made with chunk 1, as for replications slower than a batch) of the
``cluster`` workload (32 metrics, 3 with a dimension of their own) in groups of ``--group``,
as a busy client writes what finished together; ``flush`` (which compacts the journal in
format 2) is included in the CPU per batch. Each code version runs in its own process with
``PYTHONPATH`` at its checkout, so "before" is the code of another commit, e.g.::

    git worktree add /tmp/base aeae770
    python -m benchmarks.bench_store --base /tmp/base

Scenarios: ``fill`` writes every replication of a small store (files per store); ``tail``
writes ``--batches`` batches at the end of every cell of a store of 1,000, 10,000 and
100,000 replications per cell. In format 2 the rest of a ``tail`` store is filled first (not timed),
so its compaction reads and rewrites full shards, its worst case; the code before writes
one file per metric per batch whatever the store holds, so its store is left empty.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import results

ROOT = Path(__file__).resolve().parents[1]

# Runs inside the measured checkout: only API both versions have (create, Writer,
# write_batches, flush).
MEASURE = r'''
import json, sys, time
from pathlib import Path
import numpy as np
from schedsweep import workloads
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.spec.sweep import parse

reps, cells, batches, group, prefill, path = json.loads(sys.argv[1])
loads = ", ".join(str(round(0.5 + 0.04 * k, 2)) for k in range(cells))
spec = parse(f'name = "b"\nworkload = "cluster"\nreplications = {reps}\nseed = 1\n[sweep]\nload = [{loads}]\n')
module = workloads.get("cluster")
path = Path(path)
store_mod.create(path, spec, module, 1, provenance(spec, module))
writer = store_mod.Writer(path, spec, module)
rng = np.random.default_rng(0)

def outputs(n):
    out = {m.name: rng.random((n, *m.shape)) for m in module.METRICS}
    out["reason"] = np.zeros(n, np.int8)
    return out

first = reps - batches
if prefill and first and getattr(store_mod, "STORE_FORMAT", 1) >= 2:  # the rest of the store filled (not timed)
    for c in range(cells):  # a cell at a time: a record of every cell at once would be the whole store
        writer.write_batches([((c,), 0, writer.seeds((c,), 0, first), outputs(first), {}, 0.0)])
        writer.flush()
    writer = store_mod.Writer(path, spec, module)
todo = [((c,), r) for r in range(first, reps) for c in range(cells)]
items = [(cell, r, writer.seeds(cell, r, r + 1), outputs(1), {}, 0.001) for cell, r in todo]
if not batches:  # files only: each cell written as one batch (format 2's files do not depend on it)
    items = [((c,), 0, writer.seeds((c,), 0, reps), outputs(reps), {}, 0.001) for c in range(cells)]
    group = 1
cpu = time.process_time()
for k in range(0, len(items), group):
    writer.write_batches(items[k:k + group])
writer.flush()
cpu = time.process_time() - cpu
files = sum(1 for p in path.rglob("*") if p.is_file())
print(json.dumps({"cpu_ms_per_batch": 1e3 * cpu / len(items), "files": files, "batches": len(items),
                  "metrics": len(module.METRICS)}))
'''


def measure(tree: Path, reps: int, cells: int, batches: int, group: int, prefill: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        args = json.dumps([reps, cells, batches, group, prefill, str(Path(tmp) / "s.zarr")])
        out = subprocess.run([sys.executable, "-c", MEASURE, args], env=env, cwd=tree, capture_output=True,
                             text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="checkout of the code before (e.g. a worktree at aeae770)")
    parser.add_argument("--cells", type=int, default=10, help="cells of the tail scenario (default 10)")
    parser.add_argument("--batches", type=int, default=30, help="batches per cell in the tail scenario (default 30)")
    parser.add_argument("--group", type=int, default=10, help="batches per write (default 10)")
    parser.add_argument("--fill", type=int, default=1000, help="replications per cell of the fill scenario "
                                                               "(2 cells; default 1000)")
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each version (default 2)")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_store.json")
    args = parser.parse_args()
    load_before = results.load()
    figures = []
    trees = [("after", ROOT)] + ([("before", args.base.resolve())] if args.base else [])
    scenarios = [("fill", args.fill, 2, args.fill, False)] + [
        ("tail", reps, args.cells, args.batches, True) for reps in (1000, 10_000, 100_000)]
    print(f"{'scenario':<8} {'reps/cell':>9} {'cells':>5} {'code':<7} {'batches':>7} {'files':>7} "
          f"{'client CPU ms/batch':>20}")
    for name, reps, cells, batches, prefill in scenarios:
        by_code: dict[str, list[dict]] = {label: [] for label, _ in trees}
        for _ in range(args.repeat):  # alternating A/B: the machine's load drifts
            for label, tree in trees:
                by_code[label].append(measure(tree, reps, cells, batches, args.group, prefill))
        for label, _ in trees:
            runs = by_code[label]
            cpu = ", ".join(f"{r['cpu_ms_per_batch']:.3f}" for r in runs)
            print(f"{name:<8} {reps:>9} {cells:>5} {label:<7} {runs[0]['batches']:>7} {runs[0]['files']:>7} {cpu:>20}")
        if name == "tail":
            ours = by_code["after"]
            figures.append((f"client CPU per batch into a store of {reps:,} replications per cell "
                            f"(fewest of {len(ours)})", round(min(r["cpu_ms_per_batch"] for r in ours), 3), "ms"))
    # The target: 10 cells x 10,000 replications of a 30-metric workload, files
    # only, format 2 alone (the code before writes one file per metric per chunk: with chunk
    # 1, 34 files per replication, 3.4 million, too many to write here).
    r = measure(ROOT, 10_000, 10, 0, 1, False)
    print(f"{'files':<8} {10_000:>9} {10:>5} {'after':<7} {r['batches']:>7} {r['files']:>7} {'-':>20}")
    if args.record:
        figures.insert(0, (f"files of a store of 10 cells x 10,000 replications x {r['metrics']} metrics",
                           r["files"], ""))
        print(results.record("bench_store", figures, load_before,
                             note=f"Batches of one replication of `cluster` in groups of {args.group}, "
                                  f"{args.batches} batches per cell of {args.cells} cells, `flush` included."))


if __name__ == "__main__":
    main()
