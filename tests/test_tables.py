"""schedsweep table: every metric shown, single-cell stores, extra dimensions."""
from __future__ import annotations

import numpy as np
import xarray as xr

from schedsweep.pipeline.base import stats
from schedsweep.pipeline.read import tables


def _ds(single: bool = False) -> xr.Dataset:
    rng = np.random.default_rng(0)
    if single:
        return xr.Dataset({"w": (("replication",), rng.normal(size=10))}, coords={"replication": np.arange(10)},
                          attrs={"metrics": ["w"]})
    return xr.Dataset(
        {"w": (("policy", "replication"), rng.normal(size=(2, 10))),
         "w_class": (("policy", "replication", "job_class"), rng.normal(size=(2, 10, 3)))},
        coords={"policy": ["a", "b"], "replication": np.arange(10), "job_class": ["0", "1", "2"]},
        attrs={"metrics": ["w", "w_class"]})


def test_plain_and_per_class_metrics_both_shown():
    ds = _ds()
    text = tables.render(tables.compute(ds), "text")
    mean_w = float(stats.describe(ds)["w"].sel(policy="b", stat="mean"))
    mean_c = float(stats.describe(ds)["w_class"].sel(policy="b", job_class="2", stat="mean"))
    assert f"{mean_w:.4g}" in text and f"{mean_c:.4g}" in text
    md = tables.render(tables.compute(ds), "markdown")
    assert "| policy | w |" in md and "| policy | job_class | w_class |" in md


def test_single_cell_store_table():
    ds = _ds(single=True)
    out = tables.render(tables.compute(ds), "csv")
    assert f"{float(ds['w'].mean()):.6f}"[:6] in out
    assert "w" in tables.render(tables.compute(ds), "text")


def test_units_are_shown_and_counts_are_integers():
    import csv
    import io
    import json

    ds = _ds()
    ds["w"].attrs["units"] = "s"
    ds["w_class"].attrs["units"] = "model_time_unit"
    text = tables.render(tables.compute(ds), "text")
    assert "w [s]" in text and "w_class [time]" in text
    md = tables.render(tables.compute(ds), "markdown")
    assert "| policy | w [s] |" in md
    rows = list(csv.DictReader(io.StringIO(tables.render(tables.compute(ds), "csv"))))
    assert {(r["metric"], r["unit"]) for r in rows} == {("w", "s"), ("w_class", "time")}
    assert {r["n"] for r in rows} == {"10"}  # an integer count, not 10.0
    records = json.loads(tables.render(tables.compute(ds), "json"))
    assert all(isinstance(r["n"], int) and r["unit"] in ("s", "time") for r in records)
    # a ratio of means has no unit of its own; a paired difference keeps the metric's
    ratio = tables.render(tables.compute(ds, ["w"], ratio="policy=a"), "csv")
    assert {r["unit"] for r in csv.DictReader(io.StringIO(ratio))} == {"ratio"}
    paired = tables.render(tables.compute(ds, ["w"], paired="policy=a"), "text")
    assert "w [s]" in paired


def test_a_paired_table_names_the_baseline_instead_of_a_zero_interval():
    ds = _ds()
    text = tables.render(tables.compute(ds, ["w"], paired="policy=a"), "text")
    row_a = next(line for line in text.splitlines() if line.split()[:1] == ["a"])
    row_b = next(line for line in text.splitlines() if line.split()[:1] == ["b"])
    assert "(baseline)" in row_a and "± 0 " not in text and "0 ± 0" not in text
    diff = float(stats.paired(ds, "policy", "a")["w"].sel(policy="b", stat="mean"))
    assert f"{diff:.4g}" in row_b
    md = tables.render(tables.compute(ds, ["w"], paired="policy=a"), "markdown")
    assert "| a | (baseline) |" in md
