"""Export to netCDF, parquet and csv reads back equal to the store; merging two halves of a
sweep gives the store of the whole run (and it resumes as that run); stores that do not fit
together are refused in one line."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import zarrstore as store_mod

SPEC = """
name = "ex"
workload = "{workload}"
replications = 6
seed = {seed}
[params]
customers = 300
warmup = 30
{extra}
[sweep]
arrival_rate = {rates}
[[zip]]
service_rate = [1.0, 2.0]
fail_every = [5, 7]
"""
DATA = ["mean_wait", "mean_time_in_system", "status", "reason", "seed"]


def _run(write_spec, tmp_path, rates, name, seed=8, workload="tests.flaky_workload", extra=""):
    spec = write_spec(SPEC.format(rates=rates, seed=seed, workload=workload, extra=extra), f"{name}.toml")
    return pipeline.run(spec, tmp_path / f"{name}.zarr", workers=0, progress=False)


def _data(ds: xr.Dataset) -> xr.Dataset:
    out = ds[DATA].load()
    out.attrs = {}
    return out


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_long_tables_read_back_equal_to_the_store(write_spec, tmp_path, fmt, capsys):
    path = _run(write_spec, tmp_path, [0.3, 0.6], "s")
    capsys.readouterr()
    assert cli.main(["export", str(path), "--to", fmt, "-o", str(tmp_path / f"t.{fmt}")]) == 0
    # pandas' default float parser before 3.1 may be 1 ulp off; ours writes exact round-trip digits
    exact = {"float_precision": "round_trip"} if tuple(int(x) for x in pd.__version__.split(".")[:2]) < (3, 1) else {}
    table = pd.read_csv(tmp_path / "t.csv", **exact) if fmt == "csv" else pd.read_parquet(tmp_path / "t.parquet")
    ds = pipeline.open_store(path)
    for metric in ("mean_wait", "mean_time_in_system"):
        rows = table[table["metric"] == metric].set_index(["arrival_rate", "service_rate", "replication"])
        back = rows.to_xarray()
        np.testing.assert_array_equal(back["value"].transpose(*ds[metric].dims).values, ds[metric].values)
        np.testing.assert_array_equal(back["status"].transpose(*ds["status"].dims).values, ds["status"].values)
        np.testing.assert_array_equal(back["fail_every"].values.max(axis=(0, 2)), ds["fail_every"].values)
    # one row per cell, replication, metric and entry of a metric's own dimension (quantile)
    metrics = ("mean_wait", "mean_time_in_system", "time_in_system_quantiles")
    assert sorted(set(table["metric"])) == sorted(metrics)
    assert len(table) == sum(ds[m].size for m in metrics)
    assert (table["seed"] % 5 == 0)[(table["status"] == 3) & (table["service_rate"] == 1.0)].all()


def test_netcdf_export_round_trips(write_spec, tmp_path):
    path = _run(write_spec, tmp_path, [0.3, 0.6], "n")
    from schedsweep.pipeline.store.export import export

    out = export(path, "netcdf", tmp_path / "n.nc")
    back = xr.open_dataset(out)
    xr.testing.assert_equal(_data(pipeline.open_store(path)), _data(back))
    with pytest.raises(store_mod.StoreError, match="exists"):
        export(path, "netcdf", out)  # nothing is overwritten


@pytest.mark.parametrize("first, second", [([0.3, 0.5], [0.7, 0.9]), ([0.5, 0.9], [0.3, 0.7])],
                         ids=["halves", "interleaved"])
def test_two_stores_merge_into_the_whole_run(write_spec, tmp_path, capsys, first, second):
    """Stores of two parts of a sweep make the store of the whole, in the order of the swept
    values whatever the parts' order ([0.5, 0.9] and [0.3, 0.7] too: a trend or a U-shape is
    judged along the values, and the whole spec resumes it)."""
    whole = _run(write_spec, tmp_path, [0.3, 0.5, 0.7, 0.9], "whole")
    a = _run(write_spec, tmp_path, first, "a")
    b = _run(write_spec, tmp_path, second, "b")
    capsys.readouterr()
    assert cli.main(["merge", str(a), str(b), "-o", str(tmp_path / "m.zarr")]) == 0
    merged = pipeline.open_store(tmp_path / "m.zarr")
    xr.testing.assert_identical(_data(pipeline.open_store(whole)), _data(merged))
    assert [m["store"] for m in merged.attrs["merged_from"]] == [a.name, b.name]  # no machine path
    assert all(m["spec_text"] for m in merged.attrs["merged_from"])
    # failures of both halves are kept; the merged store is what the whole spec would make
    assert len(store_mod.read_failures(tmp_path / "m.zarr")) == len(store_mod.read_failures(whole))
    assert cli.main(["table", str(tmp_path / "m.zarr")]) == 0 and cli.main(["show", str(tmp_path / "m.zarr")]) == 0
    assert pipeline.run(tmp_path / "whole.toml", tmp_path / "m.zarr", workers=0, progress=False)  # resumes: nothing to run
    capsys.readouterr()
    # several paths open as one
    xr.testing.assert_identical(_data(pipeline.open_store([a, b])), _data(merged))


def test_merged_values_keep_a_common_order_or_the_stores_order():
    from schedsweep.pipeline.store.export import _value_order

    assert _value_order([np.array([0.5, 0.9]), np.array([0.3, 0.7])]).tolist() == [2, 0, 3, 1]
    assert _value_order([np.array(["b", "a"]), np.array(["c"])]).tolist() == [0, 1, 2]  # names: as given
    assert _value_order([np.array([3, 1]), np.array([2])]).tolist() == [0, 2, 1]  # descending kept descending
    assert _value_order([np.array([1, 3]), np.array([2, 0])]).tolist() == [0, 1, 2, 3]  # no common order: as given


def test_stores_that_do_not_fit_are_refused_in_one_line(write_spec, tmp_path, capsys):
    a = _run(write_spec, tmp_path, [0.3, 0.5], "a")
    cases = [(_run(write_spec, tmp_path, [0.7], "seed", seed=9), "differs from"),
             (_run(write_spec, tmp_path, [0.5, 0.7], "overlap"), "in another store"),
             (_run(write_spec, tmp_path, [0.3, 0.5], "same"), "exactly one sweep dimension")]
    for other, needle in cases:
        capsys.readouterr()
        out = tmp_path / f"m-{other.stem}.zarr"
        assert cli.main(["merge", str(a), str(other), "-o", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err
        assert not out.exists()
    capsys.readouterr()
    assert cli.main(["merge", str(a), str(cases[0][0]), "-o", str(a)]) == 2  # never over a store
    assert "exists" in capsys.readouterr().err
