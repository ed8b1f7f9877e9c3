"""A store any tool reads: plain xr.open_zarr without a warning (also after the store grew),
CF attributes on every variable and coordinate, flags on status and reason, and a netCDF
round trip that keeps data and provenance."""
from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from schedsweep import pipeline
from schedsweep import workloads
import pytest

from schedsweep.pipeline.base.conventions import decode_attrs, display_unit, variable_attrs

SPEC = """
name = "cf"
workload = "{workload}"
replications = {r}
seed = 3
[params]
{params}
[sweep]
{sweep}
"""
MM1 = dict(workload="mm1", params="customers = 300\nwarmup = 50", sweep="arrival_rate = [0.3, 0.6]")


def _store(write_spec, tmp_path, r=4, name="s", **kw):
    text = SPEC.format(r=r, **{**MM1, **kw})
    return pipeline.run(write_spec(text, f"{name}.toml"), tmp_path / f"{name}.zarr", workers=0, progress=False)


def _plain_open(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        return xr.open_zarr(path)


def test_plain_xarray_opens_without_warning_also_after_growth(write_spec, tmp_path):
    path = _store(write_spec, tmp_path)
    assert _plain_open(path).sizes["replication"] == 4
    _store(write_spec, tmp_path, r=9)  # the same store grows: consolidated metadata follows
    ds = _plain_open(path)
    assert ds.sizes["replication"] == 9 and int((ds["status"] == 1).sum()) == 18


def test_every_variable_and_coordinate_has_cf_attributes(write_spec, tmp_path):
    ds = _plain_open(_store(write_spec, tmp_path))
    for name, var in ds.variables.items():
        assert var.attrs.get("long_name"), name
        assert "units" in var.attrs and var.attrs["units"] not in ("time", "money"), (name, var.attrs.get("units"))
    assert ds["mean_wait"].attrs["units"] == "model_time_unit" and "service" in ds.attrs["model_time_unit"]
    assert ds["cell_seconds"].attrs["units"] == "s"
    status = ds["status"].attrs
    assert list(status["flag_values"]) == [0, 1, 2, 3]
    assert status["flag_meanings"].split() == ["not_run", "ok", "no_result", "failed"]


@pytest.mark.parametrize("name", workloads.names())
def test_every_workload_gets_flags_and_units(name):
    module = workloads.get(name)
    attrs = variable_attrs(module, name, [])
    codes = [int(c) for c in attrs["reason"]["flag_values"]]
    assert codes == sorted({0} | {int(k) for k in module.REASONS})
    meanings = attrs["reason"]["flag_meanings"].split()
    assert len(meanings) == len(codes)
    for code, meaning in zip(codes, meanings):
        assert meaning == ("none" if code == 0 else "_".join(module.REASONS[code][0].split()))
    for m in module.METRICS:
        a = attrs[m.name]
        assert a["long_name"] and a["units"] not in ("time", "money", "")
        assert display_unit(a) == ("" if m.unit in ("", "1") else m.unit)  # plots and reports say the declared unit


def test_netcdf_round_trip_keeps_data_and_provenance(write_spec, tmp_path):
    path = _store(write_spec, tmp_path)
    ds = _plain_open(path).load()
    ds.to_netcdf(tmp_path / "s.nc")
    back = xr.open_dataset(tmp_path / "s.nc").load()
    for name in ds.variables:
        np.testing.assert_array_equal(ds[name].values, back[name].values)
    assert decode_attrs(back.attrs) == decode_attrs(ds.attrs)
    assert decode_attrs(back.attrs)["dims"] == ["arrival_rate"]                    # a one-element list stays one
    assert decode_attrs(back.attrs)["params"]["customers"] == 300                    # nested provenance
    assert pipeline.open_store(path).attrs["code"]["hash"] == decode_attrs(back.attrs)["code"]["hash"]


def test_provenance_pins_the_result(write_spec, tmp_path):
    attrs = pipeline.open_store(_store(write_spec, tmp_path)).attrs
    assert {"numba", "llvmlite", "scipy", "highspy", "numpy", "zarr"} <= set(attrs["versions"])
    assert attrs["git_dirty"] in (True, False, None) and "git_commit" in attrs
    assert attrs["params"]["warmup"] == 50 and "service_rate" in attrs["params"]  # defaults included
    assert attrs["overrides"] == [] and attrs["code"]["files"]
