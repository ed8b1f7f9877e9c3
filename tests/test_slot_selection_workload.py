"""The ``slot_selection`` workload contract: run_batch, reproducibility, common random numbers."""
from __future__ import annotations

import numpy as np
import pytest

from schedsweep import workloads
from schedsweep.workloads import slot_selection as ss
from schedsweep.workloads._contract import defaults, substreams

SMALL = dict(defaults(ss.PARAMS), nodes=20, interval=300.0, job_slots=3, budget=900.0)
SEEDS = np.random.SeedSequence(2014).generate_state(6, np.uint64)


def _run(**over):
    return ss.run_batch({**SMALL, **over}, SEEDS)


def test_registered_and_declares_every_metric():
    assert workloads.get("slot_selection") is ss
    out = _run()
    assert set(out) == {m.name for m in ss.METRICS} | {"reason"}
    for m in ss.METRICS:
        assert out[m.name].shape == (len(SEEDS),)
    assert out["reason"].dtype == np.int8
    assert {m.name for m in ss.METRICS if m.timing} == {"search_time", "time_per_alternative"}


@pytest.mark.parametrize("algorithm", ss.ALGORITHMS)
def test_same_seeds_same_results_bit_for_bit_in_any_batch_split(algorithm):
    whole = _run(algorithm=algorithm)
    again = _run(algorithm=algorithm)
    parts = [ss.run_batch({**SMALL, "algorithm": algorithm}, SEEDS[i:i + 1]) for i in range(len(SEEDS))]
    for m in ss.METRICS:
        if m.timing:
            continue
        np.testing.assert_array_equal(whole[m.name], again[m.name])
        np.testing.assert_array_equal(whole[m.name], np.concatenate([p[m.name] for p in parts]))
    np.testing.assert_array_equal(whole["reason"], again["reason"])


def test_every_algorithm_sees_the_same_environment():
    """Common random numbers: the replication's environment does not depend on the algorithm."""
    slots = {a: _run(algorithm=a)["slots"] for a in ss.ALGORITHMS}
    for a in ss.ALGORITHMS:
        np.testing.assert_array_equal(slots[a], slots["amp"])
    # and it is the environment of the first substream
    env = ss.environment_of(SMALL, substreams(SEEDS[0], 2)[0])
    assert slots["amp"][0] == env.slots


def test_metrics_match_a_direct_search_on_the_regenerated_environment():
    seed = SEEDS[1]
    for algorithm in ("min_cost", "min_proc_time", "csa"):
        params = {**SMALL, "algorithm": algorithm}
        out = ss.run_batch(params, np.array([seed], np.uint64))
        env_rng, algo_rng = substreams(seed, 2)
        result, _ = ss.search(params, ss.environment_of(params, env_rng), algo_rng)
        if algorithm == "csa":
            assert out["alternatives"][0] == result.count
            assert out["cost"][0] == result.cost.min() and out["start"][0] == result.start.min()
        else:
            assert out["cost"][0] == result.cost and out["finish"][0] == result.finish


def test_no_window_is_reason_1_with_nan_metrics():
    out = _run(budget=1.0)           # nothing fits
    assert (out["reason"] == 1).all() and (out["found"] == 0).all()
    for name in ("start", "runtime", "finish", "proc_time", "cost"):
        assert np.isnan(out[name]).all()
    assert not np.isnan(out["slots"]).any() and not np.isnan(out["search_time"]).any()
    csa = _run(budget=1.0, algorithm="csa")
    assert (csa["reason"] == 1).all() and (csa["alternatives"] == 0).all()


def test_found_windows_have_reason_0_and_consistent_metrics():
    for algorithm in ss.ALGORITHMS:
        out = _run(algorithm=algorithm, budget=1e9)
        assert (out["reason"] == 0).all() and (out["found"] == 1).all()
        if algorithm != "csa":     # csa's minima come from different alternatives
            np.testing.assert_array_equal(out["finish"], out["start"] + out["runtime"])
        assert (out["runtime"] <= out["proc_time"]).all()
        assert np.isnan(out["alternatives"]).all() == (algorithm != "csa")


def test_csa_extremes_bound_the_single_searches():
    """CSA's first alternative is amp's window, so its minima are at most amp's values."""
    amp, csa = _run(algorithm="amp"), _run(algorithm="csa")
    both = amp["found"] == 1
    for name in ("start", "runtime", "finish", "proc_time", "cost"):
        assert (csa[name][both] <= amp[name][both]).all()
    assert (csa["start"][both] == amp["start"][both]).all()


def test_cross_parameter_checks_name_the_parameters():
    bad = {**SMALL, "perf_min": 12.0, "perf_max": 10.0, "local_task_min": 200.0,
           "local_task_max": 100.0, "interval": 100.0}
    errors = " ".join(ss.check_params(bad))
    for name in ("perf_min", "local_task_min", "interval"):
        assert name in errors
    assert ss.check_params(SMALL) == []
    assert "perf_integer" in " ".join(ss.check_params({**SMALL, "perf_min": 2.5}))
