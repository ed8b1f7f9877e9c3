"""Judge the S11 GA claims on stores of the ga specs beyond the means ``schedsweep table`` checks.

``schedsweep table STORE`` says whether a claim holds on the cell means. With the GA's
spread (a cell's coefficient of variation is 30-60%) a mean ordering can be noise, so this
script prints, per store, the statistics that say whether an ordering is resolved:

* every cell: replications with a result, how many never reached the target (reason
  ``target_not_reached``; their time to solution is NaN and is left out of the mean, which
  biases that mean down), capped periods, mean ± CI half-width and median of the metric;
* neighbouring cells along the claim's dimension: the paired difference (the sweep uses
  common random numbers, so replication r of every cell solves the same instance) with its
  CI, and the mean paired log-ratio (exp of it = geometric-mean ratio) with its CI;
* ``--fit``: the least-squares line of the means against the dimension (slope, R², largest
  deviation of a mean from the line, relative to the mean), for "grows linearly".

    python benchmarks/ga_claims.py /tmp/gaclaims/sp.zarr --along islands
    python benchmarks/ga_claims.py /tmp/gaclaims/tts.zarr --along density --fit
    python benchmarks/ga_claims.py /tmp/gaclaims/iso.zarr --along migration_interval --against 25,300

``--against A,B``: also the paired difference of every cell against those cells (for a U
shape: is the best interior cell below both ends?).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schedsweep.pipeline.stats import describe_array  # noqa: E402
from schedsweep.pipeline.store import open_store  # noqa: E402

NOT_REACHED = 2  # ga REASONS: target_not_reached


def _ci(x: np.ndarray, level: float) -> tuple[float, float, int]:
    d = describe_array(x, level)
    return float(d["mean"]), float(d["half_width"]), int(d["n"])


def _fmt(mean: float, half: float) -> str:
    return f"{mean:.4g} ± {half:.2g}" if np.isfinite(half) else f"{mean:.4g}"


def cell_rows(ds, metric: str, along: str, level: float) -> list[str]:
    """One Markdown row per cell of the slice ``ds`` (dims: ``along``, replication)."""
    rows = []
    for v in ds[along].values:
        cell = ds.sel({along: v})
        x = cell[metric].values.astype(float)
        reason = cell["reason"].values if "reason" in cell else np.zeros_like(x)
        capped = cell["capped_periods"].values if "capped_periods" in cell else np.full_like(x, np.nan)
        mean, half, n = _ci(x, level)
        median = float(np.nanmedian(x)) if n else float("nan")
        rows.append(f"| {v} | {n} | {int(np.sum(reason == NOT_REACHED))} | {int(np.nansum(capped))} | "
                    f"{_fmt(mean, half)} | {median:.4g} |")
    return rows


def paired_rows(ds, metric: str, along: str, pairs: list[tuple], level: float) -> list[str]:
    """Paired difference b − a and paired log-ratio log(b / a) per pair of cells (a, b)."""
    rows = []
    for a, b in pairs:
        xa = ds[metric].sel({along: a}).values.astype(float)
        xb = ds[metric].sel({along: b}).values.astype(float)
        diff, half, n = _ci(xb - xa, level)
        with np.errstate(divide="ignore", invalid="ignore"):  # a time of 0 (target met at once) has no log
            lr, lhalf, _ = _ci(np.where((xa > 0) & (xb > 0), np.log(xb / xa), np.nan), level)
        sign = "below" if diff + half < 0 else "above" if diff - half > 0 else "unresolved"
        rows.append(f"| {a} → {b} | {n} | {_fmt(diff, half)} | {np.exp(lr):.3g} "
                    f"[{np.exp(lr - lhalf):.3g}, {np.exp(lr + lhalf):.3g}] | {sign} |")
    return rows


def fit_rows(ds, metric: str, along: str) -> list[str]:
    xs = ds[along].values.astype(float)
    ys = np.array([np.nanmean(ds[metric].sel({along: v}).values.astype(float)) for v in ds[along].values])
    ok = np.isfinite(ys)
    slope, icept = np.polyfit(xs[ok], ys[ok], 1)
    pred = slope * xs[ok] + icept
    r2 = 1 - np.sum((ys[ok] - pred) ** 2) / np.sum((ys[ok] - ys[ok].mean()) ** 2)
    dev = np.max(np.abs(ys[ok] - pred)) / np.mean(ys[ok])
    return [f"least-squares line of the means: slope {slope:.4g} per unit of {along}, intercept {icept:.4g}, "
            f"R² {r2:.4f}, largest |mean − line| {dev:.1%} of the average mean"]


def report(path: str, metric: str, along: str, against: list, fit: bool, level: float) -> str:
    ds = open_store(path).load()
    others = [d for d in ds[metric].dims if d not in (along, "replication")]
    slices = [({}, ds)] if not others else [
        (dict(zip(others, idx)), ds.sel(dict(zip(others, idx))))
        for idx in zip(*[ds[d].values for d in others])]  # swept together (zip) or a single other dim
    out = [f"## {path}: {metric} along {along}"]
    for label, sl in slices:
        if label:
            out.append(f"\n### {', '.join(f'{k}={v}' for k, v in label.items())}")
        out += ["", f"| {along} | n | not reached | capped periods | mean ± {level:.0%} CI | median |",
                "|---|---|---|---|---|---|", *cell_rows(sl, metric, along, level)]
        vals = list(sl[along].values)
        pairs = list(zip(vals[:-1], vals[1:]))
        pairs += [p for p in ((type(vals[0])(a), v) for a in against for v in vals)
                  if p[0] != p[1] and p not in pairs]
        out += ["", "| pair a → b | n paired | b − a (paired) | geo-mean b / a [CI] | b vs a |",
                "|---|---|---|---|---|", *paired_rows(sl, metric, along, pairs, level)]
        if fit:
            out += ["", *fit_rows(sl, metric, along)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store")
    ap.add_argument("--metric", default="time_to_solution")
    ap.add_argument("--along", required=True, help="the claim's sweep dimension")
    ap.add_argument("--against", default="", help="comma-separated cells to pair every cell against")
    ap.add_argument("--fit", action="store_true", help="least-squares line of the means along the dimension")
    ap.add_argument("--level", type=float, default=0.95)
    args = ap.parse_args(argv)
    against = [float(a) for a in args.against.split(",") if a]
    print(report(args.store, args.metric, args.along, against, args.fit, args.level))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
