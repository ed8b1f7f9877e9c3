"""Published reference points: what a spec reproduces, held against our results.

A spec names what it reproduces (``reproduces = "TY Fig. 1 a,b"``) and carries the
published values that apply to it (``docs/reproduction.md``)::

    [[reference.value]]                 # a published number
    metric = "runtime"                  # one of the workload's metrics
    where = { algorithm = "min_finish" }   # coordinates: sweep dims and a metric's own dims
    value = 34.4
    source = "TY Fig. 1b"

    [[reference.claim]]                 # a published statement, checked on our means
    text = "MinRuntime is the most expensive algorithm"
    kind = "max"                        # see CLAIM_KINDS
    metric = "cost"
    along = "algorithm"                 # the dimension the claim runs along
    at = "min_runtime"                  # max/min: the coordinate that should be extreme;
                                        # peak_near: where the peak should be (± tolerance)
    where = { ... }                     # optional: the other coordinates, else every slice

Claim kinds: ``max``/``min`` (``at`` has the largest/smallest mean along ``along``),
``increasing``/``decreasing`` (means strictly monotone along ``along``), ``peak_near``
(the largest mean lies within ``tolerance`` of ``at``), ``interior_min`` (a U shape: the
smallest mean is neither at the first nor at the last value), ``ratio_at_least`` (mean at ``a``
over mean at ``b`` along ``along`` is at least ``factor``; ``factor = 2`` for "more than
100% worse"). A claim over dimensions it does not fix must hold in every slice; ``among = [...]``
restricts it to the values of ``along`` the paper compared.

``[reference] calibrated = "TEXT"`` says that every value of the spec was used to calibrate
the defaults TEXT names (and where: e.g. benchmarks/calibration.md); a value's own
``calibrated`` (a text, or false) overrides it. ``schedsweep verify`` marks such values
"calibrated on" and gives the verdict without them too: a value fitted to is no independent check.

A value may carry ``tolerance = 0.05`` (relative), and ``[reference] tolerance = 0.1`` sets
it for every value of the spec (default :data:`DEFAULT_TOLERANCE`): ``schedsweep verify``
counts a published value outside our CI but within that fraction of it as reproduced
within tolerance (pipeline/read/verify.py).

Neither key changes a spec's identity: adding references to a spec resumes its stores.
A ``--set`` override that removes a coordinate a reference names drops that reference
(:func:`drop_unmatched`), with one line saying so, instead of refusing the run.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # xarray only for the store side; a spec's reference table is parsed without it
    import xarray as xr

CLAIM_KINDS = ("max", "min", "increasing", "decreasing", "peak_near", "interior_min", "ratio_at_least")
VALUE_KEYS = {"metric", "where", "value", "source", "note", "tolerance", "calibrated"}
DEFAULT_TOLERANCE = 0.15  # relative; a published value within 15% of our mean counts as reproduced
CLAIM_KEYS = {"text", "kind", "metric", "along", "at", "where", "tolerance", "a", "b", "factor", "source", "among"}


class ReferenceError(ValueError):
    """A malformed reference table; the message names the file and the key."""


@dataclass(frozen=True)
class Value:
    metric: str
    where: dict[str, Any]
    value: float
    source: str = ""
    note: str = ""
    tolerance: float | None = None  # relative; None: the spec's (or DEFAULT_TOLERANCE)
    calibrated: str = ""  # the defaults fitted to this value ('' : an independent check)


@dataclass(frozen=True)
class Claim:
    text: str
    kind: str
    metric: str
    along: str
    where: dict[str, Any] = field(default_factory=dict)
    at: Any = None
    tolerance: float = 0.0
    a: Any = None
    b: Any = None
    factor: float = 1.0
    source: str = ""
    among: tuple = ()  # only these values of ``along`` (the ones the paper compared); empty = all


@dataclass(frozen=True)
class Reference:
    reproduces: str
    values: tuple[Value, ...]
    claims: tuple[Claim, ...]
    tolerance: float = DEFAULT_TOLERANCE  # [reference] tolerance: the default of its values

    def tolerance_of(self, value: Value) -> float:
        """The relative tolerance that applies to ``value``."""
        return self.tolerance if value.tolerance is None else value.tolerance

    def __bool__(self) -> bool:
        return bool(self.reproduces or self.values or self.claims)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def parse(doc: dict[str, Any], where: str, metrics: dict[str, tuple[str, ...]] | None = None,
          coords: dict[str, tuple] | None = None) -> Reference:
    """The reference of a parsed spec document; checked against ``metrics`` (name → its own
    dims) and ``coords`` (dimension → values) when given."""
    reproduces = doc.get("reproduces", "")
    if not isinstance(reproduces, str):
        raise ReferenceError(f"{where}: reproduces must be a string naming the figure or table")
    table = doc.get("reference", {})
    if not isinstance(table, dict):
        raise ReferenceError(f"{where}: reference must be a table ([[reference.value]], [[reference.claim]])")
    unknown = set(table) - {"value", "claim", "tolerance", "calibrated"}
    if unknown:
        raise ReferenceError(f"{where}: [reference] has unknown key(s) {sorted(unknown)}; "
                             "allowed: value, claim, tolerance, calibrated")
    tolerance = _tolerance(table.get("tolerance", DEFAULT_TOLERANCE), f"{where}: [reference] tolerance")
    calibrated = _calibrated(table.get("calibrated", ""), f"{where}: [reference] calibrated")
    values = tuple(_value(v, f"{where}: [[reference.value]] #{i + 1}", metrics, coords, calibrated)
                   for i, v in enumerate(_entries(table, "value", where)))
    claims = tuple(_claim(c, f"{where}: [[reference.claim]] #{i + 1}", metrics, coords)
                   for i, c in enumerate(_entries(table, "claim", where)))
    return Reference(reproduces, values, claims, tolerance)


def _tolerance(value: Any, where: str) -> float:
    if not _number(value) or value < 0:
        raise ReferenceError(f"{where} = {value!r} must be a number >= 0 (relative: 0.15 = 15%)")
    return float(value)


def _calibrated(value: Any, where: str) -> str:
    """``calibrated``: the text naming the defaults fitted to the value(s) and where that is
    documented, or false (an entry's own false overrides its spec's text)."""
    if value is False:
        return ""
    if not isinstance(value, str):
        raise ReferenceError(f"{where} = {value!r} must name the defaults fitted to these values and where "
                             "(e.g. \"price_exponent, random_window_retries: benchmarks/calibration.md\"), or false")
    return value


def _named(entry: dict, claim: bool) -> list[tuple[str, Any]]:
    """The (dimension, value) pairs an entry names; value None: only the dimension."""
    named = list((entry.get("where") or {}).items()) if isinstance(entry.get("where"), dict) else []
    along = entry.get("along")
    if claim and isinstance(along, str):
        named.append((along, None))
        if entry.get("kind") in ("max", "min"):
            named.append((along, entry.get("at")))
        named += [(along, entry.get(k)) for k in ("a", "b") if entry.get(k) is not None]
        among = entry.get("among")
        named += [(along, v) for v in among] if isinstance(among, list) else []
    return named


def _present(dim: str, value: Any, coords: dict[str, tuple]) -> bool:
    return dim in coords and (value is None or value in coords[dim])


def drop_unmatched(doc: dict[str, Any], coords: dict[str, tuple], before: dict[str, tuple]) -> list[str]:
    """Remove from ``doc["reference"]`` every value and claim that names a coordinate which
    ``before`` (the spec as written) has and ``coords`` (after ``--set`` overrides) lacks;
    return one short description per entry removed. A coordinate missing from both is left
    for :func:`parse` to refuse: a mistyped reference is an error, an overridden one is not."""
    table = doc.get("reference")
    if not isinstance(table, dict):
        return []
    dropped = []
    for key in ("value", "claim"):
        entries = table.get(key)
        if not isinstance(entries, list):
            continue
        kept = []
        for entry in entries:
            named = _named(entry, key == "claim") if isinstance(entry, dict) else []
            lost = [(d, v) for d, v in named if _present(d, v, before) and not _present(d, v, coords)]
            if lost:
                names = ", ".join(d if v is None else f"{d}={v}" for d, v in lost)
                dropped.append(f"value {entry.get('metric')} at {_show_where(entry.get('where') or {})}"
                               if key == "value" else f"claim {entry.get('text')!r} (names {names})")
            else:
                kept.append(entry)
        table[key] = kept
    return dropped


def from_spec_text(text: str, where: str = "<spec>") -> Reference:
    """The reference of a stored spec text (already validated when it ran)."""
    return parse(tomllib.loads(text), where)


def _entries(table: dict, key: str, where: str) -> list[dict]:
    entries = table.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ReferenceError(f"{where}: reference.{key} must be an array of tables ([[reference.{key}]])")
    return entries


def _check_keys(entry: dict, allowed: set[str], where: str) -> None:
    unknown = set(entry) - allowed
    if unknown:
        raise ReferenceError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _metric(entry: dict, where: str, metrics: dict | None) -> str:
    metric = entry.get("metric")
    if not isinstance(metric, str):
        raise ReferenceError(f"{where}: metric must be a string naming one of the workload's metrics")
    if metrics is not None and metric not in metrics:
        raise ReferenceError(f"{where}: metric = {metric!r} is not a metric of this workload; "
                             f"metrics: {', '.join(metrics)}")
    return metric


def _coordinate(dim: str, value: Any, where: str, key: str, coords: dict | None) -> None:
    if coords is None:
        return
    if dim not in coords:
        raise ReferenceError(f"{where}: {key} names {dim!r}, which is not a dimension of this sweep; "
                             f"dimensions: {', '.join(coords) or '(none)'}")
    if value not in coords[dim]:
        raise ReferenceError(f"{where}: {key} {dim} = {value!r} is not a value of that dimension; "
                             f"values: {list(coords[dim])}")


def _where(entry: dict, where: str, coords: dict | None) -> dict[str, Any]:
    sel = entry.get("where", {})
    if not isinstance(sel, dict):
        raise ReferenceError(f"{where}: where must be a table of coordinates, e.g. where = {{ algorithm = \"amp\" }}")
    for dim, value in sel.items():
        _coordinate(dim, value, where, "where", coords)
    return dict(sel)


def _value(entry: dict, where: str, metrics: dict | None, coords: dict | None, calibrated: str = "") -> Value:
    _check_keys(entry, VALUE_KEYS, where)
    metric = _metric(entry, where, metrics)
    value = entry.get("value")
    if not _number(value):
        raise ReferenceError(f"{where}: value = {value!r} must be a finite number (the published value)")
    sel = _where(entry, where, coords)
    tol = _tolerance(entry["tolerance"], f"{where}: tolerance") if "tolerance" in entry else None
    cal = _calibrated(entry["calibrated"], f"{where}: calibrated") if "calibrated" in entry else calibrated
    return Value(metric, sel, float(value), str(entry.get("source", "")), str(entry.get("note", "")), tol, cal)


def _claim(entry: dict, where: str, metrics: dict | None, coords: dict | None) -> Claim:
    _check_keys(entry, CLAIM_KEYS, where)
    text = entry.get("text")
    if not isinstance(text, str) or not text:
        raise ReferenceError(f"{where}: text must state the published claim")
    kind = entry.get("kind")
    if kind not in CLAIM_KINDS:
        raise ReferenceError(f"{where}: kind = {kind!r}; allowed: {', '.join(CLAIM_KINDS)}")
    metric = _metric(entry, where, metrics)
    along = entry.get("along")
    if not isinstance(along, str):
        raise ReferenceError(f"{where}: along must name the dimension the claim runs along")
    if coords is not None and along not in coords:
        raise ReferenceError(f"{where}: along = {along!r} is not a dimension of this sweep; "
                             f"dimensions: {', '.join(coords) or '(none)'}")
    sel = _where(entry, where, coords)
    if along in sel:
        raise ReferenceError(f"{where}: where fixes {along!r}, the dimension the claim runs along")
    at = entry.get("at")
    if kind in ("max", "min", "peak_near"):
        if at is None:
            raise ReferenceError(f"{where}: kind = {kind!r} needs at = the coordinate of the extreme")
        if kind != "peak_near":
            _coordinate(along, at, where, "at:", coords)
        elif not _number(at):
            raise ReferenceError(f"{where}: peak_near needs a number at, got {at!r}")
    tolerance = entry.get("tolerance", 0.0)
    if not _number(tolerance) or tolerance < 0:
        raise ReferenceError(f"{where}: tolerance = {tolerance!r} must be a number >= 0")
    a, b, factor = entry.get("a"), entry.get("b"), entry.get("factor", 1.0)
    if kind == "ratio_at_least":
        if a is None or b is None:
            raise ReferenceError(f"{where}: ratio_at_least needs a and b, two values of {along!r}")
        _coordinate(along, a, where, "a:", coords)
        _coordinate(along, b, where, "b:", coords)
        if not _number(factor) or factor <= 0:
            raise ReferenceError(f"{where}: factor = {factor!r} must be a number > 0")
    among = entry.get("among", [])
    if not isinstance(among, list):
        raise ReferenceError(f"{where}: among must be a list of values of {along!r}")
    for value in among:
        _coordinate(along, value, where, "among:", coords)
    return Claim(text, kind, metric, along, sel, at, float(tolerance), a, b, float(factor),
                 str(entry.get("source", "")), tuple(among))


# -- held against a store ----------------------------------------------------------------------
def value_rows(ref: Reference, stats: xr.Dataset) -> list[dict[str, Any]]:
    """Per published value: our mean, CI, relative difference and whether the CI holds it."""
    rows = []
    for v in ref.values:
        da = stats[v.metric].sel(v.where) if v.metric in stats else None
        if da is None or set(da.dims) - {"stat"}:
            mean = half = low = high = float("nan")  # the store lacks the cell, or the selection is not one cell
        else:
            mean, half = float(da.sel(stat="mean")), float(da.sel(stat="half_width"))
            low, high = float(da.sel(stat="ci_low")), float(da.sel(stat="ci_high"))
        rel = (mean - v.value) / abs(v.value) if v.value else float("nan")
        rows.append({"source": v.source, "where": _show_where(v.where), "metric": v.metric,
                     "published": v.value, "ours": mean, "half_width": half,
                     "relative": rel, "inside_ci": bool(low <= v.value <= high) if math.isfinite(mean) else None})
    return rows


def _show_where(sel: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sel.items()) or "(all)"


def claim_rows(ref: Reference, stats: xr.Dataset) -> list[dict[str, Any]]:
    """Per claim: whether it holds on our means, and the means it was judged on."""
    return [{"text": c.text, "source": c.source, **check_claim(c, stats[c.metric].sel(stat="mean"))}
            for c in ref.claims if c.metric in stats]


def check_claim(claim: Claim, means: xr.DataArray) -> dict[str, Any]:
    """{"holds": bool | None, "ours": text of the means along the claim's dimension}."""
    da = means.sel(claim.where)  # a dict: a dimension may be called "method"
    if claim.among:
        da = da.sel({claim.along: list(claim.among)})
    others = [d for d in da.dims if d != claim.along]
    slices = [da] if not others else [da.isel(dict(zip(others, idx)))
                                       for idx in np.ndindex(*(da.sizes[d] for d in others))]
    verdicts, shown = [], []
    for s in slices:
        xs = list(s[claim.along].values)
        ys = np.asarray(s.values, dtype=float)
        label = ", ".join(f"{d}={s[d].item()}" for d in others)
        shown.append((f"[{label}] " if label else "") + ", ".join(f"{_plain(x)}: {y:.4g}" for x, y in zip(xs, ys)))
        verdicts.append(_verdict(claim, [_plain(x) for x in xs], ys))
    holds = None if any(v is None for v in verdicts) else all(verdicts)
    return {"holds": holds, "ours": "; ".join(shown)}


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _verdict(claim: Claim, xs: list, ys: np.ndarray) -> bool | None:
    if claim.kind == "ratio_at_least":   # only the two compared values need results
        ya, yb = ys[xs.index(claim.a)], ys[xs.index(claim.b)]
        return None if not (np.isfinite(ya) and np.isfinite(yb)) else bool(yb != 0 and ya / yb >= claim.factor)
    if not np.isfinite(ys).all():
        return None  # a cell without results: cannot judge
    if claim.kind in ("max", "min"):
        i = xs.index(claim.at)
        return bool(ys[i] == (ys.max() if claim.kind == "max" else ys.min()))
    if claim.kind == "increasing":
        return bool((np.diff(ys) > 0).all())
    if claim.kind == "decreasing":
        return bool((np.diff(ys) < 0).all())
    if claim.kind == "interior_min":
        return bool(0 < int(np.argmin(ys)) < len(ys) - 1)
    if claim.kind == "peak_near":
        return bool(abs(float(xs[int(np.argmax(ys))]) - float(claim.at)) <= claim.tolerance)
    raise AssertionError(f"claim kind {claim.kind!r} has no verdict")


def _relative(x: float) -> str:
    return "n/a (published 0)" if not math.isfinite(x) else f"{x:+.1%}"


def render_text(ref: Reference, stats: xr.Dataset) -> str:
    """The published values and claims beside our results, as plain text."""
    out = []
    if ref.reproduces:
        out.append(f"Reproduces: {ref.reproduces}")
    rows = value_rows(ref, stats)
    if rows:
        out.append("Published values (ours: mean ± CI half-width; relative difference; published value inside our CI?)")
        for r in rows:
            inside = {True: "inside CI", False: "outside CI", None: "no result"}[r["inside_ci"]]
            out.append(f"  {r['metric']:<16} {r['where']:<32} published {r['published']:<10.6g} "
                       f"ours {r['ours']:.4g} ± {r['half_width']:.2g}  {_relative(r['relative'])}  {inside}"
                       + (f"  [{r['source']}]" if r["source"] else ""))
    claims = claim_rows(ref, stats)
    if claims:
        out.append("Published claims (checked on our means)")
        for c in claims:
            verdict = {True: "holds", False: "DOES NOT HOLD", None: "cannot judge"}[c["holds"]]
            out.append(f"  {verdict:<13} {c['text']}" + (f"  [{c['source']}]" if c["source"] else ""))
            out.append(f"                ours: {c['ours']}")
    return "\n".join(out)


def label_files(doc: dict[str, Any], files: dict[str, dict[str, Any]]) -> None:
    """Name a file in each reference point (its ``where``, a claim's ``at``, ``a``, ``b`` and
    ``among``) by its label, as the store does:
    ``files`` is {label: {"written": [values as written]}} (a store's ``files`` attribute)."""
    import os

    by_written = {os.path.normpath(w): label for label, f in files.items() for w in (f or {}).get("written", [])}
    if not by_written:
        return

    def label(v: Any) -> Any:
        return by_written.get(os.path.normpath(v), v) if isinstance(v, str) and v else v

    table = doc.get("reference")
    for kind in ("value", "claim"):
        entries = table.get(kind, []) if isinstance(table, dict) else []
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("where"), dict):
                entry["where"] = {k: label(v) for k, v in entry["where"].items()}
            for key in ("at", "a", "b"):  # a claim's values along its dimension
                if key in entry:
                    entry[key] = label(entry[key])
            if isinstance(entry.get("among"), list):
                entry["among"] = [label(v) for v in entry["among"]]


def of_store(ds: xr.Dataset) -> Reference:
    """The reference of the spec a store was made from (empty if it has none)."""
    text = ds.attrs.get("spec_text", "")
    try:
        if not text:
            return Reference("", (), ())
        doc = tomllib.loads(text)
        label_files(doc, ds.attrs.get("files") or {})
        # the points the store lacks (an override removed them; a merged store's parts ran the rest)
        # are dropped, as the run (or merge) recorded in reference_dropped
        drop_unmatched(doc, store_coords(ds), spec_coords(doc))
        return parse(doc, "<store>")
    except (tomllib.TOMLDecodeError, ReferenceError):
        return Reference("", (), ())


def store_coords(ds: xr.Dataset) -> dict[str, tuple]:
    """Every one-dimensional coordinate of a store with its values."""
    return {str(k): tuple(_plain(v) for v in c.values) for k, c in ds.coords.items() if c.ndim == 1}


def spec_coords(doc: dict[str, Any], metric_dims: dict[str, tuple] | None = None) -> dict[str, tuple]:
    """The coordinates a spec document, as written, sweeps ([sweep], [[zip]], [sample]), plus
    ``metric_dims`` (a metric's own dimensions, e.g. per class)."""
    coords: dict[str, tuple] = dict(metric_dims or {})
    sweep = doc.get("sweep")
    groups = [sweep] if isinstance(sweep, dict) else []
    groups += [z for z in doc.get("zip", []) if isinstance(z, dict)] if isinstance(doc.get("zip"), list) else []
    for group in groups:
        coords.update({k: tuple(v) for k, v in group.items() if isinstance(v, list)})
    sample = doc.get("sample")
    if isinstance(sample, dict) and isinstance(sample.get("n"), int):
        coords["sample"] = tuple(range(sample["n"]))
    return coords


def store_section(ds: xr.Dataset, level: float = 0.95) -> str:
    """Text of the store's published values and claims beside its results ('' if none)."""
    from ..base import stats

    ref = of_store(ds)
    if not (ref.values or ref.claims or ref.reproduces):
        return ""
    metrics = sorted({v.metric for v in ref.values} | {c.metric for c in ref.claims})
    return render_text(ref, stats.describe(ds, level, [m for m in metrics if m in ds]))
