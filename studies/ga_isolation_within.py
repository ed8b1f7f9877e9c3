"""The S11 U-shape (time to solution against I_m) at every tolerance of the fixed target.

Joins ga stores of jobs/ga-isolation.toml run with different ``migration_interval`` lists
(their replication r has the same seed, checked) into one dimension and prints, with
:mod:`ga_claims`, per tolerance of ``time_to_solution_within`` (the target's
``target_within`` 0.01 … 0.2): per I_m the replications, misses, mean ± CI and median (a
miss = +inf), and the paired steps and the pairs against both ends. Then the same tables
for the final quality (``gmean_length``) and the generations run. ``--no-migration STORE``:
a store of the same spec with ``migrants = 0`` at one I_m, paired replication by
replication against that I_m (does migration change time to solution at all?).

    python studies/ga_isolation_within.py /tmp/gaushape/iso.zarr /tmp/gaushape/iso2.zarr \\
        --no-migration /tmp/gaushape/nomig.zarr
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import xarray as xr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import ga_claims  # noqa: E402
from schedsweep.pipeline.store.integrity import open_store  # noqa: E402

ALONG = "migration_interval"
METRIC = "time_to_solution_within"


def _seeds(ds: xr.Dataset) -> np.ndarray:
    """Replication r's seed (the same in every cell: common random numbers)."""
    return ds["seed"].isel({d: 0 for d in ds["seed"].dims if d != "replication"}).values


def joined(paths: list[str]) -> xr.Dataset:
    """The stores' cells along I_m, sorted; every store's replication r must have one seed."""
    parts = [open_store(p).load() for p in paths]
    seeds = [_seeds(p) for p in parts]
    for path, s in zip(paths[1:], seeds[1:]):
        if not np.array_equal(s, seeds[0]):
            raise SystemExit(f"{path}: its replications' seeds differ from {paths[0]}'s (not paired)")
    keep = [v for v in parts[0].data_vars if all(v in p for p in parts)]
    return xr.concat([p[keep] for p in parts], dim=ALONG, data_vars="all").sortby(ALONG)


def _tables(ds: xr.Dataset, metric: str, along: str, pairs: list[tuple], level: float) -> list[str]:
    return ["", f"| {along} | n | not reached | capped periods | mean ± {level:.0%} CI | median (not reached = ∞) |",
            "|---|---|---|---|---|---|", *ga_claims.cell_rows(ds, metric, along, level),
            "", "| pair a → b | n paired | b − a (paired) | geo-mean b / a [CI] | b vs a | b faster (not reached = ∞) |",
            "|---|---|---|---|---|---|", *ga_claims.paired_rows(ds, metric, along, pairs, level)]


def report(paths: list[str], no_migration: str | None, level: float) -> str:
    ds = joined(paths)
    vals = [int(v) for v in ds[ALONG].values]
    pairs = list(zip(vals[:-1], vals[1:]))   # neighbours, then each interior I_m against both ends
    for end in (vals[0], vals[-1]):
        pairs += [(end, v) for v in vals if v != end and (end, v) not in pairs and (v, end) not in pairs]
    out = [f"# time to solution against {ALONG} ({', '.join(paths)})"]
    for w in ds["within"].values:
        out += ["", f"## target_within = {w}", *_tables(ds.sel(within=w), METRIC, ALONG, pairs, level)]
    for metric in ("gmean_length", "generations"):
        out += ["", f"## {metric}", *_tables(ds, metric, ALONG, pairs, level)]
    if no_migration:
        nm = open_store(no_migration).load()
        (at,) = [int(v) for v in nm[ALONG].values]
        with_m = ds.sel({ALONG: at})
        if not np.array_equal(_seeds(nm), _seeds(ds)):
            raise SystemExit(f"{no_migration}: seeds differ from the joined stores' (not paired)")
        both = xr.concat([with_m[list(nm.data_vars)].expand_dims(migrants=[1]),
                          nm.sel({ALONG: at}).expand_dims(migrants=[0])], dim="migrants")
        for w in ds["within"].values:
            out += ["", f"## {ALONG} = {at}: migrants 1 → 0 (no migration), target_within = {w}",
                    *_tables(both.sel(within=w), METRIC, "migrants", [(1, 0)], level)]
        for metric in ("gmean_length", "generations"):
            out += ["", f"## {ALONG} = {at}: migrants 1 → 0, {metric}",
                    *_tables(both, metric, "migrants", [(1, 0)], level)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="+", help="stores of jobs/ga-isolation.toml (any I_m lists)")
    ap.add_argument("--no-migration", help="a store of the same spec with migrants = 0 at one I_m")
    ap.add_argument("--level", type=float, default=0.95)
    args = ap.parse_args(argv)
    print(report(args.stores, args.no_migration, args.level))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
