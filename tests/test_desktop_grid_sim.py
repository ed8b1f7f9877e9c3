"""desktop_grid simulator: closed forms (M/M/c, M/M/1 with breakdowns), the naive
simulator, common random numbers, an exact hand-checked trace, reproducibility."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from schedsweep.workloads import desktop_grid as dg
from schedsweep.workloads.desktop_grid.timeline import Timeline

from naive_desktop_grid import naive_simulate

POLICIES = ("fcfs", "pst", "gcmu", "lpas_dg", "lpas_dg_robust")


def _rates_file(tmp_path, rates) -> str:
    path = tmp_path / "rates.csv"
    path.write_text("\n".join(",".join(repr(float(x)) for x in row) for row in np.atleast_2d(rates)))
    return str(path)


def _ci(values, level=0.99):
    values = np.asarray(values)
    half = stats.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    return values.mean() - half, values.mean() + half


def erlang_c_sojourn(lam: float, mu: float, c: int) -> float:
    """Mean time in system of M/M/c (Erlang C)."""
    a = lam / mu
    rho = a / c
    tail = a**c / math.factorial(c) / (1 - rho)
    p_wait = tail / (sum(a**k / math.factorial(k) for k in range(c)) + tail)
    return p_wait / (c * mu - lam) + 1 / mu


def mm1_breakdown_sojourn(lam, mu, fail, repair, n_max=600) -> float:
    """Mean time in system of M/M/1 whose server fails (rate ``fail``, busy or idle) and is
    repaired (rate ``repair``); an interrupted task restarts with fresh Exp(mu) work, i.e.
    preemptive resume in distribution. Exact CTMC over (n, up/down), truncated, by Little."""
    size = 2 * (n_max + 1)
    q = np.zeros((size, size))
    idx = lambda k, up: 2 * k + (0 if up else 1)  # noqa: E731
    for k in range(n_max + 1):
        for up in (True, False):
            s = idx(k, up)
            if k < n_max:
                q[s, idx(k + 1, up)] += lam
            if up and k > 0:
                q[s, idx(k - 1, up)] += mu
            q[s, idx(k, not up)] += fail if up else repair
    np.fill_diagonal(q, -q.sum(axis=1))
    a = np.vstack([q.T, np.ones(size)])
    b = np.zeros(size + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(a, b, rcond=None)[0]
    mean_n = sum(k * (pi[idx(k, True)] + pi[idx(k, False)]) for k in range(n_max + 1))
    return mean_n / lam


@pytest.mark.parametrize("lam", [1.5, 2.4, 2.7])
def test_mmc_matches_erlang_c(tmp_path, lam):
    """One class, c = 3 identical dedicated machines, FCFS: W within the 99% CI of Erlang C."""
    params = dg.default_params(system="custom", rates_file=_rates_file(tmp_path, [[1.0] * 3]),
                               alpha=(lam,), policy="fcfs", horizon=20_000.0, warmup=1_000.0)
    runs = [dg.simulate(params, seed) for seed in range(20)]
    lo, hi = _ci([r["W"] for r in runs])
    assert lo <= erlang_c_sojourn(lam, 1.0, 3) <= hi
    lo, hi = _ci([r["utilisation"] for r in runs])       # busy fraction = lambda / (c mu)
    assert lo <= lam / 3.0 <= hi


def test_mm1_breakdowns_resubmission_known_mean(tmp_path):
    """M/M/1 with exponential breakdowns and resubmission: W within the 99% CI of the CTMC."""
    lam, mu, fail, down = 0.5, 1.0, 0.1, 2.0
    params = dg.default_params(system="custom", rates_file=_rates_file(tmp_path, [[mu]]), alpha=(lam,),
                               policy="gcmu", failures="exponential", fail_rate=fail, down_mean=down,
                               horizon=40_000.0, warmup=1_000.0)
    runs = [dg.simulate(params, seed) for seed in range(20)]
    assert all(r["resubmissions"] > 100 for r in runs)
    lo, hi = _ci([r["W"] for r in runs])
    assert lo <= mm1_breakdown_sojourn(lam, mu, fail, 1.0 / down) <= hi


def _naive_run(params, seed):
    res = dg.simulate(params, seed, keep_inputs=True)
    inp = res["inputs"]
    tl = inp["timeline"]
    changes = [(float(t), int(j), bool(u), int(k), float(v)) for t, j, u, k, v in
               zip(tl.time, tl.machine, tl.up, inp["chg_key"], inp["chg_view"])]
    naive = naive_simulate(params["policy"], inp["system"].mu_nom.tolist(), inp["cpu"]["a"].tolist(),
                           inp["view0"].tolist(), inp["alpha"].tolist(), changes,
                           inp["table"].elig.tolist(), inp["arr_rng"], *inp["work_rngs"],
                           horizon=params["horizon"], warmup=params["warmup"],
                           work_dist=params["work_dist"],
                           requeue_now=params["resubmit_order"] == "resubmission")
    return res, naive


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("system,case", [
    ("testbed_hihi", dict(failures="exponential", fail_rate=0.05, down_mean=4.0, cpu="partial")),
    ("A", dict(failures="exponential", fail_rate=0.02, down_mean=2.0, estimation_error=0.5,
               cpu="partial", warmup=20.0, arrival_scale=0.8)),
    ("testbed_lolo", dict(case="0.05/4", resubmit_order="resubmission", work_dist="uniform",
                          arrival_scale=1.2)),
])
def test_kernel_equals_naive_simulator(policy, system, case):
    """Same inputs and generators: the naive plain-Python simulator gives the same W per
    class, completions, resubmissions and events as the kernel."""
    params = dg.default_params(system=system, policy=policy, horizon=60.0, unstable_fraction=0.0, **case)
    res, (sum_w, cnt, resub, events) = _naive_run(params, 7)
    n = len(cnt)
    assert res["completed_class"][:n].tolist() == cnt
    assert res["resubmissions"] == resub > 0
    assert res["events"] == events
    np.testing.assert_allclose(res["W_class"][:n], np.array(sum_w) / np.array(cnt), rtol=1e-12)


def test_identical_machines_one_class_all_policies_equal(tmp_path):
    """Identical machines, one class: every policy is FCFS; with failures and common random
    numbers every metric of the replication is identical."""
    params = dg.default_params(system="custom", rates_file=_rates_file(tmp_path, [[0.7] * 4]),
                               alpha=(2.2,), failures="exponential", fail_rate=0.05, down_mean=3.0,
                               horizon=3_000.0)
    for seed in (1, 2):
        runs = [dg.simulate({**params, "policy": p}, seed) for p in POLICIES]
        for r in runs[1:]:
            for k in ("W", "resubmissions", "events", "tasks_completed", "utilisation", "queue_max"):
                assert r[k] == runs[0][k], k
        assert runs[0]["resubmissions"] > 0


def test_exact_trace_three_machines_two_classes_one_failure(tmp_path):
    """Gcµ, rates [[1, .5, .25], [.25, .5, 1]], scripted arrivals and work, machine 1 down
    in [2.2, 3.0]. The trace below was worked out by hand (see comments)."""
    A, S, C, Q, F, R = 0, 1, 2, 3, 4, 5
    params = dg.default_params(system="custom", alpha=(1.0, 1.0), policy="gcmu", horizon=10.0,
                               rates_file=_rates_file(tmp_path, [[1.0, 0.5, 0.25], [0.25, 0.5, 1.0]]))
    script = ([0.5, 1.0, 1.2, 1.3, 1.4], [0, 1, 0, 1, 0], [1.0, 1.0, 1.0, 0.5, 2.0], [1.0])
    tl = Timeline(np.array([2.2, 3.0]), np.array([1, 1]), np.array([False, True]),
                  np.array([-1, 1]), np.array([3.0, np.inf]), np.array([2.2, np.inf, np.inf]))
    res = dg.simulate(params, 0, trace=100, script=script, timeline=tl)
    expected = [
        (0.5, A, -1, 0), (0.5, S, 0, 0),    # class 0; all idle; fastest for class 0 is m0 -> 1.5
        (1.0, A, -1, 1), (1.0, S, 2, 1),    # class 1; idle m1, m2; fastest m2 (1.0) -> 2.0
        (1.2, A, -1, 2), (1.2, S, 1, 2),    # class 0; only m1 idle (0.5) -> 3.2
        (1.3, A, -1, 3), (1.3, Q, -1, 3),   # no idle machine: wait
        (1.4, A, -1, 4), (1.4, Q, -1, 4),
        (1.5, C, 0, 0), (1.5, S, 0, 4),     # m0: class 0 0.1*1 > class 1 0.2*0.25: task 4, w=2 -> 3.5
        (2.0, C, 2, 1), (2.0, S, 2, 3),     # m2: only class 1 waits (0.7*1): task 3, w=.5 -> 2.5
        (2.2, F, 1, 2), (2.2, Q, -1, 2),    # m1 fails running task 2: resubmitted, nobody idle
        (2.5, C, 2, 3), (2.5, S, 2, 2),     # m2 takes task 2 (restart w=1, rate .25) -> 6.5
        (3.0, R, 1, -1),                    # m1 back, nothing waits
        (3.5, C, 0, 4),
        (6.5, C, 2, 2),
    ]
    assert [(round(t, 12), k, j, task) for t, k, j, task in res["trace"]] == expected
    # W: (1.0 + 1.0 + 5.3 + 1.2 + 2.1) / 5; class 0: tasks 0, 2, 4; class 1: tasks 1, 3
    assert res["W"] == pytest.approx(10.6 / 5, rel=1e-12)
    assert res["W_class"][:2] == pytest.approx([(1.0 + 5.3 + 2.1) / 3, (1.0 + 1.2) / 2], rel=1e-12)
    assert res["resubmissions"] == 1


@pytest.mark.parametrize("policy", ["lpas_dg", "lpas_dg_robust"])
def test_run_batch_reproducible_and_batch_independent(policy):
    """Same outputs in one batch or one seed at a time; the robust support cache (shared
    across replications) is emptied before every single-seed run and changes nothing."""
    from schedsweep.workloads.desktop_grid import lp
    params = dg.default_params(system="testbed_lolo", policy=policy, failures="exponential",
                               fail_rate=0.05, down_mean=4.0, horizon=300.0)
    seeds = np.array([11, 12, 13], dtype=np.uint64)
    lp._ROBUST_CACHE.clear()
    whole = dg.run_batch(params, seeds)
    parts = []
    for k in range(3):
        lp._ROBUST_CACHE.clear()
        parts.append(dg.run_batch(params, seeds[k:k + 1]))
    for metric in dg.METRICS:
        if metric.timing:
            continue
        joined = np.concatenate([p[metric.name] for p in parts])
        np.testing.assert_array_equal(whole[metric.name], joined, err_msg=metric.name)
    assert set(whole) == {m.name for m in dg.METRICS} | {"reason"}
    assert whole["W_class"].shape == (3, dg.N_CLASSES_MAX)


def test_unstable_reported_as_reason(tmp_path):
    """Overload (rate 2.1 on capacity 2) is caught by the bound or by the queue left at the
    horizon; a stable load (1.6) is not flagged."""
    base = dg.default_params(system="custom", rates_file=_rates_file(tmp_path, [[1.0, 1.0]]),
                             policy="fcfs", horizon=20_000.0)
    seeds = np.array([1, 2], dtype=np.uint64)
    by_bound = dg.run_batch({**base, "alpha": (2.5,), "queue_bound": 500}, seeds)
    by_drift = dg.run_batch({**base, "alpha": (2.1,), "unstable_fraction": 0.01}, seeds)
    stable = dg.run_batch({**base, "alpha": (1.6,)}, seeds)
    for out in (by_bound, by_drift):
        assert (out["reason"] == 1).all() and np.isnan(out["W"]).all()
    assert (by_drift["queue_max"] < base["queue_bound"]).all()       # the bound was not reached
    assert (stable["reason"] == 0).all() and np.isfinite(stable["W"]).all()


def test_markov_chain_constant_levels_equals_constant_cpu(tmp_path):
    """A chain whose levels are all 0.5 walks its jumps but must give constant a = 0.5."""
    base = dg.default_params(system="custom", rates_file=_rates_file(tmp_path, [[1.0, 2.0], [0.5, 1.5]]),
                             alpha=(0.4, 0.5), policy="gcmu", failures="exponential", fail_rate=0.05,
                             down_mean=2.0, horizon=2_000.0, cpu_period=0.3)
    chain = dg.simulate({**base, "cpu": "markov", "cpu_levels": (0.5, 0.5, 0.5, 0.5)}, 3)
    const = dg.simulate({**base, "cpu": "custom", "cpu_avail": (0.5, 0.5)}, 3)
    assert chain["tasks_completed"] == const["tasks_completed"]
    assert chain["W"] == pytest.approx(const["W"], rel=1e-9)


def test_markov_chain_saturated_throughput_is_stationary_mean(tmp_path):
    """A saturated machine completes mu * E[level] tasks per time unit (work-based progress);
    levels (0.25, 1) with weights (1, 1.5) (group 1 of the G rule without the extra weight on
    the lowest level, cpu_low_weight = 0): E = 0.7."""
    params = dg.default_params(system="custom", rates_file=_rates_file(tmp_path, [[1.0, 1.0]]),
                               alpha=(3.0,), policy="fcfs", cpu="markov", cpu_levels=(0.25, 1.0),
                               cpu_period=1.0, horizon=20_000.0, queue_bound=10**6, cpu_low_weight=0.0)
    res = dg.simulate(params, 5)
    # machine 0 is group 0 (weights 1, 1: mean 0.625), machine 1 group 1 (1, 1.5: mean 0.7)
    assert res["tasks_completed"] / 20_000.0 == pytest.approx(0.625 + 0.7, rel=0.03)
    # the default extra weight 6 on the lowest level: weights (7, 1) and (7, 1.5)
    loaded = dg.simulate({**params, "cpu_low_weight": 6.0}, 5)
    expected = (7 * 0.25 + 1) / 8 + (7 * 0.25 + 1.5) / 8.5
    assert loaded["tasks_completed"] / 20_000.0 == pytest.approx(expected, rel=0.03)
