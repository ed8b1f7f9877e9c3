"""Statistics over replications (docs/contracts.md, "Statistics").

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
#: replications: mean(X - Y) / mean(Y), e.g. -0.3 = 30% lower than the baseline. A store with
#: deterministic cells (its ``deterministic`` attribute) also gets ``deterministic``: 1 where
#: the value is exact (run once; sd, sem and the CI are NaN there), else 0.
PAIRED_STATS = STATS + ("relative_change", "deterministic")
DETERMINISTIC = "deterministic"
REP = "replication"
_SPREAD = ("sd", "sem", "half_width", "ci_low", "ci_high", "rel_precision")


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


# -- deterministic cells: one run, a value without a CI -------------------------------------
def deterministic_mask(ds: xr.Dataset) -> xr.DataArray | None:
    """Per cell (the sweep dims of ``ds``), whether the workload declared it deterministic
    (the store's ``deterministic`` attribute, written by the run); None when the store has no
    such cell, or when ``ds`` is not the whole store (its dims no longer match the attribute)."""
    raw = ds.attrs.get("deterministic")
    dims = [d for d in ds.attrs.get("dims", [])]
    if raw is None:
        raw = _declared(ds, dims)  # a store made before the attribute: what its workload declares
    if raw is None:
        return None
    mask = np.asarray(raw, dtype=bool)
    if mask.ndim != len(dims) or not mask.any() or any(d not in ds.dims for d in dims) \
            or mask.shape != tuple(ds.sizes[d] for d in dims):
        return None
    return xr.DataArray(mask, dims=dims, coords={d: ds[d].values for d in dims})


def _declared(ds: xr.Dataset, dims: list[str]) -> np.ndarray | None:
    """Per cell, the workload's ``deterministic`` hook on the store's parameters (its fixed
    ``params`` and each cell's coordinates); None if the workload has no hook, cannot be
    imported here, or the store's dims are not all there. For stores made before the run
    recorded the ``deterministic`` attribute (their deterministic cells hold copies)."""
    from schedsweep import workloads
    from schedsweep.workloads._contract import deterministic_reason

    try:
        module = workloads.get(str(ds.attrs.get("workload", "")))
    except Exception:  # noqa: BLE001 - a workload not importable here: nothing is declared
        return None
    if getattr(module, "deterministic", None) is None or any(d not in ds.dims for d in dims):
        return None
    members = {d: [c for c, v in ds.coords.items() if v.dims == (d,)] for d in dims}
    mask = np.zeros(tuple(ds.sizes[d] for d in dims), bool)
    for cell in np.ndindex(*mask.shape):
        params = dict(ds.attrs.get("params", {}))
        for d, i in zip(dims, cell):
            params.update({c: _plain(ds[c].values[i]) for c in members[d]})
        try:
            mask[cell] = deterministic_reason(module, params) is not None
        except Exception:  # noqa: BLE001 - parameters the hook cannot read: not declared
            return None
    return mask


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def needless(ds: xr.Dataset, status: np.ndarray) -> np.ndarray:
    """(cells..., replication): the replications of deterministic cells that never need to run (all but 0)."""
    mask = deterministic_mask(ds)
    if mask is None or tuple(mask.shape) != status.shape[:-1]:
        return np.zeros(status.shape, bool)
    return mask.values[..., None] & (np.arange(status.shape[-1]) >= 1)


def _cell_mask(mask: xr.DataArray | None, da: xr.DataArray) -> xr.DataArray | None:
    """``mask`` broadcast over ``da``'s dims other than replication (extra metric dims too)."""
    if mask is None:
        return None
    return mask.broadcast_like(da.isel({REP: 0}, drop=True)).transpose(*[d for d in da.dims if d != REP])


def _filled(da: xr.DataArray, det: xr.DataArray) -> xr.DataArray:
    """``da`` with each deterministic cell's value (its first defined replication: replication 0
    of a store run once; old stores hold copies) in every replication, so that pairing it with
    a cell that varies pairs every replication of that cell with the one value."""
    axis = da.dims.index(REP)
    values = np.moveaxis(da.values, axis, -1)
    defined = ~np.isnan(values)
    first = np.take_along_axis(values, np.argmax(defined, axis=-1)[..., None], axis=-1)
    flag = np.moveaxis(np.broadcast_to(det.transpose(*[d for d in da.dims if d != REP]).values[..., None],
                                       values.shape), -1, axis)
    out = np.where(flag, np.moveaxis(np.broadcast_to(first, values.shape), -1, axis), da.values)
    return da.copy(data=out)


def _first_only(da: xr.DataArray, det: xr.DataArray) -> xr.DataArray:
    """``da`` (filled by :func:`_filled`) with replication 0 alone where ``det``: a deterministic
    cell (or a pair of them) is one value, so its mean is that value bit for bit and n = 1."""
    first = xr.DataArray(np.arange(da.sizes[REP]) == 0, dims=[REP])
    return da.where(~det | first).transpose(*da.dims)


def _exact(result: dict[str, np.ndarray], det: np.ndarray) -> dict[str, np.ndarray]:
    """Cells flagged ``det`` keep their value and lose their spread: n = 1, no sd, no CI."""
    result = dict(result)
    for name in _SPREAD:
        result[name] = np.where(det, np.nan, result[name])
    result["n"] = np.where(det, np.where(np.isfinite(result["mean"]), 1.0, 0.0), result["n"])
    result[DETERMINISTIC] = det.astype(float)
    return result


def cell_values(ds: xr.Dataset, metric: str) -> tuple[xr.DataArray, xr.DataArray | None]:
    """``metric``'s replications (loaded), each deterministic cell's one value in all of them,
    and the deterministic cells (None when the store has none)."""
    da = ds[metric].load()
    det = _cell_mask(deterministic_mask(ds), da)
    return (da, None) if det is None else (_filled(da, det), det)


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
    mask = deterministic_mask(ds)
    for m in metric_names(ds, metrics):
        da = ds[m].load()
        det = _cell_mask(mask, da)
        if det is not None:  # the value of its one run (its first defined replication)
            da = _first_only(_filled(da, det), det)
        result = describe_array(da.values, level, axis=da.dims.index(REP))
        out[m] = _wrap(da, result if det is None else _exact(result, det.values))
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
    mask = deterministic_mask(ds)
    for m in metric_names(ds, metrics):
        da = ds[m].load()
        det = _cell_mask(mask, da)
        if det is not None:  # a deterministic cell's one value against each replication of the other
            da = _filled(da, det)
        base = da.sel({dim: baseline}, drop=True)
        diff = (da - base).transpose(*da.dims)
        if det is not None:  # two deterministic cells: one exact difference
            both = (det & det.sel({dim: baseline}, drop=True)).transpose(*det.dims)
            diff = _first_only(diff, both)
        axis = diff.dims.index(REP)
        result = describe_array(diff.values, level, axis=axis)
        base_same = base.broadcast_like(da).transpose(*da.dims).where(~np.isnan(diff.values))
        base_mean = describe_array(base_same.values, level, axis=axis)["mean"]
        with np.errstate(invalid="ignore", divide="ignore"):
            result["relative_change"] = result["mean"] / base_mean
        if det is not None:
            result = _exact(result, both.values)
        out[m] = _wrap(diff, result)
    return xr.Dataset(out, attrs={"level": level, "paired": f"{dim}={baseline}", "baseline": (dim, _plain(baseline))})


def paired_over(ds: xr.Dataset, dim: str, baseline: Any, over: str, level: float = 0.95,
                metrics: Iterable[str] | None = None) -> xr.Dataset:
    """Paired differences against ``dim=baseline`` pooled over the dimension ``over``.

    For each remaining cell, the pairs are (X, Y) = (cell, baseline cell) at every value of
    ``over`` and every replication both define; where both cells of a pair are deterministic
    at a value of ``over``, that value gives one pair (its one run), so 13 traces run once each
    give 13 pairs. Mean, sd and the Student-t interval of X - Y over the n pairs (n - 1 degrees
    of freedom: ``scipy.stats.ttest_rel(X, Y).confidence_interval()``), and the relative change
    mean(X - Y) / mean(Y) over the same pairs.
    """
    baseline = coerce_value(ds, dim, baseline)
    if over == dim:
        raise QueryError(f"--over {over!r} is the --paired dimension; pool over another one")
    if over not in ds.dims or over == REP:
        raise QueryError(f"--over {over!r} is not a sweep dimension of the store; dimensions: "
                         f"{', '.join(d for d in map(str, ds.dims) if d != REP and d in ds.attrs.get('dims', ds.dims))}")
    out = {}
    mask = deterministic_mask(ds)
    for m in metric_names(ds, metrics):
        da = ds[m].load()
        det = _cell_mask(mask, da)
        det = xr.zeros_like(da.isel({REP: 0}, drop=True), dtype=bool) if det is None else det
        x = _filled(da, det) if mask is not None else da
        both = det & det.sel({dim: baseline}, drop=True)
        # one pair per value of `over` where both cells are deterministic
        diff = _first_only((x - x.sel({dim: baseline}, drop=True)).transpose(*da.dims), both)
        base = x.sel({dim: baseline}, drop=True).broadcast_like(x).where(~np.isnan(diff))
        others = [d for d in da.dims if d not in (over, REP)]
        order = others + [over, REP]
        shape = tuple(da.sizes[d] for d in others) + (-1,)
        d_values = diff.transpose(*order).values.reshape(shape)
        b_values = base.transpose(*order).values.reshape(shape)
        result = describe_array(d_values, level, axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            result["relative_change"] = result["mean"] / describe_array(b_values, level, axis=-1)["mean"]
        if mask is not None and da.sizes[over] == 1:  # one value of `over`, both deterministic: exact
            result = _exact(result, both.isel({over: 0}, drop=True).transpose(*others).values)
        template = da.drop_vars([c for c, v in da.coords.items() if over in v.dims]).isel({over: 0}, drop=True)
        out[m] = _wrap(template.transpose(*others, REP), result)
    return xr.Dataset(out, attrs={"level": level, "paired": f"{dim}={baseline}", "over": over,
                                  "baseline": (dim, _plain(baseline))})


def ratio(ds: xr.Dataset, dim: str, baseline: Any, level: float = 0.95,
          metrics: Iterable[str] | None = None) -> xr.Dataset:
    """Ratio of means of every cell against the baseline cell, with a delta-method CI."""
    baseline = coerce_value(ds, dim, baseline)
    out = {}
    mask = deterministic_mask(ds)
    for m in metric_names(ds, metrics):
        da = ds[m].load()
        det = _cell_mask(mask, da)
        if det is not None:
            da = _filled(da, det)
        base = da.sel({dim: baseline}, drop=True).broadcast_like(da).transpose(*da.dims)
        if det is not None:  # two deterministic cells: one exact ratio
            both = (det & det.sel({dim: baseline}, drop=True)).transpose(*det.dims)
            da, base = _first_only(da, both), _first_only(base, both)
        axis = da.dims.index(REP)
        result = ratio_array(da.values, base.values, level, axis=axis)
        if det is not None:
            result = _exact(result, both.values)
        out[m] = _wrap(da, result)
    return xr.Dataset(out, attrs={"level": level, "ratio": f"{dim}={baseline}"})
