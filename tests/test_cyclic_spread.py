"""``first_fit_spread`` (our rule): with shared alternatives a first-fit job keeps every s-th of the
first ``cap * s`` windows it finds (the first included); jobs with another criterion are unchanged,
and s = 1 is the model without the rule."""
from __future__ import annotations

import numpy as np
import pytest

from schedsweep.workloads._contract import defaults, substreams
from schedsweep.workloads.cyclic import PARAMS, run_batch
from schedsweep.workloads.cyclic.alternatives import find_alternatives
from schedsweep.workloads.cyclic.batch import job_matrices
from schedsweep.workloads.cyclic.cycle import batch_of, environment_of
from schedsweep.workloads.cyclic.search import FIRST_FIT, USER_CRITERIA_SOURCE


def _instance(seed: int):
    p = {**defaults(PARAMS), "nodes": 12, "jobs": 5, "interval": 600.0, "job_slots_max": 4}
    env_rng, batch_rng, crit_rng, rho_rng = substreams(seed, 4)
    env = environment_of(p, env_rng)
    batch = batch_of(p, batch_rng, crit_rng, rho_rng)
    node_len, node_cost = job_matrices(batch, env.perf, env.price, p["perf_min"])
    return (env.slot_node, env.slot_start, env.slot_end), batch, node_len, node_cost


def _job(alts, q):
    lo, hi = alts.offsets[q], alts.offsets[q + 1]
    return alts.start[lo:hi], alts.nodes[lo:hi]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("spread", [2, 3])
def test_a_first_fit_job_keeps_every_sth_of_its_first_cap_times_s_windows(seed, spread):
    slots, batch, node_len, node_cost = _instance(seed)
    jobs = np.arange(batch.size)
    # jobs 0, 2, 4 by first fit, 1 and 3 by MinRuntime and MinCost (FRSM criteria)
    codes = np.array([FIRST_FIT, USER_CRITERIA_SOURCE[1], FIRST_FIT, USER_CRITERIA_SOURCE[3], FIRST_FIT])
    cap = 4
    args = (*slots, jobs, node_len, node_cost, batch.budget, batch.slots, codes)
    kept = find_alternatives(*args, cap, shared=True, spread=spread)[0]
    many = find_alternatives(*args, cap * spread, shared=True)[0]
    plain = find_alternatives(*args, cap, shared=True)[0]
    spread_seen = False
    for q in jobs:
        start, nodes = _job(kept, q)
        if codes[q] == FIRST_FIT:
            all_start, all_nodes = _job(many, q)
            assert np.array_equal(start, all_start[::spread]) and np.array_equal(nodes, all_nodes[::spread])
            assert len(start) <= cap and (len(all_start) == 0 or start[0] == all_start[0])
            spread_seen |= len(all_start) > cap
        else:
            p_start, p_nodes = _job(plain, q)
            assert np.array_equal(start, p_start) and np.array_equal(nodes, p_nodes)
    assert spread_seen      # the instances do exercise the rule


def test_the_parameter_reaches_the_search():
    p = {**defaults(PARAMS), "method": "css", "jobs": 8, "nodes": 12}
    seeds = np.arange(100, 106, dtype=np.uint64)
    one = run_batch({**p, "first_fit_spread": 1}, seeds)
    two = run_batch({**p, "first_fit_spread": 2}, seeds)
    assert not np.array_equal(one["start"], two["start"], equal_nan=True)
    slots, batch, node_len, node_cost = _instance(1)
    with pytest.raises(ValueError, match="first_fit_spread"):
        find_alternatives(*slots, np.arange(batch.size), node_len, node_cost, batch.budget, batch.slots,
                          np.full(batch.size, FIRST_FIT), 3, shared=True, spread=0)
