"""ga: a target every run reaches (param ``target_within``, metric ``time_to_solution_within``).

A period's target is one island's final best (``target = "one_island"``); the run reaches it
at the first generation whose best has the target's docking gap (or less) and an objective
at most ``target_within`` above the target's. On one-unit periods small enough for brute
force the reference island ends at the optimum, so the target is the known optimum: every
run (any P, any I_m) must reach it, and its time to solution must be the first generation
whose best is within the fraction of the optimum."""
from __future__ import annotations

import numpy as np
import pytest

import schedsweep.workloads.ga as ga
from naive_ga import brute_force
from schedsweep.workloads._contract import defaults
from schedsweep.workloads.ga.instance import InstanceSettings, make_instance
from schedsweep.workloads.ga.islands import GASettings, run_islands
from schedsweep.workloads.ga import planning
from schedsweep.workloads.ga.planning import WITHIN_LEVELS, plan

SEARCH = dict(population=30, pm=0.15, stall_generations=150, max_generations=1000)


def naive_first_within(hist_tau, hist_fit, opt_tau, opt_log_f, within):
    """First generation whose best has the optimum's gap (or less) and f <= (1 + within) f_opt."""
    for g, (t, lf) in enumerate(zip(hist_tau, hist_fit)):
        if t < opt_tau or (t == opt_tau and np.exp(lf) <= (1 + within) * np.exp(opt_log_f) * (1 + 1e-12)):
            return g
    return None


def tiny_instance():
    """One unit, two periods of at most 6 processes each (brute force: 6! orders)."""
    inst = make_instance(InstanceSettings(units=1, groups=1, density=4.0, periods=2, dep_prob=0.3),
                         np.random.default_rng(4))
    assert 3 <= inst.arrival.size <= 12
    return inst


def recorded_plan(monkeypatch, inst, settings, seeds, within):
    """``plan`` with the island runs recorded: ``(result, [(problem, IslandResult) per period])``
    (the one-island reference runs are recorded too, and left out of the list)."""
    runs = []

    def run(problem, s, rngs):
        res = run_islands(problem, s, rngs)
        runs.append((problem, s, res))
        return res

    monkeypatch.setattr(planning, "run_islands", run)   # the reference's runs go through it too
    res = plan(inst, "ga", settings, [np.random.default_rng(k) for k in seeds], run=run, within=within)
    return res, [(p, r) for p, s, r in runs if (s.islands, s.migration_interval)
                 == (settings.islands, settings.migration_interval)]


@pytest.mark.parametrize("islands,interval,within", [(1, 5, 0.05), (2, 5, 0.1), (3, 40, 0.02), (2, 300, 0.2)])
def test_every_run_reaches_the_known_optimum_within_the_fraction_at_the_first_generation_within_it(
        monkeypatch, islands, interval, within):
    inst = tiny_instance()
    s = GASettings(**SEARCH, islands=islands, migration_interval=interval)
    res, runs = recorded_plan(monkeypatch, inst, s, range(7, 7 + islands), within)
    assert len(runs) == len(res.targets) == 2
    assert res.reached   # every run reaches it
    total = 0
    for (problem, run), target in zip(runs, res.targets):
        optimum = brute_force(problem, "gmean")
        assert target == pytest.approx(optimum, rel=1e-12)   # the one-island reference ends at the optimum
        g = naive_first_within(run.hist_tau, run.hist_fit, *optimum, within)
        assert g is not None
        total += g
    assert res.generations_to_solution == total
    # every recorded tolerance level is timed the same way, against the same target
    for i, level in enumerate(WITHIN_LEVELS):
        assert res.reached_within[i]
        assert res.generations_within[i] == sum(naive_first_within(r.hist_tau, r.hist_fit, *t, level)
                                                for (_, r), t in zip(runs, res.targets))


PARAMS = {**defaults(ga.PARAMS), "units": 6, "groups": 2, "density": 2.0, "population": 10, "islands": 2,
          "migration_interval": 5}


def test_run_batch_is_reproducible_and_each_tolerance_column_is_the_run_with_that_tolerance():
    seeds = np.arange(5, dtype=np.uint64) + np.uint64(100)
    first = ga.run_batch(PARAMS, seeds)
    again = ga.run_batch(PARAMS, seeds)
    timing = {m.name for m in ga.METRICS if m.timing}   # wall-clock measurements
    for name, value in first.items():
        if name not in timing:
            assert np.array_equal(value, again[name], equal_nan=True), name
    cols = first["time_to_solution_within"]
    assert cols.shape == (5, len(WITHIN_LEVELS))
    for i, level in enumerate(WITHIN_LEVELS):
        out = first if level == 0.01 else ga.run_batch({**PARAMS, "target_within": level}, seeds)
        assert np.array_equal(out["time_to_solution"], cols[:, i], equal_nan=True), level
        assert np.array_equal(out["reason"] == 2, np.isnan(cols[:, i])), level
        # the tolerance changes only the measure, never the search
        assert np.array_equal(out["objective_value"], first["objective_value"])
    # a looser target is reached no later, and by every run that reached a tighter one
    for i in range(1, len(WITHIN_LEVELS)):
        tight, loose = cols[:, i - 1], cols[:, i]
        assert np.all(np.isnan(tight) | (loose <= tight))


def test_a_negative_tolerance_is_refused():
    with pytest.raises(ValueError, match="target_within"):
        plan(tiny_instance(), "ga", GASettings(**SEARCH), [np.random.default_rng(0)], within=-0.1)
    param = next(p for p in ga.PARAMS if p.name == "target_within")
    assert param.check(-0.1)[1] is not None and param.check(0.1)[1] is None


def test_ga_claims_counts_a_miss_per_tolerance_column_not_by_the_runs_reason():
    import sys
    from pathlib import Path

    import xarray as xr
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import ga_claims

    # replication 1 missed the run's own tolerance (reason 2) but reached the 0.2 target;
    # replication 2 had no jobs (reason 1): no run, not a miss
    t = np.array([[[10.0, 4.0], [np.nan, 7.0], [np.nan, np.nan]]])      # (interval, replication, within)
    ds = xr.Dataset({"time_to_solution_within": (("migration_interval", "replication", "within"), t),
                     "reason": (("migration_interval", "replication"), np.array([[0, 2, 1]], np.int8))},
                    coords={"migration_interval": [25], "within": ["0.01", "0.2"]})
    tight, loose = (ds.sel(within=w) for w in ("0.01", "0.2"))
    row = ga_claims.cell_rows(tight, "time_to_solution_within", "migration_interval", 0.95)[0].split("|")
    assert row[3].strip() == "1" and row[-2].strip() == "inf"      # median of 10, inf
    row = ga_claims.cell_rows(loose, "time_to_solution_within", "migration_interval", 0.95)[0].split("|")
    assert row[3].strip() == "0" and row[-2].strip() == "5.5"      # median of 4, 7
    # a quality is defined whether or not the run reached its target: no +inf in its median
    ds["gmean_length"] = (("migration_interval", "replication"), np.array([[3.0, 5.0, np.nan]]))
    row = ga_claims.cell_rows(ds, "gmean_length", "migration_interval", 0.95)[0].split("|")
    assert row[3].strip() == "0" and row[-2].strip() == "4"


def test_the_one_island_reference_repeats_island_0s_search_and_the_apart_reference_is_its_own(monkeypatch):
    # target one_island copies island 0's generator: a one-island run at another I_m (or island 0
    # before its first migrant) repeats the reference's search generation by generation
    params = {**PARAMS, "islands": 1, "target_within": 0.0}
    inst_seed = np.uint64(41)
    inst = make_instance(ga.instance_settings(params), ga.substreams(inst_seed, 1)[0])
    s = ga.ga_settings({**params, "migration_interval": 25})
    recorded = []

    def run(problem, s_, rngs):
        r = run_islands(problem, s_, rngs)
        recorded.append((s_.migration_interval, r))
        return r

    monkeypatch.setattr(planning, "run_islands", run)
    plan(inst, "ga", s, ga.substreams(inst_seed, 2)[1:], run=run)
    monkeypatch.undo()
    pairs = list(zip(recorded[0::2], recorded[1::2]))   # (reference at 50, the run at 25) per period
    assert pairs and all(a[0] == 50 and b[0] == 25 for a, b in pairs)
    for (_, ref), (_, mine) in pairs:
        n = min(len(ref.hist_fit), len(mine.hist_fit))
        assert np.array_equal(ref.hist_fit[:n], mine.hist_fit[:n])
    # one_island_apart: the reference island draws from its own stream, the same for every P and I_m
    targets = []
    for P, interval in ((1, 50), (2, 5), (3, 20)):
        s = ga.ga_settings({**params, "islands": P, "migration_interval": interval, "migrants": 1})
        res = plan(inst, "ga", s, ga.substreams(inst_seed, 1 + P)[1:], target="one_island_apart",
                   reference_rng=ga.reference_stream(inst_seed))
        targets.append(res.targets)
    assert targets[0][0] == targets[1][0] == targets[2][0]   # later periods' problems follow each run's schedule
    # ... and it is one island at I_m = 50 on that stream (period 0's problem is the first period's)
    problem, _ = planning.period_problem(inst, 0, np.full(inst.speed.shape[0], np.nan))
    one = run_islands(problem, ga.ga_settings({**params, "islands": 1, "migration_interval": 50}),
                      [ga.reference_stream(inst_seed)])
    assert targets[0][0] == (one.hist_tau[-1], one.hist_fit[-1])
    # with one island at I_m = 50 the copy-of-island-0 reference is the run itself; the apart one is not
    s1 = ga.ga_settings({**params, "islands": 1, "migration_interval": 50})
    own = plan(inst, "ga", s1, ga.substreams(inst_seed, 2)[1:], target="one_island")
    assert own.generations_to_solution == own.generations_to_own_final
    assert any(a != b for a, b in zip(own.targets, targets[0]))
    with pytest.raises(ValueError, match="reference_rng"):
        plan(inst, "ga", s1, ga.substreams(inst_seed, 2)[1:], target="one_island_apart")
    seeds = np.arange(3, dtype=np.uint64)
    apart = {**PARAMS, "target": "one_island_apart"}
    first, again = ga.run_batch(apart, seeds), ga.run_batch(apart, seeds)
    assert np.array_equal(first["time_to_solution_within"], again["time_to_solution_within"], equal_nan=True)
    assert np.array_equal(first["objective_value"], ga.run_batch(PARAMS, seeds)["objective_value"])  # same search
