"""Calibrate *(our rule)* choices against the published values the specs carry.

Runs every spec once per candidate (``--vary KEY=V1,V2,...``, any key ``--set`` takes, e.g.
``params.price_exponent``; several ``--vary`` make a grid, every combination a candidate),
each with the same seeds and with the fixed overrides ``--set KEY=VALUE`` (so a variant of a
spec needs no copy of it), and prints for every candidate the distance to each published
value of the specs' ``[reference]`` tables (our mean ± CI half-width, relative difference),
whether each published claim holds, and a summary.

**Distance** of a candidate: the mean of one error per published value, over all the specs
given. A value's error is its |relative difference| (our mean / published − 1); a published
0 has no relative difference and is left out, unless its metric is named by
``--absolute METRIC=SCALE``: every value of that metric then has the error
|ours − published| / SCALE (for a rate such as the cycle failure rate, published 0 … 0.025,
where a relative difference means nothing: with SCALE = 0.025 a failure rate 0.00375 off
counts as 15%, one of 0.5 as 2000%).

    python benchmarks/calibrate.py jobs/slot-selection.toml --vary params.price_exponent=0.5,1,2,3 \\
        --replications 200
    python benchmarks/calibrate.py jobs/cyclic-frsm-vs-css.toml jobs/cyclic-owner-price.toml \\
        --set params.shared_alternatives=true --vary params.job_slots_max=5,8 \\
        --absolute failure=0.025 --replications 100 --workers 1

Only the values listed in ``docs/reproduction.md`` (the specs' ``[reference]``) are used: the
rest of the published results are kept for an independent check, so a calibration never
sees them. Stores go to a temporary folder unless ``--keep DIR``.
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def error(row: dict, absolute: dict[str, float]) -> float:
    """The row's error: |relative difference|, or |ours − published| / scale for ``absolute`` metrics."""
    if row["metric"] in absolute:
        return abs(row["ours"] - row["published"]) / absolute[row["metric"]]
    return abs(row["relative"])


def distance(rows: list[dict], absolute: dict[str, float] | None = None) -> float:
    """Mean error over the published values that have one (NaN if none); see the module docstring."""
    errs = [error(r, absolute or {}) for r in rows]
    errs = [e for e in errs if math.isfinite(e)]
    return sum(errs) / len(errs) if errs else float("nan")


def _label(candidate: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in candidate) or "as specified"


def calibrate(specs: list[str], candidates: list[tuple[tuple[str, str], ...]], fixed: list[str],
              replications: int | None, workers: int, folder: Path,
              absolute: dict[str, float] | None = None) -> list[tuple[str, float, list[dict], list[dict]]]:
    """Per candidate: (label, distance, value rows, claim rows); rows carry the spec's name."""
    from schedsweep import pipeline
    from schedsweep.pipeline.spec import reference
    from schedsweep.pipeline.base import stats

    out = []
    for candidate in candidates:
        rows, claims = [], []
        for spec in specs:
            overrides = list(fixed) + [f"{k}={v}" for k, v in candidate]
            overrides += [f"replications={replications}"] if replications else []
            tag = "-".join(f"{k.replace('.', '_')}-{v}" for k, v in candidate) or "as-specified"
            store = folder / f"{Path(spec).stem}-{tag}.zarr"
            path = pipeline.run(spec, store, workers=workers, progress=False, overrides=overrides)
            ds = pipeline.open_store(path)
            ref = reference.of_store(ds)
            metrics = sorted({v.metric for v in ref.values} | {c.metric for c in ref.claims})
            st = stats.describe(ds, 0.95, metrics)
            rows += [{**r, "spec": Path(spec).stem} for r in reference.value_rows(ref, st)]
            claims += [{**c, "spec": Path(spec).stem} for c in reference.claim_rows(ref, st)]
        out.append((_label(candidate), distance(rows, absolute), rows, claims))
    return out


def _pairs(items: list[str], what: str, ap: argparse.ArgumentParser) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not key or not sep or not value:
            ap.error(f"{what} {item!r}: expected KEY=VALUE")
        out.append((key.strip(), value.strip()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("specs", nargs="+", help="one or more specs; the distance is over all their published values")
    ap.add_argument("--vary", action="append", default=[],
                    help="KEY=V1,V2,... (a --set key and TOML values); repeat for a grid; none: the specs as they are")
    ap.add_argument("--set", action="append", default=[], dest="fixed",
                    help="KEY=VALUE applied to every run (as schedsweep run --set)")
    ap.add_argument("--absolute", action="append", default=[],
                    help="METRIC=SCALE: that metric's error is |ours - published| / SCALE (module docstring)")
    ap.add_argument("--replications", type=int, help="replications per cell (default: the spec's)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", help="folder for the stores (default: a temporary folder)")
    args = ap.parse_args(argv)
    axes = []
    for key, values in _pairs(args.vary, "--vary", ap):
        candidates = [v.strip() for v in values.split(",") if v.strip()]
        axes.append([(key, v) for v in candidates])
    grid = list(itertools.product(*axes))
    absolute = {m: float(s) for m, s in _pairs(args.absolute, "--absolute", ap)}
    if any(not s > 0 for s in absolute.values()):
        ap.error("--absolute METRIC=SCALE needs SCALE > 0")
    _pairs(args.fixed, "--set", ap)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        results = calibrate(args.specs, grid, args.fixed, args.replications, args.workers, folder, absolute)
    many = len(args.specs) > 1
    for label, dist, rows, claims in results:
        print(f"\n{label}: distance {dist:.1%} over "
              f"{sum(math.isfinite(error(r, absolute)) for r in rows)} published values")
        for r in rows:
            rel = f"{r['relative']:+.1%}" if math.isfinite(r["relative"]) else "n/a (published 0)"
            if r["metric"] in absolute:
                rel += f"  (error {error(r, absolute):.1%} of {absolute[r['metric']]:g})"
            where = (f"{r['spec']}: " if many else "") + r["where"]
            print(f"  {r['metric']:<18} {where:<34} published {r['published']:<9.6g} "
                  f"ours {r['ours']:.4g} ± {r['half_width']:.2g}  {rel}")
        for c in claims:
            print(f"  claim {'holds' if c['holds'] else 'does not hold' if c['holds'] is False else 'cannot judge'}:"
                  f" {c['text']}  (ours: {c['ours']})")
    best = min(results, key=lambda x: x[1] if math.isfinite(x[1]) else math.inf)
    print(f"\nsummary ({args.replications or 'spec'} replications per cell"
          + (f"; fixed: {', '.join(args.fixed)}" if args.fixed else "") + "):")
    width = max(len(r[0]) for r in results)
    for label, dist, rows, claims in results:
        held = sum(c["holds"] is True for c in claims)
        worst = max((error(r, absolute) for r in rows if math.isfinite(error(r, absolute))), default=math.nan)
        print(f"  {label:<{width}}  distance {dist:.1%}   largest error {worst:.1%}   "
              f"claims holding {held}/{len(claims)}" + ("   <- nearest" if label == best[0] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
