"""The environment generator: distributions, slot structure and calibration (docs/models/slot_selection.md)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from schedsweep.workloads.slots.environment import generate_environment, job_on_nodes


def _envs(count, seed=0, **kw):
    rng = np.random.default_rng(seed)
    return [generate_environment(rng, **kw) for _ in range(count)]


def test_slots_are_sorted_disjoint_gaps_between_local_tasks():
    for env in _envs(30, nodes=20, interval=600.0):
        # scan order: start non-decreasing, ties by node id
        order = np.lexsort((env.slot_node, env.slot_start))
        assert (order == np.arange(env.slots)).all()
        for k in range(env.nodes):
            s = np.flatnonzero(env.slot_node == k)
            start, end = env.slot_start[s], env.slot_end[s]
            assert start[0] == 0.0 and end[-1] == env.interval
            assert (end >= start).all() and (start[1:] >= end[:-1]).all()
            tasks = start[1:] - end[:-1]            # local tasks between consecutive gaps
            assert (tasks >= 10.0 - 1e-9).all() and (tasks <= 106.0 + 1e-9).all()
            busy = tasks.sum()
            target = env.load[k] * env.interval
            # tasks reach the target; only the last (cut) one may overshoot, by less than 10
            assert target - 1e-9 <= busy < target + 10.0


def test_performance_is_uniform_on_the_integers_2_to_10():
    perf = np.concatenate([e.perf for e in _envs(200, seed=1)])
    counts = np.array([(perf == p).sum() for p in range(2, 11)])
    assert counts.sum() == perf.size
    assert stats.chisquare(counts).pvalue > 1e-3


def test_real_performance_is_uniform_on_the_range():
    perf = np.concatenate([e.perf for e in _envs(100, seed=2, perf_integer=False)])
    assert stats.kstest(perf, stats.uniform(loc=2, scale=8).cdf).pvalue > 1e-3


def test_price_deviation_is_a_truncated_normal_and_price_follows_the_formula():
    envs = _envs(200, seed=3, price_exponent=1.5)
    perf = np.concatenate([e.perf for e in envs])
    price = np.concatenate([e.price for e in envs])
    e = price / (2.0 * (perf / 2.0) ** 1.5) - 1.0
    assert np.abs(e).max() <= 0.5 + 1e-12
    truncated = stats.truncnorm(-2.5, 2.5, scale=0.2)
    assert stats.kstest(e, truncated.cdf).pvalue > 1e-3


def test_local_load_is_the_scaled_hypergeometric():
    load = np.concatenate([e.load for e in _envs(200, seed=4)])
    x = np.rint((load - 0.1) / 0.4 * 40).astype(int)
    np.testing.assert_allclose(0.1 + 0.4 * x / 40, load, rtol=0, atol=1e-12)
    values, counts = np.unique(x, return_counts=True)
    expected = stats.hypergeom(80, 40, 40).pmf(values) * x.size
    keep = expected >= 5           # chi-square on the well-populated values, rest pooled
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], x.size - expected[keep].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    assert load.min() >= 0.1 and load.max() <= 0.5


@pytest.mark.parametrize("interval, spec", [(600.0, 4.71), (1800.0, 10.93), (3600.0, 20.26)])
def test_calibration_slots_per_node_within_sampling_error(interval, spec):
    """Spec calibration at 100 nodes; 4 standard errors of our mean plus 0.01 for the spec's
    own rounding and sampling (its figures are means of a finite run too)."""
    per_node = np.array([e.slots / e.nodes for e in _envs(300, seed=5, interval=interval)])
    se = per_node.std(ddof=1) / np.sqrt(per_node.size)
    assert abs(per_node.mean() - spec) <= 4 * se + 0.01


def test_same_seed_same_environment_bit_for_bit():
    a = generate_environment(np.random.default_rng(11), nodes=50, perf_integer=False)
    b = generate_environment(np.random.default_rng(11), nodes=50, perf_integer=False)
    for x, y in zip(a, b):
        assert np.array_equal(np.asarray(x), np.asarray(y))


def test_job_lengths_and_costs():
    env = generate_environment(np.random.default_rng(12), nodes=30)
    node_len, node_cost = job_on_nodes(env, 150.0, 2.0)
    np.testing.assert_array_equal(node_len, 150.0 * 2.0 / env.perf)
    np.testing.assert_array_equal(node_cost, env.price * node_len)


def test_bad_ranges_are_refused_with_the_parameter_names():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="perf_min"):
        generate_environment(rng, perf_min=5, perf_max=3)
    with pytest.raises(ValueError, match="local_load"):
        generate_environment(rng, local_load_min=0.6, local_load_max=0.5)
    with pytest.raises(ValueError, match="local_task"):
        generate_environment(rng, local_task_min=50, local_task_max=20)
