"""CF-style attributes, so that any tool reads a store without our code.

Every variable and coordinate gets ``long_name`` and ``units``: UDUNITS strings where the
unit is physical (``s``, ``us``, ``percent``, ``1`` for counts and fractions, with the
counted thing in ``counted``); a model's own time and money units, which are not physical,
are ``model_time_unit`` and ``money_unit``, and the dataset says what they are for the
workload (``model_time_unit``, ``money_unit`` attributes). ``status`` and ``reason`` carry
``flag_values``/``flag_meanings``. Nested provenance (dicts, lists of dicts) is kept as
JSON text under the same name, so ``ds.to_netcdf()`` works; :func:`decode_attrs` turns it
back into Python values (``pipeline.open_store`` does).
"""
from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import numpy as np

# What a model time unit is, per workload (our reading of each model; the sources give none).
MODEL_TIME = {
    "mm1": "model time unit: the mean service time is 1/service_rate of them",
    "slot_selection": "model time unit of the slot environment (the scheduling interval is `interval` of them)",
    "cyclic": "model time unit of the slot environment (a cycle's interval is `interval` of them)",
    "desktop_grid": "model time unit: arrival and service rates are per this unit",
    "ga": "model time unit of the job flow (periods, runtimes)",
    "cluster": "second (SWF traces and Lublin-Feitelson flows are in seconds)",
}
MONEY = "money unit of the model's node prices (price per model time unit times length)"

_PHYSICAL = {"s": "s", "us": "us", "%": "percent", "%^2": "percent^2", "s^2": "s^2", "1": "1", "": "1"}
_RATES = {"events/s": ("s-1", "events"), "jobs/s": ("s-1", "jobs")}


def units(unit: str, workload: str) -> dict[str, str]:
    """``units`` (and ``counted`` for counts) of a metric declared with ``unit``."""
    if unit in _PHYSICAL:
        return {"units": _PHYSICAL[unit]}
    if unit in _RATES:
        u, counted = _RATES[unit]
        return {"units": u, "counted": counted}
    if unit == "time":
        return {"units": "s" if workload == "cluster" else "model_time_unit"}
    if unit == "money":
        return {"units": "money_unit"}
    if unit == "money/time":
        return {"units": "money_unit/model_time_unit"}
    return {"units": "1", "counted": unit}  # jobs, events, windows, generations, ...


def variable_attrs(module: ModuleType, workload: str, dims: list[str]) -> dict[str, dict[str, Any]]:
    """Attributes of every variable and coordinate of a new store."""
    out: dict[str, dict[str, Any]] = {}
    for m in module.METRICS:
        out[m.name] = {"long_name": m.description, **units(m.unit, workload), "timing": int(m.timing)}
    out["status"] = {"long_name": "status of the replication", "units": "1",
                     "flag_values": np.array([0, 1, 2, 3], np.int8),
                     "flag_meanings": "not_run ok no_result failed"}
    codes = sorted(int(k) for k in module.REASONS)
    meanings = ["none" if code == 0 else _token(module.REASONS[code][0]) for code in codes]
    if 0 not in codes:
        codes, meanings = [0] + codes, ["none"] + meanings
    out["reason"] = {"long_name": "the workload's reason for no result (0: none)", "units": "1",
                     "flag_values": np.array(codes, np.int8), "flag_meanings": " ".join(meanings)}
    out["seed"] = {"long_name": "seed handed to the workload for this replication", "units": "1"}
    out["cell_seconds"] = {"long_name": "task wall time spent on the cell", "units": "s", "timing": 1}
    out["replication"] = {"long_name": "replication index (its seed: SeedSequence(seed, spawn_key=(r, ...)))",
                          "units": "1"}
    params = {p.name: p for p in module.PARAMS}
    for name in dims:
        p = params.get(name)
        out.setdefault(name, {"long_name": p.description if p else f"sweep dimension {name}", "units": "1"})
    for m in module.METRICS:
        for extra, _ in m.dims:
            out.setdefault(extra, {"long_name": f"{extra} of the metrics that have one", "units": "1"})
    return out


def _token(label: str) -> str:
    return "_".join(str(label).split()) or "unnamed"


def dataset_attrs(workload: str) -> dict[str, str]:
    base = workload.split(".")[-1] if workload not in MODEL_TIME else workload
    return {"Conventions": "CF-1.10",
            "model_time_unit": MODEL_TIME.get(base, "model time unit of the workload (see its documentation)"),
            "money_unit": MONEY}


JSON_PREFIX = "json:"


def encode_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """Dicts, lists, booleans and None as JSON text, so netCDF can store them and they read
    back as they were (netCDF has no nested values and turns a one-element list into a scalar)."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, (dict, list, tuple, bool)) or v is None:
            out[k] = JSON_PREFIX + json.dumps(v, default=str)
        else:
            out[k] = v
    return out


def decode_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`encode_attrs`."""
    return {k: json.loads(v[len(JSON_PREFIX):]) if isinstance(v, str) and v.startswith(JSON_PREFIX) else v
            for k, v in attrs.items()}


def display_unit(attrs: dict[str, Any]) -> str:
    """A short unit for axis labels and table headings: 'time', 'money', 'jobs', 's', ''."""
    if "counted" in attrs:
        return f"{attrs['counted']}/s" if attrs.get("units") == "s-1" else str(attrs["counted"])
    u = str(attrs.get("units", ""))
    return {"model_time_unit": "time", "money_unit": "money", "money_unit/model_time_unit": "money/time",
            "1": "", "percent": "%", "percent^2": "%^2"}.get(u, u)


# Our units that UDUNITS cannot parse: in a netCDF export they become ``units = "1"`` (a
# number of those units) and the unit itself goes to ``model_units`` (the dataset's
# ``model_time_unit``/``money_unit`` attributes say what it is for the workload).
MODEL_UNITS = frozenset({"model_time_unit", "money_unit", "money_unit/model_time_unit"})
LABEL_SUFFIX = "_label"   # a string-valued coordinate becomes an auxiliary coordinate <dim>_label


def for_netcdf(ds: Any, history: str) -> tuple[Any, dict[str, dict[str, Any]]]:
    """``ds`` (as ``pipeline.open_store`` gives it) made CF-1.10 clean for ``to_netcdf``, and its encoding.

    Attributes as netCDF can hold them (:func:`encode_attrs`), a ``title``, ``history``
    (the store's creation, then ``history``, one line each, ISO times), ``flag_values`` in
    the flagged variable's dtype, UDUNITS-parseable ``units`` (:data:`MODEL_UNITS`), no
    ``_FillValue`` on coordinates, and string-valued dimension coordinates (CF 6.1 "labels")
    turned into auxiliary coordinates named ``<dim>_label``.
    """
    out = ds.copy()
    attrs = dict(ds.attrs)
    dims = attrs.get("dims", [])
    cells = int(np.prod([ds.sizes[d] for d in dims])) if dims else 1
    attrs.setdefault("title", f"schedsweep sweep {attrs.get('name', '')!r} of workload {attrs.get('workload', '')!r}: "
                              f"{cells} cells x {ds.sizes.get('replication', 0)} replications")
    lines = [f"{attrs['created']} schedsweep run (spec {attrs.get('name', '')!r})"] if attrs.get("created") else []
    attrs["history"] = "\n".join([*lines, history])
    out.attrs = encode_attrs(attrs)
    for name in out.variables:
        var_attrs = dict(out[name].attrs)
        if "flag_values" in var_attrs:
            var_attrs["flag_values"] = np.asarray(var_attrs["flag_values"]).astype(out[name].dtype)
        if var_attrs.get("units") in MODEL_UNITS:
            var_attrs["model_units"], var_attrs["units"] = var_attrs["units"], "1"
        out[name].attrs = var_attrs
    labels = {d: f"{d}{LABEL_SUFFIX}" for d in out.dims if d in out.coords and out[d].dtype.kind in "OUST"}
    out = out.rename_vars(labels)
    encoding = {name: {"_FillValue": None} for name in out.coords}   # CF 2.5.1: no missing coordinates
    return out, encoding
