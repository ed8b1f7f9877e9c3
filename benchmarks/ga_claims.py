"""Judge the S11 GA claims on stores of the ga specs beyond the means ``schedsweep table`` checks.

``schedsweep table STORE`` says whether a claim holds on the cell means. With the GA's
spread (a cell's coefficient of variation is 30-60%) a mean ordering can be noise, so this
script prints, per store, the statistics that say whether an ordering is resolved:

* every cell: replications with a result, how many never reached the target (reason
  ``target_not_reached``; their time to solution is NaN and is left out of the mean, which
  biases that mean down), capped periods, mean ± CI half-width, and the median with a
  not-reached replication counted as +inf;
* neighbouring cells along the claim's dimension: the paired difference (the sweep uses
  common random numbers, so replication r of every cell solves the same instance) with its
  CI, the mean paired log-ratio (exp of it = geometric-mean ratio) with its CI, both over
  the replications where both cells reached the target, and a sign test over all of them
  with a not-reached replication counted as slower than any that reached (+inf);
* ``--fit``: the least-squares line of the means against the dimension (slope, R², largest
  deviation of a mean from the line, relative to the mean), for "grows linearly".

    python benchmarks/ga_claims.py /tmp/gaclaims/sp.zarr --along islands
    python benchmarks/ga_claims.py /tmp/gaclaims/tts.zarr --along density --fit
    python benchmarks/ga_claims.py /tmp/gaclaims/iso.zarr --along migration_interval --against 25,300
    python benchmarks/ga_claims.py /tmp/iso.zarr --along migration_interval --metric time_to_solution_within

A metric with a ``within`` dimension (``time_to_solution_within``: the target's tolerance) is
reported per tolerance; there a replication missed the target where its column is NaN.

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

from schedsweep.pipeline.base.stats import describe_array  # noqa: E402
from schedsweep.pipeline.store.integrity import open_store  # noqa: E402

NOT_REACHED = 2  # ga REASONS: target_not_reached
NO_JOBS = 1      # ga REASONS: no_jobs
TIMED = ("time_to_solution", "generations_to_solution")   # NaN where the target was not reached


def _missed(cell, metric: str) -> np.ndarray:
    """Replications of ``cell`` that ran but never reached the target of ``metric``. The
    reason code says so for ``time_to_solution`` (at the run's ``target_within``); a column of
    ``time_to_solution_within`` (a slice at one tolerance) is NaN where that tolerance was
    missed, whatever the reason code says about the run's own tolerance."""
    x = cell[metric].values.astype(float)
    reason = cell["reason"].values if "reason" in cell else np.zeros(x.shape, np.int8)
    if "within" in cell[metric].coords:
        # ran: a result of the search exists (a store still being written has replications to come)
        ran = np.isfinite(cell["generations"].values) if "generations" in cell else reason != NO_JOBS
        return np.isnan(x) & ran
    if metric in TIMED:
        return reason == NOT_REACHED
    return np.zeros(x.shape, bool)   # a quality or a count: defined whether or not the target was reached


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
        missed = _missed(cell, metric)
        capped = cell["capped_periods"].values if "capped_periods" in cell else np.full_like(x, np.nan)
        mean, half, n = _ci(x, level)
        ran = ~np.isnan(x) | missed
        median = float(np.median(_censored(x, missed)[ran])) if ran.any() else float("nan")
        rows.append(f"| {v} | {n} | {int(np.sum(missed))} | {int(np.nansum(capped))} | "
                    f"{_fmt(mean, half)} | {median:.4g} |")
    return rows


def _censored(x: np.ndarray, missed: np.ndarray) -> np.ndarray:
    """The metric with a replication that never reached its target (``missed``) counted as
    +inf (slower than any that did), so medians and signs use it instead of dropping it."""
    return np.where(missed, np.inf, x)


def _sign_test(xa: np.ndarray, xb: np.ndarray) -> str:
    """"k of m": replications where b is faster than a, of those where they differ (a
    not-reached counts as +inf), with the two-sided sign-test p-value."""
    from scipy import stats as st

    both = ~(np.isnan(xa) | np.isnan(xb))
    faster, slower = int(np.sum(xb[both] < xa[both])), int(np.sum(xb[both] > xa[both]))
    m = faster + slower
    p = st.binomtest(faster, m).pvalue if m else float("nan")
    return f"{faster} of {m} (p {p:.2g})"


def paired_rows(ds, metric: str, along: str, pairs: list[tuple], level: float) -> list[str]:
    """Paired difference b − a, paired log-ratio log(b / a) (replications where both reached
    the target) and the sign test with not-reached as +inf, per pair of cells (a, b)."""
    rows = []
    for a, b in pairs:
        ca, cb = ds.sel({along: a}), ds.sel({along: b})
        xa, xb = ca[metric].values.astype(float), cb[metric].values.astype(float)
        signs = _sign_test(_censored(xa, _missed(ca, metric)), _censored(xb, _missed(cb, metric)))
        diff, half, n = _ci(xb - xa, level)
        with np.errstate(divide="ignore", invalid="ignore"):  # a time of 0 (target met at once) has no log
            lr, lhalf, _ = _ci(np.where((xa > 0) & (xb > 0), np.log(xb / xa), np.nan), level)
        sign = "below" if diff + half < 0 else "above" if diff - half > 0 else "unresolved"
        rows.append(f"| {a} → {b} | {n} | {_fmt(diff, half)} | {np.exp(lr):.3g} "
                    f"[{np.exp(lr - lhalf):.3g}, {np.exp(lr + lhalf):.3g}] | {sign} | {signs} |")
    return rows


def fit_rows(ds, metric: str, along: str) -> list[str]:
    xs = ds[along].values.astype(float)
    ys = np.array([np.nanmean(ds[metric].sel({along: v}).values.astype(float)) for v in ds[along].values])
    ok = np.isfinite(ys)
    slope, icept = np.polyfit(xs[ok], ys[ok], 1)
    pred = slope * xs[ok] + icept
    r2 = 1 - np.sum((ys[ok] - pred) ** 2) / np.sum((ys[ok] - ys[ok].mean()) ** 2)
    dev = np.max(np.abs(ys[ok] - pred)) / np.mean(ys[ok])
    lines = [f"least-squares line of the means: slope {slope:.4g} per unit of {along}, intercept {icept:.4g}, "
             f"R² {r2:.4f}, largest |mean − line| {dev:.1%} of the average mean"]
    # every replication a point: is the slope > 0, and is a quadratic term needed (is it a line)?
    x = np.concatenate([np.full(ds.sizes["replication"], float(v)) for v in ds[along].values])
    y = np.concatenate([ds[metric].sel({along: v}).values.astype(float) for v in ds[along].values])
    ok = np.isfinite(y)
    for degree, name in ((1, "slope"), (2, "quadratic term")):
        coef, half = _ols_last(x[ok], y[ok], degree)
        lines.append(f"least squares over the {ok.sum()} replications, degree {degree}: {name} {coef:.4g} ± {half:.2g} (95%)")
    return lines


def _ols_last(x: np.ndarray, y: np.ndarray, degree: int) -> tuple[float, float]:
    """Least-squares polynomial of ``degree``: its highest coefficient and the 95% CI half-width."""
    from scipy import stats as st

    X = np.vander(x, degree + 1)
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    dof = len(y) - degree - 1
    s2 = np.sum((y - X @ coef) ** 2) / dof
    cov = s2 * np.linalg.inv(X.T @ X)
    return float(coef[0]), float(st.t.ppf(0.975, dof) * np.sqrt(cov[0, 0]))


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
        out += ["", f"| {along} | n | not reached | capped periods | mean ± {level:.0%} CI | median (not reached = ∞) |",
                "|---|---|---|---|---|---|", *cell_rows(sl, metric, along, level)]
        vals = list(sl[along].values)
        pairs = list(zip(vals[:-1], vals[1:]))
        pairs += [p for p in ((type(vals[0])(a), v) for a in against for v in vals)
                  if p[0] != p[1] and p not in pairs]
        out += ["", "| pair a → b | n paired | b − a (paired) | geo-mean b / a [CI] | b vs a | b faster (not reached = ∞) |",
                "|---|---|---|---|---|---|", *paired_rows(sl, metric, along, pairs, level)]
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
