"""Tables of mean ± CI half-width from a store: selection, pairing, pivoting, formats."""
from __future__ import annotations

import json
from typing import Any, Iterable

import numpy as np
import pandas as pd
import xarray as xr

from . import stats
from .stats import QueryError

FORMATS = ("text", "csv", "markdown", "json")


def parse_assignments(items: Iterable[str], option: str) -> list[tuple[str, str]]:
    out = []
    for item in items or ():
        if "=" not in item:
            raise QueryError(f"{option} {item!r}: expected DIM=VALUE")
        dim, value = item.split("=", 1)
        out.append((dim.strip(), value.strip()))
    return out


def select(ds: xr.Dataset, sel: Iterable[str]) -> xr.Dataset:
    """Apply ``dim=value`` selections given as text."""
    for dim, value in parse_assignments(sel, "--sel"):
        ds = ds.sel({dim: stats.coerce_value(ds, dim, value)})
    return ds


def compute(ds: xr.Dataset, metrics: list[str] | None = None, sel: Iterable[str] = (),
            paired: str | None = None, ratio: str | None = None, level: float = 0.95) -> xr.Dataset:
    """The statistics Dataset a table shows."""
    if paired and ratio:
        raise QueryError("give --paired or --ratio, not both")
    metrics = stats.metric_names(ds, metrics)
    if paired or ratio:
        (dim, base), = parse_assignments([paired or ratio], "--paired" if paired else "--ratio")
        result = (stats.paired if paired else stats.ratio)(ds, dim, base, level, metrics)
    else:
        result = stats.describe(ds, level, metrics)
    # the spec's replications per cell: a table marks the cells that hold fewer values
    result.attrs["replications"] = ds.attrs.get("replications")
    return select(result, sel)


def long_frame(result: xr.Dataset) -> pd.DataFrame:
    """One row per cell (and extra label) per metric, one column per statistic."""
    frames = []
    for name, da in result.data_vars.items():
        if da.dims == ("stat",):  # a single-cell store
            frame = pd.DataFrame([da.values], columns=[str(s) for s in da["stat"].values])
        else:
            frame = da.to_dataset(dim="stat").to_dataframe().reset_index()
        frame.insert(0, "metric", name)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True, sort=False)
    stat_cols = [s for s in stats.PAIRED_STATS if s in out.columns]
    keep = [c for c in out.columns if c not in stat_cols and c != "metric"]
    keep = [c for c in keep if out[c].notna().any()]
    return out[["metric"] + keep + stat_cols]


def _fmt(mean: float, half: float, relative: float = np.nan, n: float = np.nan,
         expected: int | None = None) -> str:
    """``mean ± half``, the relative change in brackets, and ``[n=K]`` when a cell holds fewer
    values than the spec's replications (failed, not yet run, or undefined: NaN with a reason)."""
    short = f" [n={int(n)}]" if expected and np.isfinite(n) and n < expected else ""
    if not np.isfinite(mean):
        return "—" + short
    text = f"{mean:.4g}" if not np.isfinite(half) else f"{mean:.4g} ± {half:.2g}"
    if np.isfinite(relative):
        text += f" ({relative:+.1%})"
    return text + short


def wide_frame(long: pd.DataFrame, by: str | None = None, expected: int | None = None) -> pd.DataFrame:
    """Mean ± half-width, metrics (or the values of ``by``) as columns; ``[n=K]`` where a cell has
    fewer than ``expected`` values."""
    long = long.copy()
    relative = long["relative_change"] if "relative_change" in long else np.full(len(long), np.nan)
    counts = long["n"] if "n" in long else np.full(len(long), np.nan)
    long["value"] = [_fmt(m, h, r, k, expected)
                     for m, h, r, k in zip(long["mean"], long["half_width"], relative, counts)]
    keys = [c for c in long.columns if c not in stats.PAIRED_STATS and c not in ("metric", "value")]
    if by:
        if by not in keys:
            raise QueryError(f"--by {by!r} is not a dimension of the table; dimensions: {', '.join(keys)}")
        rows = ["metric"] + [k for k in keys if k != by]
        table = long.pivot_table(index=rows, columns=by, values="value", aggfunc="first", sort=False)
    else:
        table = long.pivot_table(index=keys or None, columns="metric", values="value", aggfunc="first",
                                 sort=False) if keys else long.set_index("metric")[["value"]].T
    table.columns = [str(c) for c in table.columns]
    return table.reset_index() if keys or by else table


def render(result: xr.Dataset, fmt: str = "text", by: str | None = None) -> str:
    if fmt not in FORMATS:
        raise QueryError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    long = long_frame(result)
    if fmt == "csv":
        return long.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(long.to_json(orient="records")), indent=1)
    # [n=K] in the text table; markdown stays cell for cell what the HTML report shows (which
    # has its own n column), csv and json carry n as a column
    expected = result.attrs.get("replications") if fmt == "text" else None
    tables = [wide_frame(part, by, expected) for part in _same_dims(long)]
    if fmt == "markdown":
        return "\n\n".join(_markdown(t) for t in tables)
    header = f"mean ± {result.attrs.get('level', 0.95):.0%} CI half-width"
    if "paired" in result.attrs:
        header += f", paired difference against {result.attrs['paired']} (relative change in brackets)"
    if "ratio" in result.attrs:
        header += f", ratio of means against {result.attrs['ratio']}"
    if expected and "[n=" in "".join(t.to_string() for t in tables):
        header += f"; [n=K]: the cell holds K of the spec's {expected} replications (see schedsweep show)"
    return header + "\n" + "\n\n".join(t.to_string(index=False) for t in tables)


def _same_dims(long: pd.DataFrame) -> list[pd.DataFrame]:
    """Split a long frame into groups of metrics with the same dimensions (a metric with a
    per-class dimension cannot share a wide table with plain metrics)."""
    keys = [c for c in long.columns if c not in stats.PAIRED_STATS and c != "metric"]
    defined = long[keys].notna()
    signature = defined.apply(tuple, axis=1) if keys else pd.Series([()] * len(long), index=long.index)
    parts = []
    for sig in dict.fromkeys(signature):
        part = long[signature == sig]
        parts.append(part.drop(columns=[k for k, d in zip(keys, sig) if not d]))
    return parts


def _markdown(table: pd.DataFrame) -> str:
    cols = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def completeness(ds: xr.Dataset) -> dict[str, Any]:
    from .store import STATUS_LABELS

    status = ds["status"].values
    return {label: int((status == code).sum()) for code, label in STATUS_LABELS.items()}
