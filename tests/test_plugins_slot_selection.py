"""The slot_selection window-criterion plug-in point: ``min_cost`` written as a
criterion gives the built-in's window bit for bit; any criterion picks the window a literal
Python scan picks (the step's cheapest window containing the new slot, within budget, kept
on a strict improvement of the criterion); a NaN criterion fails the replication naming
the criterion and the step's start."""
from __future__ import annotations

import math
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedsweep.pipeline.execution.execute import run
from schedsweep.pipeline.store.integrity import open_store
from schedsweep.pipeline.store.zarrstore import read_failures
from schedsweep.workloads import slot_selection as ss
from schedsweep.workloads.kernel_support.plugins import PluginError, resolve
from schedsweep.workloads.slot_selection.plugins import CRITERION, plugin_search
from schedsweep.workloads.slots.aep import aep_search
from schedsweep.workloads.slots.environment import generate_environment, job_on_nodes

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MIN_COST = "schedsweep.workloads.slot_selection.plugins:min_cost"

CRITERIA = '''
import numpy as np

def finish(t, window, node_len, node_cost, cand_end):
    longest = 0.0
    for q in range(window.shape[0]):
        longest = max(longest, node_len[window[q]])
    return t + longest

def nan_late(t, window, node_len, node_cost, cand_end):
    return np.nan if t > 0.0 else 1.0
'''


@pytest.fixture(scope="module")
def criteria(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sscrit")
    (folder / "ss_criteria.py").write_text(CRITERIA)
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


@st.composite
def instances(draw):
    """A small environment and a job (few nodes, ties likely, budgets from tight to loose)."""
    seed = draw(st.integers(0, 2**32 - 1))
    nodes = draw(st.integers(2, 7))
    n = draw(st.integers(1, min(3, nodes)))
    sigma = draw(st.sampled_from([0.0, 0.2]))
    env = generate_environment(np.random.default_rng(seed), nodes=nodes, interval=draw(st.sampled_from([150.0, 300.0])),
                               perf_integer=draw(st.booleans()), price_sigma=sigma,
                               price_exponent=draw(st.sampled_from([1.0, 1.5])), local_task_min=10.0,
                               local_task_max=60.0)
    T = draw(st.sampled_from([20.0, 40.0, 80.0]))
    node_len, node_cost = job_on_nodes(env, T, 2.0)
    budget = n * 2.0 * T * draw(st.sampled_from([0.3, 0.8, 1.0, 1.2, 3.0, 100.0]))
    if draw(st.booleans()) and sigma == 0.0:
        budget = float(math.fsum(sorted(node_cost)[:n]))   # exactly the cheapest: ties at the limit
    return (env.slot_node, env.slot_start, env.slot_end), node_len, node_cost, budget, n


def _literal_scan(slots, node_len, node_cost, budget, n, value):
    """The plug-in scan in plain Python: ``(start, sorted nodes)`` or None."""
    slot_node, slot_start, slot_end = slots
    cand_end = np.full(len(node_len), -np.inf)
    order = sorted(range(len(node_cost)), key=lambda j: (node_cost[j], j))
    best = None
    for i in range(len(slot_node)):
        k, t = int(slot_node[i]), float(slot_start[i])
        cand_end[k] = slot_end[i]
        if slot_end[i] - t < node_len[k]:
            continue
        others = [j for j in order if j != k and cand_end[j] - t >= node_len[j]][:n - 1]
        if len(others) < n - 1:
            continue
        window = others + [k]
        if not math.fsum(node_cost[window]) <= budget:
            continue
        v = value(t, window)
        if best is None or v < best[0]:
            best = (v, t, tuple(sorted(window)))
    return None if best is None else best[1:]


@SETTINGS
@given(instances())
def test_min_cost_as_a_plugin_is_bit_identical(inst):
    slots, node_len, node_cost, budget, n = inst
    want = aep_search(*slots, node_len, node_cost, budget, n, "min_cost")
    got = plugin_search(*slots, node_len, node_cost, budget, n, resolve(MIN_COST, CRITERION).cfunc, MIN_COST)
    assert got.found == want.found
    for name in ("start", "runtime", "finish", "proc_time", "cost"):
        assert np.array_equal(getattr(got, name), getattr(want, name), equal_nan=True), name
    assert np.array_equal(got.nodes, want.nodes) and np.array_equal(got.slots, want.slots)


@SETTINGS
@given(instances())
def test_a_new_criterion_picks_the_literal_scans_window(criteria, inst):
    slots, node_len, node_cost, budget, n = inst
    got = plugin_search(*slots, node_len, node_cost, budget, n,
                        resolve("ss_criteria:finish", CRITERION).cfunc, "ss_criteria:finish")
    want = _literal_scan(slots, node_len, node_cost, budget, n, lambda t, w: t + max(node_len[w]))
    if want is None:
        assert not got.found
    else:
        assert got.found and (got.start, tuple(got.nodes)) == want
        assert got.cost == math.fsum(node_cost[got.nodes]) <= budget


def test_run_batch_min_cost_plugin_equals_builtin():
    params = {p.name: p.default for p in ss.PARAMS}
    seeds = np.arange(4, dtype=np.uint64)
    a = ss.run_batch({**params, "algorithm": "min_cost"}, seeds)
    b = ss.run_batch({**params, "algorithm": MIN_COST}, seeds)
    for m in ss.METRICS:
        if not m.timing:
            assert np.array_equal(a[m.name], b[m.name], equal_nan=True), m.name
    assert np.array_equal(a["reason"], b["reason"]) and a["found"].sum() > 0


def test_nan_criterion_raises_naming_it_and_the_step(criteria):
    params = {p.name: p.default for p in ss.PARAMS}
    with pytest.raises(PluginError, match=r"window criterion ss_criteria:nan_late returned nan at t_w = [0-9.]+ "
                                          r"\(slot [0-9]+\)"):
        ss.run_batch({**params, "algorithm": "ss_criteria:nan_late"}, np.array([5], np.uint64))


def test_nan_criterion_is_recorded_and_the_sweep_goes_on(tmp_path):
    pkg = tmp_path / "ssplug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "crit.py").write_text(CRITERIA)
    spec = tmp_path / "ss.toml"
    spec.write_text(textwrap.dedent('''
        workload = "slot_selection"
        replications = 2
        seed = 3
        [sweep]
        algorithm = ["min_cost", "ssplug.crit:nan_late", "ssplug.crit:finish"]
        '''))
    path = run(str(spec), tmp_path / "s.zarr", workers=0, progress=False)
    status = open_store(path)["status"].values
    assert (status[0] == 1).all() and (status[1] == 3).all() and (status[2] == 1).all()
    failures = read_failures(path)
    assert len(failures) == 2 and all("window criterion ssplug.crit:nan_late returned nan at t_w = " in f["traceback"]
                                      for f in failures)
