"""Per-replication percentiles of per-job quantities equal numpy's on the same replication's
per-job records (issue 21 item 3)."""
from __future__ import annotations

import numpy as np
import pytest

import schedsweep.workloads.cluster as cluster
import schedsweep.workloads.ga as ga
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


def test_quantiles_of_nothing_are_nan():
    assert np.isnan(quantiles(np.array([]))).all()
