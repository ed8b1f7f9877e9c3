"""``schedsweep jobs``: the catalogue of sweep specs, with an estimate of their run time here.

The estimate uses the per-replication times that the pilot of an earlier run measured
(the store's ``pilot_seconds_per_rep`` attribute, one value per cell), or, for a store
made without a pilot, the task wall time per finished replication (``cell_seconds``).
Total CPU seconds are divided by the cores of this machine, since ``schedsweep run``
starts one worker per core. Start-up (the Dask cluster, loading or compiling numba
kernels in each worker: seconds) is not included; it matters only for small sweeps.
A spec that does not validate is listed with its error.
"""
from __future__ import annotations

import os
import platform
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .spec import Spec, SpecError, load

UNKNOWN = "unknown — run it once"
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


def format_duration(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h``, ``1.5 d``."""
    if seconds < 90:
        return f"{seconds:.2g} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.2g} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.2g} h"
    return f"{seconds / 86400:.2g} d"


def seconds_per_rep(store: Path, spec: Spec) -> tuple[np.ndarray | None, str]:
    """Per-cell seconds per replication measured in ``store`` (broadcast to the spec's cells)."""
    import zarr

    try:
        group = zarr.open_group(store, mode="r")
    except Exception as exc:  # noqa: BLE001 - any unreadable store just gives no estimate
        return None, f"{store} unreadable: {exc.__class__.__name__}"
    attrs = dict(group.attrs)
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


def estimate(spec: Spec, results: Path) -> tuple[float | None, str]:
    """Estimated wall time of ``spec`` on this machine, and what the estimate is based on."""
    store = results / f"{spec.name}.zarr"
    if not (store / "zarr.json").exists():
        return None, ""
    rate, basis = seconds_per_rep(store, spec)
    if rate is None:
        return None, basis
    return float(rate.sum()) * spec.replications / cores(), basis


def entries(directory: str | Path = "jobs", results: str | Path = "results") -> list[Entry]:
    """Every ``*.toml`` in ``directory``, sorted by file name, loaded and estimated."""
    directory, results = Path(directory), Path(results)
    if not directory.is_dir():
        raise SpecError(f"--dir {str(directory)!r}: no such directory")
    out = []
    for path in sorted(directory.glob("*.toml")):
        try:
            spec = load(path)
        except SpecError as exc:
            out.append(Entry(path, error=str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a broken workload import must not hide the other specs
            out.append(Entry(path, error=f"{path}: {exc.__class__.__name__}: {exc}"))
            continue
        seconds, basis = estimate(spec, results)
        out.append(Entry(path, spec, seconds=seconds, basis=basis))
    return out


def render(items: list[Entry]) -> str:
    """The catalogue as text, one block per spec."""
    lines = []
    for e in items:
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
                  f"    run time: {e.estimate}", ""]
    if not items:
        return "(no specs)\n"
    invalid = sum(e.spec is None for e in items)
    known = [e.seconds for e in items if e.seconds is not None]
    total = f"; {len(known)} with an estimate, ~{format_duration(sum(known))} in all" if known else ""
    lines.append(f"{len(items)} specs, {invalid} invalid{total}")
    return "\n".join(lines) + "\n"
