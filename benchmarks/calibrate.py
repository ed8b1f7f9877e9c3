"""Calibrate an *(our rule)* choice against the published values a spec carries.

Runs the spec once per candidate value (``--vary KEY=V1,V2,...``, any key ``--set`` takes,
e.g. ``params.price_exponent``), each with the same seeds, and prints for every candidate
the distance to each published value of the spec's ``[reference]`` table (relative
difference of our mean), whether each published claim holds, and a summary: the mean
absolute relative difference over the published values that are not 0.

    python benchmarks/calibrate.py jobs/slot-selection.toml --vary params.price_exponent=0.5,1,2,3 \\
        --replications 200

Only values in ``shared/spec/published.md`` §2 (the spec's ``[reference]``) are used: the
rest of the published results are kept for an independent check, so a calibration never
sees them. Stores go to a temporary folder unless ``--keep DIR``.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def distance(rows: list[dict]) -> float:
    """Mean |relative difference| over published values that are not 0 (NaN if none)."""
    rel = [abs(r["relative"]) for r in rows if math.isfinite(r["relative"])]
    return sum(rel) / len(rel) if rel else float("nan")


def calibrate(spec: str, key: str, values: list[str], replications: int | None, workers: int,
              folder: Path) -> list[tuple[str, float, list[dict], list[dict]]]:
    from schedsweep import pipeline
    from schedsweep.pipeline import reference, stats

    out = []
    for value in values:
        overrides = [f"{key}={value}"] + ([f"replications={replications}"] if replications else [])
        store = folder / f"{Path(spec).stem}-{key.replace('.', '_')}-{value}.zarr"
        path = pipeline.run(spec, store, workers=workers, progress=False, overrides=overrides)
        ds = pipeline.open_store(path)
        ref = reference.of_store(ds)
        metrics = sorted({v.metric for v in ref.values} | {c.metric for c in ref.claims})
        st = stats.describe(ds, 0.95, metrics)
        rows, claims = reference.value_rows(ref, st), reference.claim_rows(ref, st)
        out.append((value, distance(rows), rows, claims))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--vary", required=True, help="KEY=V1,V2,... (a --set key and TOML values)")
    ap.add_argument("--replications", type=int, help="replications per cell (default: the spec's)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", help="folder for the stores (default: a temporary folder)")
    args = ap.parse_args(argv)
    key, _, values = args.vary.partition("=")
    candidates = [v.strip() for v in values.split(",") if v.strip()]
    if not key or not candidates:
        ap.error("--vary KEY=V1,V2,...")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        results = calibrate(args.spec, key, candidates, args.replications, args.workers, folder)
    for value, dist, rows, claims in results:
        print(f"\n{key} = {value}: mean |relative difference| {dist:.1%} over "
              f"{sum(math.isfinite(r['relative']) for r in rows)} published values")
        for r in rows:
            rel = f"{r['relative']:+.1%}" if math.isfinite(r["relative"]) else "n/a (published 0)"
            print(f"  {r['metric']:<18} {r['where']:<34} published {r['published']:<9.6g} "
                  f"ours {r['ours']:.4g} ± {r['half_width']:.2g}  {rel}")
        for c in claims:
            print(f"  claim {'holds' if c['holds'] else 'does not hold' if c['holds'] is False else 'cannot judge'}:"
                  f" {c['text']}  (ours: {c['ours']})")
    best = min(results, key=lambda x: x[1] if math.isfinite(x[1]) else math.inf)
    print(f"\nsummary ({args.replications or 'spec'} replications per cell):")
    for value, dist, _, claims in results:
        held = sum(c["holds"] is True for c in claims)
        print(f"  {key} = {value:<8} distance {dist:.1%}   claims holding {held}/{len(claims)}"
              + ("   <- nearest" if value == best[0] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
