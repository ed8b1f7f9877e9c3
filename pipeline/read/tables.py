"""Tables of mean ± CI half-width from a store: selection, pairing, pivoting, formats."""
from __future__ import annotations

import itertools
import json
import textwrap
from typing import Any, Iterable

import numpy as np
import pandas as pd
import xarray as xr

from ..base import stats
from ..base.stats import QueryError

FORMATS = ("text", "csv", "markdown", "json")


def parse_assignments(items: Iterable[str], option: str) -> list[tuple[str, str]]:
    out = []
    for item in items or ():
        if "=" not in item:
            raise QueryError(f"{option} {item!r}: expected DIM=VALUE")
        dim, value = item.split("=", 1)
        out.append((dim.strip(), value.strip()))
    return out


def select(ds: xr.Dataset, sel: Iterable[str]) -> xr.Dataset:
    """Apply ``dim=value`` selections given as text."""
    for dim, value in parse_assignments(sel, "--sel"):
        ds = ds.sel({dim: stats.coerce_value(ds, dim, value)})
    return ds


def compute(ds: xr.Dataset, metrics: list[str] | None = None, sel: Iterable[str] = (),
            paired: str | None = None, ratio: str | None = None, level: float = 0.95,
            over: str | None = None) -> xr.Dataset:
    """The statistics Dataset a table shows; ``over``: paired differences pooled over that
    dimension (:func:`stats.paired_over`)."""
    if paired and ratio:
        raise QueryError("give --paired or --ratio, not both")
    if over and not paired:
        raise QueryError("--over DIM pools paired differences: give --paired DIM=BASELINE with it")
    metrics = stats.metric_names(ds, metrics)
    if over:
        (dim, base), = parse_assignments([paired], "--paired")
        result = stats.paired_over(ds, dim, base, over, level, metrics)
    elif paired or ratio:
        (dim, base), = parse_assignments([paired or ratio], "--paired" if paired else "--ratio")
        result = (stats.paired if paired else stats.ratio)(ds, dim, base, level, metrics)
    else:
        result = stats.describe(ds, level, metrics)
    # the spec's replications per cell: a table marks the cells that hold fewer values (pooled
    # pairs are not replications of one cell: no mark)
    result.attrs["replications"] = None if over else ds.attrs.get("replications")
    if "files" in ds.attrs:  # --sel may name a file as the spec wrote it (stats.label_of)
        result.attrs["files"] = ds.attrs["files"]
    if not (paired or ratio or over) and "status" in ds:
        result.attrs["cell_runs"] = cell_runs(ds, metrics)
        result.attrs["cell_dims"] = [d for d in ds["status"].dims if d != stats.REP]
    return select(result, sel)


def cell_runs(ds: xr.Dataset, metrics: list[str]) -> dict[tuple, tuple[int, str]]:
    """{(metric, cell's coordinate values...): (replications run, why none has a value)} for
    the legend of a text table: a cell not fully run is told from a metric undefined there.
    The reason is the label of the most frequent reason code of the replications run (or
    "failed" when every one failed); '' when some replication has a value."""
    dims = [d for d in ds["status"].dims if d != stats.REP]
    status = np.asarray(ds["status"].values)
    reason = np.asarray(ds["reason"].values) if "reason" in ds else np.zeros_like(status)
    labels = {int(k): v[0] for k, v in (ds.attrs.get("reasons") or {}).items()}
    coords = [[_plain(v) for v in ds[d].values] for d in dims]
    out: dict[tuple, tuple[int, str]] = {}
    for m in metrics:
        values = np.asarray(ds[m].transpose(*dims, stats.REP, ...).values, dtype=float)
        defined = ~np.isnan(values.reshape(status.shape + (-1,))).all(axis=-1)
        for idx in np.ndindex(*status.shape[:-1]):
            ran = status[idx] != 0
            why = ""
            if ran.any() and not defined[idx].any():
                codes = reason[idx][ran & (status[idx] != 3)]
                codes = codes[codes != 0]
                why = ("failed" if not codes.size else
                       labels.get(int(np.bincount(codes.astype(np.int64)).argmax()), "undefined"))
            key = (m, *(c[i] for c, i in zip(coords, idx)))
            out[key] = (int(ran.sum()), why)
    return out


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _run_note(runs: dict | None, row: Any, dims: list[str], expected: int | None) -> tuple[int | None, str]:
    """(replications run, reason none has a value) of a long-frame row, from :func:`cell_runs`."""
    if not runs or not expected:
        return None, ""
    key = (row["metric"], *(_plain(row[d]) if d in row else None for d in dims))
    return runs.get(key, (None, ""))


def long_frame(result: xr.Dataset) -> pd.DataFrame:
    """One row per cell (and extra label) per metric, one column per statistic."""
    frames = []
    for name, da in result.data_vars.items():
        if da.dims == ("stat",):  # a single-cell store
            frame = pd.DataFrame([da.values], columns=[str(s) for s in da["stat"].values])
        else:
            frame = da.to_dataset(dim="stat").to_dataframe().reset_index()
        frame.insert(0, "metric", name)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True, sort=False)
    stat_cols = [s for s in stats.PAIRED_STATS if s in out.columns]
    keep = [c for c in out.columns if c not in stat_cols and c != "metric"]
    keep = [c for c in keep if out[c].notna().any()]
    return out[["metric"] + keep + stat_cols]


def _fmt(mean: float, half: float, relative: float = np.nan, n: float = np.nan,
         expected: int | None = None, deterministic: bool = False, ran: int | None = None,
         why: str = "") -> str:
    """``mean ± half``, the relative change in brackets, and ``[n=K]`` when a cell holds fewer
    values than the spec's replications (failed or undefined: NaN with a reason);
    ``[n=K, R of N run]`` when only R of them have run; ``— undefined (reason)`` when every
    replication run gives no value (``ran``, ``why``: :func:`cell_runs`). A deterministic cell
    (run once) is its value and the word, never a ``± 0``."""
    if deterministic:
        return deterministic_text(mean, relative)
    short = f" [n={int(n)}]" if expected and np.isfinite(n) and n < expected else ""
    if short and ran is not None and ran < expected:
        short = f" [n={int(n)}, {ran} of {expected} run]"
    if not np.isfinite(mean):
        if why and ran:
            return f"— undefined ({why})" + (f" [{ran} of {expected} run]" if expected and ran < expected else "")
        return "—" + short
    text = f"{mean:.4g}" if not np.isfinite(half) else f"{mean:.4g} ± {half:.2g}"
    if np.isfinite(relative):
        text += f" ({relative:+.1%})"
    return text + short


def deterministic_text(value: float, relative: float = np.nan) -> str:
    """A deterministic cell's value: ``6982 (deterministic)``, ``-1754 (-20.1%; deterministic)``."""
    if not np.isfinite(value):
        return "— (deterministic)"
    change = f"{relative:+.1%}; " if np.isfinite(relative) else ""
    return f"{value:.4g} ({change}{DETERMINISTIC_WORD})"


DETERMINISTIC_WORD = "deterministic"


def _is_det(long: pd.DataFrame) -> np.ndarray:
    """Per row of a long frame, whether the value is deterministic (no CI)."""
    if stats.DETERMINISTIC not in long:
        return np.zeros(len(long), bool)
    return (long[stats.DETERMINISTIC].to_numpy(dtype=float) == 1.0)


def wide_frame(long: pd.DataFrame, by: str | None = None, expected: int | None = None) -> pd.DataFrame:
    """Mean ± half-width, metrics (or the values of ``by``) as columns; ``[n=K]`` where a cell has
    fewer than ``expected`` values."""
    long = long.copy()
    relative = long["relative_change"] if "relative_change" in long else np.full(len(long), np.nan)
    counts = long["n"] if "n" in long else np.full(len(long), np.nan)
    runs, dims = long.attrs.get("cell_runs"), long.attrs.get("cell_dims", [])
    notes = [_run_note(runs, row, dims, expected) for _, row in long.iterrows()] if runs else [(None, "")] * len(long)
    long["value"] = [_fmt(m, h, r, k, expected, d, ran, why)
                     for m, h, r, k, d, (ran, why) in zip(long["mean"], long["half_width"], relative, counts,
                                                         _is_det(long), notes)]
    baseline = long.attrs.get("baseline")
    if baseline and baseline[0] in long:  # the baseline's difference with itself: no "0 ± 0" interval
        long.loc[[is_baseline(v, baseline) for v in long[baseline[0]]], "value"] = "(baseline)"
    keys = [c for c in long.columns if c not in stats.PAIRED_STATS and c not in ("metric", "value")]
    if by:
        if by not in keys:
            raise QueryError(f"--by {by!r} is not a dimension of the table; dimensions: {', '.join(keys)}")
        rows = ["metric"] + [k for k in keys if k != by]
        table = long.pivot_table(index=rows, columns=by, values="value", aggfunc="first", sort=False)
    else:
        table = long.pivot_table(index=keys or None, columns="metric", values="value", aggfunc="first",
                                 sort=False) if keys else long.set_index("metric")[["value"]].T
    table.columns = [str(c) for c in table.columns]
    return table.reset_index() if keys or by else table


def fitted_text(part: pd.DataFrame, expected: int | None, columns: int) -> str:
    """``part`` as text that fits ``columns``: metrics as columns when they fit, else metrics as
    rows with the values of the dimension that has the fewest as columns, wrapped into blocks
    of columns (pandas' line width) when even those are too many."""
    table = wide_frame(part, None, expected)
    text = table.to_string(index=False)
    if max(map(len, text.splitlines())) <= columns:
        return text
    keys = [c for c in part.columns if c not in stats.PAIRED_STATS and c != "metric"]
    if keys:
        by = min(keys, key=lambda k: part[k].nunique())
        table = wide_frame(part, by, expected)
        row_keys = ["metric"] + [k for k in keys if k != by]
    else:  # a single cell: one row per metric
        table = table.T.reset_index()
        table.columns = ["metric", "value" if _is_det(part).all() else "mean ± CI"]
        row_keys = ["metric"]
    return "\n\n".join(_left(table[row_keys + block]).to_string(index=False)
                        for block in _column_blocks(table, row_keys, columns))


def _text_width(series: pd.Series, name: str) -> int:
    return max([len(str(name))] + [len(str(v)) for v in series]) + 1


def _column_blocks(table: pd.DataFrame, row_keys: list[str], columns: int) -> list[list[str]]:
    """The value columns of ``table`` packed in order into blocks that fit ``columns`` beside
    the row keys (each block at least one column)."""
    base = sum(_text_width(table[k], k) for k in row_keys)
    blocks: list[list[str]] = [[]]
    used = base
    for c in [c for c in table.columns if c not in row_keys]:
        w = _text_width(table[c], c)
        if blocks[-1] and used + w > columns:
            blocks.append([])
            used = base
        blocks[-1].append(c)
        used += w
    return blocks


def _left(table: pd.DataFrame) -> pd.DataFrame:
    """Row-key text columns left-aligned (names read better so), values as pandas aligns them."""
    out = table.copy()
    for c in out.columns[:1]:
        width = max(len(str(c)), *(len(str(v)) for v in out[c]))
        out[c] = [str(v).ljust(width) for v in out[c]]
        out = out.rename(columns={c: str(c).ljust(width)})
    return out


def render(result: xr.Dataset, fmt: str = "text", by: str | None = None, columns: int | None = None) -> str:
    """The table as text, csv, markdown or json. A text table is laid out to fit ``columns``
    characters (:func:`fitted_text`) unless ``by`` is given or ``columns`` is None."""
    if fmt not in FORMATS:
        raise QueryError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    long = long_frame(result)
    units = {name: _unit(result, da) for name, da in result.data_vars.items()}
    if fmt in ("csv", "json"):  # the unit as a column; counts as integers (n is never 1000.0)
        long.insert(1, "unit", long["metric"].map(units))
        for column in ("n", "n_pairs"):
            if column in long and _whole(long[column]):
                long[column] = long[column].astype("Int64")
        if fmt == "csv":
            return long.to_csv(index=False)
        return json.dumps(json.loads(long.to_json(orient="records")), indent=1)
    names = {m: f"{m} [{u}]" if u else m for m, u in units.items()}
    long["metric"] = long["metric"].map(names)
    # [n=K] in the text table; markdown stays cell for cell what the HTML report shows (which
    # has its own n column), csv and json carry n as a column
    expected = result.attrs.get("replications") if fmt == "text" else None
    if fmt == "text" and result.attrs.get("cell_runs"):  # for the legend of each cell (wide_frame)
        _attach_runs(long, result, names)
    if "baseline" in result.attrs:  # (dim, value) as stats.paired resolved it
        long.attrs["baseline"] = tuple(result.attrs["baseline"])
    if fmt == "text" and columns and not by:
        texts = [fitted_text(part, expected, columns) for part in _same_dims(long)]
        return "\n".join(textwrap.wrap(_header(result, expected, "[n=" in "".join(texts)), columns)) + "\n" \
            + "\n\n".join(texts)
    tables = [wide_frame(part, by, expected) for part in _same_dims(long)]
    if fmt == "markdown":
        return "\n\n".join(_markdown(t) for t in tables)
    header = _header(result, expected, "[n=" in "".join(t.to_string() for t in tables))
    return header + "\n" + "\n\n".join(t.to_string(index=False) for t in tables)


def _unit(result: xr.Dataset, da: xr.DataArray) -> str:
    """The unit a table states for a metric: the store's (shortened), or 'ratio' for ratios of means."""
    from ..base.conventions import display_unit

    return "ratio" if "ratio" in result.attrs else display_unit(da.attrs)


def is_baseline(value: Any, baseline: tuple[str, Any]) -> bool:
    """Whether a coordinate value is the baseline ``(dim, value)`` a paired statistic recorded
    (``attrs["baseline"]``: the coordinate's own value, so equality is exact)."""
    return _plain(value) == baseline[1]


def _whole(column: pd.Series) -> bool:
    values = column.dropna().to_numpy(dtype=float)
    return bool(np.all(values == np.round(values)))


def _attach_runs(long: pd.DataFrame, result: xr.Dataset, names: dict[str, str]) -> None:
    """The per-cell runs of :func:`cell_runs` on the long frame, for :func:`wide_frame`, keyed by
    the metric's name as the table shows it (``names``: with its unit)."""
    long.attrs["cell_runs"] = {(names.get(k[0], k[0]), *k[1:]): v for k, v in result.attrs["cell_runs"].items()}
    long.attrs["cell_dims"] = result.attrs["cell_dims"]


def _header(result: xr.Dataset, expected: int | None, short_cells: bool) -> str:
    """What the numbers of a text table are."""
    header = _value_words(result)
    if "paired" in result.attrs:
        header += f", paired difference against {result.attrs['paired']} (relative change in brackets)"
    if "over" in result.attrs:
        header += (f", pooled over {result.attrs['over']} (the pairs of every {result.attrs['over']} and "
                   "replication; one pair per deterministic value)")
    if "ratio" in result.attrs:
        header += f", ratio of means against {result.attrs['ratio']}"
    if expected and short_cells:
        header += (f"; [n=K]: the cell holds K of the spec's {expected} replications (the others failed or "
                   f"undefined; see schedsweep show), [n=K, R of {expected} run]: only R have run")
    if expected and result.attrs.get("cell_runs") and any(w for _, w in result.attrs["cell_runs"].values()):
        header += "; — undefined (reason): no replication run has a value for this metric here"
    return header


def deterministic_share(result: xr.Dataset) -> tuple[int, int]:
    """(deterministic cells, cells) of a statistics Dataset, over every metric."""
    flags = [da.sel(stat=stats.DETERMINISTIC).values.ravel() for da in result.data_vars.values()
             if stats.DETERMINISTIC in da["stat"].values]
    total = sum(da.sel(stat="mean").size for da in result.data_vars.values())
    return (int(sum(int((f == 1.0).sum()) for f in flags)), total)


def _value_words(result: xr.Dataset) -> str:
    """What a table's numbers are: mean ± CI, deterministic values, or both."""
    level = f"{result.attrs.get('level', 0.95):.0%}"
    exact, total = deterministic_share(result)
    if exact and exact == total:
        return "value of each cell (deterministic: run once, no CI)"
    words = f"mean ± {level} CI half-width"
    return words + ("; 'deterministic': the value of a cell run once, no CI" if exact else "")


def _same_dims(long: pd.DataFrame) -> list[pd.DataFrame]:
    """Split a long frame into groups of metrics with the same dimensions (a metric with a
    per-class dimension cannot share a wide table with plain metrics)."""
    keys = [c for c in long.columns if c not in stats.PAIRED_STATS and c != "metric"]
    defined = long[keys].notna()
    signature = defined.apply(tuple, axis=1) if keys else pd.Series([()] * len(long), index=long.index)
    parts = []
    for sig in dict.fromkeys(signature):
        part = long[signature == sig]
        parts.append(part.drop(columns=[k for k, d in zip(keys, sig) if not d]))
    return parts


def _markdown(table: pd.DataFrame) -> str:
    cols = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


NOT_NEEDED = "not needed (auto: the cell stopped)"


def completeness(ds: xr.Dataset) -> dict[str, Any]:
    """Replications per status label. Under ``replications = "auto"`` the replications a
    stopped cell never needed are counted apart, not as "not run" (nothing is left to do)."""
    from ..store.zarrstore import DETERMINISTIC_LABEL, NOT_RUN, STATUS_LABELS

    status = ds["status"].values
    counts = {label: int((status == code).sum()) for code, label in STATUS_LABELS.items()}
    spare = stats.needless(ds, status)  # replications 1.. of deterministic cells
    if spare.any():
        needless = int((spare & (status == NOT_RUN)).sum())
        counts[STATUS_LABELS[NOT_RUN]] -= needless
        counts[DETERMINISTIC_LABEL] = needless
    auto = ds.attrs.get("auto")
    if auto:
        stopped = np.asarray(auto.get("done", auto.get("met")), dtype=bool)
        if stopped.shape == status.shape[:-1]:
            needless = int(((status == NOT_RUN) & stopped[..., None] & ~spare).sum())
            counts[STATUS_LABELS[NOT_RUN]] -= needless
            counts[NOT_NEEDED] = needless
    return counts


def auto_lines(ds: Any) -> list[str]:
    """What replications = "auto" did, per cell: replications run, precision reached, met."""
    auto = ds.attrs.get("auto")
    if not auto:
        return []
    run = np.asarray(auto["replications_run"]).ravel()
    reached = np.array([np.nan if v is None else v for v in auto["precision_reached"]], float)
    met = np.asarray(auto["met"]).ravel()
    dims = [d for d in ds.attrs.get("dims", [])]
    lines = [f"auto:        target relative precision {auto['precision']:g} of {auto['metric']}: "
             f"{int(met.sum())} of {met.size} cells met it; replications run {int(run.min())}-{int(run.max())} "
             f"of at most {auto['max_replications']}"]
    if dims and met.size <= 60:
        values = [[v.item() if hasattr(v, 'item') else v for v in ds[d].values] for d in dims]
        for k, combo in enumerate(itertools.product(*values)):
            where = ", ".join(f"{d}={v}" for d, v in zip(dims, combo))
            lines.append(f"    {where}: {run[k]} replications, precision {reached[k]:.3g}"
                         f" {'met' if met[k] else 'NOT met'}")
    return lines
