"""The ``cyclic`` workload contract: outputs, reproducibility, metrics, parameter checks."""
from __future__ import annotations

import numpy as np
import pytest

from schedsweep.workloads._contract import defaults
from schedsweep.workloads.cyclic import METRICS, PARAMS, REASONS, check_params, run_batch, run_cycle
from schedsweep.workloads.cyclic.cycle import METHODS

TIMING = {m.name for m in METRICS if m.timing}


def small(**over):
    p = defaults(PARAMS)
    p.update(nodes=8, jobs=6, interval=400.0)
    p.update(over)
    return p


def _same(a, b):
    for name in a:
        if name not in TIMING:
            assert np.array_equal(a[name], b[name], equal_nan=True), name


@pytest.mark.parametrize("method", METHODS)
def test_outputs_shapes_and_reproducibility(method):
    params = small(method=method, n_css=3, frsm_k=2)
    seeds = np.array([3, 1, 4, 1, 5, 9], np.uint64)
    out = run_batch(params, seeds)
    assert set(out) == {m.name for m in METRICS} | {"reason"}
    for m in METRICS:
        assert out[m.name].shape == (len(seeds), *m.shape)
    assert out["reason"].dtype == np.int8 and set(out["reason"]) <= set(REASONS)
    # same seed -> same replication, in any batch and position
    _same({k: v[1] for k, v in out.items()}, {k: v[3] for k, v in out.items()})
    _same(out, {k: np.concatenate([run_batch(params, seeds[i:i + 1])[k] for i in range(len(seeds))])
                for k in out})


def test_metric_identities():
    out = run_batch(small(method="css_bf", n_css=3), np.arange(12, dtype=np.uint64))
    ok = ~np.isnan(out["start"])
    assert np.allclose(out["f_value"][ok], out["start"][ok] + out["proc_time"][ok])
    assert np.allclose(out["owner_income"], out["owner_unit_price"] * out["owner_busy"])
    assert np.allclose(out["owner_util"], out["owner_busy"] / 400.0)
    # failure and reason agree; scheduled jobs add up over the criterion groups
    assert np.array_equal(out["failure"] == 1, out["reason"] > 0)
    assert np.array_equal(np.nansum(out["crit_jobs"], axis=1), out["scheduled"])
    # actual processor time is a rho in [0.2, 1] fraction of the planned one, on average
    assert np.all(out["actual_proc_time"][ok] <= out["proc_time"][ok] + 1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_actual_metrics_equal_planned_with_rho_one(method):
    out = run_batch(small(method=method, n_css=3, runtime_factor_min=1.0), np.arange(5, dtype=np.uint64))
    for name in ("start", "runtime", "finish", "proc_time", "f_value"):
        assert np.array_equal(out[name], out["actual_" + name], equal_nan=True), name


def test_owner_overrides():
    p = small(owner_perf=6.0, owner_price=8.0, method="css")
    cycle = run_cycle(p, 7)
    assert cycle.env.perf[0] == 6.0 and cycle.env.price[0] == 8.0
    base = run_cycle(small(method="css"), 7)
    assert np.array_equal(cycle.env.perf[1:], base.env.perf[1:])
    assert np.array_equal(cycle.env.price[1:], base.env.price[1:])
    # owner_perf alone keeps node 0's drawn price deviation: price / (p_ref (p/p_ref)^gamma) unchanged
    perf_only = run_cycle(small(owner_perf=6.0), 7)
    p_ref, gamma = p["perf_min"], p["price_exponent"]

    def deviation(env):
        return env.price[0] / (p_ref * (env.perf[0] / p_ref) ** gamma)

    assert perf_only.env.perf[0] == 6.0 and base.env.perf[0] != 6.0
    assert np.isclose(deviation(perf_only.env), deviation(base.env))


def test_check_params_names_the_parameters():
    errors = check_params(small(method="css_bf", n_css=9, job_slots_min=4, job_slots_max=2))
    assert any("n_css" in e for e in errors) and any("job_slots_min" in e for e in errors)
    assert check_params(small()) == []
