"""The sequential combination rule with shared alternatives (``combination = "sequential"``,
``workloads/cyclic/sequential.py``).

- With no conflicts it is exactly the spec's DP (:func:`dp.choose` without ``conflict``): the same
  choice, flag and value, on random float quantities and values and resolutions.
- With random conflicts it is exactly the plain-Python restatement of the rule
  (``tests/naive_cyclic_sequential.py``: brute force over the jobs left at each step), so the
  postponed jobs, the flag and the fallback are as described; no two chosen alternatives conflict.
- End to end (CSS, FRSM with k = 1 and 3, CSS+BF): no two jobs' planned windows overlap on a node, and the
  same seeds give the same metrics.
"""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_cycdef import cross_job
from naive_cyclic_sequential import sequential_choice
from schedsweep.workloads._contract import defaults
from schedsweep.workloads.cyclic import PARAMS, METRICS, run_batch, run_cycle
from schedsweep.workloads.cyclic.dp import choose
from schedsweep.workloads.cyclic.sequential import choose_sequential


def _offsets(sizes):
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), sizes=st.lists(st.integers(1, 4), min_size=1, max_size=7),
       maximize=st.booleans(), resolution=st.sampled_from([0.5, 1.0, 2.5]))
def test_no_conflicts_is_the_dp(data, sizes, maximize, resolution):
    offsets = _offsets(sizes)
    A = int(offsets[-1])
    v = np.array(data.draw(st.lists(st.floats(0.0, 50.0), min_size=A, max_size=A)))
    g = np.array(data.draw(st.lists(st.floats(0.0, 30.0), min_size=A, max_size=A)))
    plain = choose(offsets, v, g, maximize, resolution)
    seq = choose_sequential(offsets, v, g, maximize, resolution, np.zeros((A, A), np.bool_))
    assert seq.choice.tolist() == plain.choice.tolist()
    assert seq.flagged == plain.flagged
    assert seq.value == plain.value and seq.limit == plain.limit


@settings(max_examples=200, deadline=None)
@given(data=st.data(), sizes=st.lists(st.integers(1, 3), min_size=1, max_size=5),
       maximize=st.booleans(), resolution=st.sampled_from([1.0, 2.0]),
       density=st.sampled_from([0.1, 0.3, 0.6, 0.9]), seed=st.integers(0, 2**32 - 1))
def test_conflicts_follow_the_rule(data, sizes, maximize, resolution, density, seed):
    offsets = _offsets(sizes)
    A = int(offsets[-1])
    # integer values: sums are exact whatever the order, so ties are ties in both
    v = np.array(data.draw(st.lists(st.integers(0, 9).map(float), min_size=A, max_size=A)))
    g = np.array(data.draw(st.lists(st.integers(1, 12).map(float), min_size=A, max_size=A)))
    rng = np.random.default_rng(seed)
    conflict = rng.random((A, A)) < density
    conflict = cross_job(conflict, sizes)
    seq = choose_sequential(offsets, v, g, maximize, resolution, conflict)
    want, flagged = sequential_choice(offsets.tolist(), v.tolist(), g.tolist(), maximize, resolution,
                                      conflict.tolist())
    assert seq.choice.tolist() == want
    assert seq.flagged == flagged
    rows = [int(offsets[i] + c) for i, c in enumerate(seq.choice) if c >= 0]
    assert not any(conflict[a, b] for a, b in itertools.combinations(rows, 2))
    assert seq.value == sum(v[a] for a in rows)
    assert seq.choice[0] >= 0          # the first job always has all its alternatives


def test_flag_and_postpone_by_hand():
    # two jobs, quantities 1 and 10 each, v = g minimised; limit floor(5.5) + floor(5.5) = 10.
    offsets = _offsets([2, 2])
    g = np.array([1.0, 10.0, 1.0, 10.0])
    conflict = np.zeros((4, 4), np.bool_)
    conflict[0, 2] = conflict[2, 0] = True
    # job 0 takes alternative 0 (the DP's (0, 0), total 2); that removes job 1's alternative 0, and
    # 10 > 10 - 1 left: flagged, job 1 takes its smallest left (alternative 1)
    c = choose_sequential(offsets, g, g, False, 1.0, conflict)
    assert c.choice.tolist() == [0, 1] and c.flagged and c.value == 11.0
    # job 0's choice conflicts with both of job 1's: job 1 postponed, not flagged
    conflict[0, 3] = conflict[3, 0] = True
    c = choose_sequential(offsets, g, g, False, 1.0, conflict)
    assert c.choice.tolist() == [0, -1] and not c.flagged and c.value == 1.0


def _params(**kw):
    p = defaults(PARAMS)
    p.update(dict(combination="sequential") | kw)
    return p


def test_plans_never_overlap_and_seeds_reproduce():
    for method, k in (("css", 1), ("frsm", 1), ("frsm", 3), ("css_bf", 1)):
        p = _params(method=method, frsm_k=k)
        for seed in range(6):
            c = run_cycle(p, seed)
            spans = {}
            for j in range(len(c.plan.start)):
                if np.isnan(c.plan.start[j]):
                    continue
                for k in c.plan.nodes[j][c.plan.nodes[j] >= 0]:
                    spans.setdefault(int(k), []).append((c.plan.start[j], c.plan.start[j] + c.node_len[j, k]))
            for iv in spans.values():
                iv.sort()
                assert all(a[1] <= b[0] + 1e-9 for a, b in zip(iv, iv[1:]))
        seeds = np.arange(5, dtype=np.uint64)
        one, two = run_batch(p, seeds), run_batch(p, seeds)
        for m in METRICS:
            if not m.timing:
                np.testing.assert_array_equal(one[m.name], two[m.name])
        np.testing.assert_array_equal(one["reason"], two["reason"])


def test_unknown_combination_is_an_error():
    import pytest
    with pytest.raises(ValueError, match="combination"):
        run_cycle(_params(combination="greedy"), 0)
