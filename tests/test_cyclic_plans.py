"""Plans of the cyclic scheme: alternatives against the literal rounds procedure, plan
invariants for every method, FRSM k = 1 with first fit equals CSS, shift invariants."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import naive_cyclic as naive
from schedsweep.workloads._contract import defaults
from schedsweep.workloads.cyclic import PARAMS, run_cycle
from schedsweep.workloads.cyclic.alternatives import find_alternatives
from schedsweep.workloads.cyclic.cycle import METHODS, batch_of, environment_of
from schedsweep.workloads.cyclic.batch import job_matrices
from schedsweep.workloads.cyclic.frsm import sub_batches
from schedsweep.workloads.cyclic.search import FIRST_FIT, USER_CRITERIA_EXACT, USER_CRITERIA_SOURCE, first_fit
from schedsweep.workloads.cyclic.shift import shift_plan
from schedsweep.workloads._contract import substreams
from schedsweep.workloads.slots.aep import aep_search, cut_window

SETTINGS = settings(max_examples=25, deadline=None)
NAMES_SOURCE = ("amp", "min_runtime", "min_finish", "min_cost")
NAMES_EXACT = ("amp", "min_runtime_exact", "min_finish_exact", "min_cost")


def small_params(**over):
    p = defaults(PARAMS)
    p.update(nodes=6, interval=300.0, jobs=6, job_slots_max=3, max_alternatives=4, n_css=3)
    # the literal oracles here encode disjoint alternatives (tests/naive_cyclic.py); shared ones are
    # tested in test_cyclic_shared_alternatives.py, test_cyclic_feasible.py, test_cyclic_retry.py
    p.update(job_slots_min=1, shared_alternatives=False)
    p.update(over)
    return p


@st.composite
def cases(draw):
    over = dict(nodes=draw(st.integers(2, 8)), jobs=draw(st.integers(1, 7)),
                job_slots_max=draw(st.integers(1, 3)), max_alternatives=draw(st.integers(1, 5)),
                strategy=draw(st.sampled_from(["max_income", "min_time", "min_cost", "min_idle"])),
                dp_time=draw(st.sampled_from(["proc_time", "runtime", "finish"])),
                frsm_k=draw(st.integers(1, 4)), priority=draw(st.sampled_from(["first", "cost", "runtime"])),
                bf_variant=draw(st.sampled_from(["conservative", "easy"])),
                bf_budget=draw(st.sampled_from(["ignore", "enforce"])),
                css_part=draw(st.sampled_from(["frsm", "css"])))
    over["n_css"] = draw(st.integers(0, over["jobs"]))
    return small_params(**over), draw(st.integers(0, 2**32 - 1))


def _instance(params, seed):
    env_rng, batch_rng, crit_rng, rho_rng = substreams(seed, 4)
    env = environment_of(params, env_rng)
    batch = batch_of(params, batch_rng, crit_rng, rho_rng)
    node_len, node_cost = job_matrices(batch, env.perf, env.price, params["perf_min"])
    return env, batch, node_len, node_cost


@SETTINGS
@given(cases(), st.sampled_from(["first_fit", "source", "exact"]))
def test_alternatives_equal_the_literal_rounds(case, which):
    params, seed = case
    env, batch, node_len, node_cost = _instance(params, seed)
    if which == "first_fit":
        codes = np.full(batch.size, FIRST_FIT, np.int64)
        names = ["amp"] * batch.size
    else:
        table, words = (USER_CRITERIA_SOURCE, NAMES_SOURCE) if which == "source" else (USER_CRITERIA_EXACT, NAMES_EXACT)
        codes = table[batch.criterion]
        names = [words[c] for c in batch.criterion]
    jobs = np.arange(batch.size)
    slots = (env.slot_node, env.slot_start, env.slot_end)
    alts, _ = find_alternatives(*slots, jobs, node_len, node_cost, batch.budget, batch.slots, codes,
                                params["max_alternatives"])
    expected = naive.naive_alternatives(slots, list(jobs), node_len, node_cost, batch.budget, batch.slots,
                                        names, params["max_alternatives"])
    for q, j in enumerate(jobs):
        got = [(alts.start[a], tuple(int(k) for k in alts.nodes[a] if k >= 0))
               for a in range(alts.offsets[q], alts.offsets[q + 1])]
        assert got == expected[j]
        assert len(got) <= params["max_alternatives"]
    # alternatives of all jobs are pairwise disjoint and inside slots (a valid "plan" of all of them)
    owner = np.repeat(jobs, np.diff(alts.offsets))
    lens = node_len[owner]
    naive.check_windows(env, alts.start, alts.nodes, lens, batch.slots[owner])


@SETTINGS
@given(cases(), st.integers(0, 3))
def test_first_fit_resumed_is_amp(case, job):
    """The alternatives' own AMP scan equals aep_search amp, from any earlier resume time."""
    params, seed = case
    env, batch, node_len, node_cost = _instance(params, seed)
    j = job % batch.size
    sn, ss, se = env.slot_node, env.slot_start, env.slot_end
    nl, nc = np.ascontiguousarray(node_len[j]), np.ascontiguousarray(node_cost[j])
    order = np.argsort(nc, kind="mergesort")
    scratch = (np.empty(len(nl)), np.empty(batch.slots[j], np.int64), np.empty(batch.slots[j]))
    mask = np.ones(len(nl), np.bool_)
    t_from = 0.0
    for _ in range(4):    # successive windows with cutting, as in the rounds
        w = aep_search(sn, ss, se, nl, nc, float(batch.budget[j]), int(batch.slots[j]), "amp")
        found, start, nodes = first_fit(sn, ss, se, nl, nc, order, mask, batch.budget[j], batch.slots[j],
                                        t_from, *scratch)
        assert found == w.found
        if not found:
            break
        assert start == w.start and list(nodes) == list(w.nodes)
        t_from = start
        sn, ss, se = cut_window(sn, ss, se, w.slots, w.start, nl)


@SETTINGS
@given(cases(), st.sampled_from(METHODS))
def test_every_plan_is_valid(case, method):
    params, seed = case
    params["method"] = method
    cycle = run_cycle(params, seed)
    b = cycle.batch
    # planned windows: n distinct nodes, slots of the right lengths, no overlaps, no local load
    naive.check_windows(cycle.env, cycle.plan.start, cycle.plan.nodes, cycle.node_len, b.slots)
    # actual execution: each job occupies rho * len on its nodes
    naive.check_windows(cycle.env, cycle.actual_start, cycle.actual_nodes, cycle.node_len, b.slots, b.rho)
    if method in ("css", "css_s", "frsm"):
        assert np.array_equal(cycle.actual_start, cycle.plan.start, equal_nan=True)
        assert np.isfinite(cycle.plan.alternatives).all()
        # a job is scheduled exactly when it found an alternative
        assert np.array_equal(~np.isnan(cycle.plan.start), cycle.plan.alternatives > 0)


@SETTINGS
@given(cases())
def test_frsm_k1_first_fit_is_css(case):
    params, seed = case
    css = run_cycle({**params, "method": "css"}, seed)
    frsm = run_cycle({**params, "method": "frsm", "frsm_k": 1, "frsm_alternatives": "first_fit"}, seed)
    assert np.array_equal(css.plan.start, frsm.plan.start, equal_nan=True)
    assert np.array_equal(css.plan.nodes, frsm.plan.nodes)
    assert np.array_equal(css.plan.alternatives, frsm.plan.alternatives)


@SETTINGS
@given(cases())
def test_every_method_sees_the_same_batch(case):
    params, seed = case
    cycles = [run_cycle({**params, "method": m}, seed) for m in METHODS]
    for c in cycles[1:]:
        for a, b in zip(c.batch, cycles[0].batch):
            assert np.array_equal(a, b)
        assert np.array_equal(c.env.slot_start, cycles[0].env.slot_start)


@SETTINGS
@given(cases(), st.sampled_from(METHODS))
def test_actual_equals_planned_when_jobs_run_their_reservation(case, method):
    params, seed = case
    params.update(method=method, runtime_factor_min=1.0, runtime_factor_max=1.0)
    cycle = run_cycle(params, seed)
    assert np.all(cycle.batch.rho == 1.0)
    assert np.array_equal(cycle.actual_start, cycle.plan.start, equal_nan=True)
    assert np.array_equal(cycle.actual_nodes, cycle.plan.nodes)


@pytest.mark.parametrize("J", [0, 1, 5, 20])
@pytest.mark.parametrize("k", [1, 2, 3, 7, 20])
def test_sub_batches_cover_every_job_once(J, k):
    parts = sub_batches(J, k)
    assert len(parts) == k
    assert [q for part in parts for q in part] == list(range(J))


@SETTINGS
@given(cases())
def test_shift_moves_windows_earlier_only(case):
    params, seed = case
    css = run_cycle({**params, "method": "css"}, seed)
    slots = (css.env.slot_node, css.env.slot_start, css.env.slot_end)
    shifted = shift_plan(slots, css.plan.start, css.plan.nodes, css.node_len, css.order)
    ran = ~np.isnan(css.plan.start)
    assert np.array_equal(ran, ~np.isnan(shifted))
    assert np.all(shifted[ran] <= css.plan.start[ran])          # never later
    assert np.all(shifted[ran] >= 0)
    # nodes and lengths are kept by construction (same nodes array); no overlap created
    naive.check_windows(css.env, shifted, css.plan.nodes, css.node_len, css.batch.slots)
    expected = naive.naive_shift(css.env, css.plan.start, css.plan.nodes, css.node_len, css.order)
    assert np.array_equal(shifted, expected, equal_nan=True)
    # CSS-S is CSS plus this shift: same windows, same cost
    css_s = run_cycle({**params, "method": "css_s"}, seed)
    assert np.array_equal(css_s.plan.nodes, css.plan.nodes)
    assert np.array_equal(css_s.plan.start, shifted, equal_nan=True)
