"""ga: chromosome timing, objectives and baselines against the plain-Python oracle."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from naive_ga import check_schedule, naive_log_gmean, naive_tau, naive_timing
from schedsweep.workloads.ga.baselines import backfill, fcfs
from schedsweep.workloads.ga.instance import InstanceSettings, make_instance, period_problem
from schedsweep.workloads.ga.model import Problem, decode, timed
from schedsweep.workloads.ga.objectives import log_gmean, tau


def small_problem(seed: int, parallel: bool, dep_prob: float = 0.3) -> Problem:
    """Period 1 of a small random instance, docked after random previous ends (some NaN)."""
    s = InstanceSettings(units=6, groups=2, density=1.5, periods=2, parallel=parallel, width_high=3,
                         dep_prob=dep_prob)
    rng = np.random.default_rng(seed)
    while True:  # redraw the rare instance without a job in period 1
        inst = make_instance(s, rng)
        prev = inst.period_length * rng.uniform(0.5, 1.5, 6)
        prev[rng.random(6) < 0.3] = np.nan
        problem, jobs = period_problem(inst, 1, prev)
        if jobs.size:
            return problem


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), parallel=st.booleans(), which=st.sampled_from(["fcfs", "backfill"]))
def test_baselines_give_consistent_docked_schedules(seed, parallel, which):
    problem = small_problem(seed, parallel)
    problem.validate()
    body, header, start, dur = (fcfs if which == "fcfs" else backfill)(problem)
    assert check_schedule(problem, body, header, start, dur) == []
    # the semi-active timing of the same chromosome never starts a job later
    semi, dur2 = naive_timing(problem, body, header)
    np.testing.assert_array_equal(dur, dur2)
    assert np.all(semi <= start)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), parallel=st.booleans())
def test_decode_matches_naive_timing_and_objectives(seed, parallel):
    problem = small_problem(seed, parallel)
    rng = np.random.default_rng(seed)
    body, header, _, _ = fcfs(problem, rng)
    start, dur, unit_of = timed(problem, body, header)
    ref_start, ref_dur = naive_timing(problem, body, header)
    np.testing.assert_array_equal(start, ref_start)
    np.testing.assert_array_equal(dur, ref_dur)
    assert check_schedule(problem, body, header, start, dur) == []
    P = problem.arrays()
    assert log_gmean(body, header, P, dur) == pytest.approx(naive_log_gmean(problem, body, header, dur), rel=1e-12)
    assert tau(body, header, P, start) == pytest.approx(naive_tau(problem, body, header, start), rel=1e-12, abs=1e-9)


def test_decode_rejects_cycles_and_bad_bodies():
    # two non-parallel jobs on one unit, job 1 depends on job 0 but is placed first: a cycle
    problem = Problem(speed=np.array([1.0]), group=np.array([0]), ready=np.array([0.0]), prev_end=np.array([np.nan]),
                      width=np.array([1, 1]), length=np.array([2.0, 3.0]), prio=np.array([1, 1]),
                      pred=np.array([-1, 0]), mask=np.ones((2, 1), bool), arrival=np.zeros(2), period_end=0.0)
    assert naive_timing(problem, np.array([1, 0]), np.array([2])) is None
    with pytest.raises(ValueError):
        timed(problem, np.array([1, 0]), np.array([2]))
    start, dur = np.zeros(2), np.zeros(2)
    unit_of = np.zeros(2, np.int64)
    assert not decode(np.array([0, 0]), np.array([2]), problem.arrays(), start, dur, unit_of)  # twice
    assert decode(np.array([0, 1]), np.array([2]), problem.arrays(), start, dur, unit_of)
    np.testing.assert_array_equal(start, [0.0, 2.0])


def test_parallel_job_synchronised_at_slowest_unit():
    # a 2-process job on units of speed 1 and 2: both slots last length / 1
    problem = Problem(speed=np.array([1.0, 2.0]), group=np.array([0, 0]), ready=np.array([5.0, 7.0]),
                      prev_end=np.array([np.nan, np.nan]), width=np.array([2]), length=np.array([4.0]),
                      prio=np.array([2]), pred=np.array([-1]), mask=np.ones((1, 2), bool), arrival=np.zeros(1),
                      period_end=5.0)
    start, dur, _ = timed(problem, np.array([0, 1]), np.array([1, 1]))
    assert start[0] == 7.0 and dur[0] == 4.0


def test_backfill_fills_the_widest_window_with_the_widest_job():
    # 4 units in one group, all free at 0: the 3-wide job goes first, then the 1-wide jobs
    problem = Problem(speed=np.ones(4), group=np.zeros(4, np.int64), ready=np.zeros(4), prev_end=np.full(4, np.nan),
                      width=np.array([1, 3, 1]), length=np.array([5.0, 10.0, 20.0]), prio=np.ones(3, np.int64),
                      pred=np.full(3, -1), mask=np.ones((3, 4), bool), arrival=np.zeros(3), period_end=0.0)
    body, header, start, dur = backfill(problem)
    # job 1 (3 wide) at 0 on units 0..2. Windows are then (10, units 0-2) and (0, unit 3):
    # the widest comes first (source), and the longer 1-wide job 2 takes its lowest unit 0;
    # then the 2-wide window (10, units 1-2) beats (0, unit 3) and takes job 0 on unit 1.
    np.testing.assert_array_equal(start, [10.0, 0.0, 10.0])
    np.testing.assert_array_equal(header, [2, 2, 1, 0])
    np.testing.assert_array_equal(body, [1, 4, 2, 0, 3])  # job 1 = processes 1-3, job 2 = 4
    assert check_schedule(problem, body, header, start, dur) == []


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), parallel=st.booleans())
def test_baselines_match_plain_python(seed, parallel):
    from naive_ga import naive_backfill, naive_fcfs, unit_lists

    problem = small_problem(seed, parallel)
    for kernel, naive in ((fcfs, naive_fcfs), (backfill, naive_backfill)):
        body, header, start, dur = kernel(problem)
        ref_start, ref_units = naive(problem)
        np.testing.assert_array_equal(start, ref_start)
        units = {int(problem.proc_job[u]): set() for u in body}
        for m, procs in enumerate(unit_lists(body, header)):
            for u in procs:
                units[int(problem.proc_job[u])].add(m)
        assert [sorted(units[j]) for j in range(problem.n_jobs)] == ref_units
