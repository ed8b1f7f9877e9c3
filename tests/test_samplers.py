"""[sample]: space-filling designs crossed with the sweep; the same points for the same seed,
Latin hypercube strata each hit once, a `sample` dimension whose coordinates are the
parameter values, Sobol designs that grow in place, and one line for every malformed table."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.spec import sweep as spec_mod

BASE = """
name = "sample"
workload = "mm1"
replications = 3
seed = 4
[params]
customers = 600
[sweep]
service_rate = [1.0, 2.0]
"""
SAMPLE = """[sample]
method = "{method}"
n = {n}
seed = {seed}
arrival_rate = {{ low = 0.1, high = 0.9 }}
warmup = {{ low = 10, high = 500, log = true }}
"""


def _load(write_spec, method="lhs", n=12, seed=7, name="s.toml"):
    return spec_mod.load(write_spec(BASE + SAMPLE.format(method=method, n=n, seed=seed), name))


@pytest.mark.parametrize("method", spec_mod.SAMPLERS)
def test_same_points_for_the_same_seed_within_the_ranges(write_spec, method):
    a, b = _load(write_spec, method), _load(write_spec, method, name="b.toml")
    other = _load(write_spec, method, seed=8, name="c.toml")
    dim = a.dims[-1]
    assert dim.name == "sample" and dim.values == tuple(range(12))
    assert dim.members == b.dims[-1].members != other.dims[-1].members
    rates, warmups = np.array(dim.members["arrival_rate"]), np.array(dim.members["warmup"])
    assert ((0.1 <= rates) & (rates < 0.9)).all() and ((10 <= warmups) & (warmups <= 500)).all()
    assert warmups.dtype.kind == "i"


def test_latin_hypercube_hits_each_stratum_once(write_spec):
    n = 20
    dim = _load(write_spec, "lhs", n=n).dims[-1]
    u_rate = (np.array(dim.members["arrival_rate"]) - 0.1) / 0.8
    assert sorted(np.floor(u_rate * n).astype(int)) == list(range(n))
    # the log-scaled integer: its stratum on the unit scale, before flooring, holds the value
    w = np.array(dim.members["warmup"], float)
    lo = np.log(w / 10) / np.log(501 / 10)          # the unit coordinate of w
    hi = np.log((w + 1) / 10) / np.log(501 / 10)    # ... and of w + 1
    strata = [set(range(int(np.floor(a * n)), int(np.floor(b * n - 1e-12)) + 1)) for a, b in zip(lo, hi)]
    assert all(len(s) >= 1 for s in strata)
    # the points were placed one per stratum: a perfect matching exists (greedy on sorted lows)
    taken = set()
    for s in sorted(strata, key=lambda s: (min(s), len(s))):
        free = sorted(s - taken)
        assert free, "two points in one stratum"
        taken.add(free[0])


def test_the_store_has_a_sample_dimension_crossed_with_the_sweep(write_spec, tmp_path):
    path = pipeline.run(write_spec(BASE + SAMPLE.format(method="halton", n=5, seed=3)), tmp_path / "s.zarr",
                        workers=0, progress=False)
    ds = pipeline.open_store(path)
    assert ds["mean_wait"].dims == ("service_rate", "sample", "replication")
    spec = spec_mod.load(tmp_path / "spec.toml")
    np.testing.assert_array_equal(ds["arrival_rate"].values, spec.dims[-1].members["arrival_rate"])
    assert ds["arrival_rate"].dims == ("sample",)
    # each cell ran with its point's parameters: the same as a plain spec fixing them
    k = 2
    plain = BASE.replace("[params]\n", f"[params]\narrival_rate = {float(ds['arrival_rate'].values[k])!r}\n"
                                       f"warmup = {int(ds['warmup'].values[k])}\n")
    one = pipeline.open_store(pipeline.run(write_spec(plain, "one.toml"), tmp_path / "one.zarr", workers=0,
                                           progress=False))
    np.testing.assert_array_equal(one["mean_wait"].values, ds["mean_wait"].values[:, k])


def test_a_sobol_design_grows_in_place(write_spec, tmp_path):
    small = write_spec(BASE + SAMPLE.format(method="sobol", n=4, seed=1), "small.toml")
    big = write_spec(BASE + SAMPLE.format(method="sobol", n=8, seed=1), "big.toml")
    store = tmp_path / "g.zarr"
    pipeline.run(small, store, workers=0, progress=False)
    grown = pipeline.open_store(pipeline.run(big, store, workers=0, progress=False))[["mean_wait", "seed"]].load()
    fresh = pipeline.open_store(pipeline.run(big, tmp_path / "f.zarr", workers=0, progress=False))
    fresh = fresh[["mean_wait", "seed"]].load()
    grown.attrs, fresh.attrs = {}, {}
    xr.testing.assert_identical(grown, fresh)


BAD = [
    ('[sample]\nmethod = "grid"\nn = 4\nseed = 1\narrival_rate = { low = 0.1, high = 0.5 }\n', "method"),
    ('[sample]\nmethod = "lhs"\nn = 0\nseed = 1\narrival_rate = { low = 0.1, high = 0.5 }\n', "n = 0"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = -1\narrival_rate = { low = 0.1, high = 0.5 }\n', "seed"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = 1\n', "names no parameter"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = 1\nnope = { low = 0.1, high = 0.5 }\n', "nope"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = 1\narrival_rate = { low = 0.5, high = 0.1 }\n', "below"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = 1\narrival_rate = { low = 0.0, high = 0.5, log = true }\n', "low > 0"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = 1\narrival_rate = 0.5\n', "must be a table"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = 1\narrival_rate = { low = 0.1, high = nan }\n', "finite"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = 1\nservice_rate = { low = 1, high = 2 }\n', "service_rate"),
    ('[sample]\nmethod = "lhs"\nn = 4\nseed = 1\ncustomers = { low = -5, high = 10 }\n', "customers"),
]


@pytest.mark.parametrize("tail,needle", BAD, ids=[str(i) for i in range(len(BAD))])
def test_malformed_sample_tables_are_one_line(write_spec, tail, needle, capsys, tmp_path):
    path = write_spec(BASE + tail)
    assert cli.main(["run", str(path), "--store", str(tmp_path / "x.zarr"), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and str(path) in err[0], err
