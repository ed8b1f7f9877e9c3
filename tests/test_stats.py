"""pipeline.base.stats against scipy.stats and direct computation, to 1e-12."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings, strategies as st
from scipy import stats as sst

from schedsweep.pipeline.base import stats

samples = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=60)


@settings(max_examples=60, deadline=None)
@given(samples, st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_describe_matches_scipy(values, level):
    x = np.array(values)
    got = stats.describe_array(x, level)
    n = len(x)
    assert got["n"] == n
    assert got["mean"] == pytest.approx(np.mean(x), rel=1e-12, abs=1e-12)
    assert got["sd"] == pytest.approx(np.std(x, ddof=1), rel=1e-12, abs=1e-12)
    assert got["sem"] == pytest.approx(sst.sem(x), rel=1e-12, abs=1e-12)
    if sst.sem(x) > 0:
        lo, hi = sst.t.interval(level, n - 1, loc=np.mean(x), scale=sst.sem(x))
        assert got["ci_low"] == pytest.approx(lo, rel=1e-12, abs=1e-9)
        assert got["ci_high"] == pytest.approx(hi, rel=1e-12, abs=1e-9)


def test_nan_replications_are_left_out():
    x = np.array([1.0, np.nan, 3.0, 5.0, np.nan])
    got = stats.describe_array(x)
    ref = x[~np.isnan(x)]
    assert got["n"] == 3
    assert got["mean"] == pytest.approx(3.0, rel=1e-12)
    assert got["half_width"] == pytest.approx(sst.t.ppf(0.975, 2) * sst.sem(ref), rel=1e-12)
    assert got["rel_precision"] == pytest.approx(got["half_width"] / 3.0, rel=1e-12)


def test_single_value_has_no_interval():
    got = stats.describe_array(np.array([2.0]))
    assert got["n"] == 1 and got["mean"] == 2.0 and np.isnan(got["half_width"])


def _store_like(rng):
    data = rng.normal(size=(3, 40)) + np.array([[0.0], [1.0], [3.0]])
    data[1, 5] = np.nan
    return xr.Dataset({"m": (("algorithm", "replication"), data)},
                      coords={"algorithm": ["a", "b", "c"], "replication": np.arange(40)},
                      attrs={"metrics": ["m"]})


def test_paired_equals_scipy_on_differences():
    ds = _store_like(np.random.default_rng(1))
    res = stats.paired(ds, "algorithm", "a", level=0.9)
    diff = ds["m"].sel(algorithm="b").values - ds["m"].sel(algorithm="a").values
    diff = diff[~np.isnan(diff)]
    lo, hi = sst.t.interval(0.9, len(diff) - 1, loc=diff.mean(), scale=sst.sem(diff))
    row = res["m"].sel(algorithm="b")
    assert float(row.sel(stat="n")) == len(diff)
    assert float(row.sel(stat="ci_low")) == pytest.approx(lo, rel=1e-12)
    assert float(row.sel(stat="ci_high")) == pytest.approx(hi, rel=1e-12)
    assert float(res["m"].sel(algorithm="a", stat="mean")) == 0.0


def test_paired_is_tighter_than_unpaired_with_common_noise():
    rng = np.random.default_rng(2)
    common = rng.normal(0, 10, 200)
    ds = xr.Dataset({"m": (("policy", "replication"), np.stack([common, common + 0.5 + rng.normal(0, 0.1, 200)]))},
                    coords={"policy": ["x", "y"], "replication": np.arange(200)}, attrs={"metrics": ["m"]})
    assert float(stats.paired(ds, "policy", "x")["m"].sel(policy="y", stat="half_width")) < \
        0.05 * float(stats.describe(ds)["m"].sel(policy="y", stat="half_width"))


def test_ratio_delta_method_direct():
    ds = _store_like(np.random.default_rng(3))
    ds["m"] = ds["m"] + 10
    res = stats.ratio(ds, "algorithm", "a", level=0.95)
    x, y = ds["m"].sel(algorithm="c").values, ds["m"].sel(algorithm="a").values
    r = x.mean() / y.mean()
    n = len(x)
    cov = np.cov(x, y, ddof=1)
    se = np.sqrt((cov[0, 0] - 2 * r * cov[0, 1] + r * r * cov[1, 1]) / n) / abs(y.mean())
    half = sst.t.ppf(0.975, n - 1) * se
    row = res["m"].sel(algorithm="c")
    assert float(row.sel(stat="mean")) == pytest.approx(r, rel=1e-12)
    assert float(row.sel(stat="half_width")) == pytest.approx(half, rel=1e-12)
    # b has a NaN: the ratio uses only replications where both are defined.
    both = ~np.isnan(ds["m"].sel(algorithm="b").values)
    rb = ds["m"].sel(algorithm="b").values[both].mean() / y[both].mean()
    assert float(res["m"].sel(algorithm="b", stat="mean")) == pytest.approx(rb, rel=1e-12)
    assert float(res["m"].sel(algorithm="b", stat="n")) == both.sum()


def test_unknown_baseline_is_a_clear_error():
    ds = _store_like(np.random.default_rng(4))
    with pytest.raises(stats.QueryError, match="not in the store"):
        stats.paired(ds, "algorithm", "zzz")


def test_paired_relative_change():
    ds = _store_like(np.random.default_rng(5))
    ds["m"] = ds["m"] + 10
    res = stats.paired(ds, "algorithm", "a")
    b, a = ds["m"].sel(algorithm="b").values, ds["m"].sel(algorithm="a").values
    both = ~np.isnan(b)
    expect = (b[both] - a[both]).mean() / a[both].mean()
    assert float(res["m"].sel(algorithm="b", stat="relative_change")) == pytest.approx(expect, rel=1e-12)
