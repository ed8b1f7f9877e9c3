"""Workload logs by name: the catalogue (``traces.toml``), the trace cache, ``pwa:`` values.

A spec's path parameter may name a catalogued log as ``"pwa:NAME"``; :func:`resolve` turns
it into the file of the trace cache (``schedsweep traces fetch NAME`` puts it there, checked
against the catalogue's SHA-256). The cache is the user cache folder that pooch would use
(``pooch.os_cache("schedsweep")``), or the folder ``SCHEDSWEEP_DATA`` names.

Spec layer: this module loads the standard library only; pooch (and the network stack it
brings) is imported by :func:`fetch` alone, so listings that resolve ``pwa:`` names stay quick.
``SCHEDSWEEP_TRACE_CATALOGUE`` names a TOML file of further entries in the same format (a
private log, a mirror, or a test's loopback server); a name it repeats replaces the shipped
entry.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import SpecError

PREFIX = "pwa:"
DATA_ENV = "SCHEDSWEEP_DATA"
CATALOGUE_ENV = "SCHEDSWEEP_TRACE_CATALOGUE"
TABLE = Path(__file__).with_name("traces.toml")


class TraceError(SpecError):
    """A trace name, download or copy refused; the message is one line for the user."""


class TraceAbsent(TraceError):
    """A catalogued trace that is not in the cache (``path`` is where it would be)."""

    def __init__(self, message: str, path: Path):
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class Trace:
    """One catalogued log. ``size`` in bytes, ``sha256`` of the file as stored (gzip bytes),
    ``jobs`` its data lines, ``max_procs`` its ``; MaxProcs:`` header; ``url`` "" = no download."""

    name: str
    file: str
    url: str
    size: int
    sha256: str
    jobs: int
    max_procs: int
    acknowledge: str
    source: str


_FIELDS = {"file": str, "url": str, "size": int, "sha256": str, "jobs": int, "max_procs": int,
           "acknowledge": str, "source": str}


def _read_table(path: Path) -> tuple[str, dict[str, Trace]]:
    """(citation, {name: Trace}) of a catalogue file; a malformed entry is one line naming it.
    Parsed once per version of the file (a listing resolves many ``pwa:`` values)."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise TraceError(f"{path}: not a readable trace catalogue ({exc.strerror})") from None
    text, entries = _parse_table(str(path), stamp)
    return text, dict(entries)


@functools.lru_cache(maxsize=8)
def _parse_table(where: str, stamp: int) -> tuple[str, dict[str, Trace]]:
    path = Path(where)
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TraceError(f"{path}: not a readable trace catalogue ({exc})") from None
    out = {}
    for name, entry in doc.get("trace", {}).items():
        wrong = [k for k, kind in _FIELDS.items() if not isinstance(entry.get(k), kind)]
        if wrong or set(entry) - set(_FIELDS) or "/" in entry["file"] or len(entry["sha256"]) != 64:
            raise TraceError(f"{path}: trace {name!r}: needs exactly the fields {', '.join(_FIELDS)} "
                             f"(file a bare name, sha256 64 hex digits); wrong or missing: "
                             f"{', '.join(wrong) or 'extra fields, file or sha256'}")
        out[name] = Trace(name=name, **entry)
    return doc.get("citation", ""), out


def citation() -> str:
    """The archive's citation, to give with any result made from a catalogued log."""
    return _read_table(TABLE)[0]


def catalogue() -> dict[str, Trace]:
    """Every known trace by name: the shipped table, then ``SCHEDSWEEP_TRACE_CATALOGUE``'s."""
    entries = _read_table(TABLE)[1]
    extra = os.environ.get(CATALOGUE_ENV)
    if extra:
        entries.update(_read_table(Path(extra))[1])
    return entries


def cache_dir() -> Path:
    """The trace cache: ``SCHEDSWEEP_DATA``, else the user cache folder ``pooch.os_cache``
    gives (platformdirs' user cache of "schedsweep"; computed without importing pooch)."""
    moved = os.environ.get(DATA_ENV)
    if moved:
        return Path(moved).expanduser()
    return _user_cache()


@functools.lru_cache(maxsize=1)
def _user_cache() -> Path:
    import platformdirs  # pooch's own dependency; what pooch.os_cache calls

    return Path(platformdirs.user_cache_dir("schedsweep"))


def entry(name: str) -> Trace:
    """The catalogue entry ``name``; an unknown name is one line listing the known ones."""
    known = catalogue()
    if name not in known:
        raise TraceError(f"unknown trace {name!r}; known: {', '.join(sorted(known))} (schedsweep traces)")
    return known[name]


def cached_path(trace: Trace) -> Path:
    return cache_dir() / trace.file


def is_cached(trace: Trace) -> bool:
    """The file is in the cache at its catalogue size (a quick check; fetch and add hash it)."""
    path = cached_path(trace)
    return path.is_file() and path.stat().st_size == trace.size


def resolve(value: str, base_dir: Path) -> Path:
    """The file a spec's path value names: ``pwa:NAME`` the cached copy of a catalogued log
    (:class:`TraceAbsent` with the fetch command when it is not there), anything else a path
    relative to ``base_dir`` (the spec's folder), not yet checked to exist."""
    if not value.startswith(PREFIX):
        return base_dir / value
    trace = entry(value[len(PREFIX):])
    path = cached_path(trace)
    if not is_cached(trace):
        raise TraceAbsent(f"not in the trace cache ({cache_dir()}); fetch it with: "
                          f"schedsweep traces fetch {trace.name}", path)
    return path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(name: str) -> Path:
    """Download ``name`` into the cache (nothing to do when a copy with its hash is there);
    the downloaded bytes must have the catalogue's SHA-256, else nothing is kept."""
    trace = entry(name)
    if not trace.url:
        raise TraceError(f"trace {name!r}: no download of these exact bytes is known (pipeline/spec/traces.toml "
                         "says where they come from); register a copy with: schedsweep traces add FILE")
    import pooch  # here only: it loads the network stack

    try:
        return Path(pooch.retrieve(trace.url, known_hash=f"sha256:{trace.sha256}", fname=trace.file,
                                   path=cache_dir(), progressbar=False))
    except ValueError as exc:  # pooch's hash check: the message names both hashes, on several lines
        raise TraceError(f"trace {name!r} from {trace.url}: {' '.join(str(exc).split())} "
                         "(nothing kept in the cache)") from None
    except OSError as exc:  # the network, a refused connection, an HTTP error, an unwritable cache
        raise TraceError(f"trace {name!r}: cannot download {trace.url} into {cache_dir()} "
                         f"({' '.join(str(exc).split())})") from None


def _entry_for_file(path: Path, digest: str, name: str | None) -> Trace:
    """The entry a local copy is registered as: the one named, else the one of its hash, else
    the one whose file name it bears; refused when the hash is not that entry's."""
    known = catalogue()
    if name is None:
        by_hash = [t for t in known.values() if t.sha256 == digest]
        if by_hash:
            return by_hash[0]
        by_file = [t for t in known.values() if t.file == path.name]
        if not by_file:
            raise TraceError(f"{path}: sha256 {digest} is no catalogued trace's and its name is none's; "
                             f"known: {', '.join(sorted(known))}")
        trace = by_file[0]
    else:
        trace = entry(name)
    if trace.sha256 != digest:
        raise TraceError(f"{path}: sha256 {digest} is not that of trace {trace.name!r} ({trace.sha256}); "
                         "not registered")
    return trace


def add(path: str | Path, name: str | None = None) -> tuple[Trace, Path]:
    """Copy a local file into the cache as the catalogued trace whose SHA-256 it has."""
    path = Path(path)
    try:
        digest = sha256_of(path)
    except OSError as exc:
        raise TraceError(f"{path}: cannot be read ({exc.strerror})") from None
    trace = _entry_for_file(path, digest, name)
    target = cached_path(trace)
    target.parent.mkdir(parents=True, exist_ok=True)
    # a copy beside the target, then one rename: a reader never sees half a file
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{trace.file}.")
    os.close(fd)
    try:
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return trace, target


def listing() -> str:
    """The catalogue as a table: name, size, jobs, MaxProcs, whether it is in the cache."""
    rows = [("name", "size", "jobs", "MaxProcs", "cached")]
    for t in sorted(catalogue().values(), key=lambda t: t.name):
        cached = "yes" if is_cached(t) else ("no" if t.url else "no (add a copy)")
        rows.append((t.name, f"{t.size / 1e6:.1f} MB", f"{t.jobs:,}", str(t.max_procs), cached))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i in (0, 4) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in rows]
    return "\n".join(lines + ["", f"cache: {cache_dir()} (moved by {DATA_ENV})",
                              "in a spec: trace = \"pwa:NAME\"; cite: " + " ".join(citation().split())]) + "\n"
