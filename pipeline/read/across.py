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

import os
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


def _param_value(ds: xr.Dataset, name: str) -> Any:
    """A store's fixed value of spec parameter ``name`` as a coordinate value: a file as its
    label (``kth.swf``, as a sweep over files names it), else the value itself."""
    value = (ds.attrs.get("params") or {}).get(name)
    if isinstance(value, str):
        for label, f in (ds.attrs.get("files") or {}).items():
            written = {os.path.normpath(w) for w in (f or {}).get("written", [])}
            if os.path.normpath(value) in written or Path(value).name == label:
                return label
    return value


def differing_parameter(datasets: list[xr.Dataset]) -> tuple[str | None, list[str]]:
    """(the one spec parameter that tells the stores apart, or None; the parameters that differ).

    A parameter counts when every store fixes it (a sweep dimension of some store does not) to
    a scalar; it tells the stores apart when it is the only one that differs and its value is
    another in every store."""
    swept = {d for ds in datasets for d in ds.attrs.get("dims", [])}
    names = set.intersection(*(set(ds.attrs.get("params") or {}) for ds in datasets)) - swept
    differ = []
    for name in sorted(names):
        values = [_param_value(ds, name) for ds in datasets]
        if not all(isinstance(v, (str, int, float, bool)) for v in values):
            continue
        if len(set(map(repr, values))) > 1:
            differ.append(name)
    if len(differ) != 1:
        return None, differ
    name = differ[0]
    values = [_param_value(ds, name) for ds in datasets]
    unique = len(set(map(repr, values))) == len(values)
    clash = any(name in ds.variables for ds in datasets)  # a coordinate or metric of that name
    return (name if unique and not clash else None), differ


def along_line(ds: xr.Dataset) -> str:
    """One line saying which dimension an aligned Dataset puts its stores along, and why."""
    dim, differ = ds.attrs["across"], ds.attrs.get("differ", [])
    if dim != STORE:
        pairs = ", ".join(f"{s}: {v}" for s, v in zip(ds.attrs["stores"], (stats._plain(v) for v in ds[dim].values)))
        return f"across stores along {dim}, the one spec parameter that differs ({pairs})"
    if len(ds.attrs["stores"]) == 1:
        return f"across stores along store: one store ({ds.attrs['stores'][0]})"
    why = (f"{' and '.join(differ)} differ" if len(differ) > 1 else
           f"{differ[0]} has one value in two stores" if differ else "their spec parameters are the same")
    return f"across stores along store: no single spec parameter tells them apart ({why})"


STORE = "store"  # the dimension of stores no single spec parameter tells apart


def align(tree: xr.DataTree, allow_mixed: bool = False) -> tuple[xr.Dataset, list[str]]:
    """The stores of ``tree`` as one Dataset and the differences allowed.

    The stores are put along the one spec parameter that tells them apart (one store per
    ``queue`` value: a dimension ``queue`` of those values, with the store names as the
    coordinate ``store`` along it), else along ``store``, their names; ``attrs["across"]``
    names the dimension (:func:`along_line` says it). Refused (QueryError, one line): stores of
    different workloads, always; other model code or units, unless ``allow_mixed``."""
    diffs = differences(tree)
    other_workload = [d for d in diffs if "workload" in d]
    if other_workload:
        raise QueryError(f"{other_workload[0]}: stores of one workload only are compared")
    if diffs and not allow_mixed:
        more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
        raise QueryError(f"{diffs[0]}{more}; give --allow-mixed to compare them anyway")
    datasets = [n.to_dataset() for n in tree.children.values()]
    names = [n.name for n in tree.children.values()]
    param, differ = differing_parameter(datasets) if len(datasets) > 1 else (None, [])
    dim = param or STORE
    if param:  # in the order of the parameter's values, as a sweep dimension would be
        order = sorted(range(len(datasets)), key=lambda k: _param_value(datasets[k], param))
        datasets, names = [datasets[k] for k in order], [names[k] for k in order]
    along = xr.DataArray([_param_value(d, param) for d in datasets] if param else names, dims=dim, name=dim)
    metrics = [m for m in stats.metric_names(datasets[0]) if all(m in d for d in datasets)]
    parts = [d[[*metrics, *(k for k in KEEP if k in d)]] for d in datasets]
    joined = xr.concat(parts, dim=along, join="outer",
                       combine_attrs="drop_conflicts", coords="minimal", compat="override")
    if param:  # where each value comes from
        joined = joined.assign_coords({STORE: (dim, names)})
    joined["status"] = joined["status"].fillna(0).astype(np.int8)
    first = datasets[0].attrs
    sweep = list(dict.fromkeys(d for ds in datasets for d in ds.attrs.get("dims", [])))
    joined.attrs.update({"metrics": metrics, "workload": first.get("workload"), "stores": names,
                         "replications": max(int(d.attrs.get("replications") or 0) for d in datasets),
                         "reasons": first.get("reasons", {}), "name": " + ".join(names),
                         "across": dim, "differ": differ, "dims": sweep})
    joined.attrs.pop("spec_text", None)  # no one spec: no scorecard of one
    return joined, diffs


def open_aligned(paths: Iterable[str | Path], allow_mixed: bool = False) -> tuple[xr.Dataset, list[str]]:
    """The stores under ``paths`` aligned (:func:`align`) and the lines a view says first:
    each store whose run's journal holds results not yet compacted (they are included), each
    difference ``allow_mixed`` let through, then the dimension (:func:`along_line`)."""
    tree = open_tree(paths)
    pending = pending_lines(tree)
    ds, diffs = align(tree, allow_mixed)
    return ds, pending + [f"mixed: {d}" for d in diffs] + [along_line(ds)]


def pending_lines(tree: xr.DataTree) -> list[str]:
    """One line per store of ``tree`` being written (or interrupted) whose journal holds results
    the view includes although they are not yet compacted into the store."""
    from ..store.integrity import pending_line

    out = []
    for name, node in tree.children.items():
        ds = node.to_dataset()
        line = pending_line(ds, ds.attrs["store_path"])
        if line:
            out.append(f"{name}: {line}")
    return out


def shares_seeds(ds: xr.Dataset) -> bool:
    """Whether every store of an aligned Dataset gave replication r of a cell the same seed
    (common random numbers): then a difference across stores may be paired by replication."""
    dim = ds.attrs.get("across", STORE)
    if "seed" not in ds or dim not in ds["seed"].dims:
        return False
    seeds = ds["seed"].transpose(dim, ...).values
    return bool(np.all(seeds == seeds[:1]) and np.isfinite(seeds.astype(float)).all())


PAIRED_LINE = "paired by replication across stores: they share their seeds (common random numbers)"
WELCH_LINE = ("the stores do not share their replications' seeds (common random numbers): Welch's unpaired "
              "interval instead of a paired one")


def _by_store_name(ds: xr.Dataset, paired: str | None) -> str | None:
    """``store=NAME`` where the stores are along a parameter: that store's value of it (a
    store's name always names a baseline)."""
    from .tables import parse_assignments

    dim = ds.attrs.get("across", STORE)
    if not paired or dim == STORE or parse_assignments([paired], "--paired")[0][0] != STORE:
        return paired
    name = parse_assignments([paired], "--paired")[0][1]
    names = [str(n) for n in ds[STORE].values]
    if name not in names:
        raise QueryError(f"--paired store={name}: no such store; stores: {', '.join(names)}")
    return f"{dim}={stats._plain(ds[dim].values[names.index(name)])}"


def compare(ds: xr.Dataset, metrics: list[str] | None = None, sel: Iterable[str] = (),
            paired: str | None = None, ratio: str | None = None, level: float = 0.95,
            over: str | None = None) -> tuple[xr.Dataset, str | None]:
    """The statistics ``schedsweep table`` shows of an aligned Dataset, and, for a difference
    along the stores' dimension, the line saying how it was made: paired by replication when
    the stores share their seeds, else Welch's unpaired interval (None otherwise)."""
    from .tables import compute, parse_assignments, select

    dim = ds.attrs.get("across", STORE)
    paired = _by_store_name(ds, paired)
    if not paired or parse_assignments([paired], "--paired")[0][0] != dim:
        return compute(ds, metrics, sel, paired, ratio, level, over), None
    if shares_seeds(ds):
        return compute(ds, metrics, sel, paired, ratio, level, over), PAIRED_LINE
    if over:
        raise QueryError(f"--over {over}: the stores do not share their seeds, so there are no pairs to pool; "
                         "leave out --over for Welch's interval per cell")
    if ratio:
        raise QueryError("give --paired or --ratio, not both")
    (_, base), = parse_assignments([paired], "--paired")
    result = select(welch(ds, dim, base, level, metrics), sel)
    result.attrs["replications"] = ds.attrs.get("replications")
    return result, WELCH_LINE


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
        # the baseline against itself is the same sample, not two independent ones: a difference
        # of exactly 0 (as stats.paired gives it), not a Welch interval around 0
        own = (da[dim] == baseline).values
        where = [slice(None)] * da.ndim
        where[da.dims.index(dim)] = own
        cell = tuple(w for i, w in enumerate(where) if i != axis)
        zero = np.where(np.isfinite(mean[cell]), 0.0, np.nan)
        for key in ("mean", "sd", "sem", "half_width", "ci_low", "ci_high", "relative_change"):
            result[key][cell] = zero
        result["rel_precision"][cell] = np.nan  # 0 / 0, as stats.paired gives it
        out[m] = stats._wrap(da, result)
    return xr.Dataset(out, attrs={"level": level, "paired": f"{dim}={baseline} (Welch, unpaired)",
                                  "baseline": (dim, stats._plain(baseline))})
