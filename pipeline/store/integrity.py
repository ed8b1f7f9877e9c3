"""Scrubbing a store: every chunk's checksum, and status against the data (``schedsweep check``).

Damage is found per inner chunk of the result arrays (one cell, a block of replications;
:func:`pipeline.store.shards.shard_layout`): a checksum that does not match, a shard whose index
is unreadable (truncated, overwritten), a chunk missing where ``status`` says its
replications ran, or a chunk written where ``status`` says none did (its status lost).
:func:`scan` lists them; :func:`verify` turns them into our one-line error for a reader;
``schedsweep run`` makes the replications they cover 'not run' and runs them again
(:func:`rerun_ranges`). A store written before checksums (format 1) is checked for what
can be (status against the data) and is never called clean: ``schedsweep upgrade`` rewrites
it checksummed (:mod:`pipeline.store.upgrade`).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import StoreError
from .shards import any_per_block


@dataclass(frozen=True)
class Damage:
    """One kind of damage of one variable, over ``blocks``: (cell, first, stop) replications."""
    variable: str
    problem: str
    blocks: tuple[tuple[tuple[int, ...], int, int], ...]


@dataclass
class Report:
    """What :func:`scan` found: damages, files and chunks read, and the store's format."""
    path: Path
    store_format: int
    damages: list[Damage] = field(default_factory=list)
    files: int = 0
    chunks: int = 0
    pending: bool = False  # a journal not yet compacted: a run is going on or was interrupted
    # The journal of an interrupted run: whole batches (cell, start, n) the next run copies into
    # the store, unreadable bytes after them (dropped: those replications run again), and the
    # batches those bytes began, when their header can be read.
    journal_batches: list = field(default_factory=list)
    journal_torn: int = 0
    torn_batches: list | None = None
    not_run: int = 0  # replications the next run runs (after copying the journal's whole batches)
    cells: list[str] = field(default_factory=list)  # a label per cell index (C order), for messages

    @property
    def clean(self) -> bool:
        return not self.damages

    def describe(self, block: tuple[tuple[int, ...], int, int]) -> str:
        cell, start, stop = block
        shape = self._shape
        if not cell:  # a seed block: one row of seeds serves every cell that shares it
            label = "(single cell)" if not shape else "every cell using these seeds"
        else:
            label = self.cells[int(np.ravel_multi_index(cell, shape))] if self.cells else f"cell {cell}"
        return f"{label}, replications {start}-{stop - 1}"

    _shape: tuple[int, ...] = ()

    def lines(self) -> list[str]:
        """One line per damage: variable, problem, then each block (cell and replications)."""
        out = []
        for d in self.damages:
            where = "; ".join(self.describe(b) for b in d.blocks[:20])
            more = f"; and {len(d.blocks) - 20} more" if len(d.blocks) > 20 else ""
            out.append(f"{d.variable}: {d.problem}: {where}{more}")
        return out


def store_format(group: Any) -> int:
    return int(dict(group.attrs).get("store_format", 1))


def scan(path: str | Path) -> Report:
    """Read every result chunk of the store at ``path`` and report what is damaged."""
    from . import journal, zarrstore as store_mod

    path = Path(path)
    if not (path / "zarr.json").exists():
        raise StoreError(f"{path}: not a schedsweep store (no zarr.json)")
    group = store_mod.open_group(path, "r")
    report = Report(path, store_format(group))
    # A run going on (it holds the lock) or interrupted (its journal is there): its compaction
    # writes data before status, so data without status is not damage then.
    report.pending = (path / journal.NAME).exists() or store_mod.run_in_progress(path)
    if report.store_format < 2:
        _scan_format1(path, group, report)
        return report
    attrs = store_mod.attrs_of(group)
    dims = list(attrs.get("dims", []))
    status_arr = group["status"]
    report._shape = tuple(status_arr.shape[:-1])
    report.cells = _cell_labels(group, dims, report._shape)
    names = ["status", "reason", *attrs.get("metrics", [])]
    files = store_mod._file_handlers(path, [group[n] for n in names if n in group] + [group["seed"]])
    if any(n not in files for n in names + ["seed"]):
        missing = [n for n in names + ["seed"] if n not in files]
        raise StoreError(f"{path}: arrays {', '.join(missing)} are not in the layout of store format 2 (edited by hand?)")
    maps = {n: _chunk_map(files[n], report, decode=n == "status") for n in names}
    report.pending = report.pending or (path / journal.NAME).exists() or store_mod.run_in_progress(path)
    status = maps["status"][2]
    inner = files["status"].inner[-1]
    ran = any_per_block(status != store_mod.NOT_RUN, inner)
    n = status.shape[-1]
    written = np.logical_or.reduce([maps[name][0] for name in names if name != "status"])
    # data written where status has no chunk: the status is what was lost (unless a run's
    # journal is still being compacted: data is written before its status)
    status_lost = written & ~maps["status"][0] & ~maps["status"][1] & (not report.pending)
    _add(report, "status", "missing where data was written (status lost)", status_lost, inner, n)
    for name in names:
        present, damaged, _, problems = maps[name]
        for problem, mask in problems.items():
            _add(report, name, problem, mask, inner, n)
        if name == "status":
            continue
        _add(report, name, "missing where status says the replications ran", ran & ~present & ~damaged, inner, n)
        if not report.pending:
            _add(report, name, "written where status says nothing ran", present & ~ran & ~status_lost
                 & ~maps["status"][1], inner, n)
    _scan_seed(files["seed"], group["seed"], report)
    _scan_plain(path, group, report)
    _scan_journal(path, group, attrs, status, report)
    return report


def _scan_journal(path: Path, group: Any, attrs: dict, status: np.ndarray, report: Report) -> None:
    """What the journal holds for the next run, and what that run will run (not run after it)."""
    from . import journal, zarrstore as store_mod

    ncell = status.ndim - 1
    order = journal.layout([(m, tuple(group[m].shape[ncell + 1:])) for m in attrs.get("metrics", [])])
    status = status.copy()
    try:
        entries, report.journal_torn = journal.read(path / journal.NAME, order)
    except (ValueError, KeyError, TypeError):  # a whole record whose header does not fit these arrays
        entries, report.journal_torn = [], (path / journal.NAME).stat().st_size
    for e in entries:
        report.journal_batches.append((e.cell, e.start, e.n))
        status[e.cell + (slice(e.start, e.start + e.n),)] = e.values["status"]
    if report.journal_torn:
        report.torn_batches = journal.torn_batches(path / journal.NAME, order)
    report.not_run = int((status == store_mod.NOT_RUN).sum())


def journal_lines(report: Report) -> list[str]:
    """What ``check`` says of a journal an interrupted run left: what the next run copies,
    the unreadable bytes it drops, and how many replications it runs."""
    if not report.journal_batches and not report.journal_torn:
        return []
    n = sum(b[2] for b in report.journal_batches)
    out = [f"journal: {len(report.journal_batches)} whole batches ({n} replications) that the next run copies "
           "into the store"]
    if report.journal_torn:
        torn = report.torn_batches
        which = ("; they held " + "; ".join(report.describe((tuple(c), a, a + k)) for c, a, k in torn[:10])
                 + ("; …" if len(torn) > 10 else "")) if torn else ""
        out.append(f"journal: {report.journal_torn} unreadable bytes after its last whole record (a record cut "
                   f"short by a kill or a crash): the next run drops them and runs those batches again{which}")
    out.append(f"the next run runs {report.not_run} replications not run yet (the dropped batches' included)")
    return out


def _scan_format1(path: Path, group: Any, report: Report) -> None:
    """A store written before checksums: its chunks cannot be verified, but status can be
    checked against the data: a metric's chunk missing where status says a replication is ok
    (zarr dropped chunks of only NaN then, so an ok replication of only NaN metrics reads as
    this too), and a chunk that does not decode, are damage as in format 2."""
    from . import zarrstore as store_mod
    from .chunkfiles import ChunkFiles, supports

    attrs = store_mod.attrs_of(group)
    status_arr = group["status"]
    report._shape = tuple(status_arr.shape[:-1])
    report.cells = _cell_labels(group, list(attrs.get("dims", [])), report._shape)
    ncell = len(report._shape)
    status = np.zeros(status_arr.shape, np.int8)
    for name in ["status", "reason", *attrs.get("metrics", [])]:
        array = group[name]
        if not supports(array):
            raise StoreError(f"{path}: array {name} is not in the layout of store format 1 (edited by hand?)")
        files = ChunkFiles(path, array)
        lost, unreadable = [], []
        for pos in itertools.product(*(range(-(-n // c)) for n, c in zip(files.shape, files.chunks))):
            region = files.region(pos)
            here = files.path(pos).exists()
            report.files += here
            cells = list(itertools.product(*(range(r.start, r.stop) for r in region[:ncell])))
            reps = region[ncell]
            if here:
                try:
                    block = files.read(pos)
                except Exception:  # noqa: BLE001 - zstd's error on a damaged frame, whatever its type
                    unreadable += [(c, reps.start, reps.stop) for c in cells]
                    continue
                if name == "status":
                    status[region] = block[tuple(slice(0, r.stop - r.start) for r in region)]
            elif name not in ("status", "reason"):  # fill 0 is a value of those: no chunk says nothing
                lost += [(c, reps.start, reps.stop) for c in cells if (status[c][reps] == store_mod.OK).any()]
        if unreadable:
            report.damages.append(Damage(name, "chunk does not decode (damaged)", tuple(unreadable)))
        if lost:
            report.damages.append(Damage(name, "missing where status says the replications ran", tuple(lost)))


def _chunk_map(files: Any, report: Report, decode: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                                                  dict[str, np.ndarray]]:
    """Over the inner-chunk grid of cells x replication blocks: present, damaged, the values
    if ``decode`` (cells x replications, damaged chunks as the fill value; else None: the
    checksums alone are verified, without decompressing), and a mask per kind of damage."""
    shape = files.shape
    n_cells = len(report._shape)  # the cell axes come first, then replication, then a metric's own
    cells = shape[:n_cells]
    blocks = -(-shape[n_cells] // files.inner[n_cells])
    grid = cells + (blocks,)
    present, damaged = np.zeros(grid, bool), np.zeros(grid, bool)
    problems: dict[str, np.ndarray] = {}
    values = np.full(shape, files.fill, dtype=files.dtype) if decode else None
    for pos in itertools.product(*(range(n) for n in files.grid())):
        if decode:
            block, here, damage = files.load(pos)
            region = files.region(pos)
            values[region] = block[tuple(slice(0, r.stop - r.start) for r in region)]
        else:
            frames, damage = files.load_frames(pos)
            here = np.array([f is not None for f in frames])
        report.files += files.path(pos).exists()
        report.chunks += int(here.sum())
        lo = [p * c // i for p, c, i in zip(pos, files.chunks, files.inner)][:n_cells + 1]
        inside = files.inner_in_array(pos).reshape(files.per_shard)
        here_grid = here.reshape(files.per_shard)
        sel = tuple(slice(lo[k], lo[k] + files.per_shard[k]) for k in range(n_cells + 1))
        take = (slice(None),) * (n_cells + 1) + (0,) * (len(files.per_shard) - n_cells - 1)
        fit = tuple(slice(0, s.stop - s.start) for s in _clip(sel, grid))
        present[_clip(sel, grid)] |= here_grid[take][fit]
        if damage is not None:
            bad = damage.chunks.reshape(files.per_shard)[take][fit] & inside[take][fit]
            damaged[_clip(sel, grid)] |= bad
            kind = f"shard file {files.path(pos).relative_to(report.path)} unreadable: {damage.index}" \
                if damage.index else "checksum mismatch"
            problems.setdefault(kind, np.zeros(grid, bool))[_clip(sel, grid)] |= bad
    return present, damaged, values, problems


def _clip(sel: tuple[slice, ...], grid: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(s.start, min(s.stop, n)) for s, n in zip(sel, grid))


def _add(report: Report, name: str, problem: str, mask: np.ndarray, inner: int, replications: int) -> None:
    if not mask.any():
        return
    blocks = tuple((tuple(int(i) for i in idx[:-1]), int(idx[-1]) * inner, min((int(idx[-1]) + 1) * inner, replications))
                   for idx in np.argwhere(mask))
    report.damages.append(Damage(name, problem, blocks))


def _scan_seed(files: Any, array: Any, report: Report) -> None:
    """Seeds are written whole when the store is made: any damaged or missing chunk is damage."""
    for pos in itertools.product(*(range(n) for n in files.grid())):
        _, here, damage = files.load(pos)
        report.files += files.path(pos).exists()
        report.chunks += int(here.sum())
        lost = (~here & files.inner_in_array(pos)) | (damage.chunks if damage is not None else False)
        if lost.any():
            start = pos[-1] * files.chunks[-1]
            what = damage.index if damage is not None and damage.index else "checksum mismatch or missing"
            row = f" in seed row {pos[:-1]} of the independent dimensions" if len(pos) > 1 else ""
            report.damages.append(Damage("seed", f"{what}{row} (rewritten from the spec by the next run)",
                                         (((), start, min(start + files.chunks[-1], array.shape[-1])),)))


def _scan_plain(path: Path, group: Any, report: Report) -> None:
    """The other arrays (cell seconds, coordinates): zarr checks their checksums on reading."""
    for name, array in group.arrays():
        if name in report_names(report, group):
            continue
        try:
            array[...]
        except Exception as exc:  # noqa: BLE001 - zarr's checksum error is a ValueError, a codec's another
            report.damages.append(Damage(name, f"unreadable ({type(exc).__name__}: {str(exc)[:80]})", ()))


def report_names(report: Report, group: Any) -> set[str]:
    from . import zarrstore as store_mod

    return {"status", "reason", "seed", *store_mod.attrs_of(group).get("metrics", [])}


def _cell_labels(group: Any, dims: list[str], shape: tuple[int, ...]) -> list[str]:
    """'dim=value, ...' for every cell in C order (indices where a coordinate is unreadable)."""
    values = []
    for d, n in zip(dims, shape):
        try:
            values.append([v.item() if hasattr(v, "item") else v for v in group[d][...]])
        except Exception:  # noqa: BLE001 - a damaged coordinate: name cells by index instead
            values.append([f"#{i}" for i in range(n)])
    return [", ".join(f"{d}={v!r}" for d, v in zip(dims, combo)) for combo in itertools.product(*values)]


def rerun_ranges(report: Report) -> list[tuple[tuple[int, ...], int, int]]:
    """(cell, start, stop) of the replications a run makes 'not run' and runs again: every
    block a damage of a result array covers (seeds are rewritten, not rerun)."""
    blocks = {b for d in report.damages if d.variable not in ("seed",) and d.blocks for b in d.blocks}
    return sorted(blocks)


def verify(path: str | Path) -> None:
    """Raise our one-line StoreError if the store at ``path`` is damaged (what every reader calls)."""
    report = scan(path)
    if report.clean:
        return
    d = report.damages[0]
    where = report.describe(d.blocks[0]) if d.blocks else "the whole array"
    n = sum(max(len(x.blocks), 1) for x in report.damages)
    more = f" (and {n - 1} more damaged chunks)" if n > 1 else ""
    raise StoreError(f"{report.path} is damaged: {d.variable}, {where}: {d.problem}{more}; "
                     f"`schedsweep check {report.path}` lists all, and running its spec again reruns them")


verify_store = verify  # under another name: open_store's flag is called verify


def open_store(path: str | Path, verify: bool = True) -> Any:
    """The store at ``path`` as an xarray Dataset (lazy). Several stores combined:
    :func:`pipeline.open_store` (:func:`pipeline.store.export.open_store`).

    ``verify``: every chunk's checksum and status against the data first (:func:`verify`); a
    damaged store raises StoreError naming the variable, cells and replications, so no reader
    ever gets a number from damaged bytes.
    """
    from . import zarrstore as store_mod

    if verify and (Path(path) / "zarr.json").exists():
        verify_store(Path(path))
    return with_journal(store_mod.open_dataset(path), Path(path))


def with_journal(ds: Any, path: Path) -> Any:
    """``ds`` with the results a run has written to its journal but not yet compacted into the
    arrays (a run going on, or one interrupted): every reader sees what ``show`` counts. The
    number of such replications is the attribute ``pending_results`` (absent when none); the
    variables they touch are then in memory."""
    from . import journal

    file = path / journal.NAME
    if not file.exists():
        return ds
    metrics = [m for m in ds.attrs.get("metrics", []) if m in ds]
    cells = ds["status"].ndim - 1
    entries, _ = journal.read(file, journal.layout([(m, ds[m].shape[cells + 1:]) for m in metrics]))
    if not entries:
        return ds
    names = [*metrics, "reason", "status"]
    arrays = {n: np.array(ds[n].values) for n in names}  # read before the journal could be compacted away
    for e in entries:
        where = e.cell + (slice(e.start, e.start + e.n),)
        for n in names:
            arrays[n][where] = e.values[n]
    out = ds.copy()
    for n in names:
        out[n] = ds[n].copy(data=arrays[n])
    out.attrs["pending_results"] = int(sum(e.n for e in entries))
    return out


def pending_line(ds: Any, path: str | Path) -> str | None:
    """The first line of a view of a store whose journal holds results (None otherwise)."""
    n = ds.attrs.get("pending_results")
    if not n:
        return None
    from .zarrstore import run_in_progress

    state = "run in progress" if run_in_progress(Path(path)) else "interrupted run"
    return (f"{state}: {n} results not yet compacted into the store are included "
            "(read from its journal; a run compacts them)")
