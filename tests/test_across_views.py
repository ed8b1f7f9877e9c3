"""Views across stores: stores that differ in one spec parameter are aligned along it (else
along ``store``, said in one line), and ``plot`` of several stores draws one series per store
whose points and bands are the hand-computed mean and CI (paired, or Welch's interval when the
stores do not share their seeds); other model code is refused in one line unless --allow-mixed."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st

from schedsweep.pipeline import cli
from schedsweep.pipeline.read import across, plot

from tests.test_across_stores import N, _store, recode


@pytest.fixture
def samples():
    """Three stores' mean_wait per cell and replication: b is a shifted with little noise of its own."""
    rng = np.random.default_rng(11)
    a = rng.gamma(3.0, 1.0, (2, N))
    return a, a + 0.5 + rng.normal(0, 0.2, (2, N)), rng.gamma(2.0, 1.0, (2, N))


def _t(n: float) -> float:
    return float(st.t.ppf(0.975, n))


def _welch(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Difference of means of x minus y and Welch's 95% half-width, by the textbook formula."""
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    dof = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    return x.mean() - y.mean(), _t(dof) * math.sqrt(vx + vy)


def _rows(capsys, *argv: str) -> tuple[list[dict], str]:
    capsys.readouterr()
    assert cli.main(["table", *argv, "--metric", "mean_wait", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_stores_that_differ_in_one_parameter_are_aligned_along_it_paired(tmp_path, samples, capsys):
    a, b, _ = samples
    one = _store(tmp_path / "slow.zarr", 1, a, "service_rate = 1.0")
    two = _store(tmp_path / "fast.zarr", 1, b, "service_rate = 1.5")
    ds, _ = across.align(across.open_tree([one, two]))
    assert ds.attrs["across"] == "service_rate" and "store" not in ds.dims
    assert list(ds["service_rate"].values) == [1.0, 1.5] and list(ds["store"].values) == ["slow.zarr", "fast.zarr"]
    rows, err = _rows(capsys, str(one), str(two), "--paired", "service_rate=1.0")
    assert err.splitlines()[0] == ("across stores along service_rate, the one spec parameter that differs "
                                   "(slow.zarr: 1.0, fast.zarr: 1.5)")
    assert "paired by replication across stores" in err
    for k, rate in enumerate((0.3, 0.5)):
        d = b[k] - a[k]
        row = next(r for r in rows if r["service_rate"] == 1.5 and r["arrival_rate"] == rate)
        assert row["store"] == "fast.zarr"
        assert row["mean"] == pytest.approx(d.mean(), rel=1e-9)
        assert row["half_width"] == pytest.approx(_t(N - 1) * d.std(ddof=1) / math.sqrt(N), rel=1e-9)
        base = next(r for r in rows if r["service_rate"] == 1.0 and r["arrival_rate"] == rate)
        assert (base["mean"], base["half_width"]) == (0.0, 0.0)
    assert _rows(capsys, str(one), str(two), "--paired", "store=slow.zarr")[0] == rows  # a store's name serves too


def test_stores_that_differ_in_one_parameter_and_their_seeds_get_welch_along_it(tmp_path, samples, capsys):
    a, b, c = samples
    paths = [_store(tmp_path / f"{n}.zarr", s, v, f"service_rate = {r}")
             for n, s, v, r in (("x", 1, a, 1.0), ("y", 2, b, 1.5), ("z", 3, c, 2.0))]
    rows, err = _rows(capsys, str(tmp_path), "--paired", "service_rate=1.0")
    assert "Welch's unpaired interval" in err
    for k, rate in enumerate((0.3, 0.5)):
        for rate_of_store, other in ((1.5, b), (2.0, c)):
            mean, half = _welch(other[k], a[k])
            row = next(r for r in rows if r["service_rate"] == rate_of_store and r["arrival_rate"] == rate)
            assert row["mean"] == pytest.approx(mean, rel=1e-9) and row["half_width"] == pytest.approx(half, rel=1e-9)
        base = next(r for r in rows if r["service_rate"] == 1.0 and r["arrival_rate"] == rate)
        assert (base["mean"], base["half_width"]) == (0.0, 0.0)  # the same sample: no interval around 0
    capsys.readouterr()
    assert cli.main(["table", *map(str, paths), "--paired", "service_rate=1.0", "--metric", "mean_wait"]) == 0
    text = capsys.readouterr().out
    assert text.count("(baseline)") == 2  # the resolved baseline, not a guess from '1.0 (Welch, unpaired)'
    assert cli.main(["table", str(tmp_path), "--paired", "service_rate=1.0", "--over", "arrival_rate"]) \
        == cli.EXIT_USAGE
    assert "no pairs to pool" in capsys.readouterr().err


def test_store_stays_when_no_single_parameter_tells_the_stores_apart(tmp_path, samples, capsys):
    a, b, c = samples
    first = _store(tmp_path / "a.zarr", 1, a, "service_rate = 1.0\ncustomers = 3000")
    both = _store(tmp_path / "b.zarr", 1, b, "service_rate = 1.5\ncustomers = 5000")
    ds, _ = across.align(across.open_tree([first, both]))
    assert ds.attrs["across"] == "store" and list(ds["store"].values) == ["a.zarr", "b.zarr"]
    assert across.along_line(ds) == ("across stores along store: no single spec parameter tells them apart "
                                     "(customers and service_rate differ)")
    same = _store(tmp_path / "c.zarr", 2, c, "service_rate = 1.0\ncustomers = 3000")
    ds, _ = across.align(across.open_tree([first, same]))
    assert ds.attrs["across"] == "store" and "parameters are the same" in across.along_line(ds)
    repeated = _store(tmp_path / "d.zarr", 1, c, "service_rate = 1.5\ncustomers = 3000")
    ds, _ = across.align(across.open_tree([first, same, repeated]))  # 1.0 twice: no one value per store
    assert ds.attrs["across"] == "store" and "service_rate has one value in two stores" in across.along_line(ds)
    rows, _ = _rows(capsys, str(first), str(both), "--paired", "store=a.zarr")
    row = next(r for r in rows if r["store"] == "b.zarr" and r["arrival_rate"] == 0.3)
    assert row["mean"] == pytest.approx((b[0] - a[0]).mean(), rel=1e-9)


def _band(ax, k: int) -> set:
    return set(np.round(ax.collections[k].get_paths()[0].vertices[:, 1], 9))


def test_plot_across_stores_draws_each_stores_mean_and_ci(tmp_path, samples, capsys):
    a, b, c = samples
    _store(tmp_path / "a.zarr", 1, a)
    _store(tmp_path / "b.zarr", 1, b)
    _store(tmp_path / "c.zarr", 2, c)
    ds, _ = across.align(across.open_tree([tmp_path]))
    fig, fixed, x, how = plot.across_figure(ds, "mean_wait")
    assert (fixed, x, how) == ({}, "arrival_rate", None)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["store=a.zarr", "store=b.zarr", "store=c.zarr"]
    for k, values in enumerate((a, b, c)):
        np.testing.assert_array_equal(ax.lines[k].get_xdata(), [0.3, 0.5])
        np.testing.assert_allclose(ax.lines[k].get_ydata(), values.mean(axis=1), rtol=1e-12)
        half = _t(N - 1) * values.std(axis=1, ddof=1) / math.sqrt(N)
        assert _band(ax, k) == set(np.round(np.r_[values.mean(axis=1) - half, values.mean(axis=1) + half], 9))

    # a difference against a store of other seeds: Welch's interval, drawn as the table gives it
    fig, _, _, how = plot.across_figure(ds, "mean_wait", paired="store=a.zarr")
    assert how == across.WELCH_LINE
    ax = fig.axes[0]
    for k, values in ((1, b), (2, c)):
        welch = [_welch(values[j], a[j]) for j in range(2)]
        np.testing.assert_allclose(ax.lines[k].get_ydata(), [m for m, _ in welch], rtol=1e-9)
        assert _band(ax, k) == set(np.round([m + s * h for m, h in welch for s in (-1, 1)], 9))
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [0.0, 0.0])  # the baseline, exactly

    # the CLI: a folder in, a file beside the stores out, the dimension said on stderr
    capsys.readouterr()
    assert cli.main(["plot", str(tmp_path), "--metric", "mean_wait"]) == 0
    out, err = capsys.readouterr()
    assert Path(out.strip()) == tmp_path / "across-mean_wait-arrival_rate.png" and Path(out.strip()).is_file()
    assert "across stores along store" in err


def test_plot_across_a_parameter_and_x_along_the_stores(tmp_path, samples, capsys):
    a, b, _ = samples
    one = _store(tmp_path / "slow.zarr", 1, a, "service_rate = 1.0")
    two = _store(tmp_path / "fast.zarr", 1, b, "service_rate = 1.5")
    ds, _ = across.align(across.open_tree([one, two]))
    fig, _, _, how = plot.across_figure(ds, "mean_wait", paired="service_rate=1.0")
    assert how == across.PAIRED_LINE
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["service_rate=1.0", "service_rate=1.5"]
    d = b - a
    np.testing.assert_allclose(ax.lines[1].get_ydata(), d.mean(axis=1), rtol=1e-9)
    half = _t(N - 1) * d.std(axis=1, ddof=1) / math.sqrt(N)
    assert _band(ax, 1) == set(np.round(np.r_[d.mean(axis=1) - half, d.mean(axis=1) + half], 9))
    # the parameter on the x axis: one line over its values, the other dimension fixed and said
    fig, fixed, x, _ = plot.across_figure(ds, "mean_wait", x="service_rate")
    assert (x, fixed) == ("service_rate", {"arrival_rate": 0.3})
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), [a[0].mean(), b[0].mean()], rtol=1e-12)
    out = tmp_path / "f.svg"
    assert cli.main(["plot", str(one), str(two), "--metric", "mean_wait", "-o", str(out)]) == 0
    assert out.is_file() and "service_rate" in capsys.readouterr().err


def test_plot_refuses_other_code_in_one_line_unless_allowed(tmp_path, samples, capsys):
    a, b, _ = samples
    first = _store(tmp_path / "a.zarr", 1, a)
    other = _store(tmp_path / "b.zarr", 1, b)

    recode(other, "f")
    capsys.readouterr()
    assert cli.main(["plot", str(first), str(other), "--metric", "mean_wait"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "b.zarr was made by other model code than a.zarr" in err[0] and "--allow-mixed" in err[0]
    assert cli.main(["plot", str(first), str(other), "--metric", "mean_wait", "--allow-mixed"]) == 0
    assert "mixed: b.zarr was made by other model code than a.zarr (ffffffffffff" in capsys.readouterr().err


# -- the page of several stores ---------------------------------------------------------

def _cells(parsed, section: str, metric: str) -> dict[tuple, dict]:
    """A report table's rows keyed by their (dimension, text) pairs."""
    return {tuple(sorted(r["keys"].items())): r for r in parsed.tables[(section, metric)]}


def test_report_of_several_stores_compares_them_on_one_page(tmp_path, samples, capsys):
    from tests.test_plot_report import parse_report

    a, b, c = samples
    paths = [_store(tmp_path / f"{n}.zarr", s, v, f"service_rate = {r}")
             for n, s, v, r in (("x", 1, a, 1.0), ("y", 2, b, 1.5), ("z", 3, c, 2.0))]
    page = tmp_path / "site" / "compare.html"
    capsys.readouterr()
    assert cli.main(["report", *map(str, paths), "-o", str(page)]) == 0
    assert capsys.readouterr().out.strip() == str(page)
    text = page.read_text()
    assert "src='http" not in text and "<script" not in text  # self-contained: loads nothing
    assert "across stores along service_rate, the one spec parameter that differs" in text
    assert "one line per service_rate" in text and "Welch&#x27;s unpaired interval" in text
    parsed = parse_report(page)
    assert len(parsed.images) == 1 and parsed.images[0].startswith("data:image/png;base64,")
    means = _cells(parsed, "metrics", "mean_wait")
    diffs = _cells(parsed, "paired", "mean_wait")
    for rate_of_store, name, values in ((1.0, "x.zarr", a), (1.5, "y.zarr", b), (2.0, "z.zarr", c)):
        for k, rate in enumerate((0.3, 0.5)):
            key = (("arrival_rate", str(rate)), ("service_rate", str(rate_of_store)), ("store", name))
            half = _t(N - 1) * values[k].std(ddof=1) / math.sqrt(N)
            assert means[key]["values"]["mean"] == pytest.approx(values[k].mean(), rel=1e-12)
            assert means[key]["values"]["half_width"] == pytest.approx(half, rel=1e-12)
            if values is a:
                assert diffs[key]["text"] == "(baseline)"
                continue
            mean, half = _welch(values[k], a[k])  # the first store is the baseline by default
            assert diffs[key]["values"]["mean"] == pytest.approx(mean, rel=1e-12)
            assert diffs[key]["values"]["half_width"] == pytest.approx(half, rel=1e-12)
    from tests.test_index_page import _Links

    links = _Links()
    links.feed(text)
    assert links.rows[0][0] == "store" and [r[0] for r in links.rows[1:4]] == ["x.zarr", "y.zarr", "z.zarr"]
    assert all(f"ok ({2 * N}/{2 * N} done)" in r for r in links.rows[1:4]) and links.links == []  # the catalogue, no links


def test_report_of_several_stores_refuses_other_code_before_writing(tmp_path, samples, capsys):
    a, b, _ = samples
    first = _store(tmp_path / "a.zarr", 1, a)
    other = _store(tmp_path / "b.zarr", 1, b)

    recode(other, "e")
    page = tmp_path / "out.html"
    capsys.readouterr()
    assert cli.main(["report", str(first), str(other), "-o", str(page)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other model code" in err[0] and not page.exists()
    assert cli.main(["report", str(first), str(other), "-o", str(page), "--allow-mixed"]) == 0
    assert "mixed: b.zarr was made by other model code than a.zarr (eeeeeeeeeeee" in page.read_text()
    # paired by replication: the stores share their seeds
    assert "paired by replication across stores" in page.read_text()
    page.unlink()
    assert cli.main(["report", str(first), str(other), "-o", str(page), "--allow-mixed", "--paired", "store=c"]) \
        == cli.EXIT_USAGE
    assert "store='c' is not in the store" in capsys.readouterr().err and not page.exists()  # a baseline that is not there: refused


@pytest.mark.chromium
def test_report_of_several_stores_renders_in_headless_chromium(tmp_path, samples, capsys):
    from tests.test_plot_report import blue_pixels, chromium_binary, render_page

    binary = chromium_binary()
    a, b, _ = samples
    paths = [_store(tmp_path / "a.zarr", 1, a), _store(tmp_path / "b.zarr", 1, b)]
    page = tmp_path / "compare.html"
    assert cli.main(["report", *map(str, paths), "-o", str(page)]) == 0
    assert render_page(binary, page, tmp_path / "compare.png", tmp_path / "profile") == []
    assert blue_pixels(tmp_path / "compare.png") > 500  # the figure's first line is drawn
