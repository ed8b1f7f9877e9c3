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
draws one schedule, from the store if recorded there, else recomputed.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from . import seeding
from .errors import QueryError

FIELDS = ("job", "submit", "start", "end", "resource", "size", "status")
GROUP = "records"


def compute(spec: Any, cell: tuple[int, ...], replication: int) -> dict[str, np.ndarray]:
    """The per-job records of one replication of one cell, recomputed from its seed."""
    from .spec import workload_of

    module = workload_of(spec)
    if not hasattr(module, "job_records"):
        raise QueryError(f"workload {spec.workload!r} keeps no per-job records (no job_records(params, seed))")
    indep = seeding.independent_index([d.name for d in spec.dims], spec.independent, cell)
    seed = int(seeding.replication_seeds(spec.seed, replication, replication + 1, indep)[0])
    if getattr(module, "TAKES_REPLICATIONS", False):  # its replication r is the r-th of something
        out = module.job_records(spec.cell_params(cell), seed, replication)
    else:
        out = module.job_records(spec.cell_params(cell), seed)
    return {k: np.asarray(out[k]) for k in FIELDS}


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
    from .store import OK, open_group

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
        for name in FIELDS:
            g.create_array(name, data=rec[name])
        g.attrs["cell"] = json.dumps(list(cell))
        (Path(path) / GROUP / (key + ".tmp")).rename(Path(path) / GROUP / key)  # complete, or absent
        n += 1
    if n:
        from .store import consolidate

        consolidate(path)
    return n


def load(path: Path, spec: Any, cell: tuple[int, ...], replication: int) -> tuple[dict[str, np.ndarray], str]:
    """The records of one replication: from the store if recorded there, else recomputed."""
    import zarr

    folder = Path(path) / GROUP / _key(cell, replication)
    if (folder / "zarr.json").exists():
        g = zarr.open_group(str(folder), mode="r", use_consolidated=False)
        return {name: g[name][...] for name in FIELDS}, "store"
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
