"""ga: the islands as Dask tasks on the sweep's own cluster, and time on P modules in the model.

- ``island_execution = "dask"`` gives the same results as ``in_process`` for the same seeds,
  bit for bit (every metric but the wall-clock ones), on a Dask LocalCluster and, under the
  ``slurm`` marker, on the local Slurm; a run without a Dask cluster is refused at once.
- The model time on P modules: with free migration it is the evaluation count times the cost
  of an evaluation; with costs it equals a plain replay of the run's schedule of evaluations
  and exchanges (tests/naive_ga_time.py) on a tiny instance with two islands, and a
  hand-computed value.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import naive_ga_time as naive
import schedsweep.workloads.ga as ga
from schedsweep import pipeline
from schedsweep.pipeline.base.errors import SpecError
from schedsweep.workloads._contract import defaults
from schedsweep.workloads.ga.instance import InstanceSettings, make_instance, period_problem
from schedsweep.workloads.ga.islands import GASettings, _copy_rng, run_islands
from schedsweep.workloads.ga.model import Problem
from schedsweep.workloads.ga.planning import Costs, plan

DATA = [m.name for m in ga.METRICS if not m.timing]
TIMING = [m.name for m in ga.METRICS if m.timing]
SMALL = dict(units=8, groups=2, density=1.0, periods=2, population=10, islands=3, migration_interval=10,
             stall_generations=30)


def _params(**changes) -> dict:
    return {**defaults(ga.PARAMS), **SMALL, **changes}


def _seeds(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 2**63, n, dtype=np.uint64)


def _same(a: dict, b: dict) -> list[str]:
    """Names of the non-timing metrics that differ (NaN equal to NaN)."""
    return [k for k in DATA + ["reason"] if not np.array_equal(a[k], b[k], equal_nan=True)]


def test_dask_islands_equal_in_process_islands_on_a_local_cluster():
    from schedsweep.pipeline.execution.executors import open_executor
    from schedsweep.pipeline.execution.tasks import run_isolated, run_replications

    seeds = _seeds(3, 34)
    expected = run_replications("ga", _params(), seeds)["outputs"]
    on_dask = _params(island_execution="dask")
    # One worker with one slot: the islands run only because the replication that drives them
    # gives its slot back while it waits (holding it would wait forever).
    with open_executor(workers=1, cluster="dask") as executor:
        futures = executor.submit_many(run_isolated, [("ga", on_dask, seeds[:1], 600.0), ("ga", on_dask, seeds[1:], 600.0)],
                                       ["ga-islands-0", "ga-islands-1"])
        results = executor.results(futures)
    assert all(not r["failed"] for r in results), [r["failed"] for r in results]
    got = {k: np.concatenate([r["outputs"][k] for r in results]) for k in DATA + TIMING + ["reason"]}
    assert _same(expected, got) == []
    assert np.all(got["migrations"] > 0)   # the islands did exchange migrants, as tasks
    for name in TIMING:
        assert np.all(np.isfinite(got[name]) & (got[name] > 0)), name


def test_dask_islands_without_a_dask_cluster_are_refused_before_the_run(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(textwrap.dedent("""
        name = "s"
        workload = "ga"
        replications = 2
        seed = 1
        [params]
        density = 1.0
        island_execution = "dask"
        """))
    with pytest.raises(SpecError, match="--cluster dask"):
        pipeline.run(spec, tmp_path / "s.zarr", workers=1, progress=False)
    assert not (tmp_path / "s.zarr" / "zarr.json").exists()


@settings(max_examples=3, deadline=None)
@given(st.floats(0.25, 4.0), st.sampled_from([(1, 50), (2, 5), (3, 20)]), st.integers(0, 2**32))
def test_with_free_migration_the_model_time_is_the_evaluation_count(cost, shape, seed):
    islands, interval = shape
    out = ga.run_batch(_params(islands=islands, migration_interval=interval, evaluation_cost=cost),
                       np.array([seed], np.uint64))
    z = SMALL["population"]
    if np.isnan(out["time_to_solution"][0]):  # never solved within the cap: undefined in both counts
        assert np.isnan(out["model_time_to_solution"][0])
    else:
        assert out["model_time_to_solution"][0] == pytest.approx(out["time_to_solution"][0] * cost, rel=1e-12)
    assert out["model_time"][0] == pytest.approx(out["generations"][0] * z * cost, rel=1e-12)
    if (islands, interval) == (1, 50):   # the run is its own one-island reference: k_p = 1
        assert np.array_equal(out["model_time_one_island"], out["model_time_to_solution"], equal_nan=True)
        assert out["model_speedup"][0] == 1.0 or not out["model_time_to_solution"][0] > 0


def _one_period(seed: int):
    inst = make_instance(InstanceSettings(units=4, groups=2, density=1.5, periods=1, dep_prob=0.2),
                         np.random.default_rng(seed))
    problem, _ = period_problem(inst, 0, np.full(4, np.nan))
    return inst, problem


@pytest.mark.parametrize("seed", [3, 8])
def test_the_model_time_of_two_islands_is_the_replayed_schedule(seed):
    inst, problem = _one_period(seed)
    s = GASettings(population=6, pm=0.05, islands=2, migration_interval=3, stall_generations=12, max_generations=40)
    costs = Costs(evaluation=2.0, latency=5.0, gene_time=0.5)
    genes = problem.n_procs + problem.n_units
    gens = lambda: [np.random.default_rng(seed + 1), np.random.default_rng(seed + 2)]  # noqa: E731
    run = run_islands(problem, s, gens())
    one = run_islands(problem, GASettings(**{**s.__dict__, "islands": 1, "migration_interval": 50}),
                      [_copy_rng(gens()[0])])
    target = (one.hist_tau[-1], one.hist_fit[-1])   # the one-island reference's final best
    within = 0.01
    replay = dict(gmean=True, within=within, population=6, interval=3, migrants=1, genes=genes, evaluation=2.0,
                  latency=5.0, gene_time=0.5)
    t_p = naive.time_to_solution(run.hist_tau, run.hist_fit, target, islands=2, **replay)
    t_1 = naive.time_to_solution(one.hist_tau, one.hist_fit, target, islands=1, **{**replay, "interval": 50})
    whole = naive.clock_after(naive.schedule(run.generations, 2, 6, 3, 1), run.generations, 2.0, 5.0, 0.5, 1, genes)

    res = plan(inst, "ga", s, gens(), target="one_island", within=within, costs=costs)
    assert res.generations == run.generations and run.migrations > 0
    assert res.model_time == whole
    if res.reached:
        assert res.model_time_to_solution == t_p
    else:
        assert np.isnan(t_p)
    assert res.model_time_one_island == t_1


def test_a_hand_computed_model_time():
    # 3 processes on 2 units: a migrant is 5 genes. Z = 4, I_m = 3: generation 7 comes after
    # 7 island-generations (4 evaluations each, at 2) and 2 exchanges (after 3 and 6: 5 + 5 x 0.5).
    problem = Problem(speed=np.ones(2), group=np.zeros(2, np.int64), ready=np.zeros(2), prev_end=np.full(2, np.nan),
                      width=np.ones(3, np.int64), length=np.ones(3), prio=np.ones(3, np.int64),
                      pred=np.full(3, -1), mask=np.ones((3, 2), bool), arrival=np.zeros(3), period_end=0.0)
    s = GASettings(population=4, islands=2, migration_interval=3, migrants=1)
    hand = 7 * 4 * 2 + 2 * (5 + 1 * 5 * 0.5)
    assert hand == 71
    assert Costs(2.0, 5.0, 0.5).to_generation(7, problem, s) == hand
    events = naive.schedule(9, 2, 4, 3, 1)
    assert naive.clock_after(events, 7, 2.0, 5.0, 0.5, 1, 5) == hand
    # one island, or no migrants: no exchange is ever paid
    assert Costs(2.0, 5.0, 0.5).to_generation(7, problem, GASettings(population=4, islands=1)) == 56
    assert Costs(2.0, 5.0, 0.5).to_generation(7, problem, GASettings(population=4, islands=2, migrants=0,
                                                                      migration_interval=3)) == 56


@pytest.mark.slurm
@pytest.mark.timeout(400)
def test_dask_islands_on_the_local_slurm_equal_in_process(tmp_path):
    import subprocess
    import sys

    from test_slurm_cluster import _profile, require_slurm

    require_slurm()
    text = textwrap.dedent("""
        name = "ga-islands"
        workload = "ga"
        replications = 4
        seed = 3434
        [params]
        """) + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in SMALL.items())
    local = tmp_path / "local.toml"
    local.write_text(text)
    on_dask = tmp_path / "dask.toml"
    on_dask.write_text(text + 'island_execution = "dask"\n')
    expected = pipeline.run(local, tmp_path / "local.zarr", workers=0, progress=False)
    cli = [sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(on_dask), "--store", str(tmp_path / "s.zarr"),
           "--cluster", "slurm", "--profile", str(_profile(tmp_path, 2, 2)), "--jobs", "2", "--no-progress"]
    proc = subprocess.run(cli, capture_output=True, text=True, timeout=350)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a = pipeline.open_store(expected).load()
    b = pipeline.open_store(tmp_path / "s.zarr").load()
    assert [k for k in DATA + ["status", "reason", "seed"] if not a[k].equals(b[k])] == []
    assert float(b["migrations"].min()) > 0
