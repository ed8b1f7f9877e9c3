"""Statistics over replications (shared/spec/pipeline.md §6).

Every function reduces the ``replication`` dimension and returns a Dataset with one
variable per metric and a ``stat`` dimension:
mean, sd, n, sem, half_width, ci_low, ci_high, rel_precision.
NaN replications (undefined, failed or not run) are left out of n.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import xarray as xr

from .errors import QueryError  # noqa: F401  (re-exported: raised and caught under this name)

STATS = ("mean", "sd", "n", "sem", "half_width", "ci_low", "ci_high", "rel_precision")
#: Paired differences also carry the change relative to the baseline's mean over the same
#: replications: mean(X - Y) / mean(Y), e.g. -0.3 = 30% lower than the baseline.
PAIRED_STATS = STATS + ("relative_change",)
REP = "replication"


def t_quantile(level: float, n: np.ndarray) -> np.ndarray:
    """The two-sided Student-t factor for ``n`` observations (NaN where n < 2)."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be in (0, 1), not {level}")
    from scipy import stats as _st  # here, not at import: scipy.stats costs seconds to load

    n = np.asarray(n, dtype=float)
    df = np.where(n >= 2, n - 1, np.nan)
    return _st.t.ppf(0.5 + level / 2, df)


def describe_array(x: np.ndarray, level: float = 0.95, axis: int = -1) -> dict[str, np.ndarray]:
    """Mean, sd, n, sem and the Student-t CI of ``x`` along ``axis``, ignoring NaN."""
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    n = np.sum(~np.isnan(x), axis=-1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.nansum(x, axis=-1)
        mean = np.where(n > 0, total / np.where(n > 0, n, 1), np.nan)
        dev = np.where(np.isnan(x), 0.0, x - mean[..., None])
        sd = np.where(n >= 2, np.sqrt(np.sum(dev * dev, axis=-1) / np.where(n >= 2, n - 1, 1)), np.nan)
        sem = sd / np.sqrt(n)
        half = t_quantile(level, n) * sem
        rel = half / np.abs(mean)
    return {"mean": mean, "sd": sd, "n": n, "sem": sem, "half_width": half,
            "ci_low": mean - half, "ci_high": mean + half, "rel_precision": rel}


def ratio_array(x: np.ndarray, y: np.ndarray, level: float = 0.95, axis: int = -1) -> dict[str, np.ndarray]:
    """Ratio of means ``mean(x) / mean(y)`` over replications where both are defined, with a
    delta-method CI: ``se = sqrt((sX² − 2 R sXY + R² sY²) / n) / |mean(Y)|``."""
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    y = np.moveaxis(np.asarray(y, dtype=float), axis, -1)
    x, y = np.broadcast_arrays(x, y)
    both = ~np.isnan(x) & ~np.isnan(y)
    n = both.sum(axis=-1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        safe_n = np.where(n > 0, n, 1)
        mx = np.where(n > 0, np.where(both, x, 0).sum(-1) / safe_n, np.nan)
        my = np.where(n > 0, np.where(both, y, 0).sum(-1) / safe_n, np.nan)
        dx = np.where(both, x - mx[..., None], 0.0)
        dy = np.where(both, y - my[..., None], 0.0)
        dof = np.where(n >= 2, n - 1, np.nan)
        sxx, syy, sxy = (dx * dx).sum(-1) / dof, (dy * dy).sum(-1) / dof, (dx * dy).sum(-1) / dof
        r = mx / my
        se = np.sqrt((sxx - 2 * r * sxy + r * r * syy) / n) / np.abs(my)
        half = t_quantile(level, n) * se
        rel = half / np.abs(r)
    return {"mean": r, "sd": se * np.sqrt(n), "n": n, "sem": se, "half_width": half,
            "ci_low": r - half, "ci_high": r + half, "rel_precision": rel}


def metric_names(ds: xr.Dataset, metrics: Iterable[str] | None = None) -> list[str]:
    """The metric variables of a store (those with a replication dim, not status/reason/seed)."""
    names = [m for m in ds.attrs.get("metrics", []) if m in ds] or [
        v for v in ds.data_vars if REP in ds[v].dims and v not in ("status", "reason", "seed")]
    if metrics is None:
        return names
    chosen = list(metrics)
    unknown = [m for m in chosen if m not in names]
    if unknown:
        raise QueryError(f"unknown metric(s) {unknown}; the store has: {', '.join(names)}")
    return chosen


def _wrap(da: xr.DataArray, result: dict[str, np.ndarray]) -> xr.DataArray:
    dims = [d for d in da.dims if d != REP]
    names = [s for s in PAIRED_STATS if s in result]
    stacked = np.stack([result[s] for s in names], axis=-1)
    coords = {k: v for k, v in da.coords.items() if REP not in v.dims}
    out = xr.DataArray(stacked, dims=dims + ["stat"], coords=coords)
    out = out.assign_coords(stat=names)
    out.attrs = dict(da.attrs)
    return out


def describe(ds: xr.Dataset, level: float = 0.95, metrics: Iterable[str] | None = None) -> xr.Dataset:
    """Per cell and metric: mean, sd, n, sem and the Student-t CI at ``level``."""
    out = {}
    for m in metric_names(ds, metrics):
        da = ds[m].load()
        out[m] = _wrap(da, describe_array(da.values, level, axis=da.dims.index(REP)))
    return xr.Dataset(out, attrs={"level": level})


summary = describe


def coerce_value(ds: xr.Dataset, dim: str, value: Any) -> Any:
    """A value given as text (CLI) converted to the type of ``dim``'s coordinate."""
    if dim not in ds.dims:
        raise QueryError(f"{dim!r} is not a dimension of the store; dimensions: {', '.join(map(str, ds.dims))}")
    coord = ds[dim].values
    if isinstance(value, str) and coord.dtype.kind in "biuf":
        text = value.strip().lower()
        try:
            if coord.dtype.kind == "b":
                value = {"true": True, "false": False}[text]
            elif coord.dtype.kind == "f":
                value = float(text)
            else:
                value = int(text)
        except (KeyError, ValueError):
            raise QueryError(f"{dim}={value!r}: expected a {coord.dtype.kind!r} value like {coord[0]!r}") from None
    if isinstance(value, str) and value not in list(coord):
        value = label_of(ds, value)
    if value not in list(coord):
        raise QueryError(f"{dim}={value!r} is not in the store; values: {', '.join(map(str, coord))}")
    return value


def label_of(ds: xr.Dataset, value: str) -> str:
    """The label of a path parameter's file given as written in the spec (``traces/kth.swf``
    for the coordinate ``kth.swf``), from the store's ``files``; else ``value`` itself."""
    import os

    files = ds.attrs.get("files") or {}
    wanted = os.path.normpath(value)
    for label, f in files.items():
        if any(os.path.normpath(w) == wanted for w in (f or {}).get("written", [])):
            return label
    return value


def paired(ds: xr.Dataset, dim: str, baseline: Any, level: float = 0.95,
           metrics: Iterable[str] | None = None) -> xr.Dataset:
    """Statistics of the per-replication difference of every cell minus the baseline cell."""
    baseline = coerce_value(ds, dim, baseline)
    out = {}
    for m in metric_names(ds, metrics):
        da = ds[m].load()
        base = da.sel({dim: baseline}, drop=True)
        diff = (da - base).transpose(*da.dims)
        axis = diff.dims.index(REP)
        result = describe_array(diff.values, level, axis=axis)
        base_same = base.broadcast_like(da).transpose(*da.dims).where(~np.isnan(diff.values))
        base_mean = describe_array(base_same.values, level, axis=axis)["mean"]
        with np.errstate(invalid="ignore", divide="ignore"):
            result["relative_change"] = result["mean"] / base_mean
        out[m] = _wrap(diff, result)
    return xr.Dataset(out, attrs={"level": level, "paired": f"{dim}={baseline}"})


def ratio(ds: xr.Dataset, dim: str, baseline: Any, level: float = 0.95,
          metrics: Iterable[str] | None = None) -> xr.Dataset:
    """Ratio of means of every cell against the baseline cell, with a delta-method CI."""
    baseline = coerce_value(ds, dim, baseline)
    out = {}
    for m in metric_names(ds, metrics):
        da = ds[m].load()
        base = da.sel({dim: baseline}, drop=True).broadcast_like(da).transpose(*da.dims)
        axis = da.dims.index(REP)
        out[m] = _wrap(da, ratio_array(da.values, base.values, level, axis=axis))
    return xr.Dataset(out, attrs={"level": level, "ratio": f"{dim}={baseline}"})
