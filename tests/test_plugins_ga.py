"""The GA objective plug-in point: the default objective ``gmean`` written as a
plug-in runs the same search bit for bit (every island's best per generation, the final
schedules, the counters); a plug-in returning NaN, in the initial population, in a later
generation or for a baseline's schedule, fails the replication with a message naming it and
where (period, generation, island), and in a sweep only that cell's replications fail."""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from schedsweep.pipeline.execution.execute import run
from schedsweep.pipeline.store.integrity import open_store
from schedsweep.pipeline.store.zarrstore import read_failures
from schedsweep.workloads import ga
from schedsweep.workloads.ga.instance import make_instance, period_problem
from schedsweep.workloads.ga.islands import GASettings, init_island, island_epoch, run_islands
from schedsweep.workloads.ga.planning import plan
from schedsweep.workloads.ga.plugins import ObjectiveNaN

GMEAN = "schedsweep.workloads.ga.plugins:gmean"
# metrics whose definition depends on the objective's name: the objective metric (the
# plug-in's value, log f, against the built-in's f) and the time to solution (a plug-in's
# target is relative, gmean's is a factor on f); the search behind them is compared exactly
SAME_SEARCH = [m.name for m in ga.METRICS if not m.timing and m.name not in
               ("objective_value", "generations_to_solution", "generations_to_own_final", "time_to_solution",
                "time_to_solution_within", "model_time_to_solution", "model_speedup", "model_time_one_island",
                "migrations_to_solution", "genes_to_solution")]   # measured against the target (its tolerance)

NAN_OBJECTIVES = '''
import numpy as np

def always_nan(body, header, start, dur, prio, width, proc_job, speed, ready, period_end):
    return np.nan

def nan_if_parallel(body, header, start, dur, prio, width, proc_job, speed, ready, period_end):
    return np.nan if width.max() > 1 else start.max()
'''


def _params(**kw):
    p = {prm.name: prm.default for prm in ga.PARAMS}
    p.update(units=8, groups=2, density=1.5, periods=2, population=10, max_generations=40,
             stall_generations=20, migration_interval=10, **kw)
    return p


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32), islands=st.sampled_from([1, 2]), parallel=st.booleans(),
       docking=st.sampled_from(["tau_first", "idle_genes_only"]), dep_prob=st.sampled_from([0.0, 0.3]))
def test_gmean_as_a_plugin_runs_the_same_search(seed, islands, parallel, docking, dep_prob):
    params = _params(islands=islands, parallel=parallel, docking=docking, dep_prob=dep_prob, width_high=3)
    inst = make_instance(ga.instance_settings(params), np.random.default_rng(seed))
    if inst.arrival.size == 0:
        return
    problem, _ = period_problem(inst, 0, np.full(inst.speed.shape[0], np.nan))
    runs = []
    for objective in ("gmean", GMEAN):
        s = ga.ga_settings({**params, "objective": objective})
        rngs = [np.random.default_rng([seed, k]) for k in range(islands)]
        runs.append(run_islands(problem, s, rngs))
    a, b = runs
    for name in ("hist_tau", "hist_fit", "body", "header", "counters", "final_taus", "final_fits"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.generations == b.generations > 0
    # and whole replications: every metric of the search, and the objective metric = mean log f
    seeds = np.array([seed], np.uint64)
    x = ga.run_batch({**params, "objective": "gmean"}, seeds)
    y = ga.run_batch({**params, "objective": GMEAN}, seeds)
    for name in SAME_SEARCH:
        assert np.array_equal(x[name], y[name], equal_nan=True), name
    if x["reason"][0] != 1:
        res = plan(make_instance(ga.instance_settings(params), ga.substreams(seed, 1 + islands)[0]), "ga",
                   ga.ga_settings(params), ga.substreams(seed, 1 + islands)[1:])
        assert y["objective_value"][0] == np.mean(res.log_gmean)


@pytest.fixture(scope="module")
def nan_module(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gaobj")
    (folder / "ga_nan_objectives.py").write_text(NAN_OBJECTIVES)
    sys.path.insert(0, str(folder))
    yield "ga_nan_objectives:always_nan"
    sys.path.remove(str(folder))


def test_nan_in_the_initial_population_names_objective_and_individual(nan_module):
    with pytest.raises(ObjectiveNaN, match=r"period 0: objective ga_nan_objectives:always_nan returned nan for "
                                           r"initial individual 0 \(generation 0\)"):
        ga.run_batch(_params(objective=nan_module), np.array([4], np.uint64))


def test_nan_in_a_later_generation_stops_the_run_naming_the_generation(nan_module):
    params = _params()
    inst = make_instance(ga.instance_settings(params), np.random.default_rng(9))
    problem, _ = period_problem(inst, 0, np.full(inst.speed.shape[0], np.nan))
    state = init_island(problem, GASettings(population=10, pm=0.05), np.random.default_rng(1))
    plugged = GASettings(population=10, pm=0.05, objective=nan_module)
    _, hist_tau, hist_fit = island_epoch(state, problem, plugged, 5, None)
    # the first generation evaluates a child (pm = 0.05 on every gene): it stops there
    assert np.isnan(hist_fit).all() and np.isnan(hist_tau).all()
    from schedsweep.workloads.ga.islands import _check_nan
    with pytest.raises(ObjectiveNaN, match=r"objective ga_nan_objectives:always_nan returned nan for a child in "
                                           r"generation 8 \(island 1\)"):
        _check_nan([np.zeros(5), hist_fit], 7, nan_module)


def test_nan_objective_is_recorded_and_the_sweep_goes_on(tmp_path):
    pkg = tmp_path / "gaplug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "obj.py").write_text(NAN_OBJECTIVES)
    spec = tmp_path / "ga.toml"
    spec.write_text(textwrap.dedent('''
        workload = "ga"
        replications = 2
        seed = 5
        [params]
        units = 8
        groups = 2
        density = 1.0
        periods = 1
        population = 6
        max_generations = 10
        width_high = 3
        objective = "gaplug.obj:nan_if_parallel"
        [sweep]
        parallel = [false, true]
        '''))
    path = run(str(spec), tmp_path / "s.zarr", workers=0, progress=False)
    status = open_store(path)["status"].values
    assert (status[0] == 1).all() and (status[1] == 3).all()
    failures = read_failures(path)
    assert len(failures) == 2 and all("objective gaplug.obj:nan_if_parallel returned nan for initial individual 0"
                                      in f["traceback"] for f in failures)


def test_nan_for_a_baseline_schedule_fails_too(nan_module):
    with pytest.raises(ObjectiveNaN, match=r"period 0: objective ga_nan_objectives:always_nan returned nan for "
                                           r"the backfill schedule"):
        ga.run_batch(_params(objective=nan_module, algorithm="backfill"), np.array([4], np.uint64))
