"""Per-job records of chosen replications, and their Gantt chart.

A workload that can tell what happened to each job defines ``job_records(params, seed)``,
a dict of equal-length arrays, one row per job and resource piece: ``job``, ``submit``,
``start``, ``end``, ``resource`` (the node, unit or machine it ran on), ``size`` (its
cores or processes there) and ``status`` (0 completed, 1 killed or interrupted, 2 never
started; a workload may add codes of its own, e.g. desktop_grid's 3, still running at the end).

Replications are deterministic in their seed, so a record is recomputed from the spec and
the replication's seed exactly as the sweep ran it: an opt-in ``[record]`` table of a spec
(``replications = [0, 1]``, optional ``where = { dim = value }``) stores the records of
those replications in the store's ``records`` group after the run; ``schedsweep gantt``
draws one schedule, from the store if recorded there, else recomputed, or writes it as
Batsim's ``jobs.csv`` (:func:`jobs_csv`, the table evalys reads). A workload may add
``estimate`` (the job's requested time, s), the requested_time of that table.
"""
from __future__ import annotations

import csv
import heapq
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..base import seeding
from ..base.errors import QueryError

FIELDS = ("job", "submit", "start", "end", "resource", "size", "status")
OPTIONAL = ("estimate",)    # kept, stored and exported when a workload gives them
GROUP = "records"


def compute(spec: Any, cell: tuple[int, ...], replication: int) -> dict[str, np.ndarray]:
    """The per-job records of one replication of one cell, recomputed from its seed."""
    from ..spec.sweep import workload_of

    module = workload_of(spec)
    if not hasattr(module, "job_records"):
        raise QueryError(f"workload {spec.workload!r} keeps no per-job records (no job_records(params, seed))")
    indep = seeding.independent_index([d.name for d in spec.dims], spec.independent, cell)
    seed = int(seeding.replication_seeds(spec.seed, replication, replication + 1, indep)[0])
    if getattr(module, "TAKES_REPLICATIONS", False):  # its replication r is the r-th of something
        out = module.job_records(spec.cell_params(cell), seed, replication)
    else:
        out = module.job_records(spec.cell_params(cell), seed)
    return {k: np.asarray(out[k]) for k in FIELDS + OPTIONAL if k in out}


def chosen(spec: Any) -> list[tuple[tuple[int, ...], int]]:
    """(cell, replication) pairs the spec's ``[record]`` table asks for."""
    if not spec.record:
        return []
    sel = spec.record["where"]
    cells = [cell for cell, _ in spec.cells()
             if all(d.values[i] == sel[d.name] for d, i in zip(spec.dims, cell) if d.name in sel)]
    return [(cell, r) for cell in cells for r in spec.record["replications"]]


def _key(cell: tuple[int, ...], replication: int) -> str:
    return "_".join(map(str, cell)) + f"_r{replication}" if cell else f"r{replication}"


def store(path: Path, spec: Any) -> int:
    """Record the chosen replications into the store (those run ok); the number recorded."""
    from .zarrstore import OK, open_group

    pairs = chosen(spec)
    if not pairs:
        return 0
    group = open_group(path, "r+")
    status = group["status"]
    sub = group.require_group(GROUP)
    n = 0
    for cell, r in pairs:
        key = _key(cell, r)
        if key in sub or int(status[cell + (r,)]) != OK:
            continue
        rec = compute(spec, cell, r)
        g = sub.create_group(key + ".tmp")
        for name in rec:
            g.create_array(name, data=rec[name])
        g.attrs["cell"] = json.dumps(list(cell))
        (Path(path) / GROUP / (key + ".tmp")).rename(Path(path) / GROUP / key)  # complete, or absent
        n += 1
    if n:
        from .zarrstore import consolidate

        consolidate(path)
    return n


def load(path: Path, spec: Any, cell: tuple[int, ...], replication: int) -> tuple[dict[str, np.ndarray], str]:
    """The records of one replication: from the store if recorded there, else recomputed."""
    import zarr

    folder = Path(path) / GROUP / _key(cell, replication)
    if (folder / "zarr.json").exists():
        g = zarr.open_group(str(folder), mode="r", use_consolidated=False)
        return {name: g[name][...] for name in FIELDS + OPTIONAL if name in g}, "store"
    return compute(spec, cell, replication), "recomputed from the seed"


def gantt(records: dict[str, np.ndarray], title: str, output: str) -> int:
    """Draw the records as a Gantt chart (one row per resource, one bar per job piece); the bars drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ran = records["status"] != 2
    res = records["resource"][ran]
    start, end, job = records["start"][ran], records["end"][ran], records["job"][ran]
    rows = {r: k for k, r in enumerate(np.unique(res))}
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.18 * len(rows) + 1.5)))
    colours = plt.get_cmap("tab20")(job % 20)
    ax.barh([rows[r] for r in res], end - start, left=start, height=0.8, color=colours,
            edgecolor="black", linewidth=0.2)
    ax.set_yticks(range(len(rows)), [str(r) for r in rows])
    ax.set_xlabel("time")
    ax.set_ylabel("resource")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(output)
    plt.close(fig)
    return int(ran.sum())


# Batsim's jobs.csv (its ``out_jobs.csv``), the columns and order evalys's JobSet.from_csv reads
JOBS_CSV_COLUMNS = ("job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
                    "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
                    "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
                    "metadata")
# the records' status codes as Batsim's job states; other codes of a workload are its own
FINAL_STATES = {0: "COMPLETED_SUCCESSFULLY", 1: "COMPLETED_KILLED", 2: "SUBMITTED", 3: "RUNNING"}


def executions(records: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The record rows of each execution of a job (same job, submit, start, end and status:
    its pieces on several resources), in order of first appearance. A job run twice (a
    desktop-grid task resubmitted after a failure) has two executions."""
    groups: dict[tuple, list[int]] = {}
    cols = [records[k] for k in ("job", "submit", "start", "end", "status")]
    for i, key in enumerate(zip(*(c.tolist() for c in cols))):
        key = tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in key)
        groups.setdefault(key, []).append(i)
    return [np.array(rows, np.int64) for rows in groups.values()]


def pool_processors(start: np.ndarray, end: np.ndarray, size: np.ndarray) -> list[list[int]]:
    """Processors for jobs that ran on one pool of identical processors (resource -1): at
    each start, the ``size`` lowest-numbered free ones; a job ending at t frees its
    processors for a job starting at t. The simulator names no processor, so this is one
    valid assignment: no processor holds two jobs at once, and none is numbered at or
    above the most processors busy at once (a job starting with u busy takes ids below
    u + size)."""
    order = sorted(range(len(start)), key=lambda k: (start[k], k))
    free: list[int] = []                 # a heap of freed ids below `fresh`
    fresh = 0
    running: list[tuple[float, int]] = []
    out: list[list[int]] = [[] for _ in range(len(start))]
    for k in order:
        while running and running[0][0] <= start[k]:
            for p in out[heapq.heappop(running)[1]]:
                heapq.heappush(free, p)
        for _ in range(int(size[k])):
            if free:
                out[k].append(heapq.heappop(free))
            else:
                out[k].append(fresh)
                fresh += 1
        heapq.heappush(running, (end[k], k))
    return out


def interval_set(ids: list[int]) -> str:
    """Resource ids as an interval set string, as Batsim writes and procset reads: ``0-3 7``."""
    parts: list[str] = []
    for p in sorted(set(ids)):
        if parts and p == last + 1:
            first = parts[-1].split("-")[0]
            parts[-1] = f"{first}-{p}"
        else:
            parts.append(str(p))
        last = p
    return " ".join(parts)


def jobs_csv(records: dict[str, np.ndarray], output: str, workload_name: str) -> int:
    """Write the records as Batsim's jobs.csv (:data:`JOBS_CSV_COLUMNS`, one row per execution); the rows written.

    ``allocated_resources`` are the records' resources (nodes, units or machines) as an
    interval set; executions on a pool of processors (resource -1) get processors from
    :func:`pool_processors`. ``requested_number_of_resources`` is the execution's total
    size (cores or processes); ``requested_time`` the records' ``estimate`` where the
    workload gives it, else -1 (Batsim's "no walltime"). ``success`` is 1 for status 0;
    ``final_state`` per :data:`FINAL_STATES`. A job run more than once has ids ``J``,
    ``J#1``, ... in order of start. Times are written exactly (shortest float form);
    undefined values (no start, a stretch with zero run time) are left empty.
    ``consumed_energy`` is -1 (no energy model), ``metadata`` empty, as Batsim writes them;
    ``profile`` is empty (the records name none).
    """
    groups = executions(records)
    first = np.array([g[0] for g in groups], np.int64)
    start, end = records["start"][first].astype(float), records["end"][first].astype(float)
    size = np.array([int(records["size"][g].sum()) for g in groups], np.int64)
    pooled = [k for k, g in enumerate(groups)
              if (records["resource"][g] < 0).all() and math.isfinite(start[k]) and math.isfinite(end[k])]
    allocated = [[int(r) for r in records["resource"][g] if r >= 0] for g in groups]
    for k, procs in zip(pooled, pool_processors(start[pooled], end[pooled], size[pooled])):
        allocated[k] = procs
    seen: dict[int, int] = {}
    names = {}
    by_start = np.lexsort((np.arange(len(groups)), np.nan_to_num(start, nan=np.inf)))   # never started: last
    for k in by_start.tolist():
        j = int(records["job"][first[k]])
        names[k] = f"{j}" if j not in seen else f"{j}#{seen[j]}"
        seen[j] = seen.get(j, 0) + 1
    estimate = records.get("estimate")
    with open(output, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(JOBS_CSV_COLUMNS)
        for k, i in enumerate(first):
            submit, status = float(records["submit"][i]), int(records["status"][i])
            run, wait, turn = end[k] - start[k], start[k] - submit, end[k] - submit
            req = float(estimate[i]) if estimate is not None else -1.0
            w.writerow([names[k], workload_name, "", _exact(submit), int(size[k]), _exact(req),
                        1 if status == 0 else 0, FINAL_STATES.get(status, f"STATUS_{status}"),
                        _exact(start[k]), _exact(run), _exact(end[k]), _exact(wait), _exact(turn),
                        _exact(turn / run) if run > 0 else "", interval_set(allocated[k]), -1, ""])
    return len(groups)


def _exact(x: float) -> str:
    """A float as its shortest exact form; NaN (undefined) as an empty field."""
    x = float(x)
    return "" if math.isnan(x) else repr(x)
