"""The nogood cache of the feasibility search within the limit (``workloads/cyclic/dp.py``
``_feasible``, ``NOGOOD_BITS``; for the speed target): subproblems proved to have no
combination are cut when met again with no more level left.

Checked against brute force on small random calls: with the cache (any table size, collisions
included, any depth) the search finds a combination within the limit iff one exists, unweighted
the same first combination as without it (a subset of the same tries); ``choose`` still returns
the documented choice (``tests/naive_cycdef.py``). Seeded calls shaped like the workload's, at
limits just above the least total level, check the level the cache keeps (a subproblem met
again with more level left must be searched again, and a slot holding another subproblem proves
nothing) and that it does cut some calls."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_cycdef import drawn_call, slot_call
from schedsweep.workloads.cyclic import dp
from schedsweep.workloads.cyclic.dp import STRATEGIES, _feasible, choose, strategy_arrays

BIG = 10**9


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data(), st.booleans(),
       st.sampled_from([(4, 1 << 30), (14, 2), (14, 1 << 30)]))
def test_the_cache_is_exact(sizes, data, weighted, memo):
    offsets, key, gq, G, conflict = drawn_call(data, sizes)
    choice, found, complete = _feasible(offsets, key, gq, G, conflict, BIG, weighted, *memo)
    assert complete
    exists = any(sum(gq[a] for a in c) <= G and not any(conflict[a, b] for a, b in itertools.combinations(c, 2))
                 for c in itertools.product(*[range(offsets[i], offsets[i + 1]) for i in range(len(sizes))]))
    assert found == exists
    if found:
        rows = [offsets[i] + c for i, c in enumerate(choice)]
        assert (choice >= 0).all() and sum(gq[a] for a in rows) <= G
        assert not any(conflict[a, b] for a, b in itertools.combinations(rows, 2))
    if not weighted:
        assert list(choice) == list(_feasible(offsets, key, gq, G, conflict, BIG, False, 0, 0)[0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.data(), st.sampled_from(sorted(STRATEGIES)))
def test_choose_with_a_tiny_cache_returns_the_documented_choice(sizes, data, strategy):
    """2^2 slots, every depth: collisions replace proofs all the time; the choice is unchanged."""
    from naive_cycdef import documented_choice

    offsets, time, cost, _, conflict = drawn_call(data, sizes)
    v, g, maximize = strategy_arrays(strategy, time, cost.astype(float))
    saved = dp.NOGOOD_BITS, dp.NOGOOD_DEPTH
    dp.NOGOOD_BITS, dp.NOGOOD_DEPTH = 2, 1 << 30
    try:
        combo = choose(offsets, v, g, maximize, conflict=conflict)
    finally:
        dp.NOGOOD_BITS, dp.NOGOOD_DEPTH = saved
    want, flagged, _ = documented_choice(offsets, v, g, maximize, conflict)
    assert combo.flagged == flagged
    assert list(combo.choice) == list(want)


def test_the_cache_keeps_the_level_it_was_proved_at():
    """Limits just above the least total level (levels 1-3): a subproblem met again with more
    level left than it was proved empty at must still be searched; with 2 slots, a slot's key must
    be compared in full. Decides as the search without
    the cache on every call, the same combination, and cuts tries on some calls."""
    rng = np.random.default_rng(1)
    cut = 0
    for _ in range(60):
        offsets, conflict = slot_call(rng, 10, nodes=8, horizon=10)
        A = int(offsets[-1])
        key = rng.integers(1, 13, A).astype(float)
        gq = rng.integers(1, 4, A).astype(np.int64)
        least = sum(int(gq[offsets[i]:offsets[i + 1]].min()) for i in range(10))
        for extra in (0, 1, 2, 3, 5):
            G = np.int64(least + extra)
            plain = _feasible(offsets, key, gq, G, conflict, BIG, False, 0, 0)
            for bits in (1, 14):     # 2 slots: nearly every proof meets another key's slot
                got = _feasible(offsets, key, gq, G, conflict, BIG, False, bits, 1 << 30)
                assert got[2] and got[1] == plain[1] and list(got[0]) == list(plain[0])
            cut += _tries(offsets, key, gq, G, conflict, 14) < _tries(offsets, key, gq, G, conflict, 0)
    assert cut > 0


def _tries(offsets, key, gq, G, conflict, bits):
    """Tries the search makes: the least cap at which it completes (bisection)."""
    lo, hi = 0, 1
    while not _feasible(offsets, key, gq, G, conflict, hi, False, bits, 1 << 30)[2]:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _feasible(offsets, key, gq, G, conflict, mid, False, bits, 1 << 30)[2]:
            hi = mid
        else:
            lo = mid
    return hi
