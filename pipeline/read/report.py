"""``schedsweep report``: one self-contained HTML file that explains a store.

Sections: one figure (each defined metric once, against the main sweep dimension), a table per metric with its confidence
intervals, the paired comparison against a baseline, completeness, provenance and the spec.
Every number comes from :func:`pipeline.read.tables.compute` and :func:`pipeline.read.tables.long_frame`,
the code behind ``schedsweep table``; the shown ``mean ± half-width`` is formatted by the
same function, and each number cell carries its full-precision value in ``data-value``.
Figures are embedded (base64 PNG or inline SVG); the page loads nothing and runs no script.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from . import plot
from ..base import stats
from . import tables
from ..base.stats import QueryError

FIGURE_FORMATS = ("png", "svg")
#: a second sweep dimension with at most this many values becomes the hue of a figure.
HUE_MAX = 6
PANEL_SIZE = (4.2, 3.2)  # inches, one metric

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; line-height: 1.4; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.key { text-align: left; }
td.sig { font-weight: bold; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { margin: 1em 0 2em; } figure img, figure svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: 0.9em; }
.muted { color: #666; } dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: bold; } dd { margin: 0; }
"""


def default_output(store: str | Path) -> Path:
    """``results/foo.zarr`` → ``results/foo.html`` (beside the store)."""
    store = Path(store)
    return store.with_name(f"{store.stem}.html")


def default_baseline(ds: xr.Dataset) -> str | None:
    """``DIM=VALUE``: the first value of the first sweep dimension, or None for a single cell."""
    dims = [d for d in ds.attrs.get("dims", []) if d in ds.dims]
    if not dims:
        return None
    return f"{dims[0]}={plot._plain(ds[dims[0]].values[0])}"


def write_report(store: str | Path, output: str | Path | None = None, paired: str | None = None,
                 level: float = 0.95, figure_format: str = "png") -> Path:
    """Build the report of the store at ``store`` and write it; returns the HTML file's path."""
    from ..store.integrity import open_store

    ds = open_store(store)
    text = build(ds, Path(store).name, paired, level, figure_format)  # a report travels: no machine path
    path = Path(output) if output else default_output(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build(ds: xr.Dataset, store_label: str = "", paired: str | None = None, level: float = 0.95,
          figure_format: str = "png") -> str:
    """The report of ``ds`` as an HTML string."""
    if figure_format not in FIGURE_FORMATS:
        raise QueryError(f"--figure-format {figure_format!r}: one of {', '.join(FIGURE_FORMATS)}")
    paired = paired or default_baseline(ds)
    defined = defined_metrics(ds)  # reads every metric once; each section uses the list
    a = ds.attrs
    title = f"schedsweep report: {a.get('name', store_label)}"
    body = [f"<h1>{_e(title)}</h1>",
            f"<p>{_e(a.get('description', ''))}</p>",
            f"<p class='muted'>store {_e(store_label)} · workload {_e(a.get('workload'))} · "
            f"{_e(a.get('replications'))} replications per cell · report made "
            f"{_e(_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds'))}</p>",
            *_pending_html(ds),
            _contents(),
            "<h2 id='published'>Published reference: the reproduction scorecard</h2>", published_html(ds, level),
            "<h2 id='figures'>Figures</h2>", figures_html(ds, level, figure_format, defined),
            "<h2 id='metrics'>Metrics</h2>", undefined_html(ds, defined), metric_tables_html(ds, level, defined),
            "<h2 id='paired'>Paired comparison</h2>", paired_html(ds, paired, level, defined),
            "<h2 id='completeness'>Completeness</h2>", completeness_html(ds, store_label),
            "<h2 id='provenance'>Provenance</h2>", provenance_html(ds),
            "<h2 id='spec'>Spec</h2>", f"<pre>{_e(a.get('spec_text', ''))}</pre>"]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _pending_html(ds: xr.Dataset) -> list[str]:
    """A store whose run's journal holds results not yet compacted: said at the top (they are included)."""
    n = ds.attrs.get("pending_results")
    return [f"<p class='pending'>{_e(n)} results of a running or interrupted run are included from its journal "
            "(not yet compacted into the store)</p>"] if n else []


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _contents() -> str:
    items = [("published", "Published reference"), ("figures", "Figures"), ("metrics", "Metrics"),
             ("paired", "Paired comparison"),
             ("completeness", "Completeness"), ("provenance", "Provenance"), ("spec", "Spec")]
    return "<p>" + " · ".join(f"<a href='#{k}'>{v}</a>" for k, v in items) + "</p>"


# -- published reference ------------------------------------------------------------------

def published_html(ds: xr.Dataset, level: float) -> str:
    """The published values and claims of the spec beside our results: the scorecard of
    ``schedsweep verify`` (values against our CI and tolerance, claims by paired CIs)."""
    from ..spec import reference
    from .verify import scorecard

    ref = reference.of_store(ds)
    if not ref:
        return "<p class='muted'>The spec names no published values (no [reference] table).</p>"
    card = scorecard(ds, level)
    if card is None:
        return f"<p>Reproduces: {_e(ref.reproduces)}</p>" if ref.reproduces else ""
    return scorecard_html(card)


def scorecard_html(card: dict[str, Any]) -> str:
    """One spec's scorecard (pipeline/read/verify.py) as HTML tables."""
    from .verify import _claim_need, _need, _rel, ours_text

    out = [f"<p>Reproduces: {_e(card['reproduces'])}. Verdict: <b>{_e(card['verdict'])}</b> "
           f"({_e(card['replications'])} replications, {card['level']:.0%} CIs)</p>"]
    if card["dropped"]:
        out.append(f"<p class='muted'>Dropped by overrides: {_e('; '.join(card['dropped']))}</p>")
    if card["values"]:
        exact = " or value, deterministic" if any(v.get("deterministic") for v in card["values"]) else ""
        out.append(f"<table><tr><th>verdict</th><th>metric</th><th>where</th><th>published</th><th>ours (mean ± CI{exact})</th>"
                   "<th>relative difference</th><th>tolerance</th><th>source</th></tr>")
        for v in card["values"]:
            out.append(f"<tr><td>{_e(v['verdict'] + _need(v['needed']))}</td><td class='key'>{_e(v['metric'])}</td>"
                       f"<td class='key'>{_e(v['where'])}</td><td>{v['published']:.6g}</td>"
                       f"<td>{_e(ours_text(v))}</td><td>{_rel(v['relative'])}</td>"
                       f"<td>±{v['tolerance']:.0%}</td><td class='key'>{_e(v['source'])}</td></tr>")
        out.append("</table>")
    if card["claims"]:
        out.append("<table><tr><th>published claim</th><th>verdict (paired CIs)</th><th>differences judged</th></tr>")
        for c in card["claims"]:
            shown = "<br>".join(_e((f"[{s['slice']}] " if s["slice"] else "") + "; ".join(s["contrasts"]))
                                for s in c["slices"])
            out.append(f"<tr><td class='key'>{_e(c['text'])}</td><td>{_e(c['verdict'] + _claim_need(c))}</td>"
                       f"<td class='key'>{shown}</td></tr>")
        out.append("</table>")
    return "\n".join(out)


# -- figures ------------------------------------------------------------------------------

def choose_hue(ds: xr.Dataset, x: str) -> str | None:
    """The other sweep dimension with the fewest values (at most HUE_MAX), if any."""
    others = [d for d in ds.attrs.get("dims", []) if d != x and d in ds.dims and 1 < ds.sizes[d] <= HUE_MAX]
    return min(others, key=lambda d: ds.sizes[d]) if others else None


def defined_metrics(ds: xr.Dataset) -> list[str]:
    """The store's metrics with at least one defined value: a metric that is NaN in every
    replication (a network metric of a sweep without a network) has nothing to draw or tabulate."""
    return [m for m in stats.metric_names(ds) if bool(np.isfinite(ds[m].values).any())]


def undefined_html(ds: xr.Dataset, defined: list[str]) -> str:
    missing = [m for m in stats.metric_names(ds) if m not in defined]
    if not missing:
        return ""
    return (f"<p class='muted'>Not shown, undefined (NaN) in every replication of this store: "
            f"{_e(', '.join(missing))}.</p>")


def main_dimension(ds: xr.Dataset) -> str:
    """The x axis of the report's figure: a numeric dimension before a categorical one, then
    the one with the most values (the others become lines or are held at their first value)."""
    dims = [d for d in ds.attrs.get("dims", []) if d in ds.dims]
    return max(dims, key=lambda d: (ds[d].dtype.kind in "iuf", ds.sizes[d]))


def dimension_figure(ds: xr.Dataset, x: str, level: float = 0.95,
                     metrics: list[str] | None = None, hue: str | None = None) -> tuple[Figure, str]:
    """Every defined metric (``metrics``, default :func:`defined_metrics`) against sweep
    dimension ``x`` (one panel each) and the figure's caption; ``hue``: the dimension drawn as
    one line per value (default :func:`choose_hue`; across stores, the stores')."""
    metrics = defined_metrics(ds) if metrics is None else metrics
    if not metrics:
        raise QueryError("no metric of the store has a defined value: nothing to draw")
    hue = hue or choose_hue(ds, x)
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    # Fixed margins in inches (constrained layout costs seconds for a dozen panels): below
    # each panel its tick labels (deeper when rotated) and x label, above it the title.
    below = 0.45 + plot.label_depth(ds[x].values)
    panel_height = PANEL_SIZE[1] + below - 0.55
    width, height = PANEL_SIZE[0] * ncols, panel_height * nrows
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.15 / width, bottom=below / height,
                        top=1 - 0.35 / height, wspace=0.75 / (PANEL_SIZE[0] - 0.75),
                        hspace=(below + 0.35) / (panel_height - below - 0.35))
    counts: list[np.ndarray] = []
    exact: list[np.ndarray] = []
    fixed: dict[str, Any] = {}
    for k, metric in enumerate(metrics):
        ax = fig.add_subplot(nrows, ncols, k + 1)
        da, fixed_here = plot.plot_data(ds, metric, x, hue, (), None, level)
        plot.draw(ax, da, x, hue)
        ax.set_xlabel(plot.x_label(ds, x), fontsize="small")
        ax.set_ylabel(plot.y_label(da, metric), fontsize="small")
        extra = {k: v for k, v in fixed_here.items() if k not in ds.attrs.get("dims", [])}
        ax.set_title(metric + "".join(f" ({k}={v})" for k, v in extra.items()), fontsize="medium")
        ax.tick_params(labelsize="small")
        counts.append(da.sel(stat="n").values.ravel())
        exact.append(plot.deterministic_points(da).ravel())
        fixed.update(fixed_here)
    text = (f"Every metric against {x}" + (f", one line per {hue}" if hue else "")
            + f": {points_words(level, np.concatenate(counts), np.concatenate(exact))}")
    if fixed:
        text += "; other dimensions at " + ", ".join(f"{k}={v}" for k, v in fixed.items())
    return fig, text


def points_words(level: float, n: np.ndarray, exact: np.ndarray) -> str:
    """The figure caption's words for its points: mean and CI over n replications, or the
    values of deterministic cells (run once, no CI)."""
    stochastic = n[~exact]
    if exact.all():
        return "the value of each point (deterministic: run once, no CI)"
    n_text = (f"n = {int(stochastic.min())}" if stochastic.min() == stochastic.max()
              else f"n = {int(stochastic.min())}–{int(stochastic.max())}")
    text = f"mean and {level:.0%} CI over {n_text} replications per point"
    return text + ("; points of deterministic cells: their one run, no CI" if exact.any() else "")


def _embed(fig: Figure, fmt: str, alt: str) -> str:
    data = plot.to_bytes(fig, fmt)
    if fmt == "svg":
        svg = data.decode("utf-8")
        return svg[svg.index("<svg"):]
    return f"<img alt='{_e(alt)}' src='data:image/png;base64,{base64.b64encode(data).decode('ascii')}'>"


def figures_html(ds: xr.Dataset, level: float, fmt: str, defined: list[str]) -> str:
    dims = [d for d in ds.attrs.get("dims", []) if d in ds.dims]
    if not dims:
        return "<p>A single cell: no sweep dimension to plot against; see the tables.</p>"
    if not defined:
        return "<p>No metric has a defined value: nothing to draw.</p>"
    x = main_dimension(ds)  # one figure: each metric drawn once
    fig, text = dimension_figure(ds, x, level, defined)
    return (f"<figure id='figure-{_e(x)}'>{_embed(fig, fmt, 'metrics against ' + x)}"
            f"<figcaption>{_e(text)}</figcaption></figure>")


# -- tables -------------------------------------------------------------------------------

VALUE_COLUMNS = ("mean", "half_width", "ci_low", "ci_high", "sd", "n", "relative_change")
#: every statistic column of :func:`tables.long_frame` (paired tables add relative_change).
STAT_NAMES = tuple(getattr(stats, "PAIRED_STATS", stats.STATS))


def stats_table(long: pd.DataFrame, section: str, metric: str, mark_significant: bool = False,
                baseline: tuple[str, str] | None = None) -> str:
    """One metric's rows of :func:`tables.long_frame` as an HTML table.

    The ``mean ± CI`` column is the text ``schedsweep table`` prints for the same cell;
    every number cell keeps its exact value in ``data-value`` (``repr`` of the float).
    """
    keys = [c for c in long.columns if c not in STAT_NAMES and c != "metric"]
    values = [c for c in VALUE_COLUMNS if c in long.columns]
    exact = tables._is_det(long)
    shown_as = "value" if len(exact) and exact.all() else "mean ± CI" + (" or value (deterministic)" if exact.any() else "")
    head = "".join(f"<th>{_e(k)}</th>" for k in keys) + f"<th>{shown_as}</th>" + "".join(
        f"<th>{_e(c)}</th>" for c in values)
    rows = []
    for rec, det in zip(long.to_dict("records"), exact):
        cells = [f"<td class='key' data-key='{_e(k)}'>{_e(plot._plain(rec[k]))}</td>" for k in keys]
        excludes_zero = np.isfinite(rec["ci_low"]) and (rec["ci_low"] > 0 or rec["ci_high"] < 0)
        sig = " sig" if mark_significant and excludes_zero else ""
        text = tables._fmt(rec["mean"], rec["half_width"], rec.get("relative_change", np.nan), deterministic=det)
        if baseline and baseline[0] in rec and tables.is_baseline(rec[baseline[0]], baseline):
            text = "(baseline)"  # its difference with itself: no "0 ± 0" interval
        cells.append(f"<td class='pm{sig}'>{_e(text)}</td>")
        for c in values:
            v = float(rec[c])
            shown = "—" if not np.isfinite(v) else (
                f"{int(v)}" if c == "n" else f"{v:+.1%}" if c == "relative_change" else f"{v:.6g}")
            cells.append(f"<td data-stat='{c}' data-value='{v!r}'>{shown}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table data-section='{_e(section)}' data-metric='{_e(metric)}'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _metric_heading(ds: xr.Dataset, metric: str) -> str:
    from ..base.conventions import display_unit

    attrs = ds[metric].attrs
    units = display_unit(attrs)
    timing = " (timing: wall-clock, not reproducible)" if metric in ds.attrs.get("timing_metrics", []) else ""
    return (f"<h3 id='metric-{_e(metric)}'>{_e(metric)}{' [' + _e(units) + ']' if units else ''}</h3>"
            f"<p class='muted'>{_e(attrs.get('description', ''))}{_e(timing)}</p>")


def metric_tables_html(ds: xr.Dataset, level: float, defined: list[str]) -> str:
    result = tables.compute(ds, defined or None, (), None, None, level)
    long = _long_frame(result)
    out = [f"<p>Mean, {level:.0%} Student-t confidence interval (half-width, bounds), standard deviation "
           "and n (replications with a defined value) per cell; as <code>schedsweep table</code>."
           + _deterministic_note(result) + "</p>"]
    for metric in result.data_vars:
        rows = long[long["metric"] == metric]
        out.append(_metric_heading(ds, metric) + stats_table(_drop_empty(rows), "metrics", metric))
    return "\n".join(out)


def _deterministic_note(result: xr.Dataset) -> str:
    """A sentence for tables with deterministic cells (run once: a value, no CI), else ''."""
    exact, total = tables.deterministic_share(result)
    if not exact:
        return ""
    return (f" {exact} of {total} values are of deterministic cells (the workload declares that their "
            "result does not depend on the seed): run once, shown as a value marked 'deterministic', "
            "without a CI.")


def _long_frame(result: xr.Dataset) -> pd.DataFrame:
    """:func:`tables.long_frame`; for a single-cell store (no dimension but ``stat``, which
    ``long_frame`` cannot index) the same columns built from the same statistics."""
    if any(set(da.dims) - {"stat"} for da in result.data_vars.values()):
        return tables.long_frame(result)
    records = [{"metric": name, **{str(s): float(v) for s, v in zip(da["stat"].values, da.values)}}
               for name, da in result.data_vars.items()]
    return pd.DataFrame.from_records(records)


def _drop_empty(rows: pd.DataFrame) -> pd.DataFrame:
    """Leave out key columns that do not apply to this metric (another metric's extra dims)."""
    keep = [c for c in rows.columns if c in STAT_NAMES or c == "metric" or rows[c].notna().any()]
    return rows[keep]


def paired_html(ds: xr.Dataset, paired: str | None, level: float, defined: list[str],
                result: xr.Dataset | None = None, how: str | None = None) -> str:
    """The paired comparison against ``paired``'s baseline; ``result`` and ``how``: the
    statistics already computed and how (across stores: :func:`pipeline.read.across.compare`)."""
    if not paired:
        return "<p>A single cell: nothing to compare.</p>"
    if result is None:
        result = tables.compute(ds, defined or None, (), paired, None, level)
    long = _long_frame(result)
    how = how or "same replication seeds, so the comparison is paired"
    out = [f"<p>Difference of every cell minus the baseline <b>{_e(result.attrs['paired'])}</b> "
           f"({_e(how)}), with its {level:.0%} CI; "
           "bold where the CI excludes zero. As <code>schedsweep table --paired "
           f"{_e(paired)}</code>." + _deterministic_note(result) + "</p>"]
    for metric in result.data_vars:
        rows = long[long["metric"] == metric]
        table = stats_table(_drop_empty(rows), "paired", metric, mark_significant=True,
                            baseline=result.attrs.get("baseline"))
        out.append(_metric_heading(ds, metric) + table)
    return "\n".join(out)


# -- completeness and provenance -----------------------------------------------------------

def completeness_html(ds: xr.Dataset, store_label: str) -> str:
    counts = tables.completeness(ds)
    total = sum(counts.values())
    out = ["<table><tr><th>status</th><th>replications</th><th>share</th></tr>"]
    for label, n in counts.items():
        out.append(f"<tr><td class='key'>{_e(label)}</td><td>{n}</td><td>{n / max(total, 1):.1%}</td></tr>")
    out.append("</table>")
    reasons = ds.attrs.get("reasons", {})
    codes = ds["reason"].values
    rows = [(label, desc, int((codes == int(code)).sum())) for code, (label, desc) in reasons.items() if int(code)]
    rows = [r for r in rows if r[2]]
    if rows:
        out.append("<p>Replications without a result, by the workload's reason:</p><table>"
                   "<tr><th>reason</th><th>meaning</th><th>replications</th></tr>")
        out += [f"<tr><td class='key'>{_e(l)}</td><td class='key'>{_e(d)}</td><td>{n}</td></tr>" for l, d, n in rows]
        out.append("</table>")
    auto = tables.auto_lines(ds)
    if auto:
        out.append("<p>Replications decided by precision (replications = \"auto\"):</p><pre>"
                   + _e("\n".join(line.strip() for line in auto)) + "</pre>")
    out.append(_incomplete_cells(ds))
    from ..store.zarrstore import FAILED

    failures = int((ds["status"].values == FAILED).sum())
    if failures:
        out.append(f"<p>{failures} replications failed; seeds and tracebacks: "
                   f"<code>schedsweep show {_e(store_label)} --failures</code></p>")
    return "\n".join(out)


def _incomplete_cells(ds: xr.Dataset) -> str:
    from ..store.zarrstore import NOT_RUN, FAILED

    dims = [d for d in ds.attrs.get("dims", []) if d in ds.dims]
    status = ds["status"].load()
    spare = stats.needless(ds, status.values)  # replications a deterministic cell never needs
    missing = (((status == NOT_RUN) & ~spare) | (status == FAILED)).sum("replication")
    if not dims or int(missing.max()) == 0:
        return "<p>Every cell has all its replications.</p>" if int(missing.max()) == 0 else ""
    frame = missing.to_dataframe(name="missing").reset_index()
    frame = frame[frame["missing"] > 0]
    head = "".join(f"<th>{_e(d)}</th>" for d in dims) + "<th>not run or failed</th>"
    rows = "".join("<tr>" + "".join(f"<td class='key'>{_e(plot._plain(r[d]))}</td>" for d in dims)
                   + f"<td>{int(r['missing'])}</td></tr>" for r in frame.to_dict("records"))
    return f"<p>Cells with missing replications:</p><table><tr>{head}</tr>{rows}</table>"


def provenance_html(ds: xr.Dataset) -> str:
    a = ds.attrs
    wall = float(ds["cell_seconds"].sum()) if "cell_seconds" in ds else float("nan")
    items = [("workload", a.get("workload")), ("seed", a.get("seed")), ("replications", a.get("replications")),
             ("dimensions", ", ".join(f"{d} ({ds.sizes[d]})" for d in a.get("dims", []) if d in ds.dims) or "—"),
             ("independent streams", ", ".join(a.get("independent", [])) or "— (common random numbers)"),
             ("fixed parameters", json.dumps(a.get("params", {}))),
             ("spec file", a.get("spec_path")), ("created", a.get("created")), ("host", a.get("host")),
             ("last run", f"{a.get('last_run_started', '—')} → {a.get('last_run_ended', '—')}"),
             ("task wall time", f"{wall:.3g} s summed over cells"),
             ("schedsweep", a.get("schedsweep_version")), ("git commit", a.get("git_commit") or "—"),
             ("versions", ", ".join(f"{k} {v}" for k, v in a.get("versions", {}).items()))]
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items) + "</dl>"
