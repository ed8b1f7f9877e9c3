"""schedsweep plot and report: files for stores of every workload, figures that show the
table's numbers, a report whose numbers equal ``schedsweep table``'s, and (with Chromium)
a page that renders its figures without console errors."""
from __future__ import annotations

import base64
import csv
import importlib.util
import io
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from schedsweep import pipeline
from schedsweep import workloads
from schedsweep.pipeline import cli
from schedsweep.pipeline.read import plot, report, tables

REPLICATIONS = 4
#: A tiny, cheap sweep per workload: fixed params and at least one swept dimension (two
#: where the workload allows, so hue and fixed dimensions are exercised). A workload
#: missing here fails the tests: add an entry when adding a workload.
TINY: dict[str, dict] = {
    "mm1": {"params": {"warmup": 100},
            "sweep": {"customers": [300, 3000, 30000], "arrival_rate": [0.3, 0.6]}},
    "cluster": {"params": {"jobs": 100, "nodes": 8},
                "sweep": {"queue": ["fcfs", "easy"], "load": [0.5, 0.9]}},
    "cyclic": {"params": {"nodes": 12, "jobs": 5, "n_css": 5},
               "sweep": {"method": ["css", "frsm"], "strategy": ["min_time", "min_cost"]}},
    "desktop_grid": {"params": {"horizon": 300.0},
                     "sweep": {"policy": ["fcfs", "gcmu"], "arrival_scale": [0.5, 1.0]}},
    "slot_selection": {"params": {"nodes": 20},
                       "sweep": {"algorithm": ["amp", "min_cost"], "budget": [1000.0, 1500.0]}},
    "ga": {"params": {"units": 8, "population": 10, "max_generations": 20, "stall_generations": 10},
           "sweep": {"algorithm": ["ga", "fcfs"], "load": [0.5, 0.8]}},
}


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


def tiny_spec_text(name: str) -> str:
    if name not in TINY:
        pytest.fail(f"workload {name!r} has no tiny sweep in tests/test_plot_report.py TINY; "
                    "add cheap params and a swept dimension for it")
    entry = TINY[name]
    lines = [f'name = "tiny-{name}"', f'workload = "{name}"', 'description = "plot/report test"',
             f"replications = {REPLICATIONS}", "seed = 5", "[params]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in entry["params"].items()]
    lines += ["[sweep]"] + [f"{k} = {_toml_value(v)}" for k, v in entry["sweep"].items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module", params=workloads.names())
def store(request, tmp_path_factory) -> Path:
    name = request.param
    folder = tmp_path_factory.mktemp(name)
    spec = folder / f"{name}.toml"
    spec.write_text(tiny_spec_text(name))
    return pipeline.run(spec, folder / f"{name}.zarr", workers=0, batch_size=REPLICATIONS, progress=False)


@pytest.fixture(scope="module")
def html_report(store) -> Path:
    """The report of ``store`` (made once per workload: a dozen panels take seconds)."""
    out = report.write_report(store, store.with_suffix(".html"))
    assert out == store.with_suffix(".html")
    return out


def test_every_workload_has_a_tiny_sweep():
    missing = sorted(set(workloads.names()) - set(TINY))
    assert not missing, f"no tiny sweep in TINY for workload(s) {missing}"
    stale = sorted(n for n in TINY if importlib.util.find_spec(f"schedsweep.workloads.{n}") is None)
    assert not stale, f"TINY names workloads that do not exist: {stale}"
    # workloads.names() leaves out a module that fails to import; here that is an error,
    # so a broken workload is not silently left out of the plot/report tests.
    for name in TINY:
        workloads.get(name)


# -- parsing helpers ----------------------------------------------------------------------

class ReportParser(HTMLParser):
    """Tables (by section and metric), images and inline SVGs of a report."""

    def __init__(self):
        super().__init__()
        self.tables: dict[tuple[str, str], list[dict]] = {}
        self.images: list[str] = []
        self.svgs = 0
        self._table = self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "data-section" in a:
            self._table = self.tables.setdefault((a["data-section"], a["data-metric"]), [])
        elif tag == "tr" and self._table is not None:
            self._row = {"keys": {}, "values": {}, "text": None}
        elif tag == "td" and self._row is not None:
            self._cell = (a, [])
        elif tag == "img":
            self.images.append(a.get("src", ""))
        elif tag == "svg":
            self.svgs += 1

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1].append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            a, text = self._cell
            text = "".join(text)
            if "data-key" in a:
                self._row["keys"][a["data-key"]] = text
            elif "data-stat" in a:
                self._row["values"][a["data-stat"]] = float(a["data-value"])
            else:
                self._row["text"] = text
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row["keys"] or self._row["values"]:
                self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None


def parse_report(path: Path) -> ReportParser:
    parser = ReportParser()
    parser.feed(path.read_text())
    return parser


def run_cli(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert cli.main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


def _number(text: str) -> float:
    return float(text) if text != "" else math.nan


def table_csv(capsys, store: Path, *extra: str) -> dict[tuple, dict[str, float]]:
    """``schedsweep table --format csv`` as {(metric, (key, value-as-text)...): stats}."""
    rows = list(csv.DictReader(io.StringIO(run_cli(capsys, "table", store, "--format", "csv", *extra))))
    stat_names = set(getattr(pipeline.base.stats, "PAIRED_STATS", pipeline.base.stats.STATS))
    out = {}
    for row in rows:
        keys = tuple(sorted((k, v) for k, v in row.items()
                            if k not in stat_names and k not in ("metric", "unit") and v != ""))
        out[(row["metric"],) + keys] = {k: _number(v) for k, v in row.items() if k in stat_names}
    return out


def table_markdown(capsys, store: Path, metrics: list[str], *extra: str) -> dict[tuple, str]:
    """``schedsweep table --metric M … --format markdown``: the shown text per (metric, cell).

    Asked for metrics of the same dimensions at once (one call per group keeps this fast).
    """
    argv = [a for m in metrics for a in ("--metric", m)]
    lines = run_cli(capsys, "table", store, *argv, "--format", "markdown", *extra).splitlines()
    header = [re.sub(r" \[[^]]*\]$", "", c.strip()) for c in lines[0].strip("|").split("|")]  # metric [unit]
    out = {}
    for line in lines[2:]:
        row = dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
        keys = tuple(sorted((k, v) for k, v in row.items() if k not in metrics))
        for metric in metrics:
            out[(metric,) + keys] = row[metric]
    return out


def _canonical_key(value: str) -> str:
    """Numbers as floats so ``1`` (csv of an int) and ``1.0`` compare equal; text as is."""
    try:
        return repr(float(value))
    except ValueError:
        return value


def _canon(keys) -> tuple:
    return tuple(sorted((k, _canonical_key(v)) for k, v in keys))


# -- the tests ----------------------------------------------------------------------------

def test_plot_files_for_every_workload(store, tmp_path, capsys):
    ds = pipeline.open_store(store)
    metric = next(m for m in ds.attrs["metrics"] if m not in ds.attrs["timing_metrics"])
    for dim in ds.attrs["dims"]:
        png = Path(run_cli(capsys, "plot", store, "--metric", metric, "--x", dim, "-o", tmp_path / f"{dim}.png")
                   .strip())
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = Path(run_cli(capsys, "plot", store, "--metric", metric, "--x", dim, "-o", tmp_path / f"{dim}.svg")
                   .strip())
        root = ET.fromstring(svg.read_bytes())
        assert root.tag.endswith("svg")
        # The y label carries the metric's unit as declared by the workload.
        declared = {m.name: m.unit for m in workloads.get(ds.attrs["workload"]).METRICS}[metric]
        assert f"[{declared}]" in svg.read_text() or declared in ("", "1")


def test_report_for_every_workload_embeds_one_figure(store, html_report):
    """One figure (each defined metric drawn once), a table per defined metric; a metric
    undefined in the whole store (e.g. network metrics without a network) is named, not drawn."""
    ds = pipeline.open_store(store)
    out = html_report
    parsed = parse_report(out)
    assert len(parsed.images) == (1 if ds.attrs["dims"] else 0)
    from PIL import Image

    for src in parsed.images:
        assert src.startswith("data:image/png;base64,")  # self-contained: nothing fetched
        image = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
        assert image.size[0] > 300 and image.size[1] > 200
    defined = report.defined_metrics(ds)
    assert defined
    for metric in ds.attrs["metrics"]:
        assert bool(parsed.tables.get(("metrics", metric))) == (metric in defined), metric
        assert bool(parsed.tables.get(("paired", metric))) == (metric in defined), metric
    text = out.read_text()
    assert "<script" not in text and "http://" not in text and "https://" not in text
    assert ds.attrs["spec_text"].splitlines()[0].replace('"', "&quot;") in text


def _assert_report_equals_table(capsys, store: Path, parsed: ReportParser, section: str, extra: tuple) -> None:
    ds = pipeline.open_store(store)
    expected = table_csv(capsys, store, *extra)
    groups: dict[tuple, list[str]] = {}
    for metric in ds.attrs["metrics"]:
        groups.setdefault(ds[metric].dims, []).append(metric)
    shown = {}
    for metrics in groups.values():
        shown.update({(k[0],) + _canon(k[1:]): v for k, v in table_markdown(capsys, store, metrics, *extra).items()})
    compared = 0
    for metric in report.defined_metrics(ds):  # the report leaves out metrics undefined in the whole store
        rows = parsed.tables[(section, metric)]
        csv_rows = {_canon(k[1:]): v for k, v in expected.items() if k[0] == metric}
        assert len(rows) == len(csv_rows), (section, metric)
        for row in rows:
            key = _canon(row["keys"].items())
            want = csv_rows[key]
            for stat, value in row["values"].items():
                assert value == want[stat] or (math.isnan(value) and math.isnan(want[stat])), (metric, key, stat)
            assert row["text"] == shown[(metric,) + key], (metric, key)
            compared += 1
    assert compared > 0 and compared == sum(len(v) for (s, _), v in parsed.tables.items() if s == section)


def test_report_numbers_equal_schedsweep_table(store, html_report, capsys):
    parsed = parse_report(html_report)
    _assert_report_equals_table(capsys, store, parsed, "metrics", ())
    baseline = report.default_baseline(pipeline.open_store(store))
    first = pipeline.open_store(store).attrs["dims"][0]
    assert baseline.startswith(first + "=")
    _assert_report_equals_table(capsys, store, parsed, "paired", ("--paired", baseline))


def test_report_paired_against_a_chosen_baseline(tmp_path, capsys):
    store = _mm1_store(tmp_path)
    out = Path(run_cli(capsys, "report", store, "-o", tmp_path / "r.html", "--paired", "arrival_rate=0.6").strip())
    parsed = parse_report(out)
    _assert_report_equals_table(capsys, store, parsed, "paired", ("--paired", "arrival_rate=0.6"))
    # The baseline's own rows are exactly zero.
    base = [r for r in parsed.tables[("paired", "mean_wait")] if float(r["keys"]["arrival_rate"]) == 0.6]
    assert base and all(r["values"]["mean"] == 0.0 for r in base)
    # Defaults: the report lands beside the store; figures can be inline SVG instead of PNG.
    out = Path(run_cli(capsys, "report", store, "--figure-format", "svg").strip())
    assert out == store.with_name("mm1.html")
    parsed = parse_report(out)
    assert parsed.svgs == 1 and parsed.images == []
    _assert_report_equals_table(capsys, store, parsed, "metrics", ())


def _mm1_store(tmp_path: Path) -> Path:
    spec = tmp_path / "mm1.toml"
    spec.write_text(tiny_spec_text("mm1"))
    return pipeline.run(spec, tmp_path / "mm1.zarr", workers=0, batch_size=REPLICATIONS, progress=False)


def test_plot_draws_the_table_means_and_ci(tmp_path):
    ds = pipeline.open_store(_mm1_store(tmp_path))
    fig, fixed = plot.figure(ds, "mean_wait", "customers", hue="arrival_rate")
    assert fixed == {}
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"  # customers span 300 … 30000
    assert ax.get_ylabel() == "mean_wait [time]"
    result = tables.compute(ds, ["mean_wait"])["mean_wait"]
    for k, rate in enumerate(ds["arrival_rate"].values):
        line = ax.lines[k]
        cell = result.sel(arrival_rate=rate)
        np.testing.assert_array_equal(line.get_xdata(), ds["customers"].values)
        np.testing.assert_array_equal(line.get_ydata(), cell.sel(stat="mean").values)
        band = ax.collections[k].get_paths()[0].vertices
        lows = cell.sel(stat="ci_low").values
        highs = cell.sel(stat="ci_high").values
        assert set(np.round(band[:, 1], 12)) == set(np.round(np.r_[lows, highs], 12))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["arrival_rate=0.3", "arrival_rate=0.6"]

    # Without --hue the other dimension is fixed at its first value, and the title says so.
    fig, fixed = plot.figure(ds, "mean_wait", "arrival_rate")
    assert fixed == {"customers": 300}
    assert "customers=300" in fig.axes[0].get_title()
    assert fig.axes[0].get_xscale() == "linear"

    # --sel and --paired: differences against the baseline, zero at the baseline.
    fig, _ = plot.figure(ds, "mean_wait", "arrival_rate", sel=["customers=3000"], paired="arrival_rate=0.3")
    ax = fig.axes[0]
    paired = tables.compute(ds, ["mean_wait"], ["customers=3000"], "arrival_rate=0.3")["mean_wait"]
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), paired.sel(stat="mean").values)
    assert ax.lines[0].get_ydata()[0] == 0.0
    assert "baseline (arrival_rate=0.3)" in ax.get_ylabel()


def test_categorical_x_gets_error_bars(tmp_path):
    name = next((n for n in ("ga", "desktop_grid") if n in workloads.names()), None)
    if name is None:
        pytest.fail("no workload with a string-valued sweep dimension in TINY")
    spec = tmp_path / "c.toml"
    spec.write_text(tiny_spec_text(name))
    ds = pipeline.open_store(pipeline.run(spec, tmp_path / "c.zarr", workers=0, batch_size=REPLICATIONS,
                                          progress=False))
    dim = next(d for d in ds.attrs["dims"] if ds[d].dtype.kind in "OUST")
    metric = ds.attrs["metrics"][0]
    fig, _ = plot.figure(ds, metric, dim)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(v) for v in ds[dim].values]
    assert ax.containers, "no error bars drawn"
    result, _ = plot.plot_data(ds, metric, dim)
    np.testing.assert_array_equal(ax.containers[0].lines[0].get_ydata(), result.sel(stat="mean").values)


def test_plot_errors_name_the_problem(tmp_path, capsys):
    store = _mm1_store(tmp_path)
    assert cli.main(["plot", str(store), "--metric", "mean_wait", "--x", "nope"]) == 2
    assert "--x 'nope' is not a dimension" in capsys.readouterr().err
    pdf = str(tmp_path / "a.pdf")
    assert cli.main(["plot", str(store), "--metric", "mean_wait", "--x", "customers", "-o", pdf]) == 2
    assert ".png or .svg" in capsys.readouterr().err
    assert cli.main(["plot", str(store), "--metric", "mean_wait", "--x", "customers", "--hue", "customers"]) == 2
    capsys.readouterr()
    assert cli.main(["plot", str(store), "--metric", "mean_wait"]) == 2  # two dimensions: which is x?
    assert "--x DIM is needed (free dimensions: customers, arrival_rate)" in capsys.readouterr().err


def test_plot_takes_the_only_free_dimension(tmp_path, capsys):
    store = _mm1_store(tmp_path)
    ds = pipeline.open_store(store)
    out = tmp_path / "only.svg"
    # --hue (or --sel) takes one of the two dimensions: the other is the x axis
    assert cli.main(["plot", str(store), "--metric", "mean_wait", "--hue", "arrival_rate", "-o", str(out)]) == 0
    assert plot.only_dimension(ds, "arrival_rate", (), None) == "customers"
    assert plot.only_dimension(ds, None, ["customers=300"], None) == "arrival_rate"
    assert plot.only_dimension(ds, None, (), "customers=300") == "arrival_rate"
    fig, _ = plot.figure(ds, "mean_wait", "customers", hue="arrival_rate")
    assert out.read_text().count("<path") >= 1 and fig.axes[0].get_xlabel() in out.read_text()


def test_log_axis_rule():
    assert plot.wants_log(np.array([1.0, 100.0]))
    assert not plot.wants_log(np.array([1.0, 99.0]))
    assert not plot.wants_log(np.array([0.0, 1000.0]))
    assert not plot.is_numeric(np.array([True, False]))
    assert not plot.is_numeric(np.array(["a", "b"]))


# -- Chromium -----------------------------------------------------------------------------

def chromium_binary() -> str | None:
    found = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
    if found is None:
        if os.environ.get("SCHEDSWEEP_EXPECT_CHROMIUM") == "1":
            pytest.fail("SCHEDSWEEP_EXPECT_CHROMIUM=1 but chromium is not installed (tests/install_chromium.sh)")
        pytest.skip("chromium not installed (tests/install_chromium.sh installs it)")
    return found


def render_page(binary: str, page: Path, shot: Path, profile: Path) -> list[str]:
    """Screenshot ``page`` in headless Chromium; return the page's console messages."""
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
           "--window-size=1280,1400", f"--screenshot={shot}", page.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def blue_pixels(shot: Path) -> int:
    """Pixels of matplotlib's first colour (#1f77b4), the colour of the figures' first line."""
    from PIL import Image

    rgb = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    return int((np.abs(rgb - np.array([31, 119, 180])).sum(axis=-1) < 30).sum())


@pytest.mark.chromium
def test_report_in_headless_chromium(tmp_path, capsys):
    binary = chromium_binary()
    store = _mm1_store(tmp_path)
    page = Path(run_cli(capsys, "report", store, "-o", tmp_path / "report.html").strip())
    console = render_page(binary, page, tmp_path / "report.png", tmp_path / "profile")
    assert console == [], console
    with_figures = blue_pixels(tmp_path / "report.png")

    # The same page with its figures blanked out and a script error added: no blue left
    # (the blue came from the figures), and the console check catches the error.
    text = page.read_text()
    broken = tmp_path / "broken.html"
    broken.write_text(re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:,", text)
                      .replace("</body>", "<script>undefinedFunction();</script></body>"))
    console = render_page(binary, broken, tmp_path / "broken.png", tmp_path / "profile")
    assert any("undefinedFunction" in line for line in console), console
    assert with_figures > 500 > blue_pixels(tmp_path / "broken.png") * 10, with_figures


def test_report_completeness_shows_failures_and_missing_cells(tmp_path):
    spec = tmp_path / "flaky.toml"
    spec.write_text(tiny_spec_text("mm1").replace('workload = "mm1"', 'workload = "tests.flaky_workload"')
                    .replace("replications = 4", "replications = 6"))
    store = pipeline.run(spec, tmp_path / "flaky.zarr", workers=0, batch_size=3, progress=False)
    import zarr

    status = zarr.open_group(store, mode="r+")["status"]
    status[0, 0, :3] = 0  # three replications of the first cell "not run", as after an interruption
    ds = pipeline.open_store(store)
    counts = tables.completeness(ds)
    assert counts["failed"] > 0 and counts["not run"] == 3
    page = report.build(ds, str(store))
    for label, n in counts.items():
        assert f"<td class='key'>{label}</td><td>{n}</td>" in page
    from schedsweep.pipeline.store.zarrstore import read_failures

    assert f"{len(read_failures(store))} replications failed" in page
    assert f"schedsweep show {store} --failures" in page
    missing = int(((ds["status"] == 0) | (ds["status"] == 3)).isel(customers=0, arrival_rate=0).sum())
    assert "Cells with missing replications" in page
    assert f"<td class='key'>300</td><td class='key'>0.3</td><td>{missing}</td>" in page


def test_report_of_a_single_cell_store(tmp_path):
    spec = tmp_path / "single.toml"
    spec.write_text('workload = "mm1"\nreplications = 3\nseed = 1\n[params]\ncustomers = 300\nwarmup = 10\n')
    store = pipeline.run(spec, tmp_path / "single.zarr", workers=0, progress=False)
    parsed = parse_report(report.write_report(store, tmp_path / "single.html"))
    assert parsed.images == [] and ("paired", "mean_wait") not in parsed.tables
    described = pipeline.describe(pipeline.open_store(store))
    for metric in ("mean_wait", "mean_time_in_system"):
        (row,) = parsed.tables[("metrics", metric)]
        for stat, value in row["values"].items():
            assert value == float(described[metric].sel(stat=stat)), (metric, stat)
