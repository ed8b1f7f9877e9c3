"""A netCDF export passes the CF-1.10 checker (IOOS compliance-checker, run offline on the
file) without the findings it used to give, and carries the failure records as a group.

Each assertion names a finding the checker reported on exports before: ``_FillValue`` on a
coordinate (2.5.1), units UDUNITS cannot parse (3.1), ``flag_values`` of another dtype than
the variable (3.5), no ``title``/``history`` (2.6.2), and a string-valued coordinate variable
the checker cannot even test for monotonicity (an exception inside the checker).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.store.export import export

MM1 = """
name = "cf"
workload = "{workload}"
replications = 6
seed = 8
[params]
customers = 300
warmup = 30
{extra}
[sweep]
arrival_rate = [0.3, 0.6]
"""


def cf_findings(path) -> tuple[list[str], list[str], list[str]]:
    """(errors, warnings, exceptions inside the checker) of ``compliance-checker --test cf:1.10``."""
    from compliance_checker.runner import CheckSuite

    suite = CheckSuite()
    suite.load_all_available_checkers()
    ds = suite.load_dataset(str(path))
    groups, errors = suite.run_all(ds, ["cf:1.10"], skip_checks=[])["cf:1.10"]
    report = suite.build_structure("cf:1.10", groups, str(path))

    def messages(key: str) -> list[str]:
        return [f"{r.name}: {m}" for r in report[key] for m in r.msgs]

    return messages("high_priorities"), messages("medium_priorities"), [f"{k}: {v[0]}" for k, v in errors.items()]


@pytest.fixture(scope="module")
def mm1_export(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cf")
    spec = tmp / "cf.toml"
    spec.write_text(MM1.format(workload="mm1", extra=""))
    store = pipeline.run(spec, tmp / "cf.zarr", workers=0, progress=False)
    return store, export(store, "netcdf", tmp / "cf.nc")


def test_mm1_export_has_none_of_the_cf_findings(mm1_export):
    _, nc = mm1_export
    errors, warnings, crashed = cf_findings(nc)
    assert errors == [] and warnings == [] and crashed == [], (errors, warnings, crashed)


def test_the_attributes_the_checker_wanted(mm1_export):
    store, nc = mm1_export
    ds = xr.open_dataset(nc, decode_cf=False)
    for name in ds.coords:
        assert "_FillValue" not in ds[name].attrs, name
    for name in ("status", "reason"):
        assert ds[name].attrs["flag_values"].dtype == ds[name].dtype == np.int8
    # a time in model time units: a number of them, the unit itself named beside it
    assert ds["mean_wait"].attrs["units"] == "1" and ds["mean_wait"].attrs["model_units"] == "model_time_unit"
    assert "model time unit" in ds.attrs["model_time_unit"]
    assert ds.attrs["title"].startswith("schedsweep sweep 'cf' of workload 'mm1': 2 cells x 6 replications")
    history = ds.attrs["history"].splitlines()
    assert len(history) == 2 and "schedsweep run" in history[0] and "schedsweep export cf.zarr" in history[1]
    # the quantile labels are an auxiliary coordinate; the values are the store's
    assert list(ds["quantile_label"].values) == ["p50", "p90", "p99"]
    assert "quantile_label" in ds["time_in_system_quantiles"].attrs["coordinates"].split()
    stored = pipeline.open_store(store)
    np.testing.assert_array_equal(ds["time_in_system_quantiles"].values, stored["time_in_system_quantiles"].values)
    np.testing.assert_array_equal(ds["mean_wait"].values, stored["mean_wait"].values)


def test_failure_records_are_a_group_of_the_export(write_spec, tmp_path):
    spec = write_spec(MM1.format(workload="tests.flaky_workload", extra="service_rate = 1.0\nfail_every = 5"),
                      "flaky.toml")
    store = pipeline.run(spec, tmp_path / "flaky.zarr", workers=0, progress=False)
    nc = export(store, "netcdf", tmp_path / "flaky.nc")
    records = store_mod.read_failures(store)
    status = pipeline.open_store(store)["status"]
    assert len(records) == int((status == store_mod.FAILED).sum()) > 0
    failures = xr.open_dataset(nc, group="failures")
    assert failures.sizes["failure"] == len(records)
    for k, record in enumerate(records):
        assert failures["arrival_rate"].values[k] == record["cell"]["arrival_rate"]
        assert int(failures["replication"].values[k]) == record["replication"]
        assert int(failures["seed"].values[k]) == record["seed"]
        assert str(failures["kind"].values[k]) == record["kind"]
        assert json.loads(str(failures["record"].values[k])) == json.loads(json.dumps(record, default=str))
    # each failed replication's seed is the store's seed of that replication
    seeds = pipeline.open_store(store)["seed"].values
    assert [int(seeds[r["replication"]]) for r in records] == [r["seed"] for r in records]
    errors, warnings, crashed = cf_findings(nc)
    assert errors == [] and warnings == [] and crashed == [], (errors, warnings, crashed)
