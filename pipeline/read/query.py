"""Many stores as one table: a hive-partitioned parquet dataset, and mean with CI per group over it.

``export_folder`` writes the long table (:func:`pipeline.store.export.long_table`) of every store
under some folders into one dataset, ``OUT/workload=W/store=S/part-0.parquet`` (S is the
store's path relative to the folder searched, URL-escaped as hive partitioning has it), each
file with the store's provenance in its key-value metadata (``schedsweep``) and the columns
``spec`` and ``unit`` beside the data; readers (duckdb, pyarrow, pandas) give back
``workload`` and ``store`` from the folder names.

``group_ci`` answers "mean and CI of each metric per group" over such a dataset with duckdb
(the optional ``query`` extra): n, mean and sample sd per group in SQL, the Student-t
half-width from them, as :func:`pipeline.base.stats.describe_array` computes it (undefined
values, NaN, are left out of n). Grouping by ``unit`` is on by default, so the same metric
name in two units never makes one group.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import quote

from ..base.errors import QueryError, StoreError

NOT_GROUPED = ("value", "status", "reason", "seed", "replication")  # per replication, never a group key
PART = "part-0.parquet"


def _relative(store: Path, roots: list[Path]) -> str:
    """The store's name in the dataset: its path under the folder it was found in."""
    for root in roots:
        try:
            rel = store.resolve().relative_to(root.resolve())
        except ValueError:
            continue
        if str(rel) != ".":
            return rel.as_posix()
    return store.name


def export_folder(paths: Iterable[str | Path], output: str | Path, fmt: str = "parquet") -> Path:
    """Every store under ``paths`` into one dataset at ``output``: a hive-partitioned parquet
    folder, or (``fmt="csv"``) one CSV with the ``workload`` and ``store`` columns kept."""
    from ..store.export import long_table, provenance_of, with_origin, write_parquet
    from ..store.integrity import open_store
    from .stores import find

    if fmt not in ("parquet", "csv"):
        raise StoreError(f"--to {fmt!r} of a folder of stores: parquet (one dataset) or csv (one table)")
    output = Path(output)
    if os.path.lexists(output):
        raise StoreError(f"{output} exists; give another -o (nothing is overwritten)")
    roots = [Path(p) for p in paths]
    stores = [s for s in find(roots) if s.resolve() != output.resolve()]
    if not stores:
        raise StoreError(f"no store under {', '.join(map(str, roots))}")
    frames = []
    for store in stores:
        ds = open_store(store)
        name = _relative(store, roots)
        table = with_origin(long_table(ds), ds, name)
        if fmt == "csv":
            frames.append(table)
            continue
        folder = output / f"workload={quote(table['workload'].iat[0], safe='')}" / f"store={quote(name, safe='')}"
        write_parquet(table.drop(columns=["workload", "store"]), folder / PART, provenance_of(ds, name))
    if fmt == "csv":
        import pandas as pd

        output.parent.mkdir(parents=True, exist_ok=True)
        pd.concat(frames, ignore_index=True).to_csv(output, index=False)
    return output


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise QueryError("querying a dataset needs the optional 'query' extra (duckdb): "
                         "pip install 'schedsweep[query]'") from None
    return duckdb


def _source(dataset: str | Path) -> str:
    glob = str(Path(dataset) / "**" / "*.parquet").replace("'", "''")
    return f"read_parquet('{glob}', hive_partitioning = true, union_by_name = true)"


def columns(dataset: str | Path, connection: Any = None) -> list[str]:
    """The dataset's columns (the union over its files, partition keys included)."""
    con = connection or _duckdb().connect()
    return [row[0] for row in con.sql(f"DESCRIBE SELECT * FROM {_source(dataset)}").fetchall()]


def group_ci(dataset: str | Path, by: list[str] | None = None, level: float = 0.95,
             where: str | None = None) -> Any:
    """Per group of ``by`` (default: every column but the per-replication ones — store,
    workload, spec, metric, unit and each coordinate), the n, mean, sd, half-width and CI of
    ``value``; a pandas DataFrame sorted by the group keys. ``where`` is an SQL condition
    on the dataset's columns (e.g. ``"metric = 'mean_wait'"``)."""
    import numpy as np

    if not 0 < level < 1:
        raise QueryError(f"level {level}: a confidence level in (0, 1)")
    con = _duckdb().connect()
    have = columns(dataset, con)
    keys = [c for c in have if c not in NOT_GROUPED] if by is None else list(by)
    unknown = [k for k in keys if k not in have]
    if unknown:
        raise QueryError(f"group by {', '.join(unknown)}: not a column of {dataset}; columns: {', '.join(have)}")
    if "unit" in have and "unit" not in keys:  # one metric name in two units is two groups, never one
        keys.append("unit")
    quoted = ", ".join(f'"{k}"' for k in keys)
    condition = "value IS NOT NULL AND NOT isnan(value)" + (f" AND ({where})" if where else "")
    sql = (f"SELECT {quoted}, count(value) AS n, avg(value) AS mean, stddev_samp(value) AS sd "
           f"FROM {_source(dataset)} WHERE {condition} GROUP BY ALL ORDER BY ALL")
    out = con.sql(sql).df()
    n = out["n"].to_numpy(dtype=float)
    out["half_width"] = _t_factor(level, n) * out["sd"].to_numpy(dtype=float) / np.sqrt(n)
    out["ci_low"], out["ci_high"] = out["mean"] - out["half_width"], out["mean"] + out["half_width"]
    return out


def _t_factor(level: float, n: Any) -> Any:
    """The two-sided Student-t factor for n observations (NaN below 2), as pipeline.base.stats has it."""
    import numpy as np
    from scipy.special import stdtrit  # the t quantile without loading scipy.stats (seconds)

    n = np.asarray(n, dtype=float)
    df = np.where(n >= 2, n - 1, np.nan)
    return stdtrit(df, 0.5 + level / 2)
