"""The feasibility search of the shared-alternatives combination step (``workloads/cyclic/dp.py``,
``_feasible``) and what ``choose`` does with it: a conflict-free combination within the limit is
found whenever one exists, and when none does, every job is still scheduled whenever a
conflict-free combination of all jobs exists (the combination is flagged, nobody postponed)."""
from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_cycdef import cross_job
from schedsweep.workloads.cyclic.dp import _feasible, choose, cycle_limit, levels


def _instance(data, sizes):
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    A = int(offsets[-1])
    g = np.array(data.draw(st.lists(st.integers(1, 30).map(float), min_size=A, max_size=A)))
    v = np.array(data.draw(st.lists(st.integers(1, 30).map(float), min_size=A, max_size=A)))
    density = data.draw(st.sampled_from([0.2, 0.5, 0.8]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    conflict = rng.random((A, A)) < density
    conflict = cross_job(conflict, sizes)
    return offsets, v, g, conflict


def _combos(offsets, conflict, gq=None, G=None):
    """Every conflict-free combination of one alternative per job (within G if given)."""
    J = len(offsets) - 1
    for combo in itertools.product(*[range(offsets[i], offsets[i + 1]) for i in range(J)]):
        if G is not None and sum(gq[a] for a in combo) > G:
            continue
        if not any(conflict[a, b] for a, b in itertools.combinations(combo, 2)):
            yield combo


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data())
def test_feasible_finds_a_combination_iff_one_exists(sizes, data):
    offsets, v, g, conflict = _instance(data, sizes)
    gq = levels(g, 1.0)
    G = data.draw(st.integers(int(gq.sum()) // 3, int(gq.sum())))
    choice, found, complete = _feasible(offsets, v, gq, np.int64(G), conflict, 10**7)
    assert complete
    exists = next(_combos(offsets, conflict, gq, G), None) is not None
    assert found == exists
    if found:
        rows = [offsets[i] + c for i, c in enumerate(choice)]
        assert all(offsets[i] <= a < offsets[i + 1] for i, a in enumerate(rows))
        assert sum(gq[a] for a in rows) <= G
        assert not any(conflict[a, b] for a, b in itertools.combinations(rows, 2))


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data())
def test_choose_postpones_nobody_when_a_conflict_free_combination_exists(sizes, data):
    offsets, v, g, conflict = _instance(data, sizes)
    combo = choose(offsets, v, g, False, conflict=conflict)
    G = math.floor(cycle_limit(offsets, g))
    within = next(_combos(offsets, conflict, levels(g, 1.0), G), None) is not None
    anywhere = next(_combos(offsets, conflict), None) is not None
    assert combo.flagged == (not within)
    chosen = [offsets[i] + c for i, c in enumerate(combo.choice) if c >= 0]
    assert not any(conflict[a, b] for a, b in itertools.combinations(chosen, 2))
    if anywhere:
        assert (combo.choice >= 0).all()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data())
def test_bitset_search_makes_the_counting_searchs_tries(sizes, data):
    """Same result as the counting version (tests/naive_cycdef.py) at every cap, capped included:
    so the same tries in the same order."""
    from naive_cycdef import counting_feasible

    offsets, v, g, conflict = _instance(data, sizes)
    gq = levels(g, 1.0)
    G = np.int64(data.draw(st.integers(int(gq.sum()) // 3, int(gq.sum()))))
    key = np.array(data.draw(st.lists(st.integers(0, 5).map(float), min_size=len(v), max_size=len(v))))
    limit = data.draw(st.sampled_from([1, 2, 5, 20, 10**6]))
    got = _feasible(offsets, key, gq, G, conflict, limit)
    want = counting_feasible(offsets, key, gq, G, conflict, limit)
    assert (got[1], got[2]) == (want[1], want[2])
    if got[1]:
        assert np.array_equal(got[0], want[0])
