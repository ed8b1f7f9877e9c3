"""A small mm1 sweep's store and the ways its files are damaged, shared by the integrity and
repair tests (tests/test_store_integrity.py, tests/test_store_repair.py)."""
from __future__ import annotations

from pathlib import Path

import xarray as xr

from schedsweep import pipeline

#: 2 cells x 8 replications of a short mm1 queue: one shard file per array.
SPEC = """
name = "{name}"
workload = "mm1"
replications = 8
seed = {seed}
[params]
customers = 200
warmup = 20
[sweep]
arrival_rate = [0.3, 0.6]
"""
KEEP = ["mean_wait", "mean_time_in_system", "time_in_system_quantiles", "status", "reason", "seed"]


def reference(folder: Path, name: str, seed: int, batch: int) -> tuple[Path, Path]:
    """(spec, store) of an undamaged run of the sweep, written in ``folder``."""
    spec = folder / f"{name}.toml"
    spec.write_text(SPEC.format(name=name, seed=seed))
    return spec, run(spec, folder / "ref.zarr", batch)


def run(spec: Path, store: Path, batch: int) -> Path:
    return pipeline.run(spec, store, workers=0, batch_size=batch, progress=False)


def plain(path: Path) -> xr.Dataset:
    """The results of a store without its attributes (which say when and how it was run)."""
    ds = pipeline.open_store(path)[KEEP].load()
    ds.attrs = {}
    return ds


def shard(store: Path, name: str) -> Path:
    """The one shard file of array ``name``."""
    files = sorted(p for p in (store / name / "c").rglob("*") if p.is_file())
    assert len(files) == 1, files
    return files[0]


def flip(path: Path, at: int) -> None:
    """Flip every bit of the byte at ``at`` (negative: from the end)."""
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
