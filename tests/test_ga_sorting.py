"""The ga kernels' own sorts (``workloads/ga/sorting.py``) give numpy's
results exactly, so replacing ``np.argsort``/``np.sort`` changed no schedule.

- ``argsort`` equals ``np.argsort(kind="mergesort")`` (stable: equal keys keep their index
  order; NaN last) on arrays with many ties, infinities and NaN, of lengths below, at and
  across the insertion runs and several merge levels; ``keys[argsort(keys)]`` is
  ``np.sort(keys)``.
- ``sort_ints`` equals ``np.sort`` on int64 arrays.
- ``body_from_units`` (two counting sorts) equals the stable argsort of ``unit * 2**32 +
  seq`` it replaced.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from schedsweep.workloads.ga.model import body_from_units
from schedsweep.workloads.ga.sorting import RUN, argsort, sort_ints

# few distinct values, so ties are common; NaN and infinities included
_KEYS = st.lists(st.sampled_from([0.0, 1.0, -1.0, 2.5, 7.0, np.inf, -np.inf, np.nan, 1e-300, -3.25]),
                 max_size=5 * RUN)


@settings(max_examples=300, deadline=None)
@given(_KEYS, st.floats(-1e6, 1e6, allow_nan=False))
def test_argsort_is_numpys_stable_argsort(values, shift):
    keys = np.array(values, np.float64) + shift
    got = argsort(keys)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argsort(keys, kind="mergesort"))
    np.testing.assert_array_equal(keys[got], np.sort(keys))


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2000), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_argsort_on_long_arrays(n, distinct, seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, distinct, n).astype(np.float64)
    keys[rng.random(n) < 0.05] = np.nan
    np.testing.assert_array_equal(argsort(keys), np.argsort(keys, kind="mergesort"))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=40))
def test_sort_ints_is_np_sort(values):
    a = np.array(values, np.int64)
    want = np.sort(a)
    sort_ints(a)
    np.testing.assert_array_equal(a, want)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(0, 60), st.integers(0, 2**32 - 1))
def test_body_from_units_is_the_stable_argsort_it_replaced(C, N, seed):
    rng = np.random.default_rng(seed)
    unit_of = rng.integers(0, C, N).astype(np.int64)
    seq = rng.integers(0, max(1, N // 2), N).astype(np.int64)   # repeated seq on a unit: ties by index
    body, header = body_from_units(unit_of, seq, C)
    np.testing.assert_array_equal(body, np.argsort(unit_of * 4294967296 + seq, kind="mergesort"))
    np.testing.assert_array_equal(header, np.bincount(unit_of, minlength=C))
