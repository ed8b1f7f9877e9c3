"""Mean and CI per group over 50 stores and 10^6 replication values with duckdb
(``pipeline.read.query.group_ci``): the target is under 1 s, and the result equal to a pandas
reference.

The stores are written through the Writer with random values (mm1's three metrics, one of
them with three quantiles: 5 values per replication; 2 cells x 2,000 replications each, 5%
undefined), exported once as one hive-partitioned dataset (not timed), then queried
``--repeats`` times in this process, grouped by store, metric, unit, cell and quantile; the
fewest wall seconds are printed with the largest relative difference from pandas::

    python -m benchmarks.bench_query --stores 50 --replications 2000 --repeats 3
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import results


def write_stores(folder: Path, stores: int, replications: int) -> None:
    from schedsweep import workloads
    from schedsweep.pipeline.store import zarrstore as store_mod
    from schedsweep.pipeline.execution.execute import provenance
    from schedsweep.pipeline.spec.sweep import parse

    module = workloads.get("mm1")
    rng = np.random.default_rng(0)
    for k in range(stores):
        spec = parse(f'name = "q{k}"\nworkload = "mm1"\nreplications = {replications}\nseed = {k + 1}\n'
                     "[sweep]\narrival_rate = [0.3, 0.5]\n")
        path = folder / f"q{k:02d}.zarr"
        store_mod.create(path, spec, module, 256, provenance(spec, module))
        writer = store_mod.Writer(path, spec, module)
        for cell in np.ndindex(*spec.shape):
            out = {m.name: rng.gamma(2.0, 3.0, (replications, *m.shape)) for m in module.METRICS}
            for m in module.METRICS:
                out[m.name][rng.random(replications) < 0.05] = np.nan
            out["reason"] = np.zeros(replications, np.int8)
            writer.write_batch(cell, 0, writer.seeds(cell, 0, replications), out, {}, 0.0)
        writer.flush()


def pandas_reference(dataset: Path, keys: list[str]) -> "pd.DataFrame":  # noqa: F821
    import pandas as pd
    import pyarrow.parquet as pq
    from scipy import stats

    frames = []
    for path in dataset.rglob("*.parquet"):
        part = pq.read_table(path).to_pandas()
        for piece in path.relative_to(dataset).parts[:-1]:
            key, _, value = piece.partition("=")
            part[key] = value
        frames.append(part)
    table = pd.concat(frames, ignore_index=True)
    table = table[table["value"].notna()]
    g = table.groupby(keys, dropna=False)["value"]
    ref = pd.DataFrame({"n": g.count(), "mean": g.mean(), "sd": g.std(ddof=1)}).reset_index()
    ref["half_width"] = stats.t.ppf(0.975, ref["n"] - 1) * ref["sd"] / np.sqrt(ref["n"])
    return ref, len(table)


def main() -> None:
    from schedsweep.pipeline.read.query import export_folder, group_ci

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=50)
    parser.add_argument("--replications", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_query.json")
    args = parser.parse_args()
    load_before = results.load()
    keys = ["store", "metric", "unit", "arrival_rate", "quantile"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "stores"
        folder.mkdir()
        write_stores(folder, args.stores, args.replications)
        dataset = export_folder([folder], Path(tmp) / "all.parquet")
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            got = group_ci(dataset, by=keys)
            times.append(time.perf_counter() - start)
        ref, values = pandas_reference(dataset, keys)
        merged = got.merge(ref, on=keys, how="outer", suffixes=("", "_ref"))
        worst = max(float(np.nanmax(np.abs(merged[s] / merged[f"{s}_ref"] - 1))) for s in ("n", "mean", "sd", "half_width"))
        rows = sum(1 for _ in dataset.rglob("*.parquet"))
        print(f"group_ci: {len(got)} groups over {rows} stores, {values:,} defined values "
              f"({args.stores * args.replications * 2 * 5:,} replication values) in {min(times):.3f} s wall "
              f"(fewest of {args.repeats}, load {os.getloadavg()[0]:.1f}); target < 1 s; "
              f"largest relative difference from pandas {worst:.1e}; groups equal: {len(merged) == len(ref) == len(got)}")
    if args.record:
        size = f"{args.stores} stores, {args.stores * args.replications * 2 * 5:,} replication values"
        print(results.record("bench_query", [
            (f"`group_ci` mean and CI per group, {size}, wall (fewest of {args.repeats})", round(min(times), 3), "s"),
            ("groups", len(got), ""), ("largest relative difference from pandas", float(f"{worst:.2g}"), "")],
            load_before, note="duckdb over one hive-partitioned Parquet export of the stores (not timed); "
                              "the groups are store, metric, unit, cell and quantile."))


if __name__ == "__main__":
    main()
