"""Stores out to other tools, and stores merged.

``export``: netCDF (the whole dataset, provenance as JSON text), or a long table for
pandas, R or a spreadsheet: one row per cell, replication and metric (and a metric's own
dimension), with the sweep coordinates, ``status``, ``reason`` and ``seed`` as columns.

``merge``: stores of the same spec but for the values of one sweep dimension (two halves
of a sweep run apart, on two clusters) into one store that ``show``, ``table`` and
``report`` read as if it had run at once; both specs and provenances are kept
(``merged_from``). Along a dimension with common random numbers the result equals a run
of the whole sweep bit for bit; along an ``independent`` dimension each part keeps the
seeds it ran with, so the merged store is not resumable.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from . import zarrstore as store_mod
from .integrity import open_store as open_verified
from ..base.conventions import encode_attrs, for_netcdf
from ..base.stats import metric_names

FORMATS = ("netcdf", "parquet", "csv")
SUFFIX = {"netcdf": ".nc", "parquet": ".parquet", "csv": ".csv"}


class MergeError(store_mod.StoreError):
    """Stores that cannot be merged; the message names what differs."""


def long_table(ds: xr.Dataset) -> pd.DataFrame:
    """One row per cell, replication and metric value (long format)."""
    frames = []
    for metric in metric_names(ds):
        df = ds[[metric, "status", "reason"]].to_dataframe().reset_index().rename(columns={metric: "value"})
        df.insert(0, "metric", metric)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    seed = ds["seed"].to_dataframe().reset_index()
    return out.merge(seed, on=list(ds["seed"].dims), how="left")


def export(path: str | Path, fmt: str, output: str | Path | None = None) -> Path:
    """Write the store at ``path`` as ``fmt`` (netcdf, parquet, csv); returns the file."""
    if fmt not in FORMATS:
        raise store_mod.StoreError(f"--to {fmt!r}: one of {', '.join(FORMATS)}")
    path = Path(path)
    out = Path(output) if output else path.with_suffix(SUFFIX[fmt])
    if out.exists():
        raise store_mod.StoreError(f"{out} exists; give another -o (nothing is overwritten)")
    ds = open_verified(path)
    if fmt == "netcdf":
        _write_netcdf(ds, path, out)
        return out
    table = with_origin(long_table(ds), ds, path.name)
    if fmt == "csv":
        table.to_csv(out, index=False)
    else:
        write_parquet(table, out, provenance_of(ds, path.name))
    return out


# -- where each row comes from ------------------------------------------------------------
ORIGIN = ("store", "spec", "workload", "unit")  # the first columns of every exported row
PROVENANCE_KEYS = ("name", "workload", "schedsweep_version", "spec_identity", "spec_text", "overrides",
                   "reference_dropped", "git_commit", "git_dirty", "host", "created", "last_run_ended",
                   "store_format", "replications", "seed", "model_time_unit", "money_unit", "merged_from")


def with_origin(table: pd.DataFrame, ds: xr.Dataset, store: str) -> pd.DataFrame:
    """``table`` (:func:`long_table`) with the columns ``store`` (its name as given: rows of
    several stores stay apart), ``spec``, ``workload`` and ``unit`` (each metric's CF units, so
    that same-named metrics of two models in different units do not mix) first."""
    units = {m: str(ds[m].attrs.get("units", "")) for m in metric_names(ds)}
    out = table.copy()
    origin = {"store": store, "spec": str(ds.attrs.get("name", "")), "workload": str(ds.attrs.get("workload", "")),
              "unit": out["metric"].map(units).astype(str)}
    for k, name in enumerate(ORIGIN):
        out.insert(k, name, origin[name])
    return out


def provenance_of(ds: xr.Dataset, store: str) -> dict[str, str]:
    """The parquet key-value metadata of an export: ``schedsweep`` holds, as JSON, the store's
    name, its provenance (spec, versions, code hash, dates) and every metric's units."""
    keep = {k: ds.attrs[k] for k in PROVENANCE_KEYS if k in ds.attrs}
    code = ds.attrs.get("code")
    keep["code_hash"] = code.get("hash") if isinstance(code, dict) else None
    keep["versions"] = ds.attrs.get("versions")
    keep["units"] = {m: str(ds[m].attrs.get("units", "")) for m in metric_names(ds)}
    return {"schedsweep": json.dumps({"store": store, **keep}, default=str)}


def write_parquet(table: pd.DataFrame, out: Path, metadata: dict[str, str]) -> None:
    """``table`` as parquet with ``metadata`` added to the file's key-value metadata."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise store_mod.StoreError("--to parquet needs the optional 'parquet' extra (pyarrow): "
                                   "pip install 'schedsweep[parquet]', or --to csv") from None
    import pyarrow as pa

    arrow = pa.Table.from_pandas(table, preserve_index=False)
    merged = {**(arrow.schema.metadata or {}), **{k.encode(): v.encode() for k, v in metadata.items()}}
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow.replace_schema_metadata(merged), out)


def _write_netcdf(ds: xr.Dataset, path: Path, out: Path) -> None:
    """The store as CF-1.10 netCDF (:func:`conventions.for_netcdf`), with the failure records of
    the replications still failed as the group ``failures`` (none: no group)."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    plain, encoding = for_netcdf(ds, f"{now} schedsweep export {path.name} --to netcdf")
    plain.to_netcdf(out, encoding=encoding)
    failures = failures_dataset(store_mod.read_failures(path), list(ds.attrs.get("dims", [])))
    if failures is not None:
        failures.to_netcdf(out, mode="a", group=store_mod.FAILURES_GROUP)


def failures_dataset(records: list[dict[str, Any]], dims: list[str]) -> xr.Dataset | None:
    """Failure records as a table along dimension ``failure``: the cell's sweep values, the
    replication, its seed, the kind of failure and the whole record as JSON text."""
    if not records:
        return None
    columns: dict[str, tuple[list[Any], str]] = {
        **{d: ([r["cell"][d] for r in records], f"{d} of the failed replication's cell") for d in dims},
        "replication": ([r["replication"] for r in records], "replication index"),
        "seed": ([np.uint64(r["seed"]) for r in records], "seed of the failed replication"),
        "kind": ([str(r["kind"]) for r in records], "kind of failure (error, crashed, timeout, ...)"),
        "record": ([json.dumps(r, default=str) for r in records], "the failure record (JSON text, with traceback)"),
    }
    out = xr.Dataset({name: ("failure", np.asarray(values)) for name, (values, _) in columns.items()})
    for name, (_, meaning) in columns.items():
        out[name].attrs = {"long_name": meaning, **({"units": "1"} if out[name].dtype.kind in "iuf" else {})}
    out.attrs = {"title": "failed replications of the sweep (schedsweep show STORE --failures)"}
    return out


def _identity(ds: xr.Dataset) -> dict[str, Any]:
    return json.loads(ds.attrs.get("spec_identity", "{}"))


def _value_order(parts: list[np.ndarray]) -> np.ndarray:
    """The order of the joined values of one sweep dimension: by value when every store lists
    numbers ascending (or every one descending), so that stores of [25, 100] and [50] make
    [25, 50, 100] and a trend or U-shape is judged along the axis as a spec would list it;
    otherwise the stores' order, one after the other (names, or an order a spec chose)."""
    joined = np.concatenate(parts)
    n = np.arange(len(joined))
    if not all(np.issubdtype(p.dtype, np.number) and not np.issubdtype(p.dtype, np.bool_) for p in parts):
        return n
    if all(np.all(np.diff(p) > 0) for p in parts):
        return np.argsort(joined, kind="stable")
    if all(np.all(np.diff(p) < 0) for p in parts):
        return np.argsort(-joined, kind="stable")
    return n


def _merged_files(datasets: list[xr.Dataset], labels: list[str]) -> dict[str, Any]:
    """The stores' ``files`` (label: sha256 and values as written) joined; one label with two
    contents is refused in one line naming both hashes."""
    out: dict[str, Any] = {}
    for d, label in zip(datasets, labels):
        for name, f in (d.attrs.get("files") or {}).items():
            known = out.setdefault(name, {"sha256": f.get("sha256"), "written": [], "store": label})
            if known["sha256"] != f.get("sha256"):
                raise MergeError(f"{label}: the file labelled {name!r} has sha256 {f.get('sha256')}, in "
                                 f"{known['store']} {known['sha256']}; the stores ran on different files")
            known["written"] += [w for w in f.get("written", []) if w not in known["written"]]
    return {name: {"sha256": f["sha256"], "written": f["written"]} for name, f in sorted(out.items())}


def combine(datasets: list[xr.Dataset], labels: list[str]) -> xr.Dataset:
    """The datasets joined along the one sweep dimension whose values differ (in memory)."""
    if len(datasets) < 2:
        return datasets[0]
    first = datasets[0]
    ids = [_identity(d) for d in datasets]
    for d, ident, label in zip(datasets[1:], ids[1:], labels[1:]):
        if d.attrs.get("workload") != first.attrs.get("workload"):
            raise MergeError(f"{label}: workload {d.attrs.get('workload')!r}, not {first.attrs.get('workload')!r}")
        differ = sorted(k for k in set(ids[0]) | set(ident) if k != "dims" and ids[0].get(k) != ident.get(k))
        if differ:
            raise MergeError(f"{label} differs from {labels[0]} in {', '.join(differ)}; only the values of one "
                             "sweep dimension may differ")
        if [x[0] for x in ident["dims"]] != [x[0] for x in ids[0]["dims"]]:
            raise MergeError(f"{label} has sweep dimensions {[x[0] for x in ident['dims']]}, "
                             f"not {[x[0] for x in ids[0]['dims']]}")
    files = _merged_files(datasets, labels)  # a fixed trace of one label must be one file in every store
    varying = {name for k, (name, _) in enumerate(ids[0]["dims"])
               if any(i["dims"][k][1] != ids[0]["dims"][k][1] for i in ids[1:])}
    if len(varying) != 1:
        raise MergeError(f"{' and '.join(labels)}: the stores must differ along exactly one sweep dimension; "
                         f"they differ along {sorted(varying) or 'none'}")
    dim = varying.pop()
    seen: set = set()
    for d, label in zip(datasets, labels):
        values = set(np.asarray(d[dim].values).tolist())
        if values & seen:
            raise MergeError(f"{label}: {dim} values {sorted(values & seen)} are in another store too")
        seen |= values
    with_dim = [v for v in first.data_vars if dim in first[v].dims]
    merged = xr.concat([d[with_dim] for d in datasets], dim=dim, coords="minimal", compat="override",
                       join="exact")
    order = _value_order([np.asarray(d[dim].values) for d in datasets])
    merged = merged.isel({dim: order})
    for v in first.data_vars:
        if v in with_dim:
            continue
        for d, label in zip(datasets[1:], labels[1:]):
            if not first[v].equals(d[v]):
                raise MergeError(f"{label}: {v} differs from {labels[0]}'s and has no {dim!r} dimension")
        merged[v] = first[v]
    attrs = dict(first.attrs)
    attrs["files"] = files
    members = {name: m for name, m in ids[0]["dims"]}
    merged_members = {m: [sum((i["dims"][[x[0] for x in i["dims"]].index(dim)][1][m] for i in ids), [])[k]
                          for k in order]
                      for m in members[dim]}
    identity = dict(ids[0])
    identity["dims"] = [[n, merged_members if n == dim else m] for n, m in ids[0]["dims"]]
    resumable = dim not in attrs.get("independent", [])
    attrs["spec_identity"] = json.dumps(identity, sort_keys=True, default=str) if resumable else \
        "merged along an independent dimension: not resumable"
    attrs["merged_from"] = [{"store": Path(label).name, "spec_text": d.attrs.get("spec_text"),
                             "created": d.attrs.get("created"), "host": d.attrs.get("host"),
                             "git_commit": d.attrs.get("git_commit"), "code": d.attrs.get("code", {}).get("hash")}
                            for d, label in zip(datasets, labels)]
    axis = [x[0] for x in ids[0]["dims"]].index(dim)
    attrs["batch_reps"] = np.take(np.concatenate([np.asarray(d.attrs["batch_reps"]) for d in datasets], axis=axis),
                                  order, axis=axis).tolist() \
        if all("batch_reps" in d.attrs for d in datasets) else attrs.get("batch_reps")
    attrs.pop("pilot_seconds_per_rep", None)
    if any("deterministic" in d.attrs for d in datasets):  # the cells run once, in the merged order
        attrs["deterministic"] = _merged_flags(datasets, axis, order)
    attrs.pop("status_counts", None)  # the first part's: the merged store's are read from its status
    attrs.pop("pending_results", None)  # a reader's count of a part's journal, not the merged store's
    merged.attrs = attrs
    _merged_references(merged, datasets)
    for name in merged.variables:
        src = first[name] if name in first.variables else None
        if src is not None:
            merged[name].attrs = dict(src.attrs)
    return merged[[v for v in first.data_vars]]


def _merged_flags(datasets: list[xr.Dataset], axis: int, order: np.ndarray) -> list:
    """The ``deterministic`` cell flags of stores merged along ``axis`` (a store without them: none)."""
    flags = [np.asarray(d.attrs["deterministic"], bool) if "deterministic" in d.attrs else
             np.zeros(tuple(d.sizes[n] for n in d.attrs.get("dims", [])), bool) for d in datasets]
    return np.take(np.concatenate(flags, axis=axis), order, axis=axis).tolist()


def _merged_references(merged: xr.Dataset, datasets: list[xr.Dataset]) -> None:
    """The overrides and dropped references of a merged store, as ``show``, ``table`` and
    ``verify`` read them: each part's own in ``merged_from``; ``overrides`` those every part
    shares (the others chose each part's values of the merged dimension); ``reference_dropped``
    the references whose coordinates the merged store lacks (a point one part dropped and
    another ran is judged)."""
    import tomllib

    from ..spec.reference import drop_unmatched, spec_coords, store_coords

    for entry, d in zip(merged.attrs["merged_from"], datasets):
        entry["overrides"] = list(d.attrs.get("overrides") or [])
        entry["reference_dropped"] = list(d.attrs.get("reference_dropped") or [])
    parts = [entry["overrides"] for entry in merged.attrs["merged_from"]]
    merged.attrs["overrides"] = [o for o in parts[0] if all(o in p for p in parts[1:])]
    try:
        doc = tomllib.loads(merged.attrs.get("spec_text") or "")
    except tomllib.TOMLDecodeError:
        return
    merged.attrs["reference_dropped"] = drop_unmatched(doc, store_coords(merged), spec_coords(doc))


def merge(paths: list[str | Path], output: str | Path) -> Path:
    """Merge stores into a new store at ``output`` (refused if anything is there)."""
    output = Path(output)
    if os.path.lexists(output):
        raise store_mod.StoreError(f"{output} exists; give a new -o (nothing is overwritten)")
    datasets = [open_verified(p).load() for p in paths]
    merged = combine(datasets, [str(p) for p in paths])
    if merged.attrs.get("spec_path_from") == "store" and merged.attrs.get("spec_path"):
        # named from the first store's folder: now from the merged store's
        spec_file = Path(os.path.normpath(Path(paths[0]).parent / merged.attrs["spec_path"]))
        if spec_file.exists():
            merged.attrs.update(store_mod.spec_path_attrs(str(spec_file), output))
    merged.attrs = encode_attrs(merged.attrs)
    for v in merged.variables:
        merged[v].encoding = {}
    chunk = int(datasets[0].attrs.get("chunk", datasets[0].sizes["replication"]))
    merged.attrs["store_format"] = store_mod.STORE_FORMAT  # written below as a store of today's format
    encoding = store_mod.result_encoding(merged, chunk)
    real = output.resolve()
    build = real.parent / f".{real.name}{store_mod.BUILD_TAG}{os.getpid()}"
    real.parent.mkdir(parents=True, exist_ok=True)
    merged.to_zarr(build, mode="w-", zarr_format=3, consolidated=False, encoding=encoding)
    store_mod.settle_presence(build)  # chunks present where replications ran, as the check expects
    records = [r for p in paths for r in store_mod.read_failures(p, current=False)]
    if records:
        store_mod.append_failures(store_mod.open_group(build, "r+"), records)
    store_mod.consolidate(build)
    os.rename(build, real)
    return output


def open_store(path: str | Path | list | tuple, verify: bool = True) -> xr.Dataset:
    """The store at ``path`` as an xarray Dataset (lazy), every chunk verified unless
    ``verify`` is False; several paths: the stores combined along the one sweep dimension
    they differ in (:func:`open_stores`)."""
    if isinstance(path, (list, tuple)):
        return open_stores(list(path))
    return open_verified(path, verify=verify)


def open_stores(paths: list[str | Path]) -> xr.Dataset:
    """Several stores as one Dataset, combined as :func:`merge` would (in memory)."""
    return combine([open_verified(p) for p in paths], [str(p) for p in paths])
