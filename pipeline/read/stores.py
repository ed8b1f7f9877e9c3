"""``schedsweep stores``: the catalogue of result stores in folders.

One row per store: its name, spec, workload, dimensions with sizes, completeness,
replications, bytes and files on disk, the schedsweep and code versions that made it, and
when it was created and last written. Only metadata is read: the root ``zarr.json``
attributes, ``status/zarr.json`` (the shape), the listing of the store's files, the
journal's presence and the run lock. A run records its status counts in the root attributes
when it ends (``status_counts``; void while it runs), so completeness costs no chunk read;
a store without them (made before they were recorded, merged, or whose run was stopped) has
its ``status`` array and journal read, and says so (``counted``).

"Damaged" here is what the metadata shows (an unreadable root ``zarr.json``, a result
array without its metadata); a damaged chunk is found only by reading every chunk, which
``schedsweep check STORE`` does.
"""
from __future__ import annotations

import csv
import io
import json
import os
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..store import journal
from ..base.conventions import decode_attrs
from ..base.errors import QueryError
from ..store.zarrstore import STATUS_LABELS, run_in_progress

FORMATS = ("text", "markdown", "csv", "json")
COLUMNS = ("store", "spec", "workload", "dimensions", "replications", "completeness", "bytes", "files",
           "schedsweep", "code", "created", "updated")


@dataclass
class StoreInfo:
    """What the catalogue says of one store (every field from metadata; see the module text)."""

    path: str
    name: str | None = None
    spec_file: str | None = None
    workload: str | None = None
    dims: dict[str, int] = field(default_factory=dict)
    coords: dict[str, list] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    replications: int | None = None
    state: str = "ok"  # ok, failed, incomplete, not run, running, interrupted, damaged, foreign
    counts: dict[str, int] | None = None
    counted: str = ""  # "recorded" (root attributes) or "read from status and journal"
    problem: str | None = None
    bytes: int = 0
    files: int = 0
    schedsweep_version: str | None = None
    code: str | None = None  # the model code's hash, 12 digits
    git_commit: str | None = None
    store_format: int | None = None
    merged_from: int = 0
    created: str | None = None
    updated: str | None = None

    @property
    def completeness(self) -> str:
        if self.problem:
            return f"{self.state}: {self.problem}"
        if not self.counts:
            return self.state
        total = sum(self.counts.values())
        done = self.counts.get("ok", 0) + self.counts.get("no result", 0)
        parts = [f"{done}/{total} done"] + [f"{self.counts[k]} {k}" for k in ("failed", "not run")
                                            if self.counts.get(k)]
        return f"{self.state} ({', '.join(parts)})"

    def row(self, base: Path | None = None) -> dict[str, Any]:
        """The row of the listing (``COLUMNS``)."""
        where = self.path
        if base is not None:
            try:
                where = os.path.relpath(self.path, base)
            except ValueError:
                pass
        dims = " x ".join(f"{d}[{n}]" for d, n in self.dims.items()) or ("(single cell)" if self.name else "")
        code = " ".join(x for x in (self.code and f"code {self.code}",
                                    self.git_commit and f"git {self.git_commit[:10]}") if x)
        return {"store": where, "spec": f"{self.name} ({self.spec_file})" if self.name and self.spec_file else self.name or "", "workload": self.workload or "", "dimensions": dims,
                "replications": "" if self.replications is None else self.replications,
                "completeness": self.completeness, "bytes": self.bytes, "files": self.files,
                "schedsweep": self.schedsweep_version or "", "code": code,
                "created": self.created or "", "updated": self.updated or ""}


# -- finding stores ------------------------------------------------------------------------

def find(paths: Iterable[str | Path]) -> list[Path]:
    """Every store under ``paths``: a folder with a root ``zarr.json``, given or found by
    searching folders recursively (a store's own folders and hidden folders, such as a
    build's leftovers, are not searched). Refuses a path that does not exist."""
    out: list[Path] = []
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise QueryError(f"{p}: no such file or folder (give stores or folders holding them)")
        if not p.is_dir():
            raise QueryError(f"{p}: not a folder; a store is a folder with a zarr.json")
        out += [p] if (p / "zarr.json").is_file() else _search(p)
    unique: dict[Path, Path] = {}  # a store given twice (or found twice) is listed once
    for p in out:
        unique.setdefault(p.resolve(), p)
    return list(unique.values())


def _search(folder: Path) -> list[Path]:
    found = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    for e in entries:
        if e.name.startswith(".") or not e.is_dir():
            continue
        sub = Path(e.path)
        found += [sub] if (sub / "zarr.json").is_file() else _search(sub)
    return found


# -- one store -------------------------------------------------------------------------------

def _walk(path: Path) -> tuple[int, int, set[str]]:
    """(bytes, files, folders holding a zarr.json, relative to the store) of the files under
    ``path``; plain strings, not Path objects: this is most of the catalogue's time."""
    size = files = 0
    arrays: set[str] = set()
    stack = [(str(path), "")]
    while stack:
        folder, rel = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    stack.append((e.path, f"{rel}/{e.name}" if rel else e.name))
                elif e.is_file(follow_symlinks=False):
                    files += 1
                    size += e.stat(follow_symlinks=False).st_size
                    if e.name == "zarr.json":
                        arrays.add(rel or ".")
    return size, files, arrays


def _json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def describe(path: str | Path) -> StoreInfo:
    """The catalogue's entry for the store at ``path`` (metadata only, see the module text)."""
    path = Path(path)
    info = StoreInfo(str(path))
    info.bytes, info.files, arrays = _walk(path)
    meta = _json(path / "zarr.json")
    if meta is None:
        info.state, info.problem = "damaged", "its zarr.json is unreadable"
        return info
    attrs = decode_attrs(meta.get("attributes") or {})
    if "spec_identity" not in attrs:
        info.state, info.problem = "foreign", "a zarr store that schedsweep did not make"
        return info
    _provenance(info, attrs)
    missing = [a for a in ["status", "reason", *attrs.get("metrics", [])] if a not in arrays]
    if missing:
        info.state, info.problem = "damaged", f"no metadata for {', '.join(missing)} (zarr.json missing)"
        return info
    status_meta = _json(path / "status" / "zarr.json")
    if status_meta is None or not isinstance(status_meta.get("shape"), list):
        info.state, info.problem = "damaged", "status/zarr.json is unreadable"
        return info
    names = status_meta.get("dimension_names") or [*attrs.get("dims", []), "replication"]
    info.dims = {d: int(n) for d, n in zip(names, status_meta["shape"]) if d != "replication"}
    _completeness(info, path, attrs)
    return info


def _provenance(info: StoreInfo, attrs: dict[str, Any]) -> None:
    info.name, info.workload = attrs.get("name"), attrs.get("workload")
    spec_path = attrs.get("spec_path")
    info.spec_file = Path(spec_path).name if isinstance(spec_path, str) and spec_path else None
    info.params = dict(attrs.get("params") or {})
    info.replications = attrs.get("replications")
    info.schedsweep_version = attrs.get("schedsweep_version")
    code = attrs.get("code") or {}
    changes = attrs.get("code_changes") or []
    digest = (changes[-1].get("hash") if changes else None) or (code.get("hash") if isinstance(code, dict) else None)
    info.code = digest[:12] if isinstance(digest, str) else None
    info.git_commit = attrs.get("git_commit")
    info.store_format = int(attrs.get("store_format", 1))
    info.merged_from = len(attrs.get("merged_from") or [])
    info.created = attrs.get("created")
    info.updated = attrs.get("last_run_ended") or attrs.get("created")
    try:
        identity = json.loads(attrs.get("spec_identity") or "{}")
    except ValueError:  # a store merged along an independent dimension says so in words
        identity = {}
    for _, members in identity.get("dims", []):
        info.coords.update(members)


def _completeness(info: StoreInfo, path: Path, attrs: dict[str, Any]) -> None:
    running = run_in_progress(path)
    pending = (path / journal.NAME).exists()
    counts = attrs.get("status_counts")
    if isinstance(counts, dict) and not running and not pending:
        info.counts, info.counted = {k: int(counts.get(k, 0)) for k in STATUS_LABELS.values()}, "recorded"
    else:
        info.counts, info.counted = _read_counts(path, attrs), "read from status and journal"
        if info.counts is None:
            info.state, info.problem = "damaged", f"status unreadable (schedsweep check {path} lists where)"
            return
    if pending:
        when = os.path.getmtime(path / journal.NAME)
        import datetime as _dt

        info.updated = _dt.datetime.fromtimestamp(when, _dt.timezone.utc).isoformat(timespec="seconds")
    if running:
        info.state = "running"
    elif pending:
        info.state = "interrupted"  # its journal is compacted by the next run or writer
    elif info.counts.get("failed"):
        info.state = "failed"
    elif info.counts.get("not run") == sum(info.counts.values()):
        info.state = "not run"
    elif info.counts.get("not run"):
        info.state = "incomplete"
    else:
        info.state = "ok"


def _read_counts(path: Path, attrs: dict[str, Any]) -> dict[str, int] | None:
    """Status counts read from the ``status`` array with the journal's batches on top (a
    running or interrupted run's results not yet compacted); None if status is damaged."""
    import numpy as np

    from ..store.zarrstore import open_group

    try:
        status = np.array(open_group(path, "r")["status"][...])
    except Exception:  # noqa: BLE001  (zarr raises several kinds for a damaged chunk or index)
        return None
    for e in pending(path, attrs):
        status[e.cell + (slice(e.start, e.start + e.n),)] = e.values["status"]
    return {label: int((status == code).sum()) for code, label in STATUS_LABELS.items()}


def pending(path: str | Path, attrs: dict[str, Any] | None = None) -> list[journal.Entry]:
    """The batches in the store's journal, written by a run but not yet compacted into its
    arrays (a run going on, or one interrupted): what readers of the arrays do not see yet."""
    path = Path(path)
    if not (path / journal.NAME).exists():
        return []
    if attrs is None:
        attrs = decode_attrs((_json(path / "zarr.json") or {}).get("attributes") or {})
    status = _json(path / "status" / "zarr.json") or {}
    cells = len(status.get("shape") or [])
    shapes = []
    for name in attrs.get("metrics", []):
        meta = _json(path / name / "zarr.json") or {}
        shapes.append((name, tuple(int(n) for n in (meta.get("shape") or [])[cells:])))
    entries, _ = journal.read(path / journal.NAME, journal.layout(shapes))
    return entries


# -- filters ---------------------------------------------------------------------------------

def _value(text: str) -> Any:
    """A --where value as TOML reads it (0.5, 10, true, "x"), else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return float(a) == float(b)
    return a == b or str(a) == str(b)


def parse_where(items: Iterable[str]) -> list[tuple[str, Any]]:
    out = []
    for item in items:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise QueryError(f"--where {item!r}: give KEY=VALUE, a spec parameter or sweep coordinate and its value")
        out.append((key.strip(), _value(text.strip())))
    return out


def matches(info: StoreInfo, workload: str | None, where: list[tuple[str, Any]]) -> bool:
    """A coordinate matches when one of its values equals the value; a parameter when it does."""
    if workload is not None and info.workload != workload:
        return False
    for key, value in where:
        if key in info.coords:
            if not any(_same(v, value) for v in info.coords[key]):
                return False
        elif key not in info.params or not _same(info.params[key], value):
            return False
    return True


def catalogue(paths: Iterable[str | Path], workload: str | None = None, where: Iterable[str] = ()) -> list[StoreInfo]:
    """The stores under ``paths`` that match the filters, in path order.

    A ``where`` key that no store has as a parameter or coordinate is refused (a typo would
    otherwise list nothing, silently)."""
    conditions = parse_where(where)
    infos = [describe(p) for p in find(paths)]
    for key, _ in conditions:
        if infos and not any(key in i.coords or key in i.params for i in infos):
            raise QueryError(f"--where {key}=…: no store listed has a parameter or sweep dimension {key!r}")
    return [i for i in infos if matches(i, workload, conditions)]


# -- output ----------------------------------------------------------------------------------

def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"


def render(infos: list[StoreInfo], fmt: str = "text", base: Path | None = None) -> str:
    """The catalogue as ``fmt``: text (aligned columns), markdown, csv or json (every field)."""
    if fmt not in FORMATS:
        raise QueryError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    if fmt == "json":
        return json.dumps([{**asdict(i), "completeness": i.completeness} for i in infos], indent=1,
                          default=str) + "\n"
    rows = [i.row(base) for i in infos]
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue()
    shown = [{**r, "bytes": _size(r["bytes"])} for r in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(str(r[c]).replace("|", "\\|") for c in COLUMNS) + " |" for r in shown]
        return "\n".join(lines) + "\n"
    if not shown:
        return "no stores\n"
    width = {c: max(len(c), *(len(str(r[c])) for r in shown)) for c in COLUMNS}
    lines = ["  ".join(c.ljust(width[c]) for c in COLUMNS).rstrip()]
    lines += ["  ".join(str(r[c]).ljust(width[c]) for c in COLUMNS).rstrip() for r in shown]
    total = sum(i.bytes for i in infos)
    lines.append(f"{len(infos)} store(s), {_size(total)}")
    return "\n".join(lines) + "\n"
