"""How big a sweep is before it runs: cells, runs, the store's files and bytes, the client's memory.

``files_and_bytes`` counts from a chunk layout alone (each array's shape, chunk shape and
bytes per value), so a change of the store's layout changes only ``store_layout``, which
mirrors ``pipeline.store._variables``. The client's memory grows with the number of cells
(a parameter record, batch records and, on Dask, a future per task) and of runs (status,
seeds): a sweep it cannot hold is refused when its spec is read, before anything is built.
"""
from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .errors import SpecError

# Client bytes per cell: its parameter dict (about 400 B measured for 4 parameters: `dict(spec.cells())`
# at 2**20 cells), its batch records and a Dask future per task; and per run: the int8 status, the
# to-do mask and a share of the uint64 seeds. A 10**7-cell sweep reached 5 GB in the client.
CELL_BYTES = 2_000
RUN_BYTES = 16
MEMORY_SHARE = 0.5  # of the memory available now: the rest is for the workers, the OS and other users
CHECK_ABOVE = 256 * 2 ** 20  # below this estimate no need to look at the machine's memory
MANY_FILES = 1_000_000  # a store with more files than this is warned about (parallel file systems)


@dataclass(frozen=True)
class ArrayLayout:
    """One array of a store: its shape, its chunk shape and bytes per value."""
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    itemsize: int


@dataclass(frozen=True)
class Size:
    """A sweep's size: cells, runs (cells x replications), the store's files and bytes
    (uncompressed: an upper bound) and the client's memory in bytes (an estimate)."""
    cells: int
    runs: int
    files: int
    bytes: int
    client_bytes: int


def files_and_bytes(layout: Iterable[ArrayLayout]) -> tuple[int, int]:
    """(files, bytes) of a complete store with these arrays: one metadata file per array and
    the root's, one file per chunk; bytes uncompressed, edge chunks whole (as zarr stores them)."""
    files, nbytes = 1, 0
    for a in layout:
        n = math.prod(-(-s // c) for s, c in zip(a.shape, a.chunks))
        files += 1 + n
        nbytes += n * math.prod(a.chunks) * a.itemsize
    return files, nbytes


def store_layout(spec: Any, module: Any, chunk: int) -> list[ArrayLayout]:
    """The arrays of ``pipeline.store`` for ``spec`` with ``chunk`` replications per chunk:
    per metric, status and reason one chunk per cell and block of replications; the seeds
    and cell seconds in chunks of at most 2**17 values (close to zarr's automatic choice)."""
    reps = spec.replications
    cell = (1,) * len(spec.dims) + (max(1, min(chunk, reps)),)
    shape = spec.shape + (reps,)
    arrays = [ArrayLayout(shape + m.shape, cell + m.shape, 8) for m in module.METRICS]
    arrays += [ArrayLayout(shape, cell, 1), ArrayLayout(shape, cell, 1)]  # status, reason
    indep = tuple(len(d) for d in spec.dims if d.name in spec.independent)
    arrays.append(ArrayLayout(indep + (reps,), (1,) * len(indep) + (min(reps, 2 ** 17),), 8))
    arrays.append(ArrayLayout((spec.n_cells,), (min(spec.n_cells, 2 ** 17),), 8))  # cell_seconds
    arrays += [ArrayLayout((len(d),), (len(d),), 8) for d in spec.dims for _ in d.members]
    arrays.append(ArrayLayout((reps,), (reps,), 8))  # the replication coordinate
    return arrays


def client_bytes(n_cells: int, replications: int) -> int:
    """Estimated memory of the client for a sweep (bytes)."""
    return n_cells * CELL_BYTES + n_cells * replications * RUN_BYTES


def size(spec: Any, module: Any, chunk: int) -> Size:
    """The sweep's size with ``chunk`` replications per chunk."""
    files, nbytes = files_and_bytes(store_layout(spec, module, chunk))
    runs = spec.n_cells * spec.replications
    return Size(spec.n_cells, runs, files, nbytes, client_bytes(spec.n_cells, spec.replications))


def available_memory() -> int:
    """Bytes of memory available now (Linux MemAvailable), else the machine's physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_client_memory(where: str, n_cells: int, replications: int) -> None:
    """Refuse (SpecError) a sweep whose client would need more than MEMORY_SHARE of the
    memory available now."""
    need = client_bytes(n_cells, replications)
    if need <= CHECK_ABOVE:
        return
    have = available_memory()
    if need > MEMORY_SHARE * have:
        raise SpecError(f"{where}: {n_cells:,} cells x {replications:,} replications needs about {gb(need)} of "
                        f"memory in the client, more than half of the {gb(have)} available here; "
                        "sweep fewer values (split it into several specs; schedsweep merge joins their stores)")


def disk_warning(path: Path, nbytes: int, files: int) -> str | None:
    """A one-line warning when a new store of ``nbytes`` may not fit where it goes, or has
    very many files; None otherwise."""
    parent = Path(path).resolve().parent
    while not parent.exists():
        parent = parent.parent
    free = shutil.disk_usage(parent).free
    if nbytes > free:
        return (f"{path}: the store may need up to {gb(nbytes)} (uncompressed) and {parent} has {gb(free)} free; "
                "a run that fills the disk stops with a message and resumes once there is room")
    if files > MANY_FILES:
        return f"{path}: the store will hold about {files:,} files; a parallel file system may suffer (README \"Sizing\")"
    return None


def gb(nbytes: float) -> str:
    """``nbytes`` for people: '3.2 GB', '512 MB', '12 kB'."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} B"


def describe(s: Size, chunk: int, more: Size | None = None) -> list[str]:
    """Lines for ``run --dry-run`` and ``show SPEC``: ``s`` at ``chunk`` replications per chunk;
    ``more``, the size at chunk 1, when the pilot, not the spec, will choose the chunk."""
    files = f"about {s.files:,} ({chunk} replications per chunk)" if more is None else \
        f"about {s.files:,} (one chunk per cell) to {more.files:,} (one per replication; the pilot chooses)"
    return [f"cells:       {s.cells:,}",
            f"runs:        {s.runs:,} ({s.cells:,} cells x {s.runs // max(s.cells, 1):,} replications)",
            f"store files: {files}",
            f"store bytes: at most {gb(max(s.bytes, more.bytes if more else 0))} (uncompressed)",
            f"client:      about {gb(s.client_bytes)} of memory"]
