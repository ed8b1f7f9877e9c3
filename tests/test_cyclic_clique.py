"""The colouring bound tried for the conflict-free searches (``studies/cyclic_clique.py``,
for the speed target; a measured experiment, not used by the workload): exact, so its
measured tries and decisions (``studies/bench_cyclic_clique.py``) compare like with like.

Also the nogood cache tried there (subproblems proved empty, with the level left, pruned when
met again). Checked against brute force on small random calls: without either ``_coloured`` is
``dp._feasible`` try for try at any cap (so the harness counts the current search's tries);
with each of the three bounds and the cache it finds a combination within the limit iff one exists, and with
the plain order the same first combination as ``dp._feasible`` in no more tries (a valid bound
removes only subtrees without one); weighted, still complete. A seeded set checks that the bounds
and the cache do prune (fewer tries somewhere), so the properties above are not vacuous."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from studies.cyclic_clique import _coloured
from naive_cycdef import drawn_call, slot_call
from schedsweep.workloads.cyclic.dp import _feasible

BIG = 10**9
ANY_DEPTH = 1 << 30


def _exists(offsets, gq, G, conflict):
    jobs = [range(offsets[i], offsets[i + 1]) for i in range(len(offsets) - 1)]
    return any(sum(gq[a] for a in c) <= G and not any(conflict[a, b] for a, b in itertools.combinations(c, 2))
               for c in itertools.product(*jobs))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data(), st.booleans())
def test_without_a_bound_it_is_the_current_search(sizes, data, weighted):
    offsets, key, gq, G, conflict = drawn_call(data, sizes)
    cap = data.draw(st.sampled_from([1, 3, 10, 100, BIG]))
    want = _feasible(offsets, key, gq, G, conflict, cap, weighted, 0, 0)
    choice, found, complete, tries = _coloured(offsets, key, gq, G, conflict, cap, weighted, 0, ANY_DEPTH, 0, ANY_DEPTH)
    assert (list(choice), found, complete) == (list(want[0]), want[1], want[2])
    assert tries <= cap


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data(), st.sampled_from([0, 1, 2, 3]), st.booleans())
def test_each_bound_is_exact(sizes, data, bound, weighted):
    """Each colouring bound, with or without the nogood cache (2^4 slots: collisions replace)."""
    offsets, key, gq, G, conflict = drawn_call(data, sizes)
    depth = data.draw(st.sampled_from([1, 3, ANY_DEPTH]))
    memo = data.draw(st.sampled_from([(0, ANY_DEPTH), (4, ANY_DEPTH), (14, 2), (14, ANY_DEPTH)]))
    choice, found, complete, tries = _coloured(offsets, key, gq, G, conflict, BIG, weighted, bound, depth, *memo)
    assert complete
    assert found == _exists(offsets, gq, G, conflict)
    if found:
        rows = [offsets[i] + c for i, c in enumerate(choice)]
        assert (choice >= 0).all() and sum(gq[a] for a in rows) <= G
        assert not any(conflict[a, b] for a, b in itertools.combinations(rows, 2))
    if not weighted:     # the plain order: the same first combination, a subset of the tries
        plain, _, _, plain_tries = _coloured(offsets, key, gq, G, conflict, BIG, False, 0, ANY_DEPTH, 0, ANY_DEPTH)
        assert list(choice) == list(plain) and tries <= plain_tries


def test_the_bounds_prune_on_seeded_calls():
    """Larger seeded calls (10 jobs, 3-6 alternatives each): every bound and the cache decide as
    the search without them, return its first combination, and need fewer tries on some calls."""
    rng = np.random.default_rng(20261126)
    fewer = {(1, 0): 0, (2, 0): 0, (3, 0): 0, (0, 14): 0}
    for _ in range(30):
        offsets, conflict = slot_call(rng, 10, nodes=6, horizon=8)
        A = int(offsets[-1])
        key = rng.integers(1, 13, A).astype(float)
        gq = rng.integers(1, 13, A).astype(np.int64)
        for share in (1.0, 0.45, 0.35):     # every level, and limits where the cache's levels matter
            G = np.int64(share * gq.sum())
            plain = _coloured(offsets, key, gq, G, conflict, BIG, False, 0, ANY_DEPTH, 0, ANY_DEPTH)
            for bound, bits in fewer:
                got = _coloured(offsets, key, gq, G, conflict, BIG, False, bound, ANY_DEPTH, bits, ANY_DEPTH)
                assert got[2] and got[1] == plain[1] and list(got[0]) == list(plain[0]) and got[3] <= plain[3]
                fewer[bound, bits] += got[3] < plain[3]
    assert all(n > 0 for n in fewer.values()), fewer


def test_the_cache_keeps_the_level_it_was_proved_at():
    """Limits just above the least total level (levels 1-3): a subproblem met again with more
    level left than it was proved empty at must still be searched. The cache decides as the
    search without it on every call and prunes on some."""
    rng = np.random.default_rng(1)
    pruned = 0
    for _ in range(60):
        offsets, conflict = slot_call(rng, 10, nodes=8, horizon=10)
        A = int(offsets[-1])
        key = rng.integers(1, 13, A).astype(float)
        gq = rng.integers(1, 4, A).astype(np.int64)
        least = sum(int(gq[offsets[i]:offsets[i + 1]].min()) for i in range(10))
        for extra in (0, 1, 2, 3, 5):
            G = np.int64(least + extra)
            plain = _coloured(offsets, key, gq, G, conflict, BIG, False, 0, ANY_DEPTH, 0, ANY_DEPTH)
            got = _coloured(offsets, key, gq, G, conflict, BIG, False, 0, ANY_DEPTH, 14, ANY_DEPTH)
            assert got[2] and got[1] == plain[1] and list(got[0]) == list(plain[0])
            pruned += got[3] < plain[3]
    assert pruned > 0
