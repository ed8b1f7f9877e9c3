"""replications = "auto": each cell stops where a plain reading of the stopping rule says,
its replications keep the seeds of a fixed run, the store is the same whatever the
workers, and the stopped cells' intervals cover the M/M/1 closed form at the nominal rate."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats as st

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import zarrstore as store_mod

AUTO = """
name = "auto"
workload = "mm1"
replications = "auto"
precision = {precision}
precision_metric = "mean_time_in_system"
max_replications = {max}
seed = {seed}
independent = ["arrival_rate"]
[params]
customers = 2000
warmup = 200
[sweep]
arrival_rate = {rates}
"""


def _spec(write_spec, rates, precision=0.05, max_reps=400, seed=4, name="auto.toml"):
    return write_spec(AUTO.format(precision=precision, max=max_reps, seed=seed, rates=list(rates)), name)


def _naive_met(x: np.ndarray, target: float, base: int = 5, min_n: int = 10) -> int | None:
    """The first n at which Hoad et al.'s rule stops (precision <= target at n and over the
    look-ahead), computed the obvious way with scipy; None if it never does within x."""
    def precision(k: int) -> float:
        v = x[:k][np.isfinite(x[:k])]
        half = st.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
        return half / abs(v.mean())
    for k in range(min_n, len(x) + 1):
        la = base if k <= 100 else math.ceil(base / 100 * k)
        if k + la > len(x):
            return None
        if all(precision(j) <= target for j in range(k, k + la + 1)):
            return k
    return None


def test_each_cell_stops_by_the_rule_with_the_seeds_of_a_fixed_run(write_spec, tmp_path, capsys):
    rates = [0.3, 0.6, 0.8]
    spec = _spec(write_spec, rates)
    path = pipeline.run(spec, tmp_path / "a.zarr", workers=0, progress=False)
    ds = pipeline.open_store(path)
    auto = ds.attrs["auto"]
    status = ds["status"].values
    values = ds["mean_time_in_system"].values
    runs = auto["replications_run"]
    assert auto["met"] == [True, True, True]
    for c in range(len(rates)):
        n = runs[c]
        assert (status[c, :n] == store_mod.OK).all() and (status[c, n:] == store_mod.NOT_RUN).all()
        k = _naive_met(values[c, :n], 0.05)
        assert k is not None                                  # the rule holds on what ran
        assert _naive_met(values[c, :k + (5 if k <= 100 else math.ceil(k / 20)) - 1], 0.05) is None  # not earlier
    # harder cells (heavier load, more variance) need more replications
    assert runs[0] < runs[2]
    # replication r has the seed and the result it has in a fixed-size run
    fixed = write_spec(AUTO.format(precision=0.05, max=400, seed=4, rates=rates)
                       .replace('replications = "auto"\nprecision = 0.05\nprecision_metric = "mean_time_in_system"\n'
                                'max_replications = 400\n', f"replications = {max(runs)}\n"), "fixed.toml")
    ref = pipeline.open_store(pipeline.run(fixed, tmp_path / "f.zarr", workers=0, progress=False))
    for c in range(len(rates)):
        n = runs[c]
        np.testing.assert_array_equal(ref["mean_time_in_system"].values[c, :n], values[c, :n])
    # the same store on two workers
    two = pipeline.open_store(pipeline.run(spec, tmp_path / "b.zarr", workers=2, progress=False))
    keep = ["mean_time_in_system", "status", "seed"]
    a, b = ds[keep].load(), two[keep].load()
    a.attrs, b.attrs = {}, {}
    xr.testing.assert_identical(a, b)
    assert two.attrs["auto"]["replications_run"] == runs
    capsys.readouterr()
    assert cli.main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 cells met it" in out and f"arrival_rate=0.8: {runs[2]} replications" in out


def test_a_cell_that_cannot_reach_the_target_stops_at_the_maximum(write_spec, tmp_path):
    path = pipeline.run(_spec(write_spec, [0.9], precision=0.001, max_reps=40), tmp_path / "m.zarr", workers=0,
                        progress=False)
    auto = pipeline.open_store(path).attrs["auto"]
    assert auto["replications_run"] == [40] and auto["met"] == [False]


def test_stopped_cells_cover_the_closed_form_at_the_nominal_rate(write_spec, tmp_path):
    rates = [float(r) for r in np.round(np.linspace(0.2, 0.6, 150), 6)]
    path = pipeline.run(_spec(write_spec, rates, precision=0.04, seed=11), tmp_path / "c.zarr", workers=0,
                        progress=False)
    ds = pipeline.open_store(path)
    assert all(ds.attrs["auto"]["met"])
    res = pipeline.summary(ds)["mean_time_in_system"]
    exact = 1.0 / (1.0 - ds["arrival_rate"].values)
    lo, hi = res.sel(stat="ci_low").values, res.sel(stat="ci_high").values
    rate = float(np.mean((lo <= exact) & (exact <= hi)))
    # 150 intervals: the coverage's sd is 1.8 points at 95%. An sd instead of a standard
    # error would cover about 100%, a stop at the first n that meets the target without
    # look-ahead or a normal quantile noticeably less; the window excludes both.
    print(f"coverage {rate:.3f}")
    assert 0.89 <= rate <= 0.985, rate


BAD = [('replications = "auto"\n', "needs precision"),
       ('replications = "auto"\nprecision = 0.05\nprecision_metric = "mean_wait"\n', "needs max_replications"),
       ('replications = "auto"\nprecision = 1.5\nprecision_metric = "mean_wait"\nmax_replications = 9\n', "(0, 1)"),
       ('replications = "auto"\nprecision = 0.1\nprecision_metric = "nope"\nmax_replications = 9\n', "one of"),
       ('replications = "auto"\nprecision = 0.1\nprecision_metric = "mean_wait"\nmax_replications = 9\n'
        'min_replications = 20\n', "exceeds"),
       ('replications = 5\nprecision = 0.1\n', "only apply"),
       ('replications = "many"\n', "replications")]


@pytest.mark.parametrize("head,needle", BAD, ids=[str(i) for i in range(len(BAD))])
def test_malformed_auto_settings_are_one_line(write_spec, head, needle, capsys, tmp_path):
    path = write_spec(head + 'workload = "mm1"\nseed = 1\n[sweep]\narrival_rate = [0.5]\n')
    assert cli.main(["run", str(path), "--store", str(tmp_path / "x.zarr"), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
