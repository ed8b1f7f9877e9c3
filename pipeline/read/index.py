"""Pages over many stores: ``schedsweep report DIR`` and ``schedsweep report A.zarr B.zarr``.

The folder's page lists the stores as ``schedsweep stores`` does, with each store's scorecard
verdict (``schedsweep verify``; "no reference" for a spec without one) and a link to its own
report, written beside the page (``<page folder>/<store name>.html``, relative links, so the
folder can be moved or served as it is). With ``paired = "DIM=NAME"`` (``store=NAME``, or the
spec parameter that tells the stores apart) it adds, per workload of more than one store, the
comparison of :func:`comparison_html`: the figure, the table and the difference against the
baseline that ``schedsweep plot``/``table DIR`` give (paired by replication, or Welch's
interval when the stores do not share their seeds). A damaged or foreign store is listed
without a report. The page of several stores (:func:`write_across`) is that comparison alone,
under the stores' catalogue rows, in one self-contained file.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from .report import CSS

PAGE_CSS = CSS + "td.state-ok { color: #1a7f37; } td.state-bad { color: #b42318; }\n"


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _report_name(name: str) -> str:
    return name.replace("/", "__").removesuffix(".zarr") + ".html"


def _verdict(store: Path, level: float) -> str:
    from ..store.integrity import open_store
    from .verify import scorecard

    card = scorecard(open_store(store), level)
    return "no reference" if card is None else card["verdict"]


def comparison_html(paths: list[Path], paired: str | None, level: float = 0.95, figure_format: str = "png",
                    allow_mixed: bool = False, aligned: tuple[Any, list[str]] | None = None,
                    refuse: bool = False) -> str:
    """Stores of one workload compared, as HTML: the dimension they are put along (and the
    differences ``allow_mixed`` let through), every defined metric against the main sweep
    dimension with one line per store, the mean ± CI table of each metric per store, and the
    difference against ``paired`` (default: the first store), paired by replication or Welch's
    interval (:func:`pipeline.read.across.compare`, as ``schedsweep table``). A comparison refused
    (other code or units, no such baseline) is one line saying why (raised, with ``refuse``).
    ``aligned``: what :func:`pipeline.read.across.open_aligned` gave for ``paths``, when already opened."""
    from ..base.errors import QueryError
    from ..base.stats import _plain
    from .across import compare, open_aligned
    from .report import _embed, defined_metrics, dimension_figure, main_dimension, metric_tables_html, paired_html

    try:
        ds, lines = aligned or open_aligned(paths, allow_mixed)
        along = ds.attrs["across"]
        paired = paired or f"{along}={_plain(ds[along].values[0])}"
        defined = defined_metrics(ds)
        result, how = compare(ds, defined or None, (), paired, None, level)
    except QueryError as exc:
        if refuse:
            raise
        return f"<p class='muted'>not compared: {_e(exc)}</p>"
    out = ["<p>" + "<br>".join(_e(line) for line in lines) + "</p>"]
    if defined:
        x = main_dimension(ds) if ds.attrs.get("dims") else along
        fig, caption = dimension_figure(ds, x, level, defined, hue=along if x != along else None)
        out.append(f"<figure>{_embed(fig, figure_format, 'metrics against ' + x + ' per ' + along)}"
                   f"<figcaption>{_e(caption)}</figcaption></figure>")
    out += ["<h3>Mean ± CI per store</h3>", metric_tables_html(ds, level, defined),
            "<h3>Difference against the baseline</h3>", paired_html(ds, paired, level, defined, result, how)]
    return "\n".join(out)


def _catalogue_table(rows: list[tuple[str, Any, str | None, str]]) -> str:
    """The stores as ``schedsweep stores`` lists them; with their scorecard verdict and a
    link to their report where ``rows`` give them."""
    body = ["<table><thead><tr>" + "".join(f"<th>{_e(c)}</th>" for c in
                                           ("store", "spec", "workload", "dimensions", "replications",
                                            "completeness", "scorecard", "report", "code", "updated"))
            + "</tr></thead><tbody>"]
    for name, info, link, verdict in rows:
        r = info.row()
        state = "state-ok" if info.state == "ok" else "state-bad"
        cell = f"<a href='{_e(link)}'>report</a>" if link else "—"
        body.append("<tr>" + "".join(f"<td class='key'>{_e(v)}</td>" for v in (name, r["spec"], r["workload"],
                                                                                 r["dimensions"]))
                    + f"<td>{_e(r['replications'])}</td><td class='key {state}'>{_e(r['completeness'])}</td>"
                    + f"<td class='key'>{_e(verdict)}</td><td class='key'>{cell}</td>"
                    + f"<td class='key'>{_e(r['code'])}</td><td class='key'>{_e(r['updated'])}</td></tr>")
    body.append("</tbody></table>")
    return "\n".join(body)


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(title)}</title><style>{PAGE_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def write_across(paths: list[str | Path], output: str | Path, paired: str | None = None, level: float = 0.95,
                 figure_format: str = "png", allow_mixed: bool = False) -> Path:
    """``schedsweep report A.zarr B.zarr -o out.html``: one self-contained page comparing the
    stores under ``paths`` (their catalogue rows with each scorecard verdict, then
    :func:`comparison_html`); return the page."""
    from .across import open_aligned
    from .query import _relative
    from .stores import catalogue

    roots = [Path(p) for p in paths]
    aligned = open_aligned(roots, allow_mixed)  # refused in one line before anything is written
    ds = aligned[0]
    infos = catalogue(roots)
    rows = [(_relative(Path(i.path), roots), i, None, _verdict(Path(i.path), level)) for i in infos]
    title = f"schedsweep: {len(infos)} stores of {ds.attrs.get('workload')} compared along {ds.attrs['across']}"
    body = [f"<h1>{_e(title)}</h1>", _catalogue_table(rows),
            f"<h2>Across stores{': ' + _e(paired) if paired else ''}</h2>",
            comparison_html(roots, paired, level, figure_format, allow_mixed, aligned, refuse=True)]
    page = Path(output)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(_page(title, body), encoding="utf-8")
    return page


def write_index(folder: str | Path, output: str | Path | None = None, paired: str | None = None,
                level: float = 0.95, figure_format: str = "png") -> Path:
    """Write the page over ``folder`` (and each store's report beside it); return the page.
    With ``paired``, each workload of more than one store gets :func:`comparison_html`."""
    from .query import _relative
    from .report import write_report
    from .stores import catalogue

    folder = Path(folder)
    page = Path(output) if output else folder / "index.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    infos = catalogue([folder])
    rows, by_workload = [], {}
    for info in infos:
        path = Path(info.path)
        name = _relative(path, [folder])
        link, verdict = None, "—"
        if info.state not in ("damaged", "foreign"):
            target = page.parent / _report_name(name)
            write_report(path, target, None, level, figure_format)
            link, verdict = target.name, _verdict(path, level)
            by_workload.setdefault(info.workload, []).append(path)
        rows.append((name, info, link, verdict))
    body = [f"<h1>schedsweep: {_e(len(infos))} stores under {_e(folder.name or folder)}</h1>", _catalogue_table(rows)]
    if paired:
        body.append(f"<h2>Across stores: {_e(paired)}</h2>")
        for workload, paths in by_workload.items():
            if len(paths) > 1:
                body.append(f"<h3>{_e(workload)}</h3>" + comparison_html(paths, paired, level, figure_format))
    page.write_text(_page("schedsweep stores", body), encoding="utf-8")
    return page
