"""``schedsweep report DIR``: one self-contained page over a folder of stores.

The page lists the stores as ``schedsweep stores`` does, with each store's scorecard
verdict (``schedsweep verify``; "no reference" for a spec without one) and a link to its own
report, written beside the page (``<page folder>/<store name>.html``, relative links, so the
folder can be moved or served as it is). With ``paired = "store=NAME"`` it adds, per
workload of more than one store, the cross-store table of ``schedsweep table DIR --paired
store=NAME`` (paired by replication, or Welch's interval when the stores do not share their
seeds). A damaged or foreign store is listed without a report.
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


def _comparison(paths: list[Path], paired: str, level: float) -> str:
    """The cross-store table (text) of stores of one workload, with how they were paired."""
    from .across import align, shares_seeds, welch
    from ..base.errors import QueryError
    from .tables import compute, parse_assignments, render

    tree_paths = [str(p) for p in paths]
    from .across import open_tree

    try:
        ds, diffs = align(open_tree(tree_paths))
    except QueryError as exc:
        return f"not compared: {exc}"
    (dim, base), = parse_assignments([paired], "--paired")
    try:
        if dim == "store" and not shares_seeds(ds):
            how = "the stores do not share their seeds: Welch's unpaired interval"
            result = welch(ds, dim, base, level)
            result.attrs["replications"] = ds.attrs.get("replications")
        else:
            how = "paired by replication (the stores share their seeds)" if dim == "store" else f"paired along {dim}"
            result = compute(ds, paired=paired, level=level)
    except QueryError as exc:
        return f"not compared: {exc}"
    return how + "\n" + render(result, "text", columns=None)


def write_index(folder: str | Path, output: str | Path | None = None, paired: str | None = None,
                level: float = 0.95, figure_format: str = "png") -> Path:
    """Write the page over ``folder`` (and each store's report beside it); return the page."""
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
    body = [f"<h1>schedsweep: {_e(len(infos))} stores under {_e(folder.name or folder)}</h1>",
            "<table><thead><tr>" + "".join(f"<th>{_e(c)}</th>" for c in
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
    if paired:
        body.append(f"<h2>Across stores: {_e(paired)}</h2>")
        for workload, paths in by_workload.items():
            if len(paths) > 1:
                body.append(f"<h3>{_e(workload)}</h3><pre>{_e(_comparison(paths, paired, level))}</pre>")
    text = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>schedsweep stores</title>"
            f"<style>{PAGE_CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")
    page.write_text(text, encoding="utf-8")
    return page
