"""Sweep specs: read a TOML file, check it against the workload's declarations, expand cells.

Every error is a :class:`SpecError` whose message names the file, the key, the value and
what is allowed; nothing runs before a spec has passed here.
"""
from __future__ import annotations

import contextvars
import copy
import hashlib
import itertools
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

import numpy as np

from schedsweep import workloads
from schedsweep.workloads._contract import Param, is_plugin_path, params_by_name
from . import traces
from ..base.errors import SpecError  # noqa: F401  (re-exported: raised and caught under this name)

TOP_KEYS = {
    "name": "the sweep's name (default store name)",
    "workload": "a workload name (schedsweep workloads)",
    "description": "free text: what the sweep reproduces",
    "replications": "a positive integer, or \"auto\" (with precision, precision_metric, max_replications)",
    "precision": "replications = \"auto\": target relative CI half-width of precision_metric, in (0, 1)",
    "precision_metric": "replications = \"auto\": the metric whose precision decides",
    "max_replications": "replications = \"auto\": at most this many per cell (the store's size)",
    "min_replications": "replications = \"auto\": the first wave (default 10)",
    "look_ahead": "replications = \"auto\": replications the target must hold over (default 5; 5% beyond 100)",
    "seed": "a non-negative integer below 2**63, the root seed",
    "independent": "a list of sweep dimensions with independent random streams",
    "params": "table of fixed parameter values",
    "sweep": "table of parameter lists, crossed",
    "zip": "array of tables of parameter lists varied together",
    "run": "table of execution hints",
    "sample": "table: method (lhs, sobol, halton, random), n, seed, and per parameter { low, high, log }",
    "reproduces": "the figure or table of the source paper this sweep reproduces",
    "reference": "published values and claims to hold the results against (pipeline/spec/reference.py)",
    "record": "table: replications = [..] and where = { dim = value } whose per-job records the store keeps",
}
RUN_KEYS = {
    "batch_seconds": ("float", "target wall time of one task, a finite number of seconds > 0"),
    "batch_size": ("int", "replications per task (skips the pilot), an integer in [1, 10000000]"),
    "task_timeout": ("float", "seconds a task may run before it is killed and its replications are "
                              "retried one by one, a finite number > 0 (default: from the pilot)"),
    "next": ("str", "the command suggested after a run, a one-line string; {store} stands for the store's path"),
}


#: Sane upper bounds: beyond them a sweep would not fit in memory or a lifetime, and the
#: user gets a clear message instead of a MemoryError (our rule).
MAX_REPLICATIONS = 10_000_000          # per cell
MAX_RUNS = 1_000_000_000               # replications x cells
MAX_SEED = 2 ** 63 - 1                 # stored as int64


@dataclass(frozen=True)
class Dim:
    """One dimension of the sweep: a swept parameter, or a zip group named by its first key."""

    name: str
    values: tuple
    # For a zip group: every parameter of the group with its values along this dim.
    members: dict[str, tuple] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class PathValue:
    """A file a ``path`` parameter names. The spec, the store and every table know it by its
    ``label`` (:func:`path_label`); only the workload is handed ``resolved``, the file on this
    machine, which never enters a store."""

    label: str
    written: tuple[str, ...]  # the values as written in the spec that name this file
    resolved: str  # the file here and now (resolve_path_value)
    sha256: str  # of the file's bytes; "" for a shallow load (listings)


@dataclass(frozen=True)
class Spec:
    path: str
    text: str
    name: str
    workload: str
    description: str
    replications: int
    seed: int
    independent: tuple[str, ...]
    params: dict[str, Any]  # fixed values, workload defaults filled in
    dims: tuple[Dim, ...]
    run: dict[str, Any]
    overrides: tuple[str, ...] = ()  # --set KEY=VALUE applied over the file, in order
    # replications = "auto": {"precision", "metric", "min", "look_ahead"} (replications is the maximum)
    auto: dict[str, Any] | None = None
    # [record]: {"replications": [...], "where": {dim: value}} (pipeline/store/records.py); not part of the identity
    record: dict[str, Any] | None = None
    # published reference points dropped because an override removed a coordinate they name
    reference_dropped: tuple[str, ...] = ()
    # path parameters: their values in params and dims are labels; files maps each label to its file
    path_params: tuple[str, ...] = ()
    files: dict[str, PathValue] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(d) for d in self.dims)

    @property
    def n_cells(self) -> int:
        n = 1
        for d in self.dims:
            n *= len(d)
        return n

    def cells(self) -> list[tuple[tuple[int, ...], dict[str, Any]]]:
        """Every cell as (index along each dim, full parameter dict), in C order."""
        out = []
        for index in itertools.product(*(range(len(d)) for d in self.dims)):
            out.append((index, self.cell_params(index)))
        return out

    def cell_params(self, index: tuple[int, ...]) -> dict[str, Any]:
        """The parameters the workload gets for one cell: a path parameter's label replaced by
        its file on this machine (the client resolves it; workers elsewhere get this path)."""
        params = dict(self.params)
        for dim, i in zip(self.dims, index):
            for pname, values in dim.members.items():
                params[pname] = values[i]
        for key in self.path_params:
            if params.get(key):  # "" = not set
                params[key] = self.files[params[key]].resolved
        return params

    def path_hashes(self) -> dict[str, str]:
        """{label: sha256} of every file the spec names (what a store keeps beside its identity)."""
        return {label: f.sha256 for label, f in sorted(self.files.items())}

    def legacy_identity(self) -> str:
        """:meth:`identity` as a store of format 2 or older recorded it, with each path
        parameter's file as an absolute path (so such a store can still be resumed)."""
        def absolute(key: str, value: Any) -> Any:
            return self.files[value].resolved if key in self.path_params and value else value

        doc = {
            "workload": self.workload, "replications": self.replications, "seed": self.seed,
            "independent": list(self.independent),
            "params": {k: absolute(k, v) for k, v in self.params.items()},
            "dims": [[d.name, {k: [absolute(k, x) for x in v] for k, v in d.members.items()}] for d in self.dims],
        }
        return json.dumps(doc, sort_keys=True, default=str)

    def identity(self) -> str:
        """What must match for a store to be resumed: everything but description and [run]."""
        doc = {
            "workload": self.workload, "replications": self.replications, "seed": self.seed,
            "independent": list(self.independent), "params": self.params,
            "dims": [[d.name, {k: list(v) for k, v in d.members.items()}] for d in self.dims],
        }
        return json.dumps(doc, sort_keys=True, default=str)


#: The files the path parameters of the spec being parsed name: {label: [written, resolved]}.
_FILES: contextvars.ContextVar[dict[str, list[Any]]] = contextvars.ContextVar("files")

#: Set by ``load(..., shallow=True)``: validation without the checks that cost seconds per spec
#: (each cell's ``check_params``, which reads traces; compiling plug-ins), for listings.
_SHALLOW: contextvars.ContextVar[bool] = contextvars.ContextVar("shallow", default=False)


def load(path: str | Path, overrides: Iterable[str] = (), *, shallow: bool = False) -> Spec:
    """Read and validate the sweep spec at ``path`` (a missing ``jobs/NAME.toml`` or bare
    ``NAME`` is one of the specs shipped with schedsweep: :mod:`.shipped`). ``shallow``: skip
    the per-cell checks and the plug-in compile (``schedsweep jobs``; a run checks everything)."""
    token = _SHALLOW.set(shallow)
    try:
        return _load(path, overrides)
    finally:
        _SHALLOW.reset(token)


def _load(path: str | Path, overrides: Iterable[str]) -> Spec:
    from ..base.shipped import spec as shipped_spec

    path = shipped_spec(path) or Path(path)
    where = str(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError(f"{where}: no such file") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise SpecError(f"{where}: cannot be read as a TOML text file ({exc.__class__.__name__})") from None
    return parse(text, where=where, base_dir=path.parent, overrides=overrides)


def parse(text: str, where: str = "<spec>", base_dir: Path | None = None, overrides: Iterable[str] = ()) -> Spec:
    token = _FILES.set({})
    try:
        return _parse(text, where, base_dir, overrides)
    finally:
        _FILES.reset(token)


def _parse(text: str, where: str, base_dir: Path | None, overrides: Iterable[str]) -> Spec:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: not valid TOML: {exc}") from None
    overrides = tuple(overrides)
    # the swept coordinates as written: a reference point an override removes is dropped, not refused
    as_written = copy.deepcopy({k: doc[k] for k in ("sweep", "zip", "sample") if k in doc}) if overrides else {}
    for item in overrides:
        apply_override(doc, item, where)
    base_dir = base_dir or Path(".")
    for key in doc:
        if key not in TOP_KEYS:
            raise SpecError(f"{where}: unknown key {key!r}; allowed keys: {', '.join(TOP_KEYS)}")
    wl_name = _required(doc, "workload", str, where)
    module = load_workload(where, wl_name)
    declared = params_by_name(module.PARAMS)
    auto = _auto(doc, where, module)
    replications = doc["max_replications"] if auto else _required(doc, "replications", int, where)
    if replications < 1:
        raise SpecError(f"{where}: replications = {_show(replications)} must be a positive integer")
    if replications > MAX_REPLICATIONS:
        raise SpecError(f"{where}: replications = {_show(replications)} is too many: at most {MAX_REPLICATIONS:,} "
                        f"per cell (split the sweep, or narrow the confidence intervals with fewer)")
    seed = _required(doc, "seed", int, where)
    if not 0 <= seed <= MAX_SEED:
        raise SpecError(f"{where}: seed = {_show(seed)} must be a non-negative integer below 2**63")
    name = doc.get("name", Path(where).stem)
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", "..") \
            or not name.isprintable():
        raise SpecError(f"{where}: name = {_show(name)} must be a non-empty printable string without '/' or '\\' "
                        f"(it names the store's folder)")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise SpecError(f"{where}: description must be a string")

    fixed = _table(doc, "params", where)
    params = {p.name: p.default for p in module.PARAMS}
    for key, value in fixed.items():
        params[key] = _check_value(where, f"[params] {key}", declared, key, value, wl_name, base_dir)

    dims: list[Dim] = []
    seen: dict[str, str] = {k: "[params]" for k in fixed}
    for key, values in _table(doc, "sweep", where).items():
        _not_seen(where, key, "[sweep]", seen)
        checked = _check_list(where, f"[sweep] {key}", declared, key, values, wl_name, base_dir)
        dims.append(Dim(key, checked, {key: checked}))
    zips = doc.get("zip", [])
    if not isinstance(zips, list) or not all(isinstance(z, dict) for z in zips):
        raise SpecError(f"{where}: zip must be an array of tables ([[zip]])")
    for k, group in enumerate(zips):
        if not group:
            raise SpecError(f"{where}: [[zip]] #{k + 1} is empty")
        members: dict[str, tuple] = {}
        for j, (key, values) in enumerate(group.items()):
            _not_seen(where, key, f"[[zip]] #{k + 1}", seen)
            members[key] = _check_list(where, f"[[zip]] #{k + 1} {key}", declared, key, values, wl_name, base_dir,
                                       indexes_dim=j == 0)
        lengths = {key: len(v) for key, v in members.items()}
        if len(set(lengths.values())) != 1:
            raise SpecError(f"{where}: [[zip]] #{k + 1}: lists must have equal lengths, got {lengths}")
        first = next(iter(members))
        dims.append(Dim(first, members[first], members))

    sample = _sample(doc, where, declared, seen, wl_name, base_dir)
    if sample is not None:
        dims.append(sample)
    _check_store_names(where, dims, module, wl_name)

    independent = doc.get("independent", [])
    if not isinstance(independent, list) or not all(isinstance(x, str) for x in independent):
        raise SpecError(f"{where}: independent must be a list of sweep dimension names")
    dim_names = [d.name for d in dims]
    for x in independent:
        if x not in dim_names:
            raise SpecError(f"{where}: independent = {x!r} is not a sweep dimension; dimensions: {dim_names}")

    run = _check_run(where, _table(doc, "run", where))
    n_cells = 1
    for d in dims:
        n_cells *= len(d)
    if n_cells * replications > MAX_RUNS:
        raise SpecError(f"{where}: {n_cells:,} cells × {replications:,} replications = "
                        f"{n_cells * replications:,} runs is too many: at most {MAX_RUNS:,} in one sweep")
    from .limits import check_client_memory

    check_client_memory(where, n_cells, replications)  # before anything builds a record per cell
    files = _path_values(_FILES.get())
    record = _check_record(where, doc.get("record"), dims, replications, module, files)
    dropped = _drop_overridden_references(doc, as_written, dims, module) if overrides else ()
    path_params = tuple(p.name for p in module.PARAMS if p.kind == "path")
    spec = Spec(str(where), text, name, wl_name, description, replications, seed,
                tuple(independent), params, tuple(dims), run, overrides, auto, record, dropped,
                path_params, files)
    _check_cells(where, spec, module)
    _check_reference(where, doc, spec, module)
    return spec


def _check_store_names(where: str, dims: list[Dim], module: ModuleType, wl_name: str) -> None:
    """A swept parameter becomes a coordinate of the store, which shares one namespace with
    the metrics, their own dimensions and the store's bookkeeping variables."""
    taken = {m.name: f"the metric {m.name!r}" for m in module.METRICS}
    for m in module.METRICS:
        taken.update({d: f"the dimension {d!r} of metric {m.name!r}" for d, _ in m.dims})
    taken.update({n: f"the store's {n!r}" for n in ("replication", "status", "reason", "seed", "cell_seconds")})
    for dim in dims:
        for key in dim.members:
            if key in taken:
                raise SpecError(f"{where}: {key} cannot be swept: workload {wl_name!r} also has {taken[key]}, "
                                f"and the store keeps coordinates and metrics under one name each "
                                f"(fix it in {wl_name!r}: rename the parameter or the metric)")


def _metric_dims(module: ModuleType) -> dict[str, tuple]:
    return {extra: tuple(labels) for m in module.METRICS for extra, labels in m.dims}


def _drop_overridden_references(doc: dict, as_written: dict, dims: list[Dim], module: ModuleType) -> tuple[str, ...]:
    """Drop the reference points whose coordinates the overrides removed (they cannot be
    compared with this run); a coordinate the file itself gets wrong is still refused."""
    from .reference import drop_unmatched, spec_coords

    before = spec_coords(as_written, _metric_dims(module))
    after = {member: tuple(values) for d in dims for member, values in d.members.items()}
    after.update(_metric_dims(module))
    return tuple(drop_unmatched(doc, after, before))


def _check_reference(where: str, doc: dict, spec: Spec, module: ModuleType) -> None:
    """The published reference points must name real metrics and coordinates (not part of the identity)."""
    from .reference import ReferenceError, label_files, parse as parse_reference

    doc = copy.deepcopy(doc) if spec.files else doc
    label_files(doc, {label: {"written": list(f.written)} for label, f in spec.files.items()})
    metrics = {m.name: tuple(d for d, _ in m.dims) for m in module.METRICS}
    coords: dict[str, tuple] = {}
    for dim in spec.dims:
        for member, values in dim.members.items():
            coords[member] = tuple(values)
    coords.update(_metric_dims(module))
    try:
        parse_reference(doc, where, metrics, coords)
    except ReferenceError as exc:
        raise SpecError(str(exc)) from None


def apply_override(doc: dict, item: str, where: str) -> None:
    """Apply ``--set KEY=VALUE`` to a parsed spec: a dotted key (``params.nodes``,
    ``sweep.load``, ``replications``, ``run.batch_seconds``) and a TOML value
    (``200``, ``[0.5, 0.9]``, ``"easy"``); then the spec is checked as if the file said it."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if "\n" in item or "\r" in item:  # TOML would read a second line as another key, silently
        raise SpecError(f"{where}: --set {item!r}: a line break in KEY=VALUE; give one line per --set, "
                        "e.g. --set params.nodes=200 --set sweep.load=[0.5,0.9]")
    if not sep or not key:
        raise SpecError(f"{where}: --set {item!r}: expected KEY=VALUE, e.g. params.nodes=200 or sweep.load=[0.5,0.9]")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        raise SpecError(f"{where}: --set {key}: {value.strip()!r} is not a TOML value "
                        "(numbers as is, text in quotes, lists in [ ])") from None
    parts = key.split(".")
    if not all(parts) or parts[0] not in TOP_KEYS or parts[0] in ("zip", "reference"):
        raise SpecError(f"{where}: --set {key}: not a key that can be set; use a top-level key "
                        f"({', '.join(k for k in TOP_KEYS if k not in ('zip', 'reference'))}) or TABLE.NAME")
    table = doc
    for part in parts[:-1]:
        table = table.setdefault(part, {})
        if not isinstance(table, dict):
            raise SpecError(f"{where}: --set {key}: {part!r} is not a table")
    table[parts[-1]] = parsed


def _show(value: Any, limit: int = 60) -> str:
    """``repr(value)``, shortened: an error message stays one readable line."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 5] + "…" + text[-4:]


def load_workload(where: str, wl_name: str) -> ModuleType:
    """The workload module, or a SpecError saying why there is none (import error included)."""
    try:
        return workloads.get(wl_name)
    except workloads.UnknownWorkload:
        pass
    except Exception as exc:  # noqa: BLE001 - a model's own import failed: say which and why
        raise SpecError(f"{where}: workload = {wl_name!r} could not be imported: "
                        f"{exc.__class__.__name__}: {_one_line(exc)}") from None
    known = f"available: {', '.join(workloads.names())}"
    if "." not in wl_name:
        raise SpecError(f"{where}: workload = {wl_name!r} is not a known workload; {known}")
    import importlib

    try:
        module = importlib.import_module(wl_name)
    except Exception as exc:  # noqa: BLE001 - the user's module: its import error is the message
        raise SpecError(f"{where}: workload = {wl_name!r} could not be imported: {exc.__class__.__name__}: "
                        f"{_one_line(exc)} (is its folder on PYTHONPATH or the current directory?); "
                        f"ours: {', '.join(workloads.names())}") from None
    missing = [a for a in ("PARAMS", "METRICS", "REASONS", "run_batch") if not hasattr(module, a)]
    raise SpecError(f"{where}: workload = {wl_name!r} ({getattr(module, '__file__', '?')}) is not a workload: "
                    f"it lacks {', '.join(missing)}")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


SAMPLERS = ("lhs", "sobol", "halton", "random")
MAX_SAMPLES = 1_000_000


def _sample(doc: dict, where: str, declared: dict[str, Param], seen: dict[str, str], wl_name: str,
            base_dir: Path) -> Dim | None:
    """``[sample]``: n points of a space-filling design over parameter ranges, one dimension
    ``sample`` whose coordinates are the points' parameter values (scipy.stats.qmc)."""
    if "sample" not in doc:
        return None
    table = doc["sample"]
    if not isinstance(table, dict):
        raise SpecError(f"{where}: sample must be a table ([sample])")
    method, n, seed = table.get("method"), table.get("n"), table.get("seed")
    if method not in SAMPLERS:
        raise SpecError(f"{where}: [sample] method = {_show(method)}; allowed: {', '.join(SAMPLERS)}")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SAMPLES:
        raise SpecError(f"{where}: [sample] n = {_show(n)} must be an integer in [1, {MAX_SAMPLES:,}]")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise SpecError(f"{where}: [sample] seed = {_show(seed)} must be a non-negative integer below 2**63")
    if "sample" in declared:
        raise SpecError(f"{where}: [sample] would name a dimension 'sample', but {wl_name} has a parameter "
                        "of that name")
    ranges = {k: v for k, v in table.items() if k not in ("method", "n", "seed")}
    if not ranges:
        raise SpecError(f"{where}: [sample] names no parameter; add e.g. arrival_rate = {{ low = 0.1, high = 0.9 }}")
    bounds = []
    for key, r in ranges.items():
        label = f"[sample] {key}"
        if key not in declared:
            raise _unknown(where, label, wl_name, declared)
        _not_seen(where, key, "[sample]", seen)
        if declared[key].kind not in ("int", "float"):
            raise SpecError(f"{where}: {label}: only numeric parameters can be sampled ({key} is {declared[key].kind})")
        if not isinstance(r, dict) or set(r) - {"low", "high", "log"} or not {"low", "high"} <= set(r):
            raise SpecError(f"{where}: {label} must be a table {{ low = ..., high = ... }} (optional log = true)")
        low, high, log = r["low"], r["high"], r.get("log", False)
        for name, v in (("low", low), ("high", high)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise SpecError(f"{where}: {label} {name} = {_show(v)} must be a finite number")
        if not low < high:
            raise SpecError(f"{where}: {label}: low = {low} must be below high = {high}")
        if not isinstance(log, bool) or (log and low <= 0):
            raise SpecError(f"{where}: {label}: log = true needs low > 0 (and log a boolean)")
        for v in (low, high):
            _check_value(where, label, declared, key, int(v) if declared[key].kind == "int" else float(v),
                         wl_name, base_dir)
        bounds.append((key, float(low), float(high), log))
    unit = sample_points(method, n, len(bounds), seed)
    members = {}
    for j, (key, low, high, log) in enumerate(bounds):
        integer = declared[key].kind == "int"
        top = high + 1 if integer else high  # integers: [low, high + 1) floored, so every value is as likely
        x = np.exp(np.log(low) + unit[:, j] * (np.log(top) - np.log(low))) if log else low + unit[:, j] * (top - low)
        values = tuple(int(v) for v in np.minimum(np.floor(x), high)) if integer else tuple(float(v) for v in x)
        members[key] = tuple(_check_value(where, f"[sample] {key}", declared, key, v, wl_name, base_dir)
                             for v in values)
    return Dim("sample", tuple(range(n)), members)


def sample_points(method: str, n: int, d: int, seed: int) -> np.ndarray:
    """n points in [0, 1)^d of the design ``method`` (scipy.stats.qmc), the same for the same seed."""
    import warnings

    from scipy.stats import qmc

    rng = np.random.default_rng(seed)
    if method == "random":
        return rng.random((n, d))
    engine = {"lhs": lambda: qmc.LatinHypercube(d=d, seed=rng),
              "sobol": lambda: qmc.Sobol(d=d, scramble=True, seed=rng),
              "halton": lambda: qmc.Halton(d=d, scramble=True, seed=rng)}[method]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Sobol's balance warning for n not a power of 2
        return engine.random(n)


AUTO_KEYS = ("precision", "precision_metric", "max_replications", "min_replications", "look_ahead")


def _auto(doc: dict, where: str, module: ModuleType) -> dict[str, Any] | None:
    """The settings of ``replications = "auto"`` (docs/contracts.md, "Statistics"), checked; None otherwise."""
    if doc.get("replications") != "auto":
        given = [k for k in AUTO_KEYS if k in doc]
        if given:
            raise SpecError(f"{where}: {', '.join(given)} only apply with replications = \"auto\"")
        return None
    for key in ("precision", "precision_metric", "max_replications"):
        if key not in doc:
            raise SpecError(f"{where}: replications = \"auto\" needs {key} ({TOP_KEYS[key]})")
    precision = doc["precision"]
    if isinstance(precision, bool) or not isinstance(precision, (int, float)) or not 0 < precision < 1:
        raise SpecError(f"{where}: precision = {_show(precision)} must be a number in (0, 1), e.g. 0.05")
    metric = doc["precision_metric"]
    metrics = {m.name: m for m in module.METRICS}
    if metric not in metrics or metrics[metric].dims or metrics[metric].timing:
        usable = [m.name for m in module.METRICS if not m.dims and not m.timing]
        raise SpecError(f"{where}: precision_metric = {_show(metric)} must be a metric of one value per "
                        f"replication (not a timing); one of: {', '.join(usable)}")
    ints = {}
    for key, default, low in (("max_replications", None, 2), ("min_replications", 10, 2), ("look_ahead", 5, 0)):
        value = doc.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_REPLICATIONS:
            raise SpecError(f"{where}: {key} = {_show(value)} must be an integer in [{low}, {MAX_REPLICATIONS:,}]")
        ints[key] = value
    if ints["min_replications"] > ints["max_replications"]:
        raise SpecError(f"{where}: min_replications = {ints['min_replications']} exceeds max_replications = "
                        f"{ints['max_replications']}")
    return {"precision": float(precision), "metric": metric, "min": ints["min_replications"],
            "look_ahead": ints["look_ahead"]}


def _required(doc: dict, key: str, kind: type, where: str) -> Any:
    if key not in doc:
        raise SpecError(f"{where}: missing key {key!r} ({TOP_KEYS[key]})")
    value = doc[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise SpecError(f"{where}: {key} = {_show(value)} must be {TOP_KEYS[key]}")
    if kind is str and not isinstance(value, str):
        raise SpecError(f"{where}: {key} = {_show(value)} must be {TOP_KEYS[key]}")
    return value


def _table(doc: dict, key: str, where: str) -> dict:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise SpecError(f"{where}: {key} must be a table ([{key}])")
    return value


def _not_seen(where: str, key: str, section: str, seen: dict[str, str]) -> None:
    if key in seen:
        raise SpecError(f"{where}: duplicate key {key!r}: in {seen[key]} and in {section}; give each parameter once")
    seen[key] = section


def _unknown(where: str, label: str, wl_name: str, declared: dict[str, Param]) -> SpecError:
    return SpecError(
        f"{where}: {label}: unknown parameter of workload {wl_name!r}; known: {', '.join(declared)}"
    )


def _check_value(where: str, label: str, declared: dict[str, Param], key: str, value: Any,
                 wl_name: str, base_dir: Path) -> Any:
    if key not in declared:
        raise _unknown(where, label, wl_name, declared)
    param = declared[key]
    checked, problem = param.check(value)
    if problem:
        raise SpecError(f"{where}: {label} = {_show(value)} {problem}")
    if param.plugin and is_plugin_path(checked) and not _SHALLOW.get():
        _check_plugin(where, label, key, checked, wl_name, base_dir)
    if param.kind == "path" and checked:  # "" = not set (a path parameter's usual default)
        checked = _path_parameter(where, label, checked, base_dir)
    return checked


def path_label(value: str) -> str:
    """The short name a store, a table and ``--sel`` know a path parameter's file by: the
    catalogue name of a ``pwa:NAME`` value, else the file's name as written (never a ``/``)."""
    if value.startswith(CATALOGUE_PREFIX):
        return value[len(CATALOGUE_PREFIX):]
    return Path(value).name


#: A path parameter's value that names a trace of the catalogue rather than a file.
CATALOGUE_PREFIX = traces.PREFIX


def resolve_path_value(value: str, base_dir: Path) -> Path:
    """The file a path parameter's value names: relative to the spec's folder, or for
    ``pwa:NAME`` the trace cache's copy (the one place a value becomes a file). Raises
    SpecError (the message without the spec's name; traces.TraceAbsent when a catalogued log
    is not in the cache) or OSError."""
    return traces.resolve(value, base_dir).resolve()


def _path_parameter(where: str, label: str, value: str, base_dir: Path) -> str:
    """Check the file ``value`` names and return its label; the file is recorded for the spec."""
    try:
        resolved = resolve_path_value(value, base_dir)
        resolved.exists()
    except traces.TraceAbsent as exc:
        if _SHALLOW.get():  # a listing knows a catalogued log by its name alone
            return path_label(value)
        raise SpecError(f"{where}: {label} = {value!r}: {exc}") from None
    except SpecError as exc:
        raise SpecError(f"{where}: {label} = {_show(value)}: {exc}") from None
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long
        raise SpecError(f"{where}: {label} = {_show(value)}: not a usable path ({_one_line(exc)})") from None
    if not resolved.exists():
        raise SpecError(f"{where}: {label} = {value!r}: no such file ({resolved})")
    if not resolved.is_file():
        raise SpecError(f"{where}: {label} = {value!r}: not a file ({resolved} is a directory or special file)")
    try:
        with open(resolved, "rb"):
            pass
    except OSError as exc:
        raise SpecError(f"{where}: {label} = {value!r}: cannot be read ({exc.strerror})") from None
    name = path_label(value)
    if not name or "/" in name or name in (".", ".."):
        raise SpecError(f"{where}: {label} = {value!r}: names no file (its label would be {name!r})")
    files = _FILES.get(None)
    if files is None:  # a value checked outside parse(): nothing to record it in
        return name
    known = files.setdefault(name, [[], resolved])
    if known[1] != resolved and not _same_bytes(known[1], resolved):
        raise SpecError(f"{where}: {label} = {value!r} and {known[0][0]!r} are two different files of one "
                        f"name, {name!r}, and a store knows a file by its name (its label); rename one of them")
    if value not in known[0]:
        known[0].append(value)
    return name


def _same_bytes(a: Path, b: Path) -> bool:
    return a.stat().st_size == b.stat().st_size and file_sha256(a) == file_sha256(b)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in 1-MB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _path_values(found: dict[str, list[Any]]) -> dict[str, PathValue]:
    """The spec's files by label, each hashed once (not in a shallow load: listings read no trace)."""
    shallow = _SHALLOW.get()
    return {name: PathValue(name, tuple(written), str(resolved), "" if shallow else file_sha256(resolved))
            for name, (written, resolved) in sorted(found.items())}


def label_of(files: dict[str, PathValue], value: Any) -> Any:
    """A path parameter's value as a store knows it: a value as written in the spec (or its
    label) becomes the label; any other value is returned as it is."""
    if not isinstance(value, str):
        return value
    import os

    for f in files.values():
        if value == f.label or os.path.normpath(value) in {os.path.normpath(w) for w in f.written}:
            return f.label
    return value


def _check_plugin(where: str, label: str, key: str, value: str, wl_name: str, base_dir: Path) -> None:
    """A plug-in path: import the function and compile it for the parameter's plug-in point."""
    from schedsweep.workloads.kernel_support.plugins import PluginError, point_of, resolve

    try:
        resolve(value, point_of(workloads.get(wl_name), key), base_dir)
    except PluginError as exc:
        raise SpecError(f"{where}: {label} = {value!r}: {exc}") from None


def plugin_modules(spec: Spec) -> list[ModuleType]:
    """The modules of the plug-ins a spec names (imported and checked by its validation),
    for the store's code identity (``pipeline.base.codehash.describe``)."""
    module = workload_of(spec)
    plugged = {p.name for p in module.PARAMS if p.plugin}
    named = [(k, v) for k, v in spec.params.items() if k in plugged]
    named += [(k, v) for d in spec.dims for k, vs in d.members.items() if k in plugged for v in vs]
    found: dict[str, ModuleType] = {}
    for key, value in named:
        if is_plugin_path(value):
            from schedsweep.workloads.kernel_support.plugins import point_of, resolve

            plugin = resolve(value, point_of(module, key), Path(spec.path).parent)
            found[plugin.module.__name__] = plugin.module
    return [found[k] for k in sorted(found)]


def _check_list(where: str, label: str, declared: dict[str, Param], key: str, values: Any,
                wl_name: str, base_dir: Path, indexes_dim: bool = True) -> tuple:
    if key not in declared:
        raise _unknown(where, label, wl_name, declared)
    if not isinstance(values, list):
        raise SpecError(f"{where}: {label} = {_show(values)} must be a list of values to sweep")
    if not values:
        raise SpecError(f"{where}: {label} is an empty list; give at least one value")
    if declared[key].kind == "floats":
        raise SpecError(f"{where}: {label}: a list-valued parameter cannot be swept; set it in [params]")
    checked = tuple(_check_value(where, f"{label}[{i}]", declared, key, v, wl_name, base_dir)
                    for i, v in enumerate(values))
    # Only the values that label a dimension must be distinct; other zip members may repeat.
    if indexes_dim and len(set(checked)) != len(checked):
        raise SpecError(f"{where}: {label} = {_show(values)} has repeated values")
    return checked


def _check_run(where: str, run: dict) -> dict:
    out = {}
    for key, value in run.items():
        if key not in RUN_KEYS:
            raise SpecError(f"{where}: [run] {key}: unknown; allowed: {', '.join(RUN_KEYS)}")
        kind, allowed = RUN_KEYS[key]
        ok = _finite_positive(value) if kind == "float" \
            else (isinstance(value, str) and value.strip() != "" and "\n" not in value) if kind == "str" \
            else (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_REPLICATIONS)
        if not ok:
            raise SpecError(f"{where}: [run] {key} = {_show(value)} must be {allowed}")
        out[key] = value
    return out


def _finite_positive(value: Any) -> bool:
    """A number > 0 that is neither nan nor inf (nor an int too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value)) and value > 0
    except OverflowError:
        return False


def _check_cells(where: str, spec: Spec, module: Any) -> None:
    check = getattr(module, "check_params", None)
    check_reps = getattr(module, "check_replications", None)
    if (check is None and check_reps is None) or _SHALLOW.get():
        return
    for index, params in spec.cells():
        try:
            problems = check(params) if check is not None else []
            if not problems and check_reps is not None:  # replications (the most "auto" may run)
                problems = check_reps(params, spec.replications)
        except Exception as exc:  # noqa: BLE001 - a rule that crashes is still a refusal, in one line
            problems = [f"check_params of workload {spec.workload!r} failed: {exc.__class__.__name__}: "
                        f"{_one_line(exc)}"]
        if problems:
            cell = ", ".join(f"{d.name}={d.values[i]!r}" for d, i in zip(spec.dims, index)) or "the fixed params"
            raise SpecError(f"{where}: at {cell}: {'; '.join(problems)}")


def workload_of(spec: Spec) -> ModuleType:
    return workloads.get(spec.workload)


def _check_record(where: str, table: Any, dims: list[Dim], replications: int,
                  module: Any, files: dict[str, PathValue]) -> dict[str, Any] | None:
    """The spec's ``[record]`` table, checked: {"replications": [...], "where": {dim: value}}."""
    if table is None:
        return None
    if not hasattr(module, "job_records"):
        raise SpecError(f"{where}: [record]: workload {module.__name__!r} keeps no per-job records "
                        f"(it defines no job_records(params, seed))")
    if not isinstance(table, dict) or set(table) - {"replications", "where"}:
        raise SpecError(f"{where}: [record] takes replications = [..] and where = {{ dim = value }}")
    reps = table.get("replications", [0])
    if not isinstance(reps, list) or not reps or not all(isinstance(r, int) and 0 <= r < replications
                                                          for r in reps):
        raise SpecError(f"{where}: [record] replications = {reps!r} must be a non-empty list of replication "
                        f"indices in [0, {replications - 1}]")
    sel = table.get("where", {})
    names = {d.name: d for d in dims}
    if not isinstance(sel, dict):
        raise SpecError(f"{where}: [record] where must be a table of sweep dimension = value")
    sel = {key: value if key not in names or value in names[key].values else label_of(files, value)
           for key, value in sel.items()}  # a file as written in the spec: its label
    for key, value in sel.items():
        if key not in names or value not in names[key].values:
            allowed = list(names[key].values) if key in names else list(names)
            raise SpecError(f"{where}: [record] where {key} = {value!r}: not a value of a sweep dimension; "
                            f"allowed: {allowed}")
    return {"replications": sorted(set(reps)), "where": dict(sel)}
