"""How big a sweep is before it runs (cells, runs, the store's files and bytes), and how long a task is.

``files_and_bytes`` counts from a layout alone (each array's shape, the shape of the part
of it one file holds, and bytes per value), so a change of the store's layout changes only
``store_layout``, which mirrors ``pipeline.store.zarrstore._variables``. The client's memory
is the spec's limit (``pipeline.spec.limits``); it is counted here in ``size``.
"""
from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..spec.limits import client_bytes, gb

MANY_FILES = 1_000_000  # a store with more files than this is warned about (parallel file systems)


@dataclass(frozen=True)
class TaskCost:
    """CPU seconds one task costs the client (taking its result, writing the store) and the
    scheduler (taking it in, sending it out, its result's message back), and whether the two
    share one process, whose core then carries both."""
    client: float
    scheduler: float = 0.0
    shared: bool = False

    def busiest(self) -> float:
        """CPU seconds per task of the busiest process."""
        return self.client + self.scheduler if self.shared else max(self.client, self.scheduler)


# Per route, the upper ends measured, rounded up. local: the client's threads and store
# writes, no scheduler (benchmarks/bench_tasks.py). dask and slurm: client and scheduler in
# processes of their own; the highest of sleeping replications on 16 and 32 workers of
# --cluster dask (benchmarks/bench_workers.py, benchmarks/results/workers.json: client 2.72 ms,
# scheduler 3.51 ms, on 2 cores shared by all) and of Slurm over TLS on the local test Slurm
# (bench_tasks --slurm, benchmarks/results/bench_tasks_slurm.json: client 1.13 ms, scheduler
# 1.52 ms), so that both routes are sized for many workers.
TASK_COST = {"local": TaskCost(client=1.6e-3),
             "dask": TaskCost(client=2.8e-3, scheduler=3.6e-3),
             "slurm": TaskCost(client=2.8e-3, scheduler=3.6e-3)}
PROCESS_SHARE = 0.5  # of one core that the tasks may keep the client, or the scheduler, busy


def task_seconds(work: float, workers: int, batch_seconds: float, cost: TaskCost,
                 tasks_per_worker: int = 8) -> float:
    """Seconds one task should take: ``batch_seconds``, shortened so that each worker gets
    ``tasks_per_worker`` tasks of a short sweep (no idle tail), but never so short that
    ``workers`` finishing tasks keep the client or the scheduler busier than PROCESS_SHARE of
    a core: ``workers / T * c <= PROCESS_SHARE`` for c each of ``cost.client`` and
    ``cost.scheduler`` (their sum when they share a process). ``work`` is the sweep's CPU seconds.

    Then lengthened to whole rounds: ``work / (workers * T)`` tasks per worker rounded down to
    an integer (where it is at least 1), so the last round keeps every worker busy as the
    others do. Without it, 10**4 s of work on 1,000 workers in tasks of 3 s is 3.3 rounds,
    the fourth a third full: 83% busy at best; in 3 rounds of 3.3 s, all of it."""
    workers = max(workers, 1)
    spread = min(batch_seconds, max(work / (tasks_per_worker * workers), 1e-3))
    t = max(spread, workers * cost.busiest() / PROCESS_SHARE)
    rounds = math.floor(work / (workers * t) * (1 + 1e-12))  # 15.000000000000002 rounds are 15
    return work / (workers * rounds) if rounds >= 1 else t


@dataclass(frozen=True)
class ArrayLayout:
    """One array of a store: its shape, the shape one file holds (``chunks``: a shard, or a
    chunk of an unsharded array) and bytes per value."""
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
    the root's, one data file per block of ``chunks``; bytes uncompressed, edge blocks counted
    whole (an upper bound)."""
    files, nbytes = 1, 0
    for a in layout:
        n = math.prod(-(-s // c) for s, c in zip(a.shape, a.chunks))
        files += 1 + n
        nbytes += n * math.prod(a.chunks) * a.itemsize
    return files, nbytes


def store_layout(spec: Any, module: Any, chunk: int) -> list[ArrayLayout]:
    """The arrays of ``pipeline.store.zarrstore`` for ``spec`` with batches of ``chunk`` replications,
    each with its file unit: per metric, status, reason and seed the shard
    (``shards.shard_layout``: blocks of cells x replications, one file each); cell seconds and
    the coordinates one file each."""
    from ..store.shards import shard_layout

    reps = spec.replications
    shape = spec.shape + (reps,)
    shard = shard_layout(spec.shape, reps, chunk)[1]
    arrays = [ArrayLayout(shape + m.shape, shard + m.shape, 8) for m in module.METRICS]
    arrays += [ArrayLayout(shape, shard, 1), ArrayLayout(shape, shard, 1)]  # status, reason
    indep = tuple(len(d) for d in spec.dims if d.name in spec.independent)
    arrays.append(ArrayLayout(indep + (reps,), shard_layout(indep, reps, chunk)[1], 8))  # seed
    arrays.append(ArrayLayout(spec.shape, spec.shape, 8))  # cell_seconds
    arrays += [ArrayLayout((len(d),), (len(d),), 8) for d in spec.dims for _ in d.members]
    arrays.append(ArrayLayout((reps,), (reps,), 8))  # the replication coordinate
    extra = {d: len(labels) for m in module.METRICS for d, labels in m.dims}  # e.g. a quantile coordinate
    arrays += [ArrayLayout((n,), (n,), 8) for n in extra.values()]
    return arrays


def size(spec: Any, module: Any, chunk: int) -> Size:
    """The sweep's size with ``chunk`` replications per chunk."""
    files, nbytes = files_and_bytes(store_layout(spec, module, chunk))
    runs = spec.n_cells * spec.replications
    return Size(spec.n_cells, runs, files, nbytes, client_bytes(spec.n_cells, spec.replications))


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
        return f"{path}: the store will hold about {files:,} files; a parallel file system may suffer (docs/running-on-slurm.md, \"Sizing\")"
    return None


def describe(s: Size, chunk: int, more: Size | None = None) -> list[str]:
    """Lines for ``run --dry-run`` and ``show SPEC``: ``s`` with batches of ``chunk`` replications;
    ``more``, the size with batches of 1, when the pilot, not the spec, will choose the batch size."""
    files = f"about {s.files:,}" if more is None or more.files == s.files else \
        f"about {s.files:,} (batches of {chunk} replications) to {more.files:,} (batches of 1; the pilot chooses)"
    return [f"cells:       {s.cells:,}",
            f"runs:        {s.runs:,} ({s.cells:,} cells x {s.runs // max(s.cells, 1):,} replications)",
            f"store files: {files}",
            f"store bytes: at most {gb(max(s.bytes, more.bytes if more else 0))} (uncompressed)",
            f"client:      about {gb(s.client_bytes)} of memory"]
