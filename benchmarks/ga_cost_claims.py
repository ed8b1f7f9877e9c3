"""The S11 GA claims in model time on P computing modules, for a range of communication costs.

The GA's search does not depend on the cost parameters (``evaluation_cost``,
``migration_latency``, ``migration_gene_time``): they only price it. So one store of a ga
spec gives T_p at any cost, per replication, from the metrics every run records:

    T_p = time_to_solution * evaluation + migrations_to_solution * latency + genes_to_solution * gene_time

(``time_to_solution`` in evaluations; costs in evaluations, i.e. ``evaluation`` = 1; with the
store's own costs this is its ``model_time_to_solution``). For each
latency the script judges the spec's claim with paired contrasts between cells (common random
numbers: replication r of every cell solves the same instance), by the rules of
``schedsweep verify``: ``increasing`` / ``decreasing``: every neighbouring step resolved in the
claimed direction holds, a step resolved against it fails, otherwise a tie; ``interior_min``:
holds when some interior cell is resolved below both ends, fails when an end is resolved below
every interior cell, otherwise a tie. A tie comes with the replications it needs,
n = (t sd / |mean|)^2 of its unresolved contrasts.

    python benchmarks/ga_cost_claims.py /tmp/iso.zarr --along migration_interval --kind interior_min \
        --latency 0 100 1000 2500 5000 10000
    python benchmarks/ga_cost_claims.py /tmp/sp.zarr --along islands --kind decreasing --latency 0 1000 10000
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schedsweep.pipeline.base.stats import t_quantile  # noqa: E402
from schedsweep.pipeline.store.integrity import open_store  # noqa: E402


def model_time(ds, latency: float, gene_time: float = 0.0) -> np.ndarray:
    """T_p per (cell, replication) at these costs (in evaluations), NaN where the target was missed."""
    return (ds["time_to_solution"] + ds["migrations_to_solution"] * latency
            + ds["genes_to_solution"] * gene_time).values.astype(float)


def contrast(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[float, float, float, int]:
    """Paired mean of x - y over replications where both are defined: (mean, half-width, sd, n)."""
    d = (x - y)[~(np.isnan(x) | np.isnan(y))]
    n = d.size
    if n < 2:
        return (float(d.mean()) if n else math.nan), math.nan, math.nan, n
    sd = float(d.std(ddof=1))
    return float(d.mean()), float(t_quantile(level, np.array(n))) * sd / math.sqrt(n), sd, n


def sign(c: tuple) -> int:
    mean, half = c[0], c[1]
    if not (math.isfinite(mean) and math.isfinite(half)):
        return 0
    return 1 if mean - half > 0 else -1 if mean + half < 0 else 0


def needed(cs: list[tuple], level: float = 0.95) -> int | None:
    """Replications the unresolved contrasts need: max of (t sd / |mean|)^2 (t at the level, large n)."""
    t = float(t_quantile(level, np.array(10**6)))
    needs = [max(c[3], math.ceil((t * c[2] / abs(c[0])) ** 2)) for c in cs
             if sign(c) == 0 and c[0] and math.isfinite(c[2])]
    return max(needs) if needs else None


def judge(kind: str, ys: np.ndarray, level: float = 0.95) -> tuple[str, int | None]:
    """Verdict of a claim on ``ys[cell, replication]`` (cells in the order of the dimension)."""
    k = len(ys)
    c = lambda i, j: contrast(ys[i], ys[j], level)  # noqa: E731 - the sign says ys[i] > ys[j]
    if kind in ("increasing", "decreasing"):
        cs = [c(i + 1, i) if kind == "increasing" else c(i, i + 1) for i in range(k - 1)]
        if any(sign(x) < 0 for x in cs):
            return "fails", None
        return ("holds", None) if all(sign(x) > 0 for x in cs) else ("tie", needed(cs, level))
    if kind == "interior_min":
        inner = range(1, k - 1)
        if any(all(sign(c(i, e)) > 0 for i in inner) for e in (0, k - 1)):
            return "fails", None          # an end below every interior cell
        groups = {i: [c(0, i), c(k - 1, i)] for i in inner}
        if any(all(sign(x) > 0 for x in g) for g in groups.values()):
            return "holds", None
        alive = [i for i, g in groups.items() if not any(sign(x) < 0 for x in g)]
        if not alive:
            return "fails", None
        best = min(alive, key=lambda i: np.nanmean(ys[i]))
        return "tie", needed(groups[best], level)
    raise ValueError(f"kind {kind!r}: one of increasing, decreasing, interior_min")


def report(path: str, along: str, kind: str, latencies: list[float], gene_time: float, level: float) -> str:
    ds = open_store(path).load()
    ds = ds.transpose(along, "replication", ...)
    xs = [v.item() for v in ds[along].values]
    lines = [f"## {path}: T_p in model time along {along} ({kind}); costs in evaluations, "
             f"gene time {gene_time:g}", "",
             f"| latency | {' | '.join(f'{along} = {x}' for x in xs)} | last − first, paired | lowest mean at | "
             "verdict (n for a tie) |",
             "|---|" + "---|" * len(xs) + "---|---|---|"]
    for lat in latencies:
        ys = model_time(ds, lat, gene_time)
        means = " | ".join(f"{np.nanmean(y):.3g}" for y in ys)
        verdict, need = judge(kind, ys, level)
        ends = contrast(ys[-1], ys[0], level)
        low = xs[int(np.nanargmin([np.nanmean(y) for y in ys]))]
        lines.append(f"| {lat:g} | {means} | {ends[0]:+.3g} ± {ends[1]:.2g} | {low} | "
                     f"{verdict}{f' ({need})' if need else ''} |")
    reached = " | ".join(str(int(n)) for n in np.isfinite(model_time(ds, 0.0)).sum(axis=1))
    migr = " | ".join(f"{np.nanmean(m):.3g}" for m in ds["migrations_to_solution"].values.astype(float))
    lines += ["", f"replications that reached the target, per cell: {reached}",
              f"exchanges before the target (mean): {migr}"]
    if "model_speedup" in ds:
        k = " | ".join(f"{np.nanmean(m):.3g}" for m in ds["model_speedup"].values.astype(float))
        lines.append(f"mean k_p = T_1 / T_p per replication at the store's costs: {k}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store")
    ap.add_argument("--along", required=True)
    ap.add_argument("--kind", required=True, choices=("increasing", "decreasing", "interior_min"))
    ap.add_argument("--latency", type=float, nargs="+", default=[0.0],
                    help="exchange latencies to price, in evaluations")
    ap.add_argument("--gene-time", type=float, default=0.0, help="time per gene sent, in evaluations")
    ap.add_argument("--level", type=float, default=0.95)
    args = ap.parse_args(argv)
    print(report(args.store, args.along, args.kind, args.latency, args.gene_time, args.level))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
