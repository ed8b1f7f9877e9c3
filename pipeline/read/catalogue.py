"""``schedsweep jobs``: the catalogue of sweep specs, with an estimate of their run time here.

The estimate uses the per-replication times that the pilot of an earlier run measured
(the store's ``pilot_seconds_per_rep`` attribute, one value per cell), or, for a store
made without a pilot, the task wall time per finished replication (``cell_seconds``).
Total CPU seconds are divided by the cores of this machine, since ``schedsweep run``
starts one worker per core. Start-up (the Dask cluster, loading or compiling numba
kernels in each worker: seconds) is not included; it matters only for small sweeps.
A spec that does not validate is listed with its error.

A spec never run here gets its estimate from a pilot: ``schedsweep jobs --estimate`` runs a
few replications of a few cells of every such spec in this process and caches the time per
replication in ``<results>/.schedsweep-estimates.json``, keyed by the spec's identity, the
workload's source code and this host; plain ``schedsweep jobs`` only reads that cache, so
it stays fast. A changed spec or model invalidates its entry.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import textwrap
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..spec.sweep import Spec, SpecError, load, plugin_modules, workload_of
from ..base.terminal import format_duration

UNKNOWN = "unknown — schedsweep jobs --estimate runs a short pilot"
CACHE_NAME = ".schedsweep-estimates.json"
PILOT_CELLS = 6          # cells piloted per spec, along the sweep's diagonal
PILOT_SECONDS = 1.0      # per piloted cell, after the first (untimed) replication
WIDTH = 100  # description lines are wrapped to this many characters


@dataclass
class Entry:
    """One spec of the catalogue: either ``spec`` or ``error`` is set."""

    path: Path
    spec: Spec | None = None
    error: str | None = None
    seconds: float | None = None  # estimated wall time on this machine
    basis: str = ""  # where the estimate comes from

    @property
    def estimate(self) -> str:
        if self.seconds is None:
            return UNKNOWN if not self.basis else f"unknown ({self.basis})"
        return f"~{format_duration(self.seconds)} of computing on {cores()} cores, plus start-up ({self.basis})"


def cores() -> int:
    return os.cpu_count() or 1


def seconds_per_rep(store: Path, spec: Spec) -> tuple[np.ndarray | None, str]:
    """Per-cell seconds per replication measured in ``store`` (broadcast to the spec's cells)."""
    from ..store.zarrstore import attrs_of, open_group as store_open_group

    try:
        group = store_open_group(store, "r")
    except Exception as exc:  # noqa: BLE001 - any unreadable store just gives no estimate
        return None, f"{store} unreadable: {exc.__class__.__name__}"
    attrs = attrs_of(group)
    where = "" if attrs.get("host") in (None, platform.node()) else f" on {attrs['host']}"
    pilot = attrs.get("pilot_seconds_per_rep")
    if pilot is not None:
        return _fit(np.asarray(pilot, dtype=float), spec), f"pilot rate from {store}{where}"
    try:
        cell_seconds = np.asarray(group["cell_seconds"][...], dtype=float)
        done = (np.asarray(group["status"][...]) != 0).sum(axis=-1)
    except KeyError:
        return None, f"{store} has no timings"
    if done.sum() == 0:
        return None, f"{store} has no finished replications"
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(done > 0, cell_seconds / np.maximum(done, 1), np.nan)
    return _fit(rate, spec), f"measured rate from {store}{where}"


def _fit(rate: np.ndarray, spec: Spec) -> np.ndarray | None:
    """The store's per-cell rates for the spec's cells; the mean rate if the shapes differ."""
    finite = rate[np.isfinite(rate)]
    if finite.size == 0:
        return None
    if rate.shape == spec.shape:
        return np.where(np.isfinite(rate), rate, finite.mean())
    return np.full(spec.shape, finite.mean())


@lru_cache(maxsize=None)
def code_hash(module_name: str) -> str:
    """SHA-256 of a module's source files as the store's code identity finds them
    (``codehash.code_files``: the module and what it imports of its own package)."""
    import importlib

    from ..base.codehash import code_files

    files, _ = code_files(importlib.import_module(module_name))
    h = hashlib.sha256()
    for key, f in sorted(files.items()):
        h.update(key.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def cache_key(spec: Spec) -> str:
    """What a cached pilot is valid for: the spec's identity, the model's code and that of
    the plug-ins it names (a plug-in edit changes the speed as much as a model edit), this host."""
    modules = [workload_of(spec).__name__] + [m.__name__ for m in plugin_modules(spec)]
    doc = "\n".join([spec.identity(), *map(code_hash, modules), platform.node()])
    return hashlib.sha256(doc.encode()).hexdigest()[:32]


def read_cache(results: Path) -> dict:
    try:
        data = json.loads((results / CACHE_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_cache(results: Path, cache: dict) -> None:
    """Replace the cache file whole (write then rename: a reader never sees half a file)."""
    results.mkdir(parents=True, exist_ok=True)
    tmp = results / f"{CACHE_NAME}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
    os.replace(tmp, results / CACHE_NAME)


def pilot_cells(spec: Spec, k: int = PILOT_CELLS) -> list[tuple[int, ...]]:
    """Up to ``k`` cells along the sweep's diagonal: cell i takes value i mod len(dim) of every
    dimension, so the longest dimension's values (up to ``k``, spread) are each piloted once and
    every other dimension's values as often as they fit (an algorithm dimension is not left out
    the way a few cells of a C-order scan would leave it)."""
    if not spec.shape:
        return [()]
    main = int(np.argmax(spec.shape))
    longest = spec.shape[main]
    steps = sorted({round(i * (longest - 1) / max(min(k, longest) - 1, 1)) for i in range(min(k, longest))})
    return [tuple(step if d == main else j % n for d, n in enumerate(spec.shape)) for j, step in enumerate(steps)]


def pilot(spec: Spec, seconds: float = PILOT_SECONDS) -> float:
    """Mean seconds per replication over the piloted cells, run here, in this process.

    Per cell: one replication first (it pays imports and kernel loading, untimed), then
    batches of doubling size until ``seconds`` are spent; the last batch gives the rate.
    """
    from ..base.seeding import replication_seeds

    module = workload_of(spec)
    rates = []
    for index in pilot_cells(spec):
        params = spec.cell_params(index)
        _timed_batch(module, params, spec, 0, 1)
        done, size, spent, rate = 1, 1, 0.0, float("nan")
        while spent < seconds and done < spec.replications + 1:
            t0 = time.perf_counter()
            _timed_batch(module, params, spec, done, done + size)
            elapsed = time.perf_counter() - t0
            spent, rate, done, size = spent + elapsed, elapsed / size, done + size, size * 2
        rates.append(rate)
    finite = [r for r in rates if np.isfinite(r)]
    return float(np.mean(finite)) if finite else float("nan")


def _timed_batch(module: Any, params: dict, spec: Spec, start: int, stop: int) -> None:
    """Replications ``start..stop`` of a cell, for their time. A workload that takes the
    replication indices (``TAKES_REPLICATIONS``) is given them modulo the spec's replications:
    the doubling batches may reach past the last, which such a workload may refuse (a
    trace's windows); the time per replication is what is measured."""
    from ..base.seeding import replication_seeds

    seeds = replication_seeds(spec.seed, start, stop)
    if getattr(module, "TAKES_REPLICATIONS", False):
        module.run_batch(params, seeds, np.arange(start, stop, dtype=np.int64) % spec.replications)
    else:
        module.run_batch(params, seeds)


def cached_estimate(spec: Spec, cache: dict) -> tuple[float | None, str]:
    entry = cache.get(cache_key(spec))
    if not entry:
        return None, ""
    if entry.get("error"):
        return None, f"pilot failed: {entry['error']}"
    rate = float(entry["seconds_per_rep"])
    return rate * spec.n_cells * spec.replications / cores(), \
        f"pilot of {entry['cells']} cells, {entry['measured']}"


def shipped_estimate(spec: Spec) -> tuple[float | None, str]:
    """The estimate shipped with a spec of ours (``jobs/estimates.json``), scaled to this machine's cores."""
    from ..spec.estimates import spec_seconds_per_rep

    rate = spec_seconds_per_rep(Path(spec.path).name, spec.text)
    if rate is None:
        return None, ""
    return rate * spec.n_cells * spec.replications / cores(), \
        f"{rate:.3g} s per replication on one core of the reference machine, jobs/estimates.json"


def estimate(spec: Spec, results: Path, cache: dict | None = None) -> tuple[float | None, str]:
    """Estimated wall time of ``spec`` on this machine, and what the estimate is based on:
    a store of an earlier run, else a pilot cached here, else the estimate shipped with the spec."""
    store = results / f"{spec.name}.zarr"
    if not (store / "zarr.json").exists():
        seconds, basis = cached_estimate(spec, cache) if cache else (None, "")
        if seconds is None and not basis:
            seconds, basis = shipped_estimate(spec)
        return seconds, basis
    rate, basis = seconds_per_rep(store, spec)
    if rate is None:
        return None, basis
    return float(rate.sum()) * spec.replications / cores(), basis


def run_pilots(specs: list[Spec], results: Path, seconds: float = PILOT_SECONDS) -> None:
    """Pilot every spec that has neither a store nor a cached pilot; cache each as it ends."""
    from schedsweep.workloads.kernel_support.stdio import stdout_to_stderr

    cache = read_cache(results)
    for spec in specs:
        if (results / f"{spec.name}.zarr" / "zarr.json").exists() or cache_key(spec) in cache:
            continue
        print(f"schedsweep jobs: piloting {spec.path} ({len(pilot_cells(spec))} cells)", file=sys.stderr, flush=True)
        entry: dict = {"cells": len(pilot_cells(spec)), "measured": time.strftime("%Y-%m-%d"),
                       "host": platform.node(), "spec": spec.path}
        try:
            with stdout_to_stderr():  # a model's own prints (solver banners) must not mix into the catalogue
                rate = pilot(spec, seconds)
            if not np.isfinite(rate):
                raise ValueError("no timed batch")
            entry["seconds_per_rep"] = rate
        except Exception as exc:  # noqa: BLE001 - one failing model must not stop the catalogue
            entry["error"] = f"{exc.__class__.__name__}: {' '.join(str(exc).split())[:200]}"
        cache[cache_key(spec)] = entry
        write_cache(results, cache)


def entries(directory: str | Path = "jobs", results: str | Path = "results", run_pilot: bool = False,
            pilot_seconds: float = PILOT_SECONDS) -> list[Entry]:
    """Every ``*.toml`` in ``directory``, sorted by file name, loaded and estimated
    (``run_pilot``: pilot the specs without an estimate first)."""
    directory, results = Path(directory), Path(results)
    if not directory.is_dir() and str(directory) == "jobs":  # outside a checkout: the shipped specs
        from ..base.shipped import folder

        directory = folder("jobs")
    if not directory.is_dir():
        raise SpecError(f"--dir {str(directory)!r}: no such directory")
    out: list[Entry] = []
    for path in sorted(directory.glob("*.toml")):
        try:
            spec = load(path, shallow=True)  # the listing in a second; a run checks every cell
        except SpecError as exc:
            out.append(Entry(path, error=str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a broken workload import must not hide the other specs
            out.append(Entry(path, error=f"{path}: {exc.__class__.__name__}: {exc}"))
            continue
        out.append(Entry(path, spec))
    if run_pilot:
        run_pilots([e.spec for e in out if e.spec is not None], results, pilot_seconds)
    cache = read_cache(results)
    for e in out:
        if e.spec is not None:
            e.seconds, e.basis = estimate(e.spec, results, cache)
    return out


def _reproduces(spec: Spec) -> list[str]:
    """'reproduces: …' with the number of published values and claims the spec holds us to."""
    from ..spec.reference import from_spec_text

    ref = from_spec_text(spec.text, spec.path)
    if not ref:
        return []
    held = f" ({len(ref.values)} published values, {len(ref.claims)} claims)" if ref.values or ref.claims else ""
    return [f"    reproduces: {ref.reproduces or '(not named)'}{held}"]


def render(items: list[Entry], long: bool = False) -> str:
    """The catalogue as text: one line per spec, or (``long``) one block per spec with its
    description, size and what it reproduces."""
    lines = _short_lines(items) if not long else []
    for e in items if long else ():
        if e.spec is None:
            lines += [f"{e.path.name}: INVALID", f"    {e.error}", ""]
            continue
        s = e.spec
        dims = " × ".join(f"{d.name}[{len(d)}]" for d in s.dims) or "single cell"
        lines += [f"{e.path.name}: {s.name}  (workload {s.workload})",
                  textwrap.fill(s.description or "(no description)", width=WIDTH, initial_indent="    ",
                                subsequent_indent="    "),
                  f"    {s.replications} replications × {s.n_cells} cells ({dims}) = "
                  f"{s.replications * s.n_cells} runs",
                  *_reproduces(s),
                  f"    run time: {e.estimate}", ""]
    if not items:
        return "(no specs)\n"
    if not long:
        lines.append("")
    invalid = sum(e.spec is None for e in items)
    known = [e.seconds for e in items if e.seconds is not None]
    total = f"; {len(known)} with an estimate, ~{format_duration(sum(known))} in all" if known else ""
    unknown = sum(e.spec is not None and e.seconds is None for e in items)
    if unknown and not long:
        total += f"; {unknown} without: schedsweep jobs --estimate runs a short pilot"
    lines.append(f"{len(items)} specs, {invalid} invalid{total}" + ("" if long else "; -v for descriptions"))
    return "\n".join(lines) + "\n"


def _short_lines(items: list[Entry]) -> list[str]:
    """One line per spec: file, workload, cells × replications, estimated time."""
    width = max((len(e.path.name) for e in items), default=0)
    out = []
    for e in items:
        if e.spec is None:
            out.append(f"{e.path.name:<{width}}  INVALID: {' '.join(str(e.error).split())}")
            continue
        s = e.spec
        when = f"~{format_duration(e.seconds)}" if e.seconds is not None else "time unknown"
        out.append(f"{e.path.name:<{width}}  {s.workload:<13} {s.n_cells:>4} cells × {s.replications:<5} {when}")
    return out
