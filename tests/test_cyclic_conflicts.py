"""The conflict matrix of shared alternatives (``workloads/cyclic/alternatives.py`` ``conflicts``),
which skips the node-by-node test for pairs whose spans ``[start, start + runtime)`` do not
overlap (for speed): still exactly the definition, two alternatives of different jobs conflicting
iff they use one node at overlapping times, checked pair by pair on random alternatives with
integer times (so spans that only touch are met)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedsweep.workloads.cyclic.alternatives import Alternatives, conflicts


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_conflicts_are_the_definition(sizes, nodes, seed):
    rng = np.random.default_rng(seed)
    J, A = len(sizes), sum(sizes)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    owner = np.repeat(np.arange(J), sizes)
    jobs = rng.permutation(J + 2)[:J].astype(np.int64)          # job ids are not positions
    node_len = rng.integers(1, 6, (J + 2, nodes)).astype(np.float64)
    start = rng.integers(0, 10, A).astype(np.float64)
    nmax = rng.integers(1, nodes + 1)
    node_sets = np.full((A, nmax), -1, np.int64)
    for a in range(A):
        used = np.sort(rng.choice(nodes, rng.integers(1, nmax + 1), replace=False))
        node_sets[a, :len(used)] = used
    runtime = np.array([max(node_len[jobs[owner[a]], k] for k in node_sets[a] if k >= 0) for a in range(A)])
    alts = Alternatives(jobs, offsets, start, node_sets, runtime, np.zeros(A), np.zeros(A))
    got = conflicts(alts, node_len)
    for a in range(A):
        for b in range(A):
            ja, jb = jobs[owner[a]], jobs[owner[b]]
            want = owner[a] != owner[b] and any(
                k >= 0 and k in node_sets[b] and start[a] < start[b] + node_len[jb, k]
                and start[b] < start[a] + node_len[ja, k] for k in node_sets[a])
            assert got[a, b] == want, (a, b)
