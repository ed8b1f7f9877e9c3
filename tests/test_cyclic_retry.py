"""``shared_retry`` (with shared alternatives): a job the combination step had to postpone searches
once more for one window on the slots left after the chosen windows (``workloads/cyclic/frsm.py``)."""
from __future__ import annotations

import itertools

import numpy as np

from schedsweep.workloads._contract import defaults
from schedsweep.workloads.cyclic import PARAMS
from schedsweep.workloads.cyclic.cycle import run_cycle
from schedsweep.workloads.cyclic.search import cut_spans, first_fit


def _tasks(c):
    return [(int(k), c.plan.start[j], c.plan.start[j] + c.node_len[j, k])
            for j in range(len(c.plan.start)) if not np.isnan(c.plan.start[j])
            for k in c.plan.nodes[j][c.plan.nodes[j] >= 0]]


def _fits(tasks, env):
    for (k1, s1, e1), (k2, s2, e2) in itertools.combinations(tasks, 2):
        if k1 == k2 and s1 < e2 and s2 < e1:
            return False
    return all(np.any((env.slot_node == k) & (env.slot_start <= s + 1e-9) & (env.slot_end >= e - 1e-9))
               for k, s, e in tasks)


def test_retry_only_adds_first_fit_windows_on_the_slots_left():
    p = defaults(PARAMS)
    p.update(nodes=8, jobs=10, job_slots_min=2, job_slots_max=5, max_alternatives=4, method="css",
             shared_alternatives=True, price_margin_min=0.6)
    retried = 0
    for seed in range(12):
        without = run_cycle({**p, "shared_retry": False}, seed)
        with_ = run_cycle({**p, "shared_retry": True}, seed)
        assert _fits(_tasks(with_), with_.env)           # never two jobs on a node at a time
        kept = ~np.isnan(without.plan.start)
        # the combination's choice is unchanged; retry only schedules postponed jobs
        assert np.array_equal(with_.plan.start[kept], without.plan.start[kept])
        assert np.array_equal(with_.plan.nodes[kept], without.plan.nodes[kept])
        # each retried job (priority order) got AMP's first fit on the slots minus the windows before it
        slots = (with_.env.slot_node, with_.env.slot_start, with_.env.slot_end)
        for j in np.flatnonzero(kept):
            nodes = with_.plan.nodes[j][with_.plan.nodes[j] >= 0]
            slots = cut_spans(*slots, nodes, with_.plan.start[j], with_.node_len[j, nodes])
        for j in np.flatnonzero(~kept & (without.plan.alternatives > 0)):
            n = int(with_.batch.slots[j])
            order = np.argsort(with_.node_cost[j], kind="mergesort")
            found, start, nodes = first_fit(*slots, with_.node_len[j], with_.node_cost[j], order,
                                            np.ones(p["nodes"], np.bool_), with_.batch.budget[j], n, 0.0,
                                            np.empty(p["nodes"]), np.empty(n, np.int64), np.empty(n))
            if not found:
                assert np.isnan(with_.plan.start[j])
                continue
            retried += 1
            assert with_.plan.start[j] == start
            assert list(with_.plan.nodes[j][:n]) == list(nodes)
            slots = cut_spans(*slots, nodes, start, with_.node_len[j, nodes])
    assert retried > 0       # the instances exercise the retry
