"""The resumable zarr result store (shared/spec/pipeline.md §5).

Built once from the spec and the workload's declarations; afterwards only the client
writes, batch by batch, with the zarr API (one open group, no xarray per write). A batch
writes its metrics and reasons first and its ``status`` last, so a store cut off at any
moment holds no replication marked done whose data is missing.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import numpy as np
import xarray as xr
import zarr

from .spec import Spec

NOT_RUN, OK, NO_RESULT, FAILED = 0, 1, 2, 3
STATUS_LABELS = {NOT_RUN: "not run", OK: "ok", NO_RESULT: "no result", FAILED: "failed"}


class StoreError(RuntimeError):
    """The store cannot be used as asked (other spec, locked, not a store)."""


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


def create(path: Path, spec: Spec, module: ModuleType, chunk: int, attrs: dict[str, Any]) -> None:
    """Write an empty store (NaN metrics, status 'not run') for ``spec`` at ``path``."""
    dims = _dim_names(spec)
    shape = spec.shape
    cell_chunks = (1,) * len(dims)
    chunk = int(min(chunk, spec.replications))
    data_vars: dict[str, Any] = {}
    encoding: dict[str, Any] = {}
    for metric in module.METRICS:
        extra_dims = [d for d, _ in metric.dims]
        data_vars[metric.name] = (
            dims + ["replication"] + extra_dims,
            np.full(shape + (spec.replications,) + metric.shape, np.nan),
            {"units": metric.unit, "description": metric.description, "timing": int(metric.timing)},
        )
        encoding[metric.name] = {"chunks": cell_chunks + (chunk,) + metric.shape}
    for name, description in (("status", "0 not run, 1 ok, 2 no result, 3 failed"),
                              ("reason", "the workload's reason code, 0 = none")):
        data_vars[name] = (dims + ["replication"], np.zeros(shape + (spec.replications,), np.int8),
                           {"description": description})
        encoding[name] = {"chunks": cell_chunks + (chunk,)}
    indep_dims = [d.name for d in spec.dims if d.name in spec.independent]
    indep_shape = tuple(len(d) for d in spec.dims if d.name in spec.independent)
    data_vars["seed"] = (indep_dims + ["replication"], np.zeros(indep_shape + (spec.replications,), np.uint64),
                         {"description": "seed handed to the workload for this replication"})
    data_vars["cell_seconds"] = (dims, np.zeros(shape), {"units": "s", "timing": 1,
                                                         "description": "task wall time spent on the cell"})
    ds = xr.Dataset(data_vars, coords=_coords(spec, module), attrs=attrs)
    ds.to_zarr(path, mode="w", zarr_format=3, consolidated=False, encoding=encoding)


def open_store(path: str | Path) -> xr.Dataset:
    """The store at ``path`` as an xarray Dataset (lazy)."""
    path = Path(path)
    if not (path / "zarr.json").exists():
        raise StoreError(f"{path}: not a schedsweep store (no zarr.json)")
    return xr.open_zarr(path, consolidated=False)


def stored_identity(path: Path) -> str | None:
    group = zarr.open_group(path, mode="r")
    return group.attrs.get("spec_identity")


def check_same_spec(path: Path, spec: Spec) -> None:
    identity = stored_identity(path)
    if identity != spec.identity():
        old = json.loads(identity) if identity else {}
        new = json.loads(spec.identity())
        differ = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise StoreError(
            f"{path} was made by a different spec (differs in: {', '.join(differ) or 'everything'}); "
            "give another --store, or delete the store to start over"
        )


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the store for the whole run.

    ``flock`` is released by the kernel when the process dies, so a killed run never
    leaves a stale lock behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            raise StoreError(f"{path} is being written by another schedsweep run ({holder}); wait for it or stop it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        yield
        os.unlink(lock_path)
    finally:
        os.close(fd)


class Writer:
    """Writes batches into an existing store; the only thing that writes after creation."""

    def __init__(self, path: Path, spec: Spec, module: ModuleType):
        self.path = path
        self.group = zarr.open_group(path, mode="r+")
        self.metrics = module.METRICS
        self.arrays = {m.name: self.group[m.name] for m in self.metrics}
        self.status = self.group["status"]
        self.reason = self.group["reason"]
        self.seed = self.group["seed"]
        self.cell_seconds = self.group["cell_seconds"]
        self.dim_names = _dim_names(spec)
        self.independent = spec.independent

    def status_array(self) -> np.ndarray:
        return self.status[...]

    def chunk(self) -> int:
        return int(self.status.chunks[-1])

    def _indep(self, cell: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(i for name, i in zip(self.dim_names, cell) if name in self.independent)

    def write_batch(self, cell: tuple[int, ...], start: int, seeds: np.ndarray,
                    outputs: dict[str, np.ndarray], failed: dict[int, str], seconds: float) -> None:
        """Write one batch: data, then reasons, then status (status last)."""
        stop = start + len(seeds)
        where = cell + (slice(start, stop),)
        for metric in self.metrics:
            self.arrays[metric.name][where] = outputs[metric.name]
        reason = np.asarray(outputs["reason"], dtype=np.int8)
        self.reason[where] = reason
        self.seed[self._indep(cell) + (slice(start, stop),)] = seeds
        status = np.where(reason == 0, OK, NO_RESULT).astype(np.int8)
        for offset in failed:
            status[offset] = FAILED
        self.cell_seconds[cell] = float(self.cell_seconds[cell]) + seconds
        self.status[where] = status

    def add_failures(self, records: list[dict[str, Any]]) -> None:
        if records:
            failures = list(self.group.attrs.get("failures", []))
            self.group.attrs["failures"] = failures + records

    def set_attrs(self, **attrs: Any) -> None:
        self.group.attrs.update(attrs)
