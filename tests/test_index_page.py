"""``schedsweep report DIR``: one page over a folder of stores: every store listed with its
scorecard verdict and a link to its own report (links resolve), the cross-store table asked
for, and (with Chromium, as tests/test_plot_report.py) a page that renders without console
errors."""
from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from schedsweep import pipeline, workloads
from schedsweep.pipeline import cli
from schedsweep.pipeline.read import across, verify
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.spec.sweep import parse

from tests.test_plot_report import chromium_binary, parse_report, render_page

REFERENCED = """name = "{name}"
workload = "mm1"
reproduces = "RF Fig. 1"
replications = 8
seed = 1
[params]
customers = 300
warmup = 30
[sweep]
arrival_rate = [0.3, 0.5]

[[reference.value]]
metric = "mean_time_in_system"
where = {{ arrival_rate = 0.3 }}
value = 1.4285714285714286
"""


class _Links(HTMLParser):
    """A page's links and the rows of its first table (the catalogue of stores)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.rows: list[list[str]] = []
        self._row: list[str] | None = None
        self._tables = 0

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append(dict(attrs)["href"])
        self._tables += tag == "table"
        if tag == "tr" and self._tables == 1:
            self._row = []

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._row is not None and data.strip():
            self._row.append(data.strip())


def _folder(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    results.mkdir()
    for name in ("one", "two"):
        spec = tmp_path / f"{name}.toml"
        spec.write_text(REFERENCED.format(name=name))
        pipeline.run(spec, results / f"{name}.zarr", workers=0, batch_size=4, progress=False)
    spec = parse('name = "grid"\nworkload = "slot_selection"\nreplications = 2\nseed = 1\n')
    module = workloads.get("slot_selection")
    store_mod.create(results / "grid.zarr", spec, module, 2, provenance(spec, module))  # made, never run
    (results / "broken.zarr").mkdir()
    (results / "broken.zarr" / "zarr.json").write_text("{")
    return results


def test_the_page_lists_every_store_with_its_verdict_and_a_report_that_exists(tmp_path, capsys):
    results = _folder(tmp_path)
    page = tmp_path / "site" / "index.html"
    assert cli.main(["report", str(results), "-o", str(page), "--paired", "store=one.zarr"]) == 0
    assert capsys.readouterr().out.strip() == str(page)
    parsed = _Links()
    parsed.feed(page.read_text())
    rows = {r[0]: r for r in parsed.rows[1:]}
    assert sorted(rows) == ["broken.zarr", "grid.zarr", "one.zarr", "two.zarr"]
    one = verify.scorecard(pipeline.open_store(results / "one.zarr"))["verdict"]
    assert one in rows["one.zarr"] and "report" in rows["one.zarr"]
    assert "no reference" in rows["grid.zarr"] and "not run (0/2 done, 2 not run)" in rows["grid.zarr"]
    assert "report" not in rows["broken.zarr"] and any("damaged" in c for c in rows["broken.zarr"])
    assert sorted(parsed.links) == ["grid.html", "one.html", "two.html"]
    for link in parsed.links:  # every link resolves to a report of that store
        target = page.parent / link
        assert target.is_file() and f"schedsweep report: {link.removesuffix('.html')}" in target.read_text()
    text = page.read_text()
    assert "Across stores: store=one.zarr" in text and across.PAIRED_LINE in text
    assert "across stores along store: no single spec parameter tells them apart" in text
    # the comparison schedsweep table and plot give: one spec and seed run twice, so every
    # paired difference is exactly 0, and the figure has one line per store
    compared = parse_report(page)
    assert len(compared.images) == 1 and "one line per store" in text
    rows = compared.tables[("paired", "mean_time_in_system")]
    assert {r["keys"]["store"] for r in rows} == {"one.zarr", "two.zarr"}
    assert all(r["values"]["mean"] == 0.0 for r in rows if r["keys"]["store"] == "two.zarr")
    means = compared.tables[("metrics", "mean_time_in_system")]
    one = pipeline.open_store(results / "one.zarr")["mean_time_in_system"]
    for r in means:
        rate = float(r["keys"]["arrival_rate"])
        assert r["values"]["mean"] == float(one.sel(arrival_rate=rate).mean())


@pytest.mark.chromium
def test_the_page_renders_in_headless_chromium_without_console_errors(tmp_path, capsys):
    binary = chromium_binary()
    results = _folder(tmp_path)
    assert cli.main(["report", str(results)]) == 0
    page = results / "index.html"
    assert capsys.readouterr().out.strip() == str(page)
    assert render_page(binary, page, tmp_path / "index.png", tmp_path / "profile") == []
    for report in ("one.html", "grid.html"):
        assert render_page(binary, results / report, tmp_path / "r.png", tmp_path / "profile") == []
    assert np.asarray(__import__("PIL.Image", fromlist=["Image"]).open(tmp_path / "index.png")).std() > 0
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)
