"""kernel_support.order_stats: numpy.percentile's values, bit for bit, from sampled brackets.

numpy is the reference: every comparison is ``np.array_equal`` against ``np.percentile``
(which cannot tell -0.0 from 0.0, the one case where two equal values could be told apart).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from schedsweep.workloads._contract import QUANTILE_LEVELS
from schedsweep.workloads.kernel_support.order_stats import _sampled_order_stats, percentiles

_values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=True, width=64),
    st.sampled_from([0.0, 1.0, 2.5, -3.0]),            # ties
)
_levels = st.lists(st.floats(0.0, 100.0), min_size=1, max_size=5).map(sorted)


def _ours(x: np.ndarray, levels) -> np.ndarray:
    kept = x.copy()
    out = percentiles(x, levels)
    assert np.array_equal(x, kept, equal_nan=True)                        # the input is not changed
    return out


@settings(max_examples=300, deadline=None)
@given(x=arrays(np.float64, st.integers(0, 300), elements=_values), levels=_levels, nan=st.booleans())
def test_equal_to_numpy_percentile(x, levels, nan):
    if nan and x.size:
        x[x.size // 2] = np.nan
    out = _ours(x, levels)
    ref = np.percentile(x, levels) if x.size else np.full(len(levels), np.nan)
    assert np.array_equal(out, ref, equal_nan=True), (out, ref)


@settings(max_examples=100, deadline=None)
@given(x=arrays(np.float64, st.integers(1, 600), elements=_values), data=st.data())
def test_sampled_brackets_give_the_order_statistics_or_say_they_missed(x, data):
    ks = sorted(data.draw(st.lists(st.integers(0, x.size - 1), min_size=2, max_size=2)))
    got = _sampled_order_stats(x, ks)
    assert got is None or np.array_equal(got, np.sort(x)[ks])


@pytest.mark.parametrize("kind", ["exponential", "ties", "ascending", "descending", "constant", "infinite",
                                  "organ_pipe"])
@pytest.mark.parametrize("n", [16_383, 16_384, 98_000])
def test_large_arrays_equal_numpy(kind, n):
    rng = np.random.default_rng(n)
    x = {"exponential": lambda: rng.exponential(12.0, n),
         "ties": lambda: rng.integers(0, 4, n).astype(float),
         "ascending": lambda: np.sort(rng.exponential(1.0, n)),
         "descending": lambda: np.sort(rng.exponential(1.0, n))[::-1].copy(),
         "constant": lambda: np.full(n, 7.25),
         "infinite": lambda: np.where(rng.random(n) < 0.02, np.inf, rng.normal(0.0, 1.0, n)),
         "organ_pipe": lambda: np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]).astype(float),
         }[kind]()
    for levels in (QUANTILE_LEVELS, (0.0, 0.1, 33.3, 100.0)):
        out = _ours(x, levels)
        assert np.array_equal(out, np.percentile(x, levels), equal_nan=True)   # inf - inf: NaN both


def test_a_sample_that_misleads_falls_back_to_full_selection():
    """Every value the sample reads is 0, every other value large: the brackets miss (which
    the sampled path reports) and the full selection still gives numpy's values."""
    n, m = 40_000, 2048
    x = np.random.default_rng(3).exponential(100.0, n) + 10.0
    x[(np.arange(m) * n) // m] = 0.0
    assert _sampled_order_stats(x, [n // 2, n // 2 + 1]) is None
    out = _ours(x, QUANTILE_LEVELS)
    assert np.array_equal(out, np.percentile(x, QUANTILE_LEVELS))
