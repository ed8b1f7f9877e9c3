"""Run a sweep: pilot, batches, retries, progress, and the store written as results arrive."""
from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import math
import platform
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from schedsweep import SOURCE_TREE

from ..base import codehash, seeding
from . import sequential, sizing
from ..store import zarrstore as store_mod
from . import subtasks
from ..base.console import say
from .executors import open_executor
from ..spec.sweep import Spec, load, plugin_modules, workload_of
from .tasks import pilot, run_isolated, warm as warm_worker
from ..base.terminal import format_duration

DEFAULT_BATCH_SECONDS = 2.0
PILOT_SECONDS = 0.3
TASKS_PER_WORKER = 8  # at least this many tasks per worker, so the idle tail at the end stays short
MAX_TRIES = 2  # a task that raises is retried once
MAX_LOST = 5  # tries of a task whose worker died (walltime, node failure): not the task's fault
# Default task time limit: TIMEOUT_FACTOR times the batch's expected time from the pilot, but
# never under MIN_TASK_TIMEOUT, which leaves room for a kernel's cold numba compile (minutes)
# in a cell the pilot did not reach. Without a pilot estimate (--batch-size on a new store)
# the limit is UNKNOWN_TIMEOUT; the pilot itself gets PILOT_TIMEOUT per part.
TIMEOUT_FACTOR = 20.0
MIN_TASK_TIMEOUT = 900.0
UNKNOWN_TIMEOUT = 3600.0
PILOT_TIMEOUT = 1800.0
FIRST_SEEDS = 5  # failed seeds named in the end-of-run summary


class SweepFailed(RuntimeError):
    """Every replication the run ran failed (the store is kept; ``show --failures`` says why)."""


class DamagedDuringRun(RuntimeError):
    """Chunks of the store were found damaged while the run wrote it (a disk or a hand that
    changes files under a run): their replications are marked not run, everything else is
    stored, and the same command reruns them from their seeds."""


@dataclass
class Batch:
    cell: tuple[int, ...]
    start: int
    stop: int
    tries: int = 0
    lost: int = 0

    @property
    def key(self) -> str:
        return f"batch-{'-'.join(map(str, self.cell))}-{self.start}-{self.stop}-{self.tries + self.lost}"


def run(spec: Spec | str | Path, store: str | Path | None = None, *, workers: int | None = None,
        scheduler: str | None = None, scheduler_file: str | None = None, cluster: str = "local",
        slurm_options: dict[str, Any] | None = None, batch_size: int | None = None,
        batch_seconds: float | None = None, retry_failed: bool = False, progress: bool | None = None,
        task_timeout: float | None = None, allow_changed_code: bool = False,
        overrides: tuple[str, ...] | list[str] = ()) -> Path:
    """Run (or resume) a sweep into its store and return the store's path.

    ``workers=0`` runs the tasks from this process (each batch in a child process);
    otherwise a LocalCluster with ``workers`` processes (default: one per core), unless
    ``scheduler``/``scheduler_file``/``cluster='slurm'``. ``task_timeout`` (seconds, else
    ``[run] task_timeout``, else derived from the pilot) limits each task; see
    :mod:`pipeline.execution.tasks` for what happens to a batch past it. ``progress``: None = a bar
    on a terminal, a line a minute otherwise. Raises :class:`SweepFailed` when every
    replication this run ran failed. Safe to call from a script without an
    ``if __name__ == "__main__":`` guard. A store made by other model code is refused
    (:class:`pipeline.store.zarrstore.StoreError`) unless ``allow_changed_code``, which the store records.
    """
    _refuse_in_child_bootstrap()
    if not isinstance(spec, Spec):
        spec = load(spec, overrides)  # --set KEY=VALUE over the file, checked like it
    elif overrides:
        raise ValueError("overrides apply to a spec file; give its path, not a loaded Spec")
    if spec.reference_dropped:  # one line: the overrides removed coordinates these published points name
        say(f"{len(spec.reference_dropped)} published reference point(s) dropped (--set removed what they name; "
            f"recorded in the store): " + "; ".join(spec.reference_dropped))
    task_timeout = _checked_timeout(task_timeout if task_timeout is not None else spec.run.get("task_timeout"))
    _check_options(workers, batch_size, batch_seconds)
    path = Path(store) if store else store_mod.default_path(spec)
    batch_size = batch_size or spec.run.get("batch_size")
    batch_seconds = batch_seconds or spec.run.get("batch_seconds", DEFAULT_BATCH_SECONDS)
    code = codehash.describe(workload_of(spec), plugin_modules(spec))
    # a workload's tasks on the sweep's cluster (the ga's Dask islands) need a Dask cluster
    subtasks.check(workload_of(spec), [p for _, p in spec.cells()], on_dask=bool(scheduler or scheduler_file)
                   or cluster in ("dask", "slurm"), name=spec.workload)
    with store_mod.locked(path):
        resuming = store_mod.prepare(path)  # refuses a path that is not ours; clears a killed build
        if not resuming:
            _warn_size(spec, path, batch_size)
        limit = None  # replications per cell this run completes (a spec asking for fewer than the store holds)
        if resuming:
            _upgrade_old(path)
            if store_mod.adopt_labels(path, spec):  # a store made before labels, at the same place
                say(f"{path}: the files of its path parameters are now named by label (" +
                    ", ".join(spec.files) + ") with their content hashes")
            store_mod.check_same_files(path, spec)  # a file by its label: the same content
            try:
                sizes = store_mod.check_same_spec(path, spec)  # None, or how a larger spec grows the store
            except store_mod.HoldsMore as more:  # the store's own spec, up to the replications asked for
                say(f"{path} holds {more.held} replications per cell, more than the spec's {more.asked}: "
                    f"it is complete for the spec once its first {more.asked} are")
                spec, sizes, limit = _held_spec(path), None, more.asked
            change = store_mod.check_same_code(path, code, allow_changed_code)
            if change:
                say(f"resuming with changed model code ({', '.join(change['changed'][:5])}), as allowed; "
                    "recorded in the store's code_changes")
                store_mod.record_code_change(path, change)
            if sizes is not None:
                say(f"growing {path}: " + ", ".join(f"{d} to {n}" for d, n in sizes.items())
                    + "; only the new replications and cells run")
                store_mod.grow(path, spec, workload_of(spec), sizes)
        # A new store: local replication processes start now, while this process plans the
        # pilot and imports zarr (a resumed store may have nothing left to run).
        warm = None if resuming else functools.partial(warm_worker, spec.workload)
        with open_executor(workers, scheduler, scheduler_file, cluster, slurm_options, warm=warm,
                           task_timeout=task_timeout) as executor:
            if executor.dashboard_link:
                say(f"dashboard: {executor.dashboard_link}")
            runner = _Runner(spec, path, executor, batch_seconds, progress, task_timeout, limit)
            runner.start(batch_size, retry_failed)
            runner.run()
        if spec.record:  # per-job records of the chosen replications, recomputed from their seeds
            from ..store import records

            n = records.store(path, spec)
            if n:
                say(f"{path}: per-job records of {n} replications kept ([record]; schedsweep gantt draws one)")
    runner.summarise()
    if runner.damaged_during_run:
        raise DamagedDuringRun(f"{path}: {runner.damaged_during_run} replications of chunks found damaged during "
                               "the run were marked not run; run the same command again to rerun them (and check "
                               "the disk: a store is not damaged by itself)")
    return path


def _upgrade_old(path: Path) -> None:
    """A store made before checksums is rewritten checksummed before it is resumed or grown."""
    from ..store.integrity import store_format

    if store_format(store_mod.open_group(path)) >= 2:
        return
    from ..store.upgrade import upgrade

    say(f"upgrading {path} to the checksummed store format (values unchanged; `schedsweep upgrade` does it alone)")
    dropped = upgrade(path)
    if dropped:
        say(f"{dropped} replications of damaged chunks written as not run; they run again")


def _held_spec(path: Path) -> Spec:
    """The spec a store holds now (its text and overrides, as grown)."""
    from ..spec.sweep import parse

    text, where, overrides = store_mod.stored_spec(path)
    return parse(text, where, Path(where).parent, overrides)


def size_lines(spec: Spec, batch_size: int | None = None) -> list[str]:
    """What ``run --dry-run`` and ``show SPEC`` print: cells, runs, the store's files and
    bytes, the client's memory (:mod:`pipeline.execution.sizing`)."""
    module = workload_of(spec)
    chunk = batch_size or spec.run.get("batch_size")
    if chunk:
        lines = sizing.describe(sizing.size(spec, module, chunk), chunk)
    else:
        lines = sizing.describe(sizing.size(spec, module, spec.replications), spec.replications,
                                sizing.size(spec, module, 1))
    return lines + deterministic_lines(spec, module)


def deterministic_lines(spec: Spec, module: Any) -> list[str]:
    """What ``run --dry-run`` says of the cells that run once (none: nothing)."""
    mask, why = deterministic_cells(spec, module)
    n = int(mask.sum())
    if not n:
        return []
    return [f"deterministic: {n} of {mask.size} cells ({', '.join(sorted(set(why)))}) run once (replication 0); "
            f"the store holds {spec.replications} replications per cell, the others 'not needed'"]


def _warn_size(spec: Spec, path: Path, batch_size: int | None) -> None:
    """One line if a new store may not fit on its disk or has very many files."""
    s = sizing.size(spec, workload_of(spec), batch_size or spec.replications)
    warning = sizing.disk_warning(path, s.bytes, s.files)
    if warning:
        say(f"warning: {warning}")


def status_counts(path: str | Path) -> dict[str, int]:
    """Replications of the store at ``path`` by status label (``store.STATUS_LABELS``)."""
    status = store_mod.open_group(Path(path), "r")["status"][...]
    return {label: int((status == code).sum()) for code, label in store_mod.STATUS_LABELS.items()}


def _check_options(workers: Any, batch_size: Any, batch_seconds: Any) -> None:
    """The Python API checks what the CLI's argparse types check: one clear ValueError."""
    def whole(x: Any) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    if workers is not None and not (whole(workers) and 0 <= workers <= 100_000):
        raise ValueError(f"workers = {workers!r} must be an integer >= 0 (0: run in this process), or None for one per core")
    if batch_size is not None and not (whole(batch_size) and 1 <= batch_size <= 10_000_000):
        raise ValueError(f"batch_size = {batch_size!r} must be an integer in [1, 10,000,000], or None (the pilot sizes batches)")
    if batch_seconds is not None and (isinstance(batch_seconds, bool) or not isinstance(batch_seconds, (int, float))
                                      or not math.isfinite(batch_seconds) or not 0 < batch_seconds <= 86_400):
        raise ValueError(f"batch_seconds = {batch_seconds!r} must be a number of seconds in (0, 86400]")


def _checked_timeout(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"task_timeout = {value!r} must be a finite number of seconds > 0")
    return float(value)


def _refuse_in_child_bootstrap() -> None:
    """A clear message instead of multiprocessing's when a child process re-runs a script.

    Our own workers never re-run the caller's script (see ``executors``), but a script's
    own multiprocessing pool re-imports it in every child.
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError("pipeline.run was called while a child process was importing the main script "
                           "(a multiprocessing pool of the script re-runs it); put the call under "
                           "`if __name__ == \"__main__\":`")


class _Runner:
    def __init__(self, spec: Spec, path: Path, executor: Any, batch_seconds: float, progress: bool | None,
                 task_timeout: float | None = None, limit: int | None = None):
        self.spec, self.path, self.executor = spec, path, executor
        self.limit = limit  # only replications below this run (None: all of the spec's)
        self.task_timeout = task_timeout  # None: derived from the pilot (timeout_for)
        self.failures: list[dict[str, Any]] = []  # failure records of this run
        self.n_ran = 0  # replications this run ran (pilot included)
        self.store_failed = 0  # failed replications in the store after the run
        self.module = workload_of(spec)
        self.batch_seconds = batch_seconds
        # None: a bar on a terminal, a line a minute in a log file (the sbatch route).
        self.progress = progress
        self.dim_names = [d.name for d in spec.dims]
        self.cells = dict(spec.cells())
        # cells whose result does not depend on the seed (the workload's deterministic hook): run once
        self.deterministic, self._deterministic_why = deterministic_cells(spec, self.module)
        self.writer: store_mod.Writer | None = None
        self.damaged_during_run = 0  # replications made 'not run' by damage found after planning
        self._damage_said = 0  # entries of writer.damage already reported
        self._future_batch: dict[str, Batch] = {}
        self.bar: Any = None

    # -- planning ---------------------------------------------------------------------
    def seeds(self, cell: tuple[int, ...], start: int, stop: int) -> np.ndarray:
        if self.writer is not None:  # the store holds every seed from its creation
            return self.writer.seeds(cell, start, stop)
        indep = seeding.independent_index(self.dim_names, self.spec.independent, cell)
        return seeding.replication_seeds(self.spec.seed, start, stop, indep)

    def start(self, batch_size: int | None, retry_failed: bool) -> None:
        if (self.path / "zarr.json").exists():
            self.writer = store_mod.Writer(self.path, self.spec, self.module)  # compacts what a killed run left
            batch_reps = self.writer.attrs().get("batch_reps")
            reps = np.asarray(batch_reps) if batch_reps else np.full(self.spec.shape, self.writer.chunk())
            self._rerun_damaged()
            status = self.writer.status_array()
            needed = ~needless_replications(self.deterministic, self.spec.replications)
            say(f"resuming {self.path}: {int(((status != store_mod.NOT_RUN) & needed).sum())} of {int(needed.sum())} "
                "replications done")
        else:
            if batch_size:
                chunk, reps = batch_size, np.full(self.spec.shape, batch_size)
                pilots = {}
            else:
                chunk, reps, pilots = self._pilot()
            self._create(chunk, reps)
            for (cell, start), result in pilots.items():
                self._write(Batch(cell, start, start + result["n"]), result)
            status = self.writer.status_array()
        todo = (status == store_mod.NOT_RUN) | ((status == store_mod.FAILED) if retry_failed else False)
        todo &= ~needless_replications(self.deterministic, self.spec.replications)
        self._record_deterministic()
        if self.limit is not None:
            todo &= np.arange(self.spec.replications) < self.limit
        self.reps = reps
        if self.spec.auto:  # replications = "auto": each cell's first wave, or none if it is done
            todo &= self._auto_limits()[..., None] > np.arange(self.spec.replications)
        self.plan = self._batches(todo, reps)
        self.total = int(todo.sum())
        # Replications already in the store (the pilot's, an earlier run's): the bar starts
        # there, so it counts the whole sweep, pilot included, not just what is left.
        self.done_before = int((~todo & (status != store_mod.NOT_RUN)).sum())
        if getattr(self, "seconds_per_rep", None) is None:  # resumed: the pilot of the first run
            stored = self.writer.attrs().get("pilot_seconds_per_rep")
            if stored is not None:
                self.seconds_per_rep = np.asarray(stored, dtype=float)
        per_rep = getattr(self, "seconds_per_rep", None)
        if per_rep is not None and np.shape(per_rep) == self.spec.shape and not self.spec.auto:
            # Longest first (by the pilot's estimate), so the last tasks are the short ones and
            # the workers finish together. The order changes no result: seeds go by replication.
            self.plan.sort(key=lambda b: -float(np.nan_to_num(per_rep[b.cell], nan=0.0)) * (b.stop - b.start))

    def _rerun_damaged(self) -> None:
        """Make the replications of damaged chunks 'not run' (scrubbed with pipeline.store.integrity),
        so this run computes them again from their seeds."""
        from ..store import integrity

        self._say_damage()  # found while the journal of an interrupted run was replayed
        report = integrity.scan(self.path)
        if report.clean:
            return
        for line in report.lines():
            say(f"damaged: {line}")
        drop = integrity.rerun_ranges(report)
        if drop:
            self.writer.compact(drop)
            say(f"{sum(b - a for _, a, b in drop)} replications of damaged chunks marked not run; they run again")
        self.writer.flush()  # seeds and cell seconds read damaged were rewritten by the Writer

    def _say_damage(self) -> int:
        """Report what the Writer found damaged (and made 'not run') since the last report; the
        number of replications."""
        found = self.writer.damage[self._damage_said:]
        self._damage_said = len(self.writer.damage)
        n = 0
        for problem, ranges in found:
            where = "; ".join(f"{self._describe(cell)}, replications {a}-{b - 1}" for cell, a, b in ranges[:20])
            more = f"; and {len(ranges) - 20} more" if len(ranges) > 20 else ""
            say(f"damaged: {problem}: {where}{more}; marked not run")
            n += sum(b - a for _, a, b in ranges)
        return n

    def _pilot(self) -> tuple[int, np.ndarray, dict]:
        """Time a few cells with real replications; size chunks and batches from that.

        At least one pilot per worker, so no worker idles while the pilots run: a sweep
        with fewer cells than workers pilots a cell at several replication offsets.
        """
        all_cells = list(self.cells)
        k = min(len(all_cells), max(2 * self.executor.n_workers, 4))
        picks = sorted({all_cells[round(i * (len(all_cells) - 1) / max(k - 1, 1))] for i in range(k)})
        per_cell = min(self.spec.replications, -(-self.executor.n_workers // len(picks)))
        step = self.spec.replications // per_cell
        jobs = [(cell, j * step, min(j * step + 1024, (j + 1) * step)) for cell in picks for j in range(per_cell)]
        if self.spec.auto:  # only replications every cell runs: the first wave, from replication 0
            jobs = [(cell, 0, self.spec.auto["min"]) for cell in picks]
        jobs = [(cell, 0, 1) if self.deterministic[cell] else (cell, a, b) for cell, a, b in jobs
                if not (self.deterministic[cell] and a)]  # a deterministic cell has replication 0 only
        timeout = self.task_timeout or PILOT_TIMEOUT
        # The first call may compile numba kernels for minutes on a cold cache: say what runs.
        say(f"pilot: timing {len(picks)} of {len(all_cells)} cells")
        def submit(cell: tuple[int, ...], start: int, stop: int) -> Any:
            return self.executor.submit(pilot, self.spec.workload, self.cells[cell], self.seeds(cell, start, stop),
                                        PILOT_SECONDS, timeout, np.arange(start, stop, dtype=np.int64),
                                        key=f"pilot-{cell}-{start}")

        futures = {}
        if not _kernels_cached(self.module):
            # Compile once, not once per worker: the first pilot fills the numba cache
            # (shared by every worker on one machine, or on a shared file system) alone.
            say(compile_note(self.spec.workload))
            cell, start, stop = jobs[0]
            futures[(cell, start)] = submit(cell, start, stop)
            with elapsed_counter("compiling"):
                _wait(futures[(cell, start)])
        futures.update({(cell, start): submit(cell, start, stop) for cell, start, stop in jobs
                        if (cell, start) not in futures})
        # While the pilots run: what making the store needs that does not depend on them
        # (git's answers, zarr's import), instead of after them with every worker idle.
        self._provenance = provenance(self.spec, self.module, self.path)
        import zarr  # noqa: F401
        results = {}
        for (cell, start), future in futures.items():
            try:
                results[(cell, start)] = future.result()
            except Exception:  # noqa: BLE001 - a pilot that fails is just not a timing source
                say(f"pilot of cell {self._describe(cell)} failed; its replications will run in batches")
        times = [r["seconds_per_rep"] for r in results.values() if math.isfinite(r["seconds_per_rep"])]
        slowest = max(times) if times else 1.0
        seconds = np.full(self.spec.shape, slowest)
        for cell in picks:
            mine = [r["seconds_per_rep"] for (c, _), r in results.items()
                    if c == cell and math.isfinite(r["seconds_per_rep"])]
            if mine:
                seconds[cell] = float(np.median(mine))
        # Enough tasks that every worker gets several, even for a short sweep.
        total = float(seconds.sum()) * self.spec.replications
        target = sizing.task_seconds(total, self.executor.n_workers, self.batch_seconds,
                                     getattr(self.executor, "task_cost", sizing.TASK_COST["local"]),
                                     TASKS_PER_WORKER)
        chunk = int(max(1, min(self.spec.replications, target // slowest)))
        reps = np.maximum(1, np.floor(target / (seconds * chunk))).astype(np.int64) * chunk
        say(f"pilot: {format_duration(slowest)} per replication in the slowest cell; "
            f"{chunk} replications per chunk, tasks of about {format_duration(target)}")
        self.seconds_per_rep = seconds
        return chunk, reps, results

    def _batches(self, todo: np.ndarray, reps: np.ndarray) -> list[Batch]:
        batches = []
        for cell in self.cells:
            batches += self._cell_batches(cell, todo[cell], reps)
        return batches

    def _cell_batches(self, cell: tuple[int, ...], missing: np.ndarray, reps: np.ndarray) -> list[Batch]:
        """Batches of one cell's missing replications, in blocks aligned to its batch size."""
        batches = []
        size = int(reps[cell]) if np.ndim(reps) else int(reps)
        for block in range(0, self.spec.replications, size):
            block_missing = missing[block:block + size]
            idx = np.flatnonzero(block_missing) + block
            if idx.size == 0:
                continue
            # Split into runs of consecutive missing replications.
            breaks = np.flatnonzero(np.diff(idx) > 1)
            starts = np.r_[idx[0], idx[breaks + 1]]
            stops = np.r_[idx[breaks] + 1, idx[-1] + 1]
            batches += [Batch(cell, int(a), int(b)) for a, b in zip(starts, stops)]
        return batches

    # -- replications = "auto" ----------------------------------------------------------
    def _auto_decision(self, cell: tuple[int, ...]) -> sequential.Decision:
        """The stopping rule on the cell's replications run so far (a prefix 0..n-1)."""
        status = self.writer.cell_status(cell)
        run = status != store_mod.NOT_RUN
        n = int(np.argmin(run)) if not run.all() else len(run)
        x = self.writer.cell_values(self.spec.auto["metric"], cell)[:n]
        x = np.where(status[:n] == store_mod.OK, x, np.nan)
        a = self.spec.auto
        return sequential.decide(x, a["precision"], a["look_ahead"], a["min"], self.spec.replications)

    def _auto_limits(self) -> np.ndarray:
        """Per cell, the replications its next wave runs up to (0 for a cell that is done)."""
        limits = np.zeros(self.spec.shape, np.int64)
        for cell in self.cells:
            d = self._auto_decision(cell)
            limits[cell] = 0 if d.done else d.next_n
        return limits

    def _next_wave(self, cell: tuple[int, ...]) -> None:
        """A cell finished its wave: stop it, or submit the replications its next wave needs."""
        d = self._auto_decision(cell)
        if d.done or self.deterministic[cell]:
            return
        status = self.writer.cell_status(cell)
        missing = (status == store_mod.NOT_RUN) & (np.arange(self.spec.replications) < d.next_n)
        batches = self._cell_batches(cell, missing, self.reps)
        n = int(missing.sum())
        self._cells_left[cell] = self._cells_left.get(cell, 0) + n
        self.bar.total += n
        if hasattr(self.bar, "refresh"):
            self.bar.refresh()
        self.submit_all(batches)

    def _record_auto(self) -> None:
        """Per cell: replications run, precision reached, target met (store attrs ``auto``)."""
        shape = self.spec.shape
        run, precision, met = np.zeros(shape, np.int64), np.full(shape, np.nan), np.zeros(shape, bool)
        done = np.zeros(shape, bool)
        for cell in self.cells:
            d = self._auto_decision(cell)
            run[cell] = int((self.writer.cell_status(cell) != store_mod.NOT_RUN).sum())
            precision[cell], met[cell], done[cell] = d.precision, d.met and d.done, d.done
            done[cell] |= bool(self.deterministic[cell])  # run once: nothing more to do
        a = self.spec.auto
        self.writer.set_attrs(auto={
            "precision": a["precision"], "metric": a["metric"], "min_replications": a["min"],
            "look_ahead": a["look_ahead"], "max_replications": self.spec.replications,
            "replications_run": run.tolist(),
            "precision_reached": [None if not np.isfinite(v) else float(v) for v in precision.ravel()],
            "met": met.tolist(), "done": done.tolist()})
        say(f"auto: {int(met.sum())} of {met.size} cells reached relative precision {a['precision']:g} of "
            f"{a['metric']}; replications run per cell {int(run.min())}-{int(run.max())} "
            f"(at most {self.spec.replications})")

    def _record_deterministic(self) -> None:
        """The deterministic cells in the store's attrs (readers show them without a CI) and
        the run's one line about them. Written at every run, so a grown store's new cells
        are included; a store of a workload without the hook gets no attribute."""
        n = int(self.deterministic.sum())
        if n == 0 and getattr(self.module, "deterministic", None) is None and "deterministic" not in self.writer.attrs():
            return  # a workload without the hook: its stores stay as they were
        self.writer.set_attrs(deterministic=self.deterministic.tolist())
        if n:
            why = ", ".join(sorted(set(self._deterministic_why)))
            say(f"{self.spec.workload}: {n} of {self.deterministic.size} cells are deterministic ({why}): "
                "run once each, shown without a CI")

    # -- the store --------------------------------------------------------------------
    def _create(self, chunk: int, reps: np.ndarray) -> None:
        attrs = getattr(self, "_provenance", None) or provenance(self.spec, self.module, self.path)
        attrs["chunk"] = int(chunk)
        attrs["batch_reps"] = np.asarray(reps).tolist()
        if hasattr(self, "seconds_per_rep"):
            attrs["pilot_seconds_per_rep"] = self.seconds_per_rep.tolist()
        store_mod.create(self.path, self.spec, self.module, chunk, attrs)
        self.writer = store_mod.Writer(self.path, self.spec, self.module)

    def _describe(self, cell: tuple[int, ...]) -> str:
        return ", ".join(f"{d.name}={d.values[i]!r}" for d, i in zip(self.spec.dims, cell)) or "(single cell)"

    def _write(self, batch: Batch, result: dict[str, Any]) -> None:
        self._write_all([(batch, result)])

    def _write_all(self, done: list[tuple[Batch, dict[str, Any]]]) -> None:
        """Store the results of finished batches in one write, and their failure records."""
        if not done:
            return
        items, records, cells = [], [], []
        for batch, result in done:
            seeds = self.seeds(batch.cell, batch.start, batch.stop)
            items.append((batch.cell, batch.start, seeds, result["outputs"], result["failed"], result["seconds"]))
            for k, f in result["failed"].items():
                records.append(self._failure(batch.cell, batch.start + k, seeds[k], f))
                cells.append(batch.cell)
            self.n_ran += batch.stop - batch.start
        self.writer.write_batches(items)
        self.damaged_during_run += self._say_damage()  # a compaction that met damage: said at once
        self.writer.add_failures(records)
        for f, cell in list(zip(records, cells))[:max(0, FIRST_SEEDS - len(self.failures))]:  # the first at once
            say(f"failed ({f['kind']}): {self._describe(cell)}, replication {f['replication']}, seed {f['seed']}")
        self.failures += records

    def _failure(self, cell: tuple[int, ...], replication: int, seed: np.uint64,
                 failure: tuple[str, str]) -> dict[str, Any]:
        """A failure record: where, which seed, the kind (pipeline.execution.tasks.FAILURE_KINDS) and the text."""
        kind, text = failure
        cell_values = {d.name: _plain(d.values[i]) for d, i in zip(self.spec.dims, cell)}
        return {"cell": cell_values, "replication": int(replication), "seed": int(seed), "kind": kind,
                "traceback": store_mod.without_machine_paths(text, self.spec)}

    # -- execution --------------------------------------------------------------------
    def timeout_for(self, batch: Batch) -> float:
        """The batch's time limit: task_timeout if given, else from the pilot's estimate."""
        if self.task_timeout:
            return self.task_timeout
        per_rep = getattr(self, "seconds_per_rep", None)
        if per_rep is None or not math.isfinite(per_rep[batch.cell]):
            return UNKNOWN_TIMEOUT
        return max(MIN_TASK_TIMEOUT, TIMEOUT_FACTOR * float(per_rep[batch.cell]) * (batch.stop - batch.start))

    def _args(self, batch: Batch) -> tuple:
        return (self.spec.workload, self.cells[batch.cell], self.seeds(batch.cell, batch.start, batch.stop),
                self.timeout_for(batch), np.arange(batch.start, batch.stop, dtype=np.int64))

    def submit(self, batch: Batch) -> None:
        future = self.executor.submit(run_isolated, *self._args(batch), key=batch.key)
        self._future_batch[future.key] = batch

    def submit_all(self, batches: list[Batch]) -> None:
        """Submit ``batches`` in one call (on Dask one graph, not one message per batch)."""
        futures = self.executor.submit_many(run_isolated, [self._args(b) for b in batches], [b.key for b in batches])
        for future, batch in zip(futures, batches):
            self._future_batch[future.key] = batch

    def run(self) -> None:
        from tqdm import tqdm

        done = getattr(self, "done_before", 0)
        if self.progress is None and not sys.stderr.isatty():
            self.bar = _LogProgress(self.total + done, self.spec.name, initial=done)
        else:  # on a terminal unless progress=False: replications, cells, rate and ETA
            self.bar = tqdm(total=self.total + done, initial=done, unit="rep", disable=self.progress is False,
                            smoothing=0.1, desc=self.spec.name, dynamic_ncols=True)
        self._cells_left = {}
        for batch in self.plan:
            self._cells_left[batch.cell] = self._cells_left.get(batch.cell, 0) + batch.stop - batch.start
        self._n_cells = len(self.cells)  # every cell of the sweep; those the pilot or a run finished count as done
        if hasattr(self.bar, "set_postfix_str"):
            self.bar.set_postfix_str(f"cells {self._n_cells - len(self._cells_left)}/{self._n_cells}", refresh=False)
        started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        # The recorded counts are void while the run writes (`schedsweep stores` then reads status)
        self.writer.set_attrs(status_counts=None)
        if self.plan:
            limits = sorted({round(self.timeout_for(b)) for b in self.plan})
            how = ("the task timeout asked for" if self.task_timeout else
                   f"{TIMEOUT_FACTOR:g} times its expected time, at least {format_duration(MIN_TASK_TIMEOUT)}"
                   if getattr(self, "seconds_per_rep", None) is not None else "no pilot estimate yet")
            span = format_duration(limits[0]) if len(limits) == 1 else \
                f"{format_duration(limits[0])} to {format_duration(limits[-1])}"
            say(f"time limit: a task still running after {span} ({how}) is stopped and its replications "
                "are rerun one by one")
        self.submit_all(self.plan)
        # Whatever finished while the last group was being written is written as one group:
        # the busier the client, the larger its writes, so it keeps up with many workers.
        for group in self.executor.completed_groups():
            ok = []
            for future in group:
                batch = self._future_batch.pop(future.key, None)
                if batch is None:  # a pilot's future, already used
                    continue
                if future.status == "error":
                    self._retry_or_fail(batch, future)
                else:
                    ok.append((batch, future))
            results = self.executor.results([future for _, future in ok])
            self._write_all([(batch, result) for (batch, _), result in zip(ok, results)])
            for batch, _ in ok:
                self._advance(batch)
        self.bar.close()
        if self.spec.auto:
            self._record_auto()
        self.writer.flush()
        self.damaged_during_run += self._say_damage()
        ended = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        status = self.writer.status_array()
        counts = {label: int((status == code).sum()) for code, label in store_mod.STATUS_LABELS.items()}
        needless = int((needless_replications(self.deterministic, self.spec.replications)
                        & (status == store_mod.NOT_RUN)).sum())
        counts[store_mod.STATUS_LABELS[store_mod.NOT_RUN]] -= needless
        counts[store_mod.DETERMINISTIC_LABEL] = needless
        # the counts in the root metadata: `schedsweep stores` lists a thousand stores without reading chunks
        self.writer.set_attrs(last_run_started=started, last_run_ended=ended, status_counts=counts)
        store_mod.consolidate(self.path)  # plain xr.open_zarr reads one file, without a warning
        say(f"{self.path}: " + ", ".join(f"{n} {label}" for label, n in counts.items() if n))
        self.store_failed = counts["failed"]

    def _advance(self, batch: Batch) -> None:
        n = batch.stop - batch.start
        left = self._cells_left[batch.cell] = self._cells_left.get(batch.cell, n) - n
        if left <= 0 and hasattr(self.bar, "set_postfix_str"):
            done = self._n_cells - sum(1 for v in self._cells_left.values() if v > 0)
            self.bar.set_postfix_str(f"cells {done}/{self._n_cells}", refresh=False)
        self.bar.update(n)
        if left <= 0 and self.spec.auto:
            self._next_wave(batch.cell)

    def summarise(self) -> None:
        """After the run: the failures of this run by kind with their first seeds; SweepFailed if all failed."""
        if not self.failures and not self.store_failed:
            return
        show = f"schedsweep show {self.path} --failures"
        if self.failures:
            kinds = Counter(f["kind"] for f in self.failures)
            first = ", ".join(f"{f['seed']} ({f['kind']}, replication {f['replication']}"
                              + "".join(f", {k}={v!r}" for k, v in f["cell"].items()) + ")"
                              for f in self.failures[:FIRST_SEEDS])
            more = ", ..." if len(self.failures) > FIRST_SEEDS else ""
            say(f"{len(self.failures)} of {self.n_ran} replications failed in this run "
                f"({', '.join(f'{n} {k}' for k, n in kinds.items())}); seeds: {first}{more}")
            say(f"first failure: {failure_reason(self.failures[0]['traceback'])}")
        say(f"{self.store_failed} failed replications in the store; list them with: {show}")
        if self.n_ran and len(self.failures) == self.n_ran:
            raise SweepFailed(f"every replication of this run failed ({self.n_ran}); see: {show}")

    def _retry_or_fail(self, batch: Batch, future: Any) -> None:
        text = self.executor.error_text(future)
        if "KilledWorker" in text or "CommClosedError" in text:
            batch.lost += 1
            if batch.lost < MAX_LOST:
                say(f"a worker died running {self._describe(batch.cell)} "
                    f"replications {batch.start}-{batch.stop - 1}; resubmitting")
                self.submit(batch)
                return
        else:
            batch.tries += 1
            if batch.tries < MAX_TRIES:
                self.submit(batch)
                return
        n = batch.stop - batch.start
        outputs = {m.name: np.full((n, *m.shape), np.nan) for m in self.module.METRICS}
        outputs["reason"] = np.zeros(n, np.int8)
        # A task that raised twice (not a replication: those are caught one by one in the
        # task) is an error; a task whose worker died MAX_LOST times is counted as crashed.
        kind = "crashed" if batch.lost >= MAX_LOST else "error"
        self._write(batch, {"outputs": outputs, "failed": {k: (kind, text) for k in range(n)}, "seconds": 0.0})
        self._advance(batch)


def deterministic_cells(spec: Spec, module: Any) -> tuple[np.ndarray, list[str]]:
    """Per cell of ``spec``, whether its workload declares it deterministic
    (``workloads._contract.deterministic_reason``), and the reasons given."""
    from schedsweep.workloads._contract import deterministic_reason

    mask = np.zeros(spec.shape, bool)
    why = []
    for cell, params in spec.cells():
        reason = deterministic_reason(module, params)
        if reason:
            mask[cell] = True
            why.append(reason)
    return mask, why


def needless_replications(deterministic: np.ndarray, replications: int) -> np.ndarray:
    """(cells..., replication): the replications a deterministic cell does not need (all but 0)."""
    return np.asarray(deterministic, bool)[..., None] & (np.arange(replications) >= 1)


def _kernels_cached(module: Any) -> bool:
    """Whether the workload's folder has compiled kernels in numba's cache (a model without
    numba kernels counts as cached: there is nothing to compile once)."""
    from schedsweep.workloads.kernel_support.numba_cache import has_cached_kernels

    from ..base.codehash import code_files

    file = getattr(module, "__file__", None)
    if not file or "numba" not in code_files(module)[1]:
        return True
    return has_cached_kernels(Path(file).resolve().parent)


def compile_note(workload: str) -> str:
    """What a first run waits for: the workload's kernels compiled once, and for about how long."""
    from ..spec.estimates import compile_seconds

    seconds = compile_seconds(workload)
    about = f"about {seconds:.0f} s of CPU on the reference machine; " if seconds else ""
    return (f"compiling the {workload} kernels (first run with this code: {about}cached for every later run; "
            "one worker compiles, the others wait)")


@contextlib.contextmanager
def elapsed_counter(what: str, every: float = 1.0) -> Iterator[None]:
    """On a terminal (and not under -q): ``what: N s`` rewritten in place every ``every``
    seconds while the block runs, cleared at its end. Elsewhere: nothing (a log gets the note)."""
    from ..base import console

    if not sys.stderr.isatty() or console.level < console.NORMAL:
        yield
        return
    import threading

    done, t0 = threading.Event(), time.monotonic()

    def tick() -> None:
        while not done.wait(every):
            sys.stderr.write(f"\r  {what}: {time.monotonic() - t0:.0f} s ")
            sys.stderr.flush()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        sys.stderr.write("\r" + " " * (len(what) + 16) + "\r")
        sys.stderr.flush()


def _wait(future: Any) -> None:
    """Block until ``future`` has finished, whatever its outcome (its result is read later)."""
    try:
        future.result()
    except Exception:  # noqa: BLE001 - a failed pilot is reported where its result is read
        pass


def failure_reason(text: str, limit: int = 300) -> str:
    """A failure record's reason in one line: its traceback's last line (the exception, its
    class without the module path), or a timeout's or crash's message as it stands."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else "(no reason recorded)"
    name, sep, message = last.partition(": ")
    if sep and " " not in name:  # package.module.SomeError: message
        last = f"{name.rsplit('.', 1)[-1]}: {message}"
    return last if len(last) <= limit else last[:limit - 1] + "…"


class _LogProgress:
    """Progress for a log file: one line every ``every`` seconds with rate and ETA."""

    def __init__(self, total: int, name: str, every: float = 60.0, initial: int = 0):
        self.total, self.name, self.every = total, name, every
        self.done = self.initial = initial  # already in the store when the run started
        self.t0 = self.last = time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            rate = (self.done - self.initial) / (now - self.t0)
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            say(f"{self.name}: {self.done}/{self.total} replications, {rate:.3g}/s, ETA {format_duration(eta)}")

    def close(self) -> None:
        pass


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def provenance(spec: Spec, module: Any, store: Path | None = None) -> dict[str, Any]:
    """Everything a store needs to say how it was produced (solver choices are parameters:
    ``params`` holds every parameter, defaults included). No absolute path of this machine:
    the spec's file is named from the ``store``'s folder, a path parameter's file by its
    label and content hash (``files``)."""
    from schedsweep import __version__

    return {
        "schedsweep_version": __version__,
        "spec_text": spec.text,
        **store_mod.spec_path_attrs(spec.path, store),
        "files": store_mod.files_attr(spec),
        "spec_identity": spec.identity(),
        "overrides": list(spec.overrides),
        "reference_dropped": list(spec.reference_dropped),
        "name": spec.name,
        "description": spec.description,
        "workload": spec.workload,
        "params": json.loads(json.dumps(spec.params, default=str)),
        "param_defaults": {p.name: _jsonable(p.default) for p in module.PARAMS},
        "reasons": {str(k): list(v) for k, v in module.REASONS.items()},
        "metrics": [m.name for m in module.METRICS],
        "timing_metrics": [m.name for m in module.METRICS if m.timing],
        "dims": [d.name for d in spec.dims],
        "independent": list(spec.independent),
        "replications": spec.replications,
        "seed": spec.seed,
        "versions": _versions(),
        "git_commit": _git_commit(),
        "git_dirty": _git_dirty(),
        "code": codehash.describe(module, plugin_modules(spec)),
        "host": platform.node(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _versions() -> dict[str, str]:
    """Versions of Python and of every package a result can depend on (solvers included)."""
    import importlib.metadata

    out = {"python": platform.python_version()}
    for dist in ("numpy", "numba", "llvmlite", "scipy", "dask", "distributed", "xarray", "zarr", "pandas",
                 "highspy", "pulp"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def _git_dirty() -> bool | None:
    """Whether the checkout this code runs from has uncommitted changes (None outside git)."""
    if SOURCE_TREE is None:
        return None
    try:
        out = subprocess.run(["git", "-C", str(SOURCE_TREE), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


def _git_commit() -> str | None:
    if SOURCE_TREE is None:
        return None
    try:
        out = subprocess.run(["git", "-C", str(SOURCE_TREE), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
