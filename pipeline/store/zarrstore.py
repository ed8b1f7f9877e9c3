"""The resumable zarr result store (docs/contracts.md, "The result store").

Built once from the spec and the workload's declarations; afterwards only the client
writes, batch by batch, with the zarr API (one open group, no xarray per write). A batch
writes its metrics and reasons first and its ``status`` last, so a store cut off at any
moment holds no replication marked done whose data is missing.

Nothing that is not ours is ever written into or deleted: a path that exists and is not a
store this tool made (its root ``zarr.json`` carries our ``spec_identity``) is refused,
unless it is an empty folder. A store is built under a temporary name beside it
(``.NAME.schedsweep-build-PID``) and renamed into place when complete, so an interruption at
any instant leaves no store (the next run removes the leftover, whose name says it is ours)
or a complete, resumable one.

Failure records live in the store's ``failures`` group, one JSON text per failed replication
in a growing array of small chunks, appended like results: the root metadata keeps its
size however many fail (xarray opens only the root's arrays, so the group stays out of
the Dataset).
"""
from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import shutil
import signal
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple

import numpy as np

from .chunkfiles import ChunkFiles, supports
from .shards import ShardFiles, any_per_block, shard_layout
from ..base.conventions import dataset_attrs, decode_attrs, encode_attrs, variable_attrs
from ..spec.sweep import Spec
from ..base.errors import StoreError  # noqa: F401  (re-exported: raised and caught under this name)

if TYPE_CHECKING:
    import xarray as xr
    import zarr

# zarr is imported where it is used, not with this module: a run's client starts its
# replication processes first and imports zarr (a sixth of a second of CPU) while they
# start (pipeline.execution.execute), and checks that need no store (lock, prepare) never load it.

NOT_RUN, OK, NO_RESULT, FAILED = 0, 1, 2, 3
STATUS_LABELS = {NOT_RUN: "not run", OK: "ok", NO_RESULT: "no result", FAILED: "failed"}
#: Replications 1.. of a deterministic cell (root attr ``deterministic``): status 'not run', never needed.
DETERMINISTIC_LABEL = "not needed (deterministic)"


FAILURES_GROUP = "failures"
FAILURE_CHUNK = 32  # records per chunk: an append rewrites at most one partly filled chunk
BUILD_TAG = ".schedsweep-build-"
SECONDS_EVERY = 10.0  # seconds between writes of the cell seconds during a run (Writer.flush at its end)
# Store format 2: the result arrays are sharded, every chunk carries a CRC-32C (pipeline.store.shards).
# The layout of the result arrays (inner chunks and shards): pipeline.store.shards.shard_layout.
# A checksummed chunk holds at least INNER_REPS replications of one cell (a damaged chunk is
# rerun whole; fewer would bloat the index and zstd's per-frame overhead), and a shard file
# about SHARD_VALUES values of cells x replications (the unit a compaction rewrites).
STORE_FORMAT = 2


_fault_calls = 0


def fault_point() -> None:
    """Fault injection for the kill tests: SIGKILL this process at the Nth call.

    Set ``SCHEDSWEEP_KILL_AT=N``; the points are every step of store creation and every
    store write, so a test can stop a run at chosen instants instead of timed ones.
    """
    global _fault_calls
    at = os.environ.get("SCHEDSWEEP_KILL_AT")
    if not at:
        return
    _fault_calls += 1
    if _fault_calls == int(at):
        os.kill(os.getpid(), signal.SIGKILL)


def _root_attrs(path: Path) -> dict[str, Any] | None:
    """The attributes of ``path/zarr.json`` (decoded), or None if it is missing or not zarr metadata."""
    try:
        meta = json.loads((path / "zarr.json").read_text())
    except (OSError, ValueError):
        return None
    return decode_attrs(meta.get("attributes", {})) if isinstance(meta, dict) else None


def open_group(path: Path, mode: str = "r") -> zarr.Group:
    """The store's root group from its own metadata, never from a consolidated copy that an
    interrupted run may have left behind."""
    import zarr

    return zarr.open_group(path, mode=mode, use_consolidated=False)


def attrs_of(group: zarr.Group) -> dict[str, Any]:
    """A group's attributes with nested provenance decoded (:mod:`pipeline.base.conventions`)."""
    return decode_attrs(dict(group.attrs))


def update_attrs(group: zarr.Group, **attrs: Any) -> None:
    """Write attributes, nested ones as JSON text (so netCDF can hold them)."""
    group.attrs.update(encode_attrs(attrs))


def consolidate(path: Path) -> None:
    """Consolidated metadata, so plain ``xr.open_zarr(path)`` opens the store in one read
    without a warning; rewritten after every change of shape or attributes."""
    import warnings

    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr notes that consolidation is not part of the v3 spec
        zarr.consolidate_metadata(str(path))


def is_ours(path: Path) -> bool:
    """A store this tool made (complete or not): root metadata with our spec identity."""
    attrs = _root_attrs(path)
    return bool(attrs) and "spec_identity" in attrs


def is_complete(path: Path) -> bool:
    return is_ours(path) and (path / "status" / "zarr.json").exists()


def _builds(path: Path) -> list[Path]:
    """Leftover temporary builds of this store (named by :func:`create`)."""
    return sorted(path.parent.glob(f".{path.name}{BUILD_TAG}*"))


def prepare(path: Path) -> bool:
    """Make ``path`` ready for a run (under the lock); True if it holds a store to resume.

    Removes what a killed run left: temporary builds and an incomplete store of ours made
    before creation was atomic. Refuses, touching nothing, any other existing path.
    """
    real = path.resolve()  # a symlink to a store is the store
    for leftover in _builds(real):
        shutil.rmtree(leftover, ignore_errors=True)
    if not real.exists():
        return False  # nothing there (or a link to where the store will be made)
    if real.is_dir():
        if is_complete(real):
            return True
        if is_ours(real):  # an incomplete store of an older schedsweep: ours to rebuild
            shutil.rmtree(real)
            return False
        if not any(real.iterdir()):
            return False
    kind = "a folder" if real.is_dir() else "a file"
    raise StoreError(f"{path} exists and is {kind} that is not a schedsweep store; it is left untouched — "
                     "give another --store")


def default_path(spec: Spec) -> Path:
    return Path("results") / f"{spec.name}.zarr"


def _dim_names(spec: Spec) -> list[str]:
    return [d.name for d in spec.dims]


def _coord_array(values: Any) -> np.ndarray:
    """Coordinate values; text as variable-length strings (zarr v3 has no spec for fixed UTF-32)."""
    arr = np.asarray(values)
    return arr.astype(object) if arr.dtype.kind == "U" else arr


def _coords(spec: Spec, module: ModuleType) -> dict[str, Any]:
    coords: dict[str, Any] = {}
    for dim in spec.dims:
        coords[dim.name] = (dim.name, _coord_array(dim.values))
        for member, values in dim.members.items():
            if member != dim.name:
                coords[member] = (dim.name, _coord_array(values))
    coords["replication"] = ("replication", np.arange(spec.replications))
    for metric in module.METRICS:
        for extra, labels in metric.dims:
            coords[extra] = (extra, _coord_array(labels))
    return coords


class _Variable(NamedTuple):
    """One array of a new store: its dimensions, contents, attributes, chunks (None: zarr's
    automatic choice) and shards (None: not sharded). ``data`` is the whole array, or a
    scalar fill for an empty one."""
    dims: list[str]
    shape: tuple[int, ...]
    data: Any
    dtype: Any
    attrs: dict[str, Any]
    chunks: tuple[int, ...] | None = None
    shards: tuple[int, ...] | None = None


def _variables(spec: Spec, module: ModuleType, chunk: int) -> tuple[dict[str, _Variable], dict[str, _Variable]]:
    """(data variables, coordinates) of an empty store for ``spec``: NaN metrics, status 'not run'."""
    dims = _dim_names(spec)
    var_attrs = variable_attrs(module, spec.workload, [m for d in spec.dims for m in d.members] + dims)
    shape = spec.shape + (spec.replications,)
    inner, shard = shard_layout(spec.shape, spec.replications, chunk)
    data: dict[str, _Variable] = {}
    for metric in module.METRICS:
        data[metric.name] = _Variable(dims + ["replication"] + [d for d, _ in metric.dims], shape + metric.shape,
                                      np.nan, np.float64,
                                      {"description": metric.description, **var_attrs[metric.name]},
                                      inner + metric.shape, shard + metric.shape)
    for name, description in (("status", "0 not run, 1 ok, 2 no result, 3 failed"),
                              ("reason", "the workload's reason code, 0 = none")):
        data[name] = _Variable(dims + ["replication"], shape, 0, np.int8,
                               {"description": description, **var_attrs[name]}, inner, shard)
    indep = [d for d in spec.dims if d.name in spec.independent]
    seed_shape = tuple(len(d) for d in indep) + (spec.replications,)
    seed_inner, seed_shard = shard_layout(seed_shape[:-1], spec.replications, chunk)
    data["seed"] = _Variable([d.name for d in indep] + ["replication"], seed_shape, all_seeds(spec), np.uint64,
                             {"description": "seed handed to the workload for this replication", **var_attrs["seed"]},
                             seed_inner, seed_shard)
    data["cell_seconds"] = _Variable(dims, spec.shape, np.zeros(spec.shape), np.float64,
                                     {"units": "s", "timing": 1, "description": "task wall time spent on the cell",
                                      **var_attrs["cell_seconds"]})
    coords = {}
    for name, (dim, values) in _coords(spec, module).items():
        coords[name] = _Variable([dim], (len(values),), values, values.dtype, dict(var_attrs.get(name, {})))
    return data, coords


def all_seeds(spec: Spec) -> np.ndarray:
    """The store's ``seed`` array: every replication's seed (a function of the spec alone), one
    row per combination of the ``independent`` dimensions.

    Written whole when the store is made, so a run never rewrites it: replacing an existing
    file is the slowest write there is (ext4 flushes the new file's data first, 1-4 ms).
    """
    from ..base.seeding import replication_seeds

    indep = [len(d) for d in spec.dims if d.name in spec.independent]
    seeds = np.zeros(tuple(indep) + (spec.replications,), dtype=np.uint64)
    for index in np.ndindex(*indep):
        seeds[index] = replication_seeds(spec.seed, 0, spec.replications, index)
    return seeds


def _fill_attr(dtype: Any) -> dict[str, Any]:
    """xarray's ``_FillValue`` attribute: NaN of a float array, base64 of its bytes as xarray writes it."""
    if np.dtype(dtype).kind != "f":
        return {}
    import base64

    return {"_FillValue": base64.standard_b64encode(np.array(np.nan, dtype).tobytes()).decode()}


def _write_store(build: Path, root_attrs: dict[str, Any], data: dict[str, _Variable],
                 coords: dict[str, _Variable]) -> None:
    """The arrays and metadata that ``xarray.Dataset.to_zarr`` writes for these variables
    (tests/test_conventions.py checks they are the same), with zarr alone: a sweep's client
    then never imports xarray, pandas or dask, about half a second of CPU on every run."""
    import zarr

    group = zarr.create_group(str(build), zarr_format=3, attributes={**root_attrs, "store_format": STORE_FORMAT})
    non_index = {name: set(v.dims) for name, v in coords.items() if v.dims != [name]}
    for name, var in {**coords, **data}.items():
        attrs = dict(var.attrs)
        if name in data:
            linked = sorted(c for c, c_dims in non_index.items() if c_dims <= set(var.dims))
            if linked:
                attrs["coordinates"] = " ".join(linked)
        attrs.update(_fill_attr(var.dtype))
        attrs = {k: v.tolist() if isinstance(v, (np.ndarray, np.generic)) else v for k, v in attrs.items()}
        text = np.dtype(var.dtype).kind == "O"
        fill = "" if text else (np.nan if np.dtype(var.dtype).kind == "f" else 0)
        array = group.create_array(name, shape=var.shape, dtype=str if text else var.dtype,
                                   chunks=var.chunks or "auto", shards=var.shards, compressors=compressors(),
                                   fill_value=fill, dimension_names=var.dims, attributes=attrs)
        if np.ndim(var.data) or not var.shape:  # contents beyond the fill value
            array[...] = var.data


def compressors() -> tuple:
    """Every array's bytes-to-bytes codecs: zarr's default zstd, then a CRC-32C that zarr checks on every read."""
    from zarr.codecs import Crc32cCodec, ZstdCodec

    return (ZstdCodec(level=0, checksum=False), Crc32cCodec())


def create(path: Path, spec: Spec, module: ModuleType, chunk: int, attrs: dict[str, Any]) -> None:
    """Write an empty store (NaN metrics, status 'not run') for ``spec`` at ``path``."""
    data, coords = _variables(spec, module, chunk)
    real = path.resolve()
    build = real.parent / f".{real.name}{BUILD_TAG}{os.getpid()}"
    real.parent.mkdir(parents=True, exist_ok=True)
    fault_point()
    _write_store(build, encode_attrs({**dataset_attrs(spec.workload), **attrs}), data, coords)
    consolidate(build)
    fault_point()
    if real.is_dir():
        real.rmdir()  # an empty folder given as the store (prepare checked it is empty)
    os.rename(build, real)  # atomic: before it no store, after it a complete one
    fault_point()


def open_dataset(path: str | Path) -> xr.Dataset:
    """The store at ``path`` as an xarray Dataset (lazy), its chunks NOT verified: readers use
    :func:`pipeline.store.integrity.open_store`, which checks every checksum first."""
    path = Path(path)
    if not (path / "zarr.json").exists():
        raise StoreError(f"{path}: not a schedsweep store (no zarr.json)")
    import xarray as xr

    ds = xr.open_zarr(path, consolidated=False)
    ds.attrs = decode_attrs(ds.attrs)
    return ds


def append_failures(group: zarr.Group, records: list[dict[str, Any]]) -> None:
    """Append failure records, one JSON text each, to the group's ``failures/records`` array."""
    if not records:
        return
    texts = np.array([json.dumps(r, default=str) for r in records], dtype=object)
    sub = group.require_group(FAILURES_GROUP)
    if "records" in sub:
        arr = sub["records"]
    else:
        arr = sub.create_array("records", shape=(0,), dtype=str, chunks=(FAILURE_CHUNK,), fill_value="",
                               compressors=compressors())
    n = arr.shape[0]
    arr.resize((n + len(texts),))
    arr[n:] = texts


def read_failures(path: str | Path, current: bool = True) -> list[dict[str, Any]]:
    """Failure records of a store; ``current``: only replications still marked failed.

    A later ``--retry-failed`` run that filled a replication makes its old records moot;
    of several records of one replication the last is kept.
    """
    path = Path(path)
    group = open_group(path, "r")
    attrs = attrs_of(group)
    records = list(attrs.get("failures", []))  # stores made before the failures group
    try:
        texts = group[f"{FAILURES_GROUP}/records"][...]
    except KeyError:
        texts = []
    for text in texts:
        try:
            records.append(json.loads(text))
        except ValueError:
            continue  # an entry a kill left empty
    if not current or not records:
        return records
    try:
        status = group["status"][...]
    except ValueError:  # zarr's checksum error: ours instead, in one line
        raise StoreError(f"{path}: status is damaged; `schedsweep check {path}` lists where, and running "
                         "the spec again reruns it") from None
    dims = list(attrs.get("dims", []))
    coords = {d: [_plain(v) for v in group[d][...]] for d in dims}
    last: dict[tuple, dict[str, Any]] = {}
    for r in records:
        try:
            index = tuple(coords[d].index(_label_or_value(r["cell"][d], coords[d])) for d in dims)
        except (KeyError, ValueError):
            continue
        last[index + (int(r["replication"]),)] = r
    return [r for key, r in last.items() if status[key] == FAILED]


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _label_or_value(value: Any, coords: list[Any]) -> Any:
    """A failure record's coordinate: a store brought to labels (:func:`adopt_labels`) keeps
    records written with the absolute path, whose file name is now the coordinate."""
    if isinstance(value, str) and value not in coords and os.path.isabs(value):
        return os.path.basename(value)
    return value


def check_same_code(path: Path, code: dict[str, Any], allow_changed: bool) -> dict[str, Any] | None:
    """Refuse to resume a store whose model code changed, unless allowed.

    ``code`` is :func:`pipeline.base.codehash.describe` of the workload now. Returns the record
    of an allowed change (to be kept in the store), or None when nothing changed.
    """
    attrs = _root_attrs(path) or {}
    stored = attrs.get("code")
    if not stored:
        return None  # a store made before code hashes: nothing to compare with
    changes = attrs.get("code_changes", [])
    accepted = changes[-1]["files"] if changes else stored.get("files", {})
    accepted_hash = changes[-1]["hash"] if changes else stored.get("hash")
    if accepted_hash == code["hash"]:
        return None
    from ..base.codehash import changed_files

    changed = changed_files(accepted, code["files"])
    if not allow_changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise StoreError(f"{path} was made by other model code (changed: {shown}); resuming would mix results "
                         "of two models — give another --store, or --allow-changed-code to resume anyway "
                         "(recorded in the store)")
    import datetime as _dt

    return {"hash": code["hash"], "files": code["files"], "changed": changed,
            "dependencies": code["dependencies"],
            "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def record_code_change(path: Path, change: dict[str, Any]) -> None:
    """Keep an allowed change of model code in the store's provenance (``code_changes``)."""
    group = open_group(path, "r+")
    update_attrs(group, code_changes=list(attrs_of(group).get("code_changes", [])) + [change])
    consolidate(path)


def stored_spec(path: Path) -> tuple[str, str, list[str]]:
    """(spec text, where it was read from, --set overrides) of the run that made the store.

    The spec's file is named from the store's folder (``spec_path_from = "store"``), so a
    copy of the project elsewhere finds its own spec and the files it names; a store made
    before that keeps the path as it was given."""
    attrs = _root_attrs(Path(path)) or {}
    if "spec_text" not in attrs:
        raise StoreError(f"{path}: the store holds no spec text; give the spec file")
    where = attrs.get("spec_path") or f"{path}:spec_text"
    if attrs.get("spec_path_from") == "store" and attrs.get("spec_path"):
        from ..base.shipped import spec as shipped_spec

        here = Path(os.path.normpath(Path(path).parent / attrs["spec_path"]))
        where = str(here if here.exists() else shipped_spec(attrs["spec_path"]) or here)
    return attrs["spec_text"], where, list(attrs.get("overrides") or [])


def spec_path_attrs(spec_path: str, store: Path | None) -> dict[str, str]:
    """How a store names the spec it was made from, without a path of this machine: a spec
    shipped with schedsweep as ``jobs/NAME.toml``, any other relative to the store's folder."""
    from ..base.shipped import folder

    real = Path(spec_path).resolve()
    if real.parent == folder("jobs").resolve():
        return {"spec_path": f"jobs/{real.name}", "spec_path_from": "store"}
    if store is None or not Path(spec_path).exists():  # a text parsed from no file ("<spec>")
        return {"spec_path": Path(spec_path).name, "spec_path_from": "store"}
    return {"spec_path": os.path.relpath(real, Path(store).resolve().parent), "spec_path_from": "store"}


def files_attr(spec: Spec) -> dict[str, dict[str, Any]]:
    """The store's record of the files the path parameters name: {label: {"sha256", "written"}},
    ``written`` the values as written in the spec that name the file (an absolute one left out)."""
    return {label: {"sha256": f.sha256, "written": [w for w in f.written if not Path(w).is_absolute()]}
            for label, f in sorted(spec.files.items())}


def without_machine_paths(text: str, spec: Spec) -> str:
    """A failure's text with each file of a path parameter named by its label, and the
    project's own files relative to its folder (the text goes into the store)."""
    from schedsweep import __file__ as package_init

    for label, f in spec.files.items():
        text = text.replace(f.resolved, label)
    root = str(Path(package_init).resolve().parent.parent) + os.sep
    return text.replace(root, "")


def check_same_files(path: Path, spec: Spec) -> None:
    """Refuse to resume, grow or merge into a store whose files (by label) now have other
    content: one line naming the label and both hashes. A store made before labels (no
    ``files``) has nothing to compare with."""
    stored = (_root_attrs(path) or {}).get("files") or {}
    for label, f in sorted(spec.files.items()):
        old = (stored.get(label) or {}).get("sha256")
        if old and f.sha256 and old != f.sha256:
            raise StoreError(f"{path}: the file labelled {label!r} changed: the store was made with sha256 {old}, "
                             f"{f.resolved} has sha256 {f.sha256}; resuming would mix results of two files — "
                             "give another --store, or the file the store was made with")


def adopt_labels(path: Path, spec: Spec) -> bool:
    """Bring a store made before labels (its path coordinates absolute paths) to labels, if
    each of those paths is the very file ``spec`` names now (no content hash was kept, so
    the same place is the only evidence). Coordinates are rewritten first, the identity
    last: a run killed in between does it again. True if the store was changed."""
    attrs = _root_attrs(path) or {}
    identity = attrs.get("spec_identity")
    if not spec.path_params or not identity or "files" in attrs or identity == spec.identity():
        return False
    by_path = {f.resolved: label for label, f in spec.files.items()}
    old = json.loads(identity)

    def relabel(key: str, value: Any) -> Any:
        return by_path.get(value, value) if key in spec.path_params and isinstance(value, str) else value

    named = [v for k, v in old.get("params", {}).items() if k in spec.path_params and v]
    named += [x for _, members in old.get("dims", []) for k, v in members.items() if k in spec.path_params for x in v]
    if any(v not in by_path for v in named):  # a file the spec does not name: all or nothing, or refused as before
        return False

    new = dict(old, params={k: relabel(k, v) for k, v in old.get("params", {}).items()},
               dims=[[name, {k: [relabel(k, x) for x in v] for k, v in members.items()}]
                     for name, members in old.get("dims", [])])
    if new == old:
        return False
    group = open_group(path, "r+")
    for name, members in new["dims"]:
        for member, values in members.items():
            if member in spec.path_params and member in group:
                group[member][...] = _coord_array(values)
    fault_point()
    attrs = attrs_of(group)
    attrs.update(spec_identity=json.dumps(new, sort_keys=True, default=str), files=files_attr(spec),
                 params={k: relabel(k, v) for k, v in attrs.get("params", {}).items()},
                 **spec_path_attrs(spec.path, path))
    update_attrs(group, **attrs)
    consolidate(path)
    return True


def stored_identity(path: Path) -> str | None:
    group = open_group(path, "r")
    return group.attrs.get("spec_identity")


def check_same_spec(path: Path, spec: Spec) -> dict[str, int] | None:
    """None if the store was made by ``spec``; the new sizes if ``spec`` only grows it.

    A spec grows a store when it differs only by more ``replications`` or by values added
    at the end of ``[sweep]`` lists or ``[[zip]]`` groups: the store's results stay what
    they are, with the same seeds (common random numbers index replications and cells the
    same way), and only the new replications and cells run. Any other change is refused
    with the keys that differ.
    """
    identity = stored_identity(path)
    target = (_root_attrs(path) or {}).get("growing")
    if target and target != spec.identity():  # half grown: its arrays fit neither spec but that one
        raise StoreError(f"{path}: a run that was growing this store to another spec was interrupted; run that "
                         "spec again to finish growing it (or give another --store)")
    if identity == spec.identity():
        return None
    old = json.loads(identity) if identity else {}
    new = json.loads(spec.identity())
    differ = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    sizes = _growth(old, new, path)
    if sizes is None:
        raise StoreError(
            f"{path} was made by a different spec (differs in: {', '.join(differ) or 'everything'}); only more "
            "replications or values added at the end of a sweep list grow a store — give another --store, "
            "or delete the store to start over"
        )
    return sizes


class HoldsMore(StoreError):
    """The spec is the store's but for fewer replications: the store holds all of the spec's
    (its first ``asked`` of ``held`` per cell), so running the spec completes only those."""

    def __init__(self, path: Path, held: int, asked: int):
        super().__init__(f"{path} holds {held} replications per cell; the spec asks for {asked}")
        self.held, self.asked = held, asked


def _growth(old: dict, new: dict, path: Path) -> dict[str, int] | None:
    """{dimension: new length} when ``new`` only extends ``old``; None for any other change."""
    if {k: v for k, v in old.items() if k not in ("replications", "dims")} != \
            {k: v for k, v in new.items() if k not in ("replications", "dims")}:
        return None
    if new["replications"] < old["replications"]:
        if {**new, "replications": old["replications"]} == old:
            raise HoldsMore(path, old["replications"], new["replications"])
        raise StoreError(f"{path} holds {old['replications']} replications per cell; replications = "
                         f"{new['replications']} would drop some — a store only grows (give another --store)")
    sizes = {"replication": new["replications"]} if new["replications"] > old["replications"] else {}
    if [d[0] for d in old["dims"]] != [d[0] for d in new["dims"]]:
        return None
    for (name, old_members), (_, new_members) in zip(old["dims"], new["dims"]):
        if set(old_members) != set(new_members):
            return None
        grown = set()
        for member, values in old_members.items():
            now = new_members[member]
            if now[:len(values)] != values:
                return None  # a value changed or moved: not an extension
            grown.add(len(now) - len(values))
        if len(grown) != 1:
            return None
        n = grown.pop()
        if n:
            sizes[name] = len(next(iter(new_members.values())))
    return sizes


def grow(path: Path, spec: Spec, module: ModuleType, sizes: dict[str, int]) -> None:
    """Extend the store's arrays to ``spec`` (new entries: NaN metrics, status 'not run').

    The target is recorded first and the identity last, so a run killed while growing
    leaves a store that the same spec finishes growing (resizing is idempotent).
    """
    group = open_group(path, "r+")
    held = dict(zip([*attrs_of(group).get("dims", []), "replication"], map(int, group["status"].shape)))
    group.attrs["growing"] = spec.identity()
    fault_point()
    members = {m: dim.name for dim in spec.dims for m in dim.members}
    values = {m: _coord_array(v) for dim in spec.dims for m, v in dim.members.items()}
    for dim in spec.dims:  # a dimension's own coordinate (a [sample] index has no member of its name)
        members[dim.name] = dim.name
        values[dim.name] = _coord_array(dim.values)
    for name, arr in list(group.arrays()):
        dims = list(arr.metadata.dimension_names or ())
        shape = tuple(sizes.get(d, n) for d, n in zip(dims, arr.shape))
        if shape != arr.shape:
            old_shape = arr.shape
            arr.resize(shape)
            if name == "cell_seconds":  # its fill value is NaN; a new cell has spent 0 s
                for axis, (a, b) in enumerate(zip(old_shape, shape)):
                    if b > a:
                        index = [slice(None)] * len(shape)
                        index[axis] = slice(a, b)
                        arr[tuple(index)] = 0.0
        if name == "replication":
            arr[...] = np.arange(spec.replications)
        elif name in members and dims == [members[name]]:
            arr[...] = values[name]
        fault_point()
    attrs = attrs_of(group)
    reps = np.asarray(attrs.get("batch_reps", []))
    if reps.ndim == len(spec.dims) and reps.size:
        attrs["batch_reps"] = _pad(reps, spec.shape, int(reps.max())).tolist()
    pilot = attrs.get("pilot_seconds_per_rep")
    if pilot is not None and np.ndim(pilot) == len(spec.dims):
        attrs["pilot_seconds_per_rep"] = _pad(np.asarray(pilot, float), spec.shape,
                                              float(np.nanmax(pilot))).tolist()
    import datetime as _dt

    # The spec the store now holds, overrides included, so `run STORE` resumes it as grown; the
    # growth's history beside it (`show`). The spec's path is kept relative to the store.
    where = spec_path_attrs(spec.path, path)
    attrs.update(replications=spec.replications, spec_text=spec.text, **where,
                 files={**(attrs.get("files") or {}), **files_attr(spec)},
                 overrides=list(spec.overrides),
                 grown=list(attrs.get("grown", [])) + [{
                     "sizes": sizes, "spec_text": spec.text, "spec_path": where["spec_path"],
                     "overrides": list(spec.overrides),
                     "from": {d: n for d, n in held.items() if d in sizes},
                     "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}])
    attrs["growing"] = None
    attrs["spec_identity"] = spec.identity()
    update_attrs(group, **attrs)  # one write: the new identity and the end of growing together
    fault_point()
    consolidate(path)


def _pad(a: np.ndarray, shape: tuple[int, ...], value: Any) -> np.ndarray:
    """``a`` extended at the end of each axis to ``shape`` with ``value``."""
    return np.pad(a, [(0, n - m) for m, n in zip(a.shape, shape)], constant_values=value)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the store for the whole run.

    ``flock`` is released by the kernel when the process dies, so a killed run never
    leaves a stale lock behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    real = path.resolve()  # two runs reaching one store through a symlink share one lock
    lock_path = real.with_name(real.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            raise StoreError(f"{path} is being written by another schedsweep run ({holder}); wait for it or stop it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        try:
            yield
        finally:  # also after a refusal or an interruption (SIGTERM, SIGHUP, Ctrl-C): no lock left
            os.unlink(lock_path)
    finally:
        os.close(fd)


def _grid(array: zarr.Array) -> tuple[int, ...]:
    """The shape of the unit one file holds: the shard of a sharded array, else the chunk."""
    return tuple(getattr(array, "shards", None) or array.chunks)


def run_in_progress(path: Path) -> bool:
    """Whether a run holds the store's lock now (:func:`locked`); never creates the lock file."""
    real = Path(path).resolve()
    try:
        fd = os.open(real.with_name(real.name + ".lock"), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock this took


def _chunks_of(array: zarr.Array, where: tuple) -> list[tuple[int, ...]]:
    """The grid positions of the files (shards or chunks) that the selection ``where`` (ints and slices) touches."""
    ranges = []
    grid = _grid(array)
    for k, (sel, size) in enumerate(zip(where, grid)):
        if isinstance(sel, slice):
            stop = array.shape[k] if sel.stop is None else sel.stop
            ranges.append(range((sel.start or 0) // size, (stop - 1) // size + 1))
        else:
            ranges.append(range(sel // size, sel // size + 1))
    ranges += [range(-(-n // c)) for n, c in zip(array.shape[len(where):], grid[len(where):])]
    return list(itertools.product(*ranges))


def _whole_chunks(array: zarr.Array, memory: np.ndarray, touched: list[tuple]) -> list[tuple[zarr.Array, tuple, np.ndarray]]:
    """Writes of every file of ``array`` that a selection in ``touched`` falls in, whole, from ``memory``."""
    if memory.ndim == 0:
        return [(array, (), memory)] if touched else []
    files = {pos for where in touched for pos in _chunks_of(array, where)}
    grid = _grid(array)
    writes = []
    for pos in sorted(files):
        region = tuple(slice(p * c, min((p + 1) * c, n)) for p, c, n in zip(pos, grid, array.shape))
        writes.append((array, region, memory[region]))
    return writes


def _write_concurrently(writes: list[tuple[zarr.Array, tuple, np.ndarray]]) -> None:
    """Do the writes as few concurrent rounds of zarr's async API, none in a file another write
    of its round touches (a partial write reads, changes and writes the chunk or shard back)."""
    import asyncio

    from zarr.core.sync import sync

    rounds: list[tuple[list, set]] = []
    for array, where, value in writes:
        keys = {(array.path, pos) for pos in _chunks_of(array, where)}
        for todo, taken in rounds:
            if taken.isdisjoint(keys):
                todo.append((array, where, value))
                taken |= keys
                break
        else:
            rounds.append(([(array, where, value)], keys))

    async def one_round(todo: list) -> None:
        await asyncio.gather(*(a.async_array.setitem(w, v) for a, w, v in todo))

    for todo, _ in rounds:
        sync(one_round(todo))


def _as_slices(array: zarr.Array, where: tuple) -> tuple[slice, ...]:
    """The selection ``where`` (ints, then slices; the trailing axes whole) as one slice per axis."""
    out = [slice(w, w + 1) if not isinstance(w, slice) else
           slice(w.start or 0, array.shape[k] if w.stop is None else w.stop) for k, w in enumerate(where)]
    return tuple(out + [slice(0, n) for n in array.shape[len(where):]])


def _inner_touched(files: ShardFiles, parts: list[tuple[tuple[slice, ...], Any]]) -> np.ndarray:
    """Per inner chunk of a shard (C order): whether one of ``parts`` (shard-local slices) writes in it."""
    mask = np.zeros(files.per_shard, bool)
    for in_chunk, _ in parts:
        mask[tuple(slice(s.start // c, -(-s.stop // c)) for s, c in zip(in_chunk, files.inner))] = True
    return mask.ravel()


def _write_round(files: dict[str, ChunkFiles | ShardFiles], writes: list[tuple[zarr.Array, tuple, np.ndarray]],
                 drop: list[tuple[tuple[int, ...], int, int]] = (),
                 expected: Callable[[ShardFiles, tuple[int, ...]], np.ndarray | None] | None = None) -> None:
    """One round of writes: every file they touch written once, whole.

    A file the round covers whole is built from its writes alone; one it covers in part is
    read first. A shard keeps the inner chunks it had and gains those the round writes in
    (even if they hold only NaN: present means written); ``drop`` (cell, start, stop),
    aligned to inner chunks, removes inner chunks instead (replications made 'not run'
    again). ``expected(files, pos)``: per inner chunk of a shard, whether it must be on disk
    (its replications ran), so a lost one is damage (:class:`ShardDamaged`), not NaN. Arrays
    neither :mod:`pipeline.store.chunkfiles` nor :mod:`pipeline.store.shards` handles go through zarr.
    """
    pieces: dict[tuple[str, tuple[int, ...]], list[tuple[tuple[slice, ...], np.ndarray]]] = {}
    by_zarr = []
    for array, where, value in writes:
        chunk_files = files.get(array.path)
        if chunk_files is None:
            by_zarr.append((array, where, value))
            continue
        sel = _as_slices(array, where)
        value = np.asarray(value).reshape(tuple(s.stop - s.start for s in sel))
        for pos in _chunks_of(array, where):
            region = chunk_files.region(pos)
            inter = [slice(max(s.start, r.start), min(s.stop, r.stop)) for s, r in zip(sel, region)]
            in_chunk = tuple(slice(i.start - r.start, i.stop - r.start) for i, r in zip(inter, region))
            in_value = tuple(slice(i.start - s.start, i.stop - s.start) for i, s in zip(inter, sel))
            pieces.setdefault((array.path, pos), []).append((in_chunk, value[in_value]))
    for (name, pos), parts in pieces.items():
        chunk_files = files[name]
        covered = np.zeros(chunk_files.chunks, dtype=bool)
        for in_chunk, _ in parts:
            covered[in_chunk] = True
        inside = tuple(slice(0, r.stop - r.start) for r in chunk_files.region(pos))
        whole = covered[inside].all()
        if isinstance(chunk_files, ShardFiles):
            _write_shard(chunk_files, pos, parts, whole, list(drop),
                         expected(chunk_files, pos) if expected is not None else None)
            continue
        block = chunk_files.empty() if whole else chunk_files.read(pos)
        for in_chunk, part in parts:
            block[in_chunk] = part
        chunk_files.write(pos, block)
    if by_zarr:
        _write_concurrently(by_zarr)


class ShardDamaged(StoreError):
    """A shard that a write rewrites in part is damaged where the rewrite would keep it: inner
    chunks whose checksum or index is wrong, or lost where their replications ran. Writing
    it would make NaN out of results, so the Writer marks those replications not run instead
    (:meth:`Writer.compact`)."""

    def __init__(self, files: ShardFiles, pos: tuple[int, ...], chunks: np.ndarray, problem: str):
        super().__init__(f"{files.path(pos)}: damaged ({problem})")
        self.files, self.pos, self.chunks, self.problem = files, pos, chunks, problem


def _write_shard(files: ShardFiles, pos: tuple[int, ...], parts: list, whole: bool,
                 drop: list[tuple[tuple[int, ...], int, int]], expected: np.ndarray | None = None) -> None:
    """Shard ``pos`` with ``parts`` written in (see :func:`_write_round`): the inner chunks
    the parts touch are encoded anew (read first where covered in part), the others copied
    as they are on disk, so a rewrite costs the chunks it changes plus a copy of the file.
    Raises :class:`ShardDamaged` (writing nothing) if a chunk it would keep or copy is damaged."""
    if whole:
        frames, damage = [None] * files.n_inner, None
    else:
        frames, damage = files.load_frames(pos)
    touched_mask = _inner_touched(files, parts)
    touched = np.flatnonzero(touched_mask)
    covered = _inner_covered(files, parts)
    dropped = np.zeros(files.n_inner, bool)
    dropped[_dropped(files, pos, drop)] = True
    if not whole:
        keep = ~covered & ~dropped & files.inner_in_array(pos)  # what the rewrite takes from the file
        bad = (damage.chunks & keep) if damage is not None else np.zeros(files.n_inner, bool)
        lost = np.zeros(files.n_inner, bool)
        if expected is not None:  # a chunk partly rewritten that should be there and is not
            here = np.array([f is not None for f in frames])
            lost = expected & ~here & touched_mask & keep & ~bad
        if bad.any() or lost.any():
            problem = (damage.index or "inner chunk checksum mismatch") if bad.any() else \
                "missing where status says the replications ran"
            raise ShardDamaged(files, pos, bad | lost, problem)
    block = files.empty()
    for k in touched:
        if not covered[k] and frames[k] is not None:
            block[files.inner_slices(int(k))] = files.decode_frame(frames[k])
    for in_chunk, part in parts:
        block[in_chunk] = part
    for k in touched:
        frames[k] = files.encode_frame(block[files.inner_slices(int(k))])
    for k in np.flatnonzero(dropped):
        frames[k] = None
    files.write_frames(pos, frames)


def _inner_covered(files: ShardFiles, parts: list) -> np.ndarray:
    """Per inner chunk: whether ``parts`` write every element of it."""
    covered = np.zeros(files.chunks, bool)
    for in_chunk, _ in parts:
        covered[in_chunk] = True
    return np.array([covered[files.inner_slices(k)].all() for k in range(files.n_inner)])


def _dropped(files: ShardFiles, pos: tuple[int, ...], drop: list[tuple[tuple[int, ...], int, int]]) -> list[int]:
    """Inner chunks of shard ``pos`` that ``drop`` ranges (cell, start, stop) cover."""
    out = []
    ncell = len(drop[0][0]) if drop else 0
    for cell, start, stop in drop:
        lo = [p * c for p, c in zip(pos, files.chunks)]
        local = [i - l for i, l in zip(cell, lo[:ncell])]
        if any(not 0 <= x < c for x, c in zip(local, files.chunks[:ncell])):
            continue
        a, b = max(start - lo[ncell], 0), min(stop - lo[ncell], files.chunks[ncell])
        if a >= b:
            continue
        inner = files.inner[ncell]
        for r in range(a // inner, -(-b // inner)):
            idx = tuple(x // c for x, c in zip(local, files.inner[:ncell])) + (r,) + (0,) * (len(files.per_shard) - ncell - 1)
            out.append(int(np.ravel_multi_index(idx, files.per_shard)))
    return out


def _file_handlers(path: Path, arrays: list[zarr.Array]) -> dict[str, ChunkFiles | ShardFiles]:
    """The direct writer of each array that has one (shards, then plain chunk files)."""
    from . import shards

    out: dict[str, ChunkFiles | ShardFiles] = {}
    for a in arrays:
        if shards.supports(a):
            out[a.path] = ShardFiles(path, a)
        elif supports(a):
            out[a.path] = ChunkFiles(path, a)
    return out


def read_whole(files: ChunkFiles | ShardFiles, array: zarr.Array) -> np.ndarray:
    """The whole array through its direct reader; a damaged shard's chunks read as the fill value."""
    if not isinstance(files, ShardFiles):
        return np.asarray(array[...])
    out = np.full(array.shape, files.fill, dtype=files.dtype)
    for pos in itertools.product(*(range(n) for n in files.grid())):
        region = files.region(pos)
        out[region] = files.load(pos)[0][tuple(slice(0, r.stop - r.start) for r in region)]
    return out


def _coalesced(entries: list) -> list:
    """The journal's batches with those that follow each other in one cell joined: one
    write per run of batches, not one per batch, so compacting a thousand batches of one
    replication costs little. Batches that overlap (a replication written twice) are left
    as they are, in journal order, so the last written wins."""
    from .journal import Entry

    runs: list[list[Entry]] = []
    for e in sorted(entries, key=lambda e: (e.cell, e.start)):
        last = runs[-1][-1] if runs else None
        if last is not None and last.cell == e.cell and last.start + last.n > e.start:
            return list(entries)
        if last is not None and last.cell == e.cell and last.start + last.n == e.start:
            runs[-1].append(e)
        else:
            runs.append([e])
    return [run[0] if len(run) == 1 else
            Entry(run[0].cell, run[0].start, {k: np.concatenate([e.values[k] for e in run]) for k in run[0].values})
            for run in runs]


def result_encoding(ds: xr.Dataset, chunk: int) -> dict[str, dict[str, Any]]:
    """xarray's ``to_zarr`` encoding of a store's variables in format 2 (see :func:`_variables`):
    result arrays sharded with checksummed inner chunks, every array with the checksum codec."""
    out: dict[str, dict[str, Any]] = {}
    for name, var in ds.variables.items():
        enc: dict[str, Any] = {"compressors": compressors()}
        if "replication" in var.dims and name != "replication":
            lead = [d for d in var.dims[:var.dims.index("replication")]]
            inner, shard = shard_layout(tuple(ds.sizes[d] for d in lead), ds.sizes["replication"], chunk)
            extra = tuple(ds.sizes[d] for d in var.dims[len(lead) + 1:])
            enc.update(chunks=inner + extra, shards=shard + extra)
        out[name] = enc
    return out


def settle_presence(path: Path) -> None:
    """Make every result array's inner chunks present exactly where ``status`` says a
    replication ran (a store written by xarray drops chunks of only NaN; ours keeps them)."""

    group = open_group(path, "r+")
    names = ["reason", *attrs_of(group).get("metrics", [])]
    files = _file_handlers(path, [group["status"]] + [group[n] for n in names])
    status = read_whole(files["status"], group["status"])
    inner = files["status"].inner[-1]
    ran = any_per_block(status != NOT_RUN, inner)
    for name in ["status", *names]:
        f = files[name]
        cells = status.ndim - 1
        for pos in itertools.product(*(range(n) for n in f.grid())):
            block, _, _ = f.load(pos)
            present = np.zeros(f.per_shard, bool)
            lo = [p * c // i for p, c, i in zip(pos[:cells + 1], f.chunks, f.inner)]
            sel = tuple(slice(a, min(a + k, n)) for a, k, n in zip(lo, f.per_shard, ran.shape))
            part = ran[sel]
            present[tuple(slice(0, n) for n in part.shape)] = part.reshape(part.shape + (1,) * (f.per_shard.__len__() - part.ndim))
            f.write(pos, block, present.ravel())


class Writer:
    """Writes batches into an existing store; the only thing that writes after creation.

    Batches go to the journal (:mod:`pipeline.store.journal`), one record per group, and from it
    into the arrays' files when the journal is compacted (:meth:`compact`): at the end of a
    run (:meth:`flush`), when it grows past ``journal.COMPACT_BYTES``, and when a Writer
    opens a store whose last run was interrupted.
    """

    def __init__(self, path: Path, spec: Spec, module: ModuleType):
        from . import journal

        self.path = path
        self.group = open_group(path, "r+")
        self.metrics = module.METRICS
        self.arrays = {m.name: self.group[m.name] for m in self.metrics}
        self.status = self.group["status"]
        self.reason = self.group["reason"]
        self.seed = self.group["seed"]
        self.cell_seconds = self.group["cell_seconds"]
        self.dim_names = _dim_names(spec)
        self.independent = spec.independent
        # Shards and chunk files are written directly (pipeline.store.shards, pipeline.store.chunkfiles):
        # a tenth of zarr's client CPU per file.
        self._files = _file_handlers(path, [*self.arrays.values(), self.status, self.reason, self.seed,
                                            self.cell_seconds])
        self._journal = path / journal.NAME
        self._order = journal.layout([(m.name, m.shape) for m in self.metrics])
        self._staged: list[journal.Entry] = []  # in the journal, not yet in the arrays' files
        self._staged_bytes = 0
        self._compacted = time.monotonic()
        self._compact_every = journal.COMPACT_SECONDS
        # Seeds and cell seconds are small and shared between batches (one seed row serves
        # every cell under common random numbers; cell seconds may be one chunk): kept here
        # and written as whole files. Seeds are complete from the store's creation (a store
        # made before that, or grown, or whose seed file was damaged, gets them now, once);
        # cell seconds are written every SECONDS_EVERY and by flush(), not with every group:
        # rewriting an existing file costs 1-4 ms of waiting on ext4.
        self._seeds = np.array(self._read(self.seed), dtype=np.uint64)
        if (self._seeds == 0).any():  # a seed is 0 with probability 2**-64: these were never written
            self._seeds = all_seeds(spec)
            _write_round(self._files, _whole_chunks(self.seed, self._seeds, [(slice(None),) * self._seeds.ndim]))
        self._seconds = self._read_seconds()
        self._seconds_due: list[tuple[int, ...]] = []  # cells whose seconds are not on disk yet
        self._seconds_written = time.monotonic()
        self._status = np.array(self._read(self.status), dtype=np.int8)
        self._on_disk = self._status.copy()  # the status compacted into the files (damaged chunks: not run)
        # What compactions found damaged and made 'not run' (a description, the ranges), for
        # the runner to report; the replications run again.
        self.damage: list[tuple[str, list[tuple[tuple[int, ...], int, int]]]] = []
        self._replay()

    def _read(self, array: zarr.Array) -> np.ndarray:
        files = self._files.get(array.path)
        return read_whole(files, array) if files is not None else np.asarray(array[...])

    def _read_seconds(self) -> np.ndarray:
        try:
            return np.array(self._read(self.cell_seconds), dtype=np.float64)  # 0-d for a single cell: still an array
        except (StoreError, ValueError):  # damaged: timing, not results; counted again from 0
            return np.zeros(self.cell_seconds.shape)

    def _replay(self) -> None:
        """Compact what an interrupted run left in the journal (its torn last append is dropped)."""
        from . import journal

        entries, torn = journal.read(self._journal, self._order)
        if not entries and not self._journal.exists():
            return
        for e in entries:
            self._status[e.cell + (slice(e.start, e.start + e.n),)] = e.values["status"]
        self._staged = entries
        self.compact()

    def status_array(self) -> np.ndarray:
        """Every replication's status, batches not yet compacted included."""
        return self._status.copy()

    def cell_status(self, cell: tuple[int, ...]) -> np.ndarray:
        """One cell's status over all replications, batches not yet compacted included."""
        return self._status[cell].copy()

    def cell_values(self, name: str, cell: tuple[int, ...]) -> np.ndarray:
        """One metric of one cell over all replications, batches not yet compacted included."""
        values = np.array(self.arrays[name][cell], dtype=np.float64)
        for e in self._staged:
            if e.cell == cell:
                values[e.start:e.start + e.n] = e.values[name]
        return values

    def chunk(self) -> int:
        return int(attrs_of(self.group).get("chunk") or self.status.chunks[-1])

    def _indep(self, cell: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(i for name, i in zip(self.dim_names, cell) if name in self.independent)

    def seeds(self, cell: tuple[int, ...], start: int, stop: int) -> np.ndarray:
        """The seeds of a cell's replications ``start … stop-1``, as the store holds them."""
        return self._seeds[self._indep(cell) + (slice(start, stop),)].copy()

    def _seconds_writes(self, now: bool) -> list[tuple[zarr.Array, tuple, np.ndarray]]:
        """Whole-chunk writes of the cell seconds not yet on disk: all if ``now``, else only
        once SECONDS_EVERY has passed since the last such write."""
        if not self._seconds_due or not (now or time.monotonic() - self._seconds_written >= SECONDS_EVERY):
            return []
        writes = _whole_chunks(self.cell_seconds, self._seconds, self._seconds_due)
        self._seconds_due, self._seconds_written = [], time.monotonic()
        return writes

    def flush(self) -> None:
        """Compact the journal and write the cell seconds not yet on disk (the end of a run)."""
        self.compact()
        writes = self._seconds_writes(now=True)
        if writes:
            _write_round(self._files, writes)

    def write_batch(self, cell: tuple[int, ...], start: int, seeds: np.ndarray,
                    outputs: dict[str, np.ndarray], failed: dict[int, str], seconds: float) -> None:
        """Write one batch (see :meth:`write_batches`)."""
        self.write_batches([(cell, start, seeds, outputs, failed, seconds)])

    def write_batches(self, batches: list[tuple[tuple[int, ...], int, np.ndarray, dict[str, np.ndarray],
                                                dict[int, Any], float]]) -> None:
        """Write the results of several batches, each ``(cell, start, seeds, outputs, failed, seconds)``.

        The group is one record appended to the journal: every batch's metrics, reasons,
        status and seeds together, valid whole or not at all, so a run killed at any instant
        resumes correctly. Cell seconds are timing, not data: written every SECONDS_EVERY
        and by :meth:`flush` (a kill loses at most that much of their count).
        """
        from . import journal

        entries = []
        for cell, start, seeds, outputs, failed, seconds in batches:
            reason = np.asarray(outputs["reason"], dtype=np.int8)
            code = np.where(reason == 0, OK, NO_RESULT).astype(np.int8)
            code[list(failed)] = FAILED
            values = {m.name: np.asarray(outputs[m.name], dtype=np.float64) for m in self.metrics}
            values.update(reason=reason, status=code, seed=np.asarray(seeds, dtype=np.uint64))
            entries.append(journal.Entry(tuple(cell), int(start), values))
            self._seconds[cell] += seconds
            self._seconds_due.append(cell)
        record = journal.encode(entries, self._order)
        journal.append(self._journal, record, fault_point)
        fault_point()
        for e in entries:
            self._status[e.cell + (slice(e.start, e.start + e.n),)] = e.values["status"]
        self._staged += entries
        self._staged_bytes += len(record)
        seconds = self._seconds_writes(now=False)
        if seconds:
            _write_round(self._files, seconds)
        if self._staged_bytes >= journal.COMPACT_BYTES or time.monotonic() - self._compacted >= self._compact_every:
            self.compact()

    def compact(self, drop: list[tuple[tuple[int, ...], int, int]] = ()) -> None:
        """Write the journal's batches into the arrays' files, status last, then remove the
        journal; ``drop`` (cell, start, stop) ranges are made 'not run' (their chunks removed).

        A shard found damaged where the batches write in part (:class:`ShardDamaged`: its other
        replications would be lost) has those inner chunks dropped too, batches and all, and
        recorded in :attr:`damage`: they run again, from their seeds. Killed at any instant,
        the journal is still there and the next Writer does it again.
        """
        from . import journal

        began = time.monotonic()
        data: list[tuple[zarr.Array, tuple, np.ndarray]] = []
        status: list[tuple[zarr.Array, tuple, np.ndarray]] = []
        seeds_at: list[tuple[int, ...]] = []
        for e in _coalesced(self._staged):
            where = e.cell + (slice(e.start, e.start + e.n),)
            data += [(self.arrays[m.name], where, e.values[m.name]) for m in self.metrics]
            data.append((self.reason, where, e.values["reason"]))
            status.append((self.status, where, e.values["status"]))
            seed_where = self._indep(e.cell) + (slice(e.start, e.start + e.n),)
            if not np.array_equal(self._seeds[seed_where], e.values["seed"]):  # not the spec's seeds (a test's own)
                self._seeds[seed_where] = e.values["seed"]
                seeds_at.append(seed_where)
        if drop:  # a dropped range is rewritten even where no batch writes: its chunks must go
            for cell, start, stop in drop:
                where = tuple(cell) + (slice(start, stop),)
                data += [(a, where, np.full((stop - start, *a.shape[len(where):]), np.nan))
                         for a in self.arrays.values()]
                data.append((self.reason, where, np.zeros(stop - start, np.int8)))
                status.append((self.status, where, np.zeros(stop - start, np.int8)))
                self._status[where] = NOT_RUN
        data += _whole_chunks(self.seed, self._seeds, seeds_at)
        if data or status:
            try:
                _write_round(self._files, data, list(drop), self._expected)
                fault_point()
                _write_round(self._files, status, list(drop), self._expected)
                fault_point()
            except ShardDamaged as exc:  # drop those chunks too and compact again (nothing is lost by that)
                found = sorted(set(self._damaged_ranges(exc)) - set(drop))
                if not found:  # nothing more to drop: a damage this cannot mend
                    raise
                self.damage.append((f"{exc.files.dir.name}: {exc.problem}", found))
                return self.compact([*drop, *found])
        self._journal.unlink(missing_ok=True)
        self._on_disk = self._status.copy()
        self._staged, self._staged_bytes = [], 0
        self._compacted = time.monotonic()
        self._compact_every = max(journal.COMPACT_SECONDS, 10 * (self._compacted - began))

    def _damaged_ranges(self, exc: ShardDamaged) -> list[tuple[tuple[int, ...], int, int]]:
        """(cell, start, stop) of the damaged inner chunks of a result array's shard."""
        files, pos, ncell = exc.files, exc.pos, self.status.ndim - 1
        out = []
        for k in np.flatnonzero(exc.chunks):
            idx = np.unravel_index(int(k), files.per_shard)
            cell = tuple(int(pos[i] * files.chunks[i] + idx[i]) for i in range(ncell))
            start = int(pos[ncell] * files.chunks[ncell] + idx[ncell] * files.inner[ncell])
            out.append((cell, start, min(start + files.inner[ncell], files.shape[ncell])))
        return out

    def _expected(self, files: ShardFiles, pos: tuple[int, ...]) -> np.ndarray | None:
        """Per inner chunk of a result array's shard: whether the status on disk says its
        replications ran (so the chunk must be there); None for the seeds."""
        if files.dir.name == "seed":
            return None
        ncell = self.status.ndim - 1
        ran = any_per_block(self._on_disk != NOT_RUN, files.inner[ncell])
        lo = [p * c // i for p, c, i in zip(pos[:ncell + 1], files.chunks, files.inner)]
        part = ran[tuple(slice(a, a + k) for a, k in zip(lo, files.per_shard[:ncell + 1]))]
        out = np.zeros(files.per_shard, bool)
        out[tuple(slice(0, n) for n in part.shape)] = part.reshape(part.shape + (1,) * (len(files.per_shard) - ncell - 1))
        return out.ravel()

    def add_failures(self, records: list[dict[str, Any]]) -> None:
        """Append failure records to the ``failures`` group (an entry a kill left empty is skipped on reading)."""
        append_failures(self.group, records)

    def set_attrs(self, **attrs: Any) -> None:
        update_attrs(self.group, **attrs)

    def attrs(self) -> dict[str, Any]:
        return attrs_of(self.group)
