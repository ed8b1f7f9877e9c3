"""Questions across stores: several stores of one workload as one Dataset with a ``store`` dimension.

:func:`open_tree` opens stores (or every store under folders) as an ``xarray.DataTree``, one
node per store with its attributes; :func:`align` joins the nodes along ``store`` (cells and
replications an other store lacks are NaN, 'not run'). Stores made by different model code,
or whose metrics have different units, are refused in one line unless ``allow_mixed`` (the
differences are then returned, to be printed). A paired comparison across stores is valid
only when they share their replications' seeds (common random numbers: the same spec seed
and cells): :func:`shares_seeds` says so, and :func:`welch` gives the unpaired (Welch)
interval otherwise.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np
import xarray as xr

from ..base import stats
from ..base.errors import QueryError

KEEP = ("status", "reason", "seed")  # besides the metrics, what a cross-store table reads


def _name(store: Path, roots: list[Path]) -> str:
    from .query import _relative

    return _relative(store, roots).replace("/", "|")  # a DataTree node name has no '/'


def open_tree(paths: Iterable[str | Path]) -> xr.DataTree:
    """Every store under ``paths`` (stores or folders), verified, as one DataTree node each."""
    from ..store.integrity import open_store
    from .stores import find

    roots = [Path(p) for p in paths]
    stores = find(roots)
    if not stores:
        raise QueryError(f"no store under {', '.join(map(str, roots))}")
    nodes = {}
    for s in stores:
        ds = open_store(s)
        ds.attrs["store_path"] = str(s)
        nodes[_name(s, roots)] = ds
    return xr.DataTree.from_dict(nodes)


open_stores = open_tree  # pipeline.open_stores


def _units(ds: xr.Dataset) -> dict[str, str]:
    return {m: str(ds[m].attrs.get("units", "")) for m in stats.metric_names(ds)}


def differences(tree: xr.DataTree) -> list[str]:
    """What keeps the stores of ``tree`` from being compared as they are: other model code,
    other units of a metric (one line each); another workload is listed first."""
    nodes = [(n.name, n.to_dataset()) for n in tree.children.values()]
    (first_name, first), rest = nodes[0], nodes[1:]
    out = []
    for name, ds in rest:
        if ds.attrs.get("workload") != first.attrs.get("workload"):
            out.append(f"{name} is of workload {ds.attrs.get('workload')!r}, {first_name} of "
                       f"{first.attrs.get('workload')!r}")
            continue
        code, base = (ds.attrs.get("code") or {}).get("hash"), (first.attrs.get("code") or {}).get("hash")
        if code != base:
            out.append(f"{name} was made by other model code than {first_name} "
                       f"({str(code)[:12]} against {str(base)[:12]})")
        units, base_units = _units(ds), _units(first)
        for m in sorted(set(units) & set(base_units)):
            if units[m] != base_units[m]:
                out.append(f"{m} is in {units[m]!r} in {name}, in {base_units[m]!r} in {first_name}")
    return out


def align(tree: xr.DataTree, allow_mixed: bool = False) -> tuple[xr.Dataset, list[str]]:
    """The stores of ``tree`` as one Dataset along ``store`` and the differences allowed.

    Refused (QueryError, one line): stores of different workloads, always; other model code or
    units, unless ``allow_mixed``."""
    diffs = differences(tree)
    other_workload = [d for d in diffs if "workload" in d]
    if other_workload:
        raise QueryError(f"{other_workload[0]}: stores of one workload only are compared")
    if diffs and not allow_mixed:
        more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
        raise QueryError(f"{diffs[0]}{more}; give --allow-mixed to compare them anyway")
    datasets = [n.to_dataset() for n in tree.children.values()]
    names = [n.name for n in tree.children.values()]
    metrics = [m for m in stats.metric_names(datasets[0]) if all(m in d for d in datasets)]
    parts = [d[[*metrics, *(k for k in KEEP if k in d)]] for d in datasets]
    joined = xr.concat(parts, dim=xr.DataArray(names, dims="store", name="store"), join="outer",
                       combine_attrs="drop_conflicts", coords="minimal", compat="override")
    joined["status"] = joined["status"].fillna(0).astype(np.int8)
    first = datasets[0].attrs
    joined.attrs.update({"metrics": metrics, "workload": first.get("workload"), "stores": names,
                         "replications": max(int(d.attrs.get("replications") or 0) for d in datasets),
                         "reasons": first.get("reasons", {}), "name": " + ".join(names)})
    joined.attrs.pop("spec_text", None)  # no one spec: no scorecard of one
    return joined, diffs


def shares_seeds(ds: xr.Dataset) -> bool:
    """Whether every store of an aligned Dataset gave replication r of a cell the same seed
    (common random numbers): then a difference across stores may be paired by replication."""
    if "seed" not in ds or "store" not in ds["seed"].dims:
        return False
    seeds = ds["seed"].transpose("store", ...).values
    return bool(np.all(seeds == seeds[:1]) and np.isfinite(seeds.astype(float)).all())


def welch(ds: xr.Dataset, dim: str, baseline: Any, level: float = 0.95,
          metrics: Iterable[str] | None = None) -> xr.Dataset:
    """Every cell minus the baseline cell along ``dim`` as independent samples: the difference
    of means with Welch's CI (the stats of :func:`pipeline.base.stats.paired`, ``sd`` the sd of the
    difference of one replication of each, ``n`` the smaller sample)."""
    from scipy.special import stdtrit

    baseline = stats.coerce_value(ds, dim, baseline)
    out = {}
    for m in stats.metric_names(ds, metrics):
        da = ds[m].load()
        base = da.sel({dim: baseline}, drop=True).broadcast_like(da).transpose(*da.dims)
        axis = da.dims.index(stats.REP)
        x, y = stats.describe_array(da.values, level, axis), stats.describe_array(base.values, level, axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            vx, vy = x["sd"] ** 2 / x["n"], y["sd"] ** 2 / y["n"]
            se = np.sqrt(vx + vy)
            dof = (vx + vy) ** 2 / (vx ** 2 / (x["n"] - 1) + vy ** 2 / (y["n"] - 1))
            half = stdtrit(dof, 0.5 + level / 2) * se
            mean = x["mean"] - y["mean"]
            result = {"mean": mean, "sd": np.sqrt(x["sd"] ** 2 + y["sd"] ** 2), "n": np.minimum(x["n"], y["n"]),
                      "sem": se, "half_width": half, "ci_low": mean - half, "ci_high": mean + half,
                      "rel_precision": half / np.abs(mean), "relative_change": mean / y["mean"]}
        out[m] = stats._wrap(da, result)
    return xr.Dataset(out, attrs={"level": level, "paired": f"{dim}={baseline} (Welch, unpaired)"})
