"""``schedsweep upgrade``: a store written before checksums (format 1) rewritten in the
checksummed format of today (sharded, a CRC-32C per chunk: :mod:`pipeline.store.shards`), its
values unchanged.

The new store is built beside the old one (``.NAME.schedsweep-build-PID``, which a later run
removes if this one is killed) and swapped with it in one rename (``RENAME_EXCHANGE``), so a
kill at any instant leaves the old store or the new one at the store's path. What a format-1
scan finds damaged (a chunk that does not decode, a metric's chunk missing where status
says ok) is written as 'not run', so the next run reruns it from its seeds.
"""
from __future__ import annotations

import ctypes
import os
import shutil
from pathlib import Path

import numpy as np

from . import integrity, journal, zarrstore as store_mod
from .chunkfiles import ChunkFiles, supports
from ..base.conventions import encode_attrs


def upgrade(path: str | Path) -> int | None:
    """Rewrite the format-1 store at ``path`` in format 2; None if it is format 2 already, else
    the number of replications of damaged chunks written as not run. The caller holds the lock."""
    path = Path(path)
    report = integrity.scan(path)
    if report.store_format >= 2:
        return None
    ds = store_mod.open_dataset(path)
    group = store_mod.open_group(path)
    names = [n for n in ds.data_vars]
    for name in names:  # read through our chunk reader: a chunk that does not decode reads as the fill value
        ds[name] = (ds[name].dims, _read(path, group[name]), ds[name].attrs)
    dims = tuple(ds.attrs.get("dims", []))
    blocks = sorted({b for d in report.damages for b in d.blocks})
    for cell, start, stop in blocks:  # damaged: written as not run (NaN, reason 0, status 0)
        where = tuple(cell) + (slice(start, stop),)
        for name in names:
            if ds[name].dims[:len(dims) + 1] == dims + ("replication",):  # not seed, not cell seconds
                ds[name].values[where] = np.nan if ds[name].dtype.kind == "f" else 0
    chunk = int(ds.attrs.get("chunk") or group["status"].chunks[-1])
    ds.attrs = encode_attrs({**ds.attrs, "store_format": store_mod.STORE_FORMAT})
    for v in ds.variables:
        ds[v].encoding = {}
    real = path.resolve()
    build = real.parent / f".{real.name}{store_mod.BUILD_TAG}{os.getpid()}"
    shutil.rmtree(build, ignore_errors=True)
    ds.to_zarr(build, mode="w-", zarr_format=3, consolidated=False,
               encoding=store_mod.result_encoding(ds, chunk))
    store_mod.settle_presence(build)  # chunks present where replications ran, as the check expects
    records = store_mod.read_failures(path, current=False)
    if records:
        store_mod.append_failures(store_mod.open_group(build, "r+"), records)
    if (path / journal.NAME).exists():  # an interrupted run's batches: the next run copies them
        shutil.copy2(path / journal.NAME, build / journal.NAME)
    store_mod.consolidate(build)
    store_mod.fault_point()
    _exchange(build, real)
    store_mod.fault_point()
    shutil.rmtree(build)  # the old store, now under the build's name
    return sum(stop - start for _, start, stop in blocks)


def _read(path: Path, array) -> np.ndarray:
    """A whole array of a format-1 store, chunk by chunk (a chunk that does not decode: the fill value)."""
    import itertools

    if not supports(array):
        return np.asarray(array[...])
    files = ChunkFiles(path, array)
    out = np.full(files.shape, files.fill, dtype=files.dtype)
    for pos in itertools.product(*(range(-(-n // c)) for n, c in zip(files.shape, files.chunks))):
        region = files.region(pos)
        try:
            block = files.read(pos)
        except Exception:  # noqa: BLE001 - reported by the scan; rerun, not copied
            continue
        out[region] = block[tuple(slice(0, r.stop - r.start) for r in region)]
    return out.astype(array.dtype)


RENAME_EXCHANGE = 2  # linux/fs.h


def _exchange(a: Path, b: Path) -> None:
    """Swap two folders in one step (Linux renameat2); elsewhere two renames."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        renameat2 = None
    if renameat2 is not None:
        at_fdcwd = -100
        if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), RENAME_EXCHANGE) == 0:
            return
    aside = b.with_name(b.name + f".schedsweep-old-{os.getpid()}")
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)
