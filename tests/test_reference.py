"""Published reference points: parsed and validated from every shipped spec, each claim kind
judged right where it must hold and where it must not, shown by table, report and plot,
and malformed tables refused in one line."""
from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.spec import reference, sweep as spec_mod
from schedsweep.pipeline.read.plot import figure
from shipped_specs import load_shipped

REPO = Path(__file__).resolve().parent.parent
JOBS = sorted((REPO / "jobs").glob("*.toml"))

MM1 = """
name = "ref"
workload = "mm1"
replications = 40
seed = 3
[params]
customers = 4000
warmup = 400
[sweep]
arrival_rate = [0.3, 0.6]
"""


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.stem)
def test_every_spec_names_what_it_reproduces_and_its_references_load(path, tmp_path):
    doc = tomllib.loads(path.read_text())
    assert doc.get("reproduces"), f"{path.name}: no `reproduces` (docs/reproduction.md)"
    loaded = load_shipped(path, tmp_path)  # validates metrics and coordinates of every reference
    ref = reference.from_spec_text(loaded.text)
    for v in ref.values:
        assert np.isfinite(v.value)


def test_the_papers_tables_are_carried_by_their_specs():
    counts = {name: reference.from_spec_text((REPO / "jobs" / f"{name}.toml").read_text())
              for name in ("slot-selection", "cyclic-frsm-vs-css", "cyclic-owner-price", "mm1")}
    assert len(counts["slot-selection"].values) == 19 and len(counts["slot-selection"].claims) == 1
    assert len(counts["cyclic-frsm-vs-css"].values) == 24  # Table 1 less the illegible cell
    assert len(counts["cyclic-owner-price"].values) == 20  # Table 2: 5 prices x 4 columns
    assert any(c.kind == "peak_near" for c in counts["cyclic-owner-price"].claims)


def test_reference_does_not_change_the_identity(write_spec):
    plain = spec_mod.load(write_spec(MM1, "a.toml"))
    with_ref = spec_mod.load(write_spec(MM1 + '\n[[reference.value]]\nmetric = "mean_wait"\nvalue = 1.0\n', "b.toml"))
    assert plain.identity() == with_ref.identity()


def _means(values: list[float], coords: list) -> xr.DataArray:
    return xr.DataArray(np.array(values, float), dims=["x"], coords={"x": coords})


CLAIMS = [  # (claim, means that hold, means that do not)
    (dict(kind="max", at="b"), [1, 3, 2], [3, 1, 2]),
    (dict(kind="min", at="c"), [2, 3, 1], [1, 3, 2]),
    (dict(kind="increasing"), [1, 2, 3], [1, 3, 3]),
    (dict(kind="decreasing"), [3, 2, 1], [3, 1, 2]),
    (dict(kind="ratio_at_least", a="a", b="c", factor=2.0), [4, 0, 2], [3.9, 0, 2]),
    (dict(kind="interior_min"), [3, 1, 2], [1, 2, 3]),
]


@pytest.mark.parametrize("kw,good,bad", CLAIMS, ids=[c[0]["kind"] for c in CLAIMS])
def test_each_claim_kind_is_judged(kw, good, bad):
    claim = reference.Claim(text="t", metric="m", along="x", **kw)
    assert reference.check_claim(claim, _means(good, ["a", "b", "c"]))["holds"] is True
    assert reference.check_claim(claim, _means(bad, ["a", "b", "c"]))["holds"] is False
    assert reference.check_claim(claim, _means([np.nan] + good[1:], ["a", "b", "c"]))["holds"] is None
    if kw["kind"] == "ratio_at_least":  # a value it does not compare may lack results (an unstable policy)
        assert reference.check_claim(claim, _means([good[0], np.nan, good[2]], ["a", "b", "c"]))["holds"] is True
        assert reference.check_claim(claim, _means([bad[0], np.nan, bad[2]], ["a", "b", "c"]))["holds"] is False


def test_peak_near_among_and_every_slice():
    claim = reference.Claim(text="t", kind="peak_near", metric="m", along="x", at=6.0, tolerance=2.0)
    xs = [2.0, 4.0, 6.0, 8.0, 10.0]
    assert reference.check_claim(claim, _means([1, 5, 4, 3, 2], xs))["holds"] is True   # peak at 4, within 2
    assert reference.check_claim(claim, _means([5, 4, 3, 2, 1], xs))["holds"] is False  # peak at 2
    # `among` leaves out a value the paper did not compare
    top = reference.Claim(text="t", kind="max", metric="m", along="x", at="b", among=("a", "b"))
    assert reference.check_claim(top, _means([1, 2, 9], ["a", "b", "c"]))["holds"] is True
    # over a dimension it does not fix, a claim must hold in every slice
    two = xr.DataArray([[1, 2, 3], [1, 3, 2]], dims=["y", "x"], coords={"y": [0, 1], "x": ["a", "b", "c"]})
    inc = reference.Claim(text="t", kind="increasing", metric="m", along="x")
    assert reference.check_claim(inc, two)["holds"] is False
    assert reference.check_claim(reference.Claim(text="t", kind="increasing", metric="m", along="x",
                                                 where={"y": 0}), two)["holds"] is True


def test_value_rows_relative_difference_and_ci():
    # the dimension is called "method", as in the cyclic specs (not xarray's sel keyword)
    stats = xr.Dataset({"m": xr.DataArray([[10.0, 1.0, 9.0, 11.0], [20.0, 1.0, 19.0, 21.0]], dims=["method", "stat"],
                                          coords={"method": ["a", "b"], "stat": ["mean", "half_width", "ci_low",
                                                                                 "ci_high"]})})
    ref = reference.Reference("", (reference.Value("m", {"method": "a"}, 10.5),
                                   reference.Value("m", {"method": "b"}, 25.0)),
                              (reference.Claim("t", "max", "m", "method", at="b"),))
    assert reference.claim_rows(ref, stats)[0]["holds"] is True
    rows = reference.value_rows(ref, stats)
    assert [r["inside_ci"] for r in rows] == [True, False]
    assert rows[0]["relative"] == pytest.approx((10 - 10.5) / 10.5)
    assert rows[1]["relative"] == pytest.approx(-0.2)


def test_table_report_and_plot_show_the_published_values(write_spec, tmp_path, capsys):
    # The closed form W = 1/(mu - lambda) as the "published" value, and one value that is wrong.
    text = MM1.replace("seed = 3\n", 'seed = 3\nreproduces = "M/M/1 closed form"\n') + """
[[reference.value]]
metric = "mean_time_in_system"
where = { arrival_rate = 0.3 }
value = 1.4285714285714286
source = "closed form"
[[reference.value]]
metric = "mean_time_in_system"
where = { arrival_rate = 0.6 }
value = 25.0
source = "deliberately wrong"
[[reference.claim]]
text = "time in system grows with load"
kind = "increasing"
metric = "mean_time_in_system"
along = "arrival_rate"
"""

    path = pipeline.run(write_spec(text), tmp_path / "r.zarr", workers=0, progress=False)
    capsys.readouterr()
    assert cli.main(["table", str(path)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "published" in line and "mean_time_in_system" in line]
    assert len(lines) == 2 and "inside CI" in lines[0] and "outside" in lines[1]
    assert "holds" in out and "Reproduces: M/M/1 closed form" in out
    from schedsweep.pipeline.read.report import write_report

    html = write_report(path, tmp_path / "r.html").read_text()
    assert "Published reference" in html and "deliberately wrong" in html and "holds" in html
    fig, _ = figure(pipeline.open_store(path), "mean_time_in_system", "arrival_rate")
    stars = [line for line in fig.axes[0].get_lines() if line.get_marker() == "*"]
    assert [tuple(s.get_ydata()) for s in stars] == [(1.4285714285714286,), (25.0,)]


BAD = [
    ('[[reference.value]]\nmetric = "nope"\nvalue = 1.0\n', "not a metric"),
    ('[[reference.value]]\nmetric = "mean_wait"\nvalue = "x"\n', "finite number"),
    ('[[reference.value]]\nmetric = "mean_wait"\nvalue = 1.0\nwhere = { load = 1 }\n', "not a dimension"),
    ('[[reference.value]]\nmetric = "mean_wait"\nvalue = 1.0\nwhere = { arrival_rate = 0.5 }\n', "not a value"),
    ('[[reference.value]]\nmetric = "mean_wait"\nvalue = 1.0\ncolour = 1\n', "unknown key"),
    ('[[reference.claim]]\ntext = "t"\nkind = "best"\nmetric = "mean_wait"\nalong = "arrival_rate"\n', "kind"),
    ('[[reference.claim]]\ntext = "t"\nkind = "max"\nmetric = "mean_wait"\nalong = "arrival_rate"\n', "needs at"),
    ('[[reference.claim]]\ntext = "t"\nkind = "max"\nmetric = "mean_wait"\nalong = "x"\nat = 1\n', "along"),
    ('[[reference.claim]]\ntext = "t"\nkind = "peak_near"\nmetric = "mean_wait"\nalong = "arrival_rate"\nat = "a"\n',
     "number at"),
    ('[reference]\nvalues = 1\n', "unknown key"),
]


@pytest.mark.parametrize("tail,needle", BAD, ids=[str(i) for i in range(len(BAD))])
def test_malformed_reference_is_one_line_and_exit_2(write_spec, tail, needle, capsys, tmp_path):
    path = write_spec(MM1 + tail)
    assert cli.main(["run", str(path), "--store", str(tmp_path / "x.zarr"), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and str(path) in err[0]
    assert not (tmp_path / "x.zarr").exists()
