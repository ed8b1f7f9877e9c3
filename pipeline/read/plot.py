"""Figures of a store: a metric's mean with its confidence interval against one dimension.

The numbers come from :func:`pipeline.read.tables.compute`, the code behind ``schedsweep table``,
so a figure and a table of the same store never disagree. Numeric x gets a line with a
shaded CI band; categorical x (strings, booleans, a single value) gets points with error
bars. Matplotlib is used through its object API (:class:`matplotlib.figure.Figure`), which
renders with Agg and touches no pyplot global state.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import tables
from ..base.stats import QueryError

FORMATS = ("png", "svg")
#: x values spanning at least this ratio (two decades) get a log axis.
LOG_SPAN = 100.0
#: at most this many hue values in one panel: matplotlib's colour cycle has ten colours.
MAX_HUE = 10


def plot_data(ds: xr.Dataset, metric: str, x: str, hue: str | None = None, sel: Iterable[str] = (),
              paired: str | None = None, level: float = 0.95,
              result: xr.Dataset | None = None) -> tuple[xr.DataArray, dict[str, Any]]:
    """The statistics to draw (dims: [hue,] x, stat) and the dims fixed at their first value.

    Dimensions other than ``x`` and ``hue`` that are neither selected with ``sel`` nor of
    length one are fixed at their first value, and returned so the figure can say so.
    ``result``: the statistics already computed (across stores, :func:`pipeline.read.across.compare`,
    which may give Welch's interval), else those of :func:`pipeline.read.tables.compute`.
    """
    if hue is not None and hue == x:
        raise QueryError(f"--hue {hue!r} is also --x; choose another dimension")
    if result is None:
        result = tables.compute(ds, [metric], sel, paired, None, level)
    da = result[metric]
    for role, dim in (("--x", x), ("--hue", hue)):
        if dim is not None and dim not in da.dims:
            free = [d for d in da.dims if d != "stat"]
            raise QueryError(f"{role} {dim!r} is not a dimension of {metric!r} here (after --sel); "
                             f"dimensions: {', '.join(free) or '(none)'}")
    fixed: dict[str, Any] = {}
    for dim in [d for d in da.dims if d not in (x, hue, "stat")]:
        value = da[dim].values[0]
        if da.sizes[dim] > 1:
            fixed[dim] = _plain(value)
        da = da.isel({dim: 0}, drop=True)
    if hue is not None and da.sizes[hue] > MAX_HUE:
        raise QueryError(f"--hue {hue!r} has {da.sizes[hue]} values; at most {MAX_HUE} fit in one figure "
                         f"(select some with --sel)")
    order = [d for d in (hue, x) if d is not None] + ["stat"]
    da = da.transpose(*order)
    da.attrs.update(result.attrs)
    return da, fixed


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def is_numeric(values: np.ndarray) -> bool:
    """Numbers (not booleans) with at least two distinct values: drawn as a line."""
    values = np.asarray(values)
    return values.dtype.kind in "iuf" and len(np.unique(values)) > 1


def wants_log(values: np.ndarray) -> bool:
    """A log axis when positive values span two decades or more."""
    values = np.asarray(values, dtype=float)
    return bool(values.size and np.all(values > 0) and values.max() / values.min() >= LOG_SPAN)


def y_label(da: xr.DataArray, metric: str) -> str:
    from ..base.conventions import display_unit

    units = display_unit(da.attrs)
    label = metric
    if "paired" in da.attrs:
        label = f"{metric} − baseline ({da.attrs['paired']})"
    return f"{label} [{units}]" if units else label


def x_label(ds: xr.Dataset, x: str) -> str:
    """The dimension's name, with the members of a zip group varied with it."""
    partners = [name for name, coord in ds.coords.items() if name != x and coord.dims == (x,)]
    return f"{x} (with {', '.join(partners)})" if partners else x


def draw(ax: Axes, da: xr.DataArray, x: str, hue: str | None) -> None:
    """Mean and CI of ``da`` (dims [hue,] x, stat) on ``ax``: a band for numeric x, else error bars."""
    xs = da[x].values
    groups = [(None, da)] if hue is None else [(_plain(v), da.sel({hue: v})) for v in da[hue].values]
    numeric = is_numeric(xs)
    width = 0.6
    for k, (label, g) in enumerate(groups):
        mean, low, high = (g.sel(stat=s).values.astype(float) for s in ("mean", "ci_low", "ci_high"))
        name = None if hue is None else f"{hue}={label}"
        color = f"C{k % 10}"
        if numeric:
            order = np.argsort(xs)
            xv = xs[order].astype(float)
            ax.plot(xv, mean[order], marker="o", ms=3, color=color, label=name)
            ax.fill_between(xv, low[order], high[order], color=color, alpha=0.25, linewidth=0)
        else:
            offset = 0.0 if len(groups) == 1 else (k - (len(groups) - 1) / 2) * width / len(groups)
            pos = np.arange(len(xs)) + offset
            err = np.vstack([mean - low, high - mean])
            err = np.where(np.isfinite(err), err, 0.0)
            exact = deterministic_points(g)
            if exact.all():  # values of deterministic cells: points, no bars that would read as a CI
                ax.plot(pos, mean, "o", ms=4, color=color, label=name, linestyle="none")
            else:
                err = np.where(exact, np.nan, err)  # no cap drawn at a deterministic point
                ax.errorbar(pos, mean, yerr=err, fmt="o", ms=4, capsize=3, color=color, label=name)
    defined = bool(np.isfinite(da.sel(stat="mean").values).any())
    if not defined:
        ax.text(0.5, 0.5, "no defined value\n(NaN in every cell)", transform=ax.transAxes, ha="center",
                va="center", color="0.4")
    if numeric:
        if wants_log(xs):
            ax.set_xscale("log")
    else:
        ax.set_xticks(np.arange(len(xs)), [str(_plain(v)) for v in xs], rotation=30 if rotates(xs) else 0)
        ax.set_xlim(-0.5, len(xs) - 0.5)
    if "paired" in da.attrs:
        ax.axhline(0.0, color="0.4", linewidth=0.8, linestyle="--")
    if hue is not None and defined:
        ax.legend(fontsize="small", title=None)
    ax.grid(True, alpha=0.3)


def draw_published(ax: Axes, ds: xr.Dataset, da: xr.DataArray, metric: str, x: str, hue: str | None,
                   fixed: dict[str, Any]) -> int:
    """The spec's published values of ``metric`` as marked points; returns how many were drawn."""
    from ..spec.reference import of_store

    xs = [_plain(v) for v in da[x].values]
    hues = [_plain(v) for v in da[hue].values] if hue else []
    numeric = is_numeric(da[x].values)
    drawn = 0
    for v in of_store(ds).values:
        if v.metric != metric or v.where.get(x) not in xs:
            continue
        others = {k: w for k, w in v.where.items() if k != x}
        if hue and others.get(hue) not in hues:
            continue
        if any(k != hue and fixed.get(k, w) != w for k, w in others.items()):
            continue  # a published value of another slice than the one drawn
        if any(k not in fixed and k != hue and k in da.dims for k in others):
            continue
        pos = float(v.where[x]) if numeric else xs.index(v.where[x])
        color = f"C{hues.index(others[hue]) % 10}" if hue else "C0"
        ax.plot([pos], [v.value], marker="*", ms=12, color=color, markeredgecolor="k", linestyle="none",
                label="published" if drawn == 0 else None, zorder=5)
        drawn += 1
    if drawn and not hue:
        ax.legend(fontsize="small")
    return drawn


def rotates(xs: np.ndarray) -> bool:
    """Categorical tick labels longer than this are drawn at 30° so they do not overlap."""
    return not is_numeric(xs) and max(len(str(_plain(v))) for v in xs) > 8


def label_depth(xs: np.ndarray, fontsize_in: float = 0.11) -> float:
    """Inches below an axis that its tick labels take (for layouts with fixed margins)."""
    if not rotates(xs):
        return fontsize_in
    return fontsize_in + 0.5 * fontsize_in * 0.6 * max(len(str(_plain(v))) for v in xs)


def deterministic_points(da: xr.DataArray) -> np.ndarray:
    """Per point of ``da`` (dims [hue,] x, stat), whether it is a deterministic cell's value (no CI)."""
    from ..base.stats import DETERMINISTIC

    if DETERMINISTIC not in da["stat"].values:
        return np.zeros(da.sel(stat="mean").shape, bool)
    return da.sel(stat=DETERMINISTIC).values == 1.0


def value_words(level: float, n: np.ndarray, exact: np.ndarray) -> str:
    """What the points are: mean and CI with its n, or deterministic values (run once, no CI)."""
    n = np.asarray(n, float)[~np.asarray(exact, bool)]
    n = n[np.isfinite(n)]
    if np.asarray(exact).any() and n.size == 0:
        return "value (deterministic: run once, no CI)"
    reps = "" if n.size == 0 else (f", n = {int(n.min())}" if n.min() == n.max()
                                   else f", n = {int(n.min())}–{int(n.max())}")
    text = f"mean and {level:.0%} CI{reps}"
    return text + ("; deterministic points: one run, no CI" if np.asarray(exact).any() else "")


def caption(da: xr.DataArray, fixed: dict[str, Any]) -> str:
    """What the figure shows, in one line: CI level, replications, fixed dimensions."""
    text = value_words(da.attrs.get("level", 0.95), da.sel(stat="n").values, deterministic_points(da))
    if fixed:
        text += "; at " + ", ".join(f"{k}={v}" for k, v in fixed.items())
    return text


def figure(ds: xr.Dataset, metric: str, x: str, hue: str | None = None, sel: Iterable[str] = (),
           paired: str | None = None, level: float = 0.95,
           result: xr.Dataset | None = None) -> tuple[Figure, dict[str, Any]]:
    """One metric against ``x``: the figure ``schedsweep plot`` saves, and the dims it fixed
    (``result``: as :func:`plot_data`)."""
    da, fixed = plot_data(ds, metric, x, hue, sel, paired, level, result)
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    ax = fig.add_subplot()
    draw(ax, da, x, hue)
    if not paired and "across" not in ds.attrs:  # several stores: no one spec's published values
        draw_published(ax, ds, da, metric, x, hue, fixed)
    ax.set_xlabel(x_label(ds, x))
    ax.set_ylabel(y_label(da, metric))
    name = ds.attrs.get("name", "")
    selected = ", ".join(sel)
    ax.set_title(f"{name}{' (' + selected + ')' if selected else ''}\n{caption(da, fixed)}", fontsize="medium")
    return fig, fixed


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as PNG or SVG, chosen by the file's extension."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise QueryError(f"-o {str(path)!r}: the file must end in .png or .svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=fmt, dpi=120, metadata={"Software": None} if fmt == "png" else {"Date": None})
    return path


def to_bytes(fig: Figure, fmt: str = "png") -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=100)
    return buf.getvalue()


def only_dimension(ds: xr.Dataset, hue: str | None, sel: Iterable[str], paired: str | None) -> str:
    """The x axis when none is given: the store's only free dimension, else a one-line refusal."""
    taken = {hue, *(item.split("=", 1)[0] for item in sel), (paired or "").split("=", 1)[0]}
    free = [d for d in ds.attrs.get("dims", []) if d not in taken]
    if len(free) != 1:
        given = f"free dimensions: {', '.join(free)}" if free else "the store has no free dimension"
        raise QueryError(f"--x DIM is needed ({given})")
    return free[0]


def default_output(store: str | Path, metric: str, x: str) -> Path:
    """``results/foo.zarr`` → ``results/foo-METRIC-X.png`` (beside the store)."""
    store = Path(store)
    return store.with_name(f"{store.stem}-{metric}-{x}.png")


def plot_store(store: str | Path, metric: str, x: str | None = None, hue: str | None = None,
               sel: Iterable[str] = (), paired: str | None = None, level: float = 0.95,
               output: str | Path | None = None) -> Path:
    """``schedsweep plot``: draw and save; a note on stderr for each dimension fixed by default.
    Without ``x``, the one dimension not taken by ``--sel``, ``--hue`` or ``--paired``."""
    from ..store.integrity import open_store

    ds = open_store(store)
    x = x or only_dimension(ds, hue, sel, paired)
    fig, fixed = figure(ds, metric, x, hue, sel, paired, level)
    if fixed:
        print("schedsweep: note: fixed " + ", ".join(f"{k}={v}" for k, v in fixed.items())
              + " (use --sel or --hue to choose)", file=sys.stderr)
    return save(fig, output or default_output(store, metric, x))


def across_output(paths: list[str | Path], metric: str, x: str) -> Path:
    """Where a figure across stores goes by default: in the folder given
    (``results/across-METRIC-X.png``), else beside the first store."""
    first = Path(paths[0])
    folder = first if len(paths) == 1 else first.parent
    return folder / f"across-{metric}-{x}.png"


def across_figure(ds: xr.Dataset, metric: str, x: str | None = None, hue: str | None = None,
                  sel: Iterable[str] = (), paired: str | None = None,
                  level: float = 0.95) -> tuple[Figure, dict[str, Any], str, str | None]:
    """The figure of stores aligned by :func:`pipeline.read.across.align`: the stores' dimension
    (``store``, or the spec parameter that tells them apart) is the hue unless it is the x axis
    or another hue is asked for. Returns the figure, the dims fixed, the x axis and how a
    difference along the stores was made (:func:`pipeline.read.across.compare`)."""
    from .across import compare

    along = ds.attrs["across"]
    if hue is None and x != along:
        hue = along
    free = ds.attrs.get("dims", [])
    x = x or (only_dimension(ds, hue, sel, paired) if free else along)
    if hue == x:
        hue = None
    result, how = compare(ds, [metric], sel, paired, None, level)
    fig, fixed = figure(ds, metric, x, hue, sel, paired, level, result)
    return fig, fixed, x, how


def plot_across(paths: list[str | Path], metric: str, x: str | None = None, hue: str | None = None,
                sel: Iterable[str] = (), paired: str | None = None, level: float = 0.95,
                output: str | Path | None = None, allow_mixed: bool = False) -> Path:
    """``schedsweep plot A.zarr B.zarr ...`` (or a folder): :func:`across_figure` saved; on
    stderr the dimension the stores are put along, the differences ``allow_mixed`` let through
    and how a difference along the stores was made."""
    from .across import open_aligned

    ds, lines = open_aligned(paths, allow_mixed)
    print("\n".join(lines), file=sys.stderr)  # the differences allowed are said, not hidden
    fig, fixed, x, how = across_figure(ds, metric, x, hue, sel, paired, level)
    if how:
        print(how, file=sys.stderr)
    if fixed:
        print("schedsweep: note: fixed " + ", ".join(f"{k}={v}" for k, v in fixed.items())
              + " (use --sel or --hue to choose)", file=sys.stderr)
    return save(fig, output or across_output(paths, metric, x))
