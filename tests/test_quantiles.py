"""Per-replication percentiles of per-job quantities equal numpy's on the same replication's
per-job records."""
from __future__ import annotations

import numpy as np
import pytest

import schedsweep.workloads.cluster as cluster
import schedsweep.workloads.ga as ga
from schedsweep.workloads import cyclic, desktop_grid as dg, mm1
from schedsweep.workloads.desktop_grid.simulator import TR_ARRIVE, TR_COMPLETE
from schedsweep.workloads._contract import defaults, quantiles, substreams
from schedsweep.workloads.ga.instance import make_instance
from schedsweep.workloads.ga.planning import plan


@pytest.mark.parametrize("queue", ["fcfs", "easy", "conservative"])
def test_cluster_percentiles_are_numpys_on_the_schedule(queue):
    params = {"queue": queue, "jobs": 300, "nodes": 8, "cores": 4, "load": 0.9}
    out = cluster.run_batch(params, np.array([7, 8], np.uint64))
    for r, seed in enumerate((7, 8)):
        f, res, _ = cluster.schedule(params, seed)
        wait, response = res.start - f.submit, res.end - f.submit
        ok = res.killed == 0
        real = res.end - res.start
        bsld = np.maximum(1.0, (wait[ok] + real[ok]) / np.maximum(real[ok], 10.0))
        for metric, values in (("wait_quantiles", wait), ("response_quantiles", response), ("bsld_quantiles", bsld)):
            assert np.array_equal(out[metric][r], np.percentile(values, [50, 90, 99]))
        assert out["wait_quantiles"][r][0] <= out["wait_quantiles"][r][1] <= out["wait_quantiles"][r][2]


def test_ga_wait_percentiles_are_numpys_on_the_plan():
    params = {**defaults(ga.PARAMS), "units": 6, "groups": 2, "density": 2.0, "population": 10,
              "max_generations": 30, "algorithm": "backfill"}
    out = ga.run_batch(params, np.array([3], np.uint64))
    streams = substreams(np.uint64(3), 2)
    res = plan(make_instance(ga.instance_settings(params), streams[0]), "backfill", ga.ga_settings(params), streams[1:])
    assert np.array_equal(out["wait_quantiles"][0], np.percentile(res.waits, [50, 90, 99]))
    # the per-job records are that run: one start per job, the same waits
    rec = ga.job_records(params, 3)
    job, first = np.unique(rec["job"], return_index=True)
    assert len(job) == out["jobs"][0] and len(rec["job"]) == out["processes"][0]
    assert np.array_equal(np.sort(rec["start"][first] - rec["submit"][first]), np.sort(res.waits))


def _plain_sojourns(lam, mu, n, warmup, seed):
    """Wait plus service of each customer, by the Lindley recursion written out."""
    arrivals, services = substreams(np.uint64(seed), 2)
    a, s = arrivals.exponential(1.0 / lam, n), services.exponential(1.0 / mu, n)
    wait, out = 0.0, []
    for k in range(n):
        if k:
            wait = max(0.0, wait + s[k - 1] - a[k])
        if k >= warmup:
            out.append(wait + s[k])
    return np.array(out)


def test_mm1_percentiles_are_numpys_and_match_the_exponential_sojourn():
    lam, mu, n, warmup = 0.5, 1.0, 4000, 400
    params = {"arrival_rate": lam, "service_rate": mu, "customers": n, "warmup": warmup}
    seeds = np.arange(1, 41, dtype=np.uint64)
    out = mm1.run_batch(params, seeds)
    for r in (0, 17):
        assert np.array_equal(out["time_in_system_quantiles"][r],
                              np.percentile(_plain_sojourns(lam, mu, n, warmup, seeds[r]), [50, 90, 99]))
    # FIFO M/M/1: the stationary time in system is exponential with rate mu - lambda, so its
    # p-quantile is -ln(1 - p) / (mu - lambda); the waits' quantiles (an atom of 1 - rho at 0)
    # or the service's (rate mu) are far from it
    exact = -np.log1p(-np.array([0.5, 0.9, 0.99])) / (mu - lam)
    q = out["time_in_system_quantiles"]
    mean, sem = q.mean(axis=0), q.std(axis=0, ddof=1) / np.sqrt(len(seeds))
    assert np.all(np.abs(mean - exact) < 4 * sem + 0.02 * exact), (mean, exact, sem)


@pytest.mark.parametrize("method", ["css", "frsm", "bf"])
def test_cyclic_percentiles_are_numpys_on_the_records(method):
    params = {**defaults(cyclic.PARAMS), "method": method, "jobs": 8, "nodes": 10}
    seeds = np.array([5, 6, 7], np.uint64)
    out = cyclic.run_batch(params, seeds)
    for r, seed in enumerate(seeds):
        rec = cyclic.job_records(params, int(seed))
        ok = rec["status"] == 0
        job, first = np.unique(rec["job"][ok], return_index=True)
        start = rec["start"][ok][first]
        finish = np.array([rec["end"][ok][rec["job"][ok] == j].max() for j in job])  # start + max len_k
        assert np.array_equal(out["start_quantiles"][r], np.percentile(start, [50, 90, 99]))
        np.testing.assert_allclose(out["finish_quantiles"][r], np.percentile(finish, [50, 90, 99]), rtol=1e-12)
        # the records are the replication the metrics describe: same jobs, same means
        assert len(job) == out["scheduled"][r]
        assert np.isclose(start.mean(), out["start"][r]) and np.isclose(finish.mean(), out["finish"][r])


@pytest.mark.parametrize("policy,case", [("gcmu", "alpha1:0.02/2+partial"), ("pst", "alpha1:none"),
                                         ("lpas_dg", "alpha1:0.02/2+partial")])
def test_desktop_grid_percentiles_are_numpys_on_the_trace(policy, case):
    # W per task from the event trace: completion time minus the task's (first) arrival,
    # for completions in [warmup, horizon]; failures resubmit tasks, which keep their arrival
    p = dg.default_params(system="A", system_seed=1, case=case, policy=policy, horizon=400.0, warmup=40.0)
    res = dg.simulate(p, 11, trace=200_000)
    events = res["trace"]
    assert len(events) < 200_000, "trace cut: raise its size"
    arrival = {task: t for t, kind, _, task in events if kind == TR_ARRIVE}
    w = [t - arrival[task] for t, kind, _, task in events if kind == TR_COMPLETE and t >= p["warmup"]]
    assert len(w) == res["tasks_completed"] > 100
    assert np.array_equal(res["W_quantiles"], np.percentile(w, [50, 90, 99]))
    assert np.isclose(np.mean(w), res["W"], rtol=1e-12)
    # the per-task records are the same run: completed pieces give the same W
    rec = dg.job_records(p, 11)
    done = (rec["status"] == 0) & (rec["end"] >= p["warmup"])
    assert np.array_equal(np.sort(rec["end"][done] - rec["submit"][done]), np.sort(w))
    assert np.all(rec["start"][rec["status"] != 2] >= rec["submit"][rec["status"] != 2])


def test_quantiles_of_nothing_are_nan():
    assert np.isnan(quantiles(np.array([]))).all()
