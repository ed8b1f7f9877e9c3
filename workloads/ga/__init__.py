"""Genetic-algorithm scheduling with island subpopulations, migration and continuous planning.

Shapovalov 2011 (model ``docs/models/ga.md``), against the source's FCFS and Backfill
baselines on the same instances.

Random streams per replication, in this order: the instance (units, jobs, resources,
dependencies, arrivals), then one per island (``islands`` of them) for the GA's draws.
All are spawned for every algorithm, so the instance of replication r is the same for
the GA, Backfill and FCFS and for any number of islands.

Time to solution (our rule; the source's T_p): generations until a period's best reaches a
fixed target quality, times Z, summed over periods. ``target = "one_island"`` (default): the
target is the final best (tau, f) of one island at I_m = 50 with the same settings on the same
period problem, the same for every P and I_m, from a copy of island 0's generator (so island 0
repeats the reference's search until its first migrant arrives: with ``migrants = 0`` it misses
only if the run stops first, and with rare migration it follows the reference for longer);
``"one_island_apart"``: the same reference island on a stream of its own
(:func:`reference_stream`); ``"own_final"``: each run's own final best.
A period reaches it at the first generation whose best has the target's docking gap (or a
smaller one) and f at most ``target_within`` above the target's. ``target_within = 0.01``
(default, the measure of before) is tighter than the spread of final qualities, so runs that
end above one island's final never reach it (``target_not_reached``, NaN); a larger fraction
is a target every run reaches (at P = 4, D = 4, I_m = 25 .. 300: 0.2, benchmarks/calibration.md,
GA, "a target every run reaches"). ``time_to_solution_within`` records the time at the
tolerances 0.01, 0.02, 0.05, 0.1 and 0.2 in every run.

Time on P computing modules (the source's T_p and k_p = T_1 / T_p, "time with P computing
modules"; ``docs/models/ga.md``, "Time to solution and speed-up"). Each island runs on its own module *(our rule: the
source gives P subpopulations on P modules, not the cost of their parts)*:

- an island-generation costs ``Z * evaluation_cost``: every individual of a generation is
  counted as evaluated, as in docs/models/ga.md's deterministic cost (generations x the cost of one
  island-generation); the islands evolve side by side, so P islands take the time of one;
- the islands meet at every migration (every I_m generations, the epoch ends where the stop
  rules are checked too) *(our rule: synchronous migration)*; one exchange costs
  ``migration_latency + migrants * (N + C) * migration_gene_time``: a migrant is its whole
  chromosome (body of N genes, header of C) sent over a link of ``1 / migration_gene_time``
  genes per time unit, and the P sends of the ring go at once *(our rule: the source states that
  an exchange costs communication, not its form)*;
- ``model_time_to_solution`` (T_p) is the time until the generation that reaches the target:
  generations_to_solution x Z x evaluation_cost plus the exchanges before it; ``model_time_one_island``
  (T_1) the same for the one-island reference run (no exchanges), and ``model_speedup`` their
  ratio per replication. The defaults (1, 0, 0) make model time the evaluation count, so
  ``model_time_to_solution`` = ``time_to_solution``. ``migrations_to_solution`` and
  ``genes_to_solution`` let any other latency and bandwidth be priced from one store
  (benchmarks/ga_cost_claims.py): the costs do not change the search.

``island_execution = "dask"`` runs each island's epochs as tasks on the sweep's own Dask
cluster (:mod:`.dask_islands`, ``pipeline.execution.subtasks``); results are identical to ``in_process``
and the wall time per generation and per exchange are recorded (``wall_per_generation``,
``wall_per_migration``).

Modules: :mod:`.model` (problem arrays, chromosome, timing), :mod:`.objectives`,
:mod:`.baselines`, :mod:`.crossover`, :mod:`.operators`, :mod:`.islands`, :mod:`.dask_islands`,
:mod:`.instance`, :mod:`.planning`.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._contract import QUANTILES, Metric, Param, empty_outputs, quantiles, substreams
from ..kernel_support.lazy import handed_on
from ..kernel_support.plugins import fails_loudly
from .choices import DOCKING, METHODS, OBJECTIVES, WITHIN_LEVELS
from .points import PLUGINS

# The declarations import no numba (``schedsweep workloads`` lists them quickly); the kernels
# are imported by the functions that run a replication, and handed on when asked for.
__getattr__ = handed_on(__name__, {"InstanceSettings": ".instance", "make_instance": ".instance",
                                   "GASettings": ".islands", "plan": ".planning"})

PARAMS = (
    Param("algorithm", "str", "ga", "scheduler: the island GA, the source's Backfill, or FCFS", choices=METHODS),
    Param("parallel", "bool", False, "jobs are parallel (2..8 processes in one group) instead of single processes"),
    Param("units", "int", 32, "computing units C", low=1),
    Param("groups", "int", 4, "disjoint groups (sites) the units are split into", low=1),
    Param("speed_low", "float", 1.0, "lowest unit speed coefficient k_m (U[low, high])", low=1e-6),
    Param("speed_high", "float", 2.0, "highest unit speed coefficient k_m", low=1e-6),
    Param("density", "float", 4.0, "D = N / C: processes per unit arriving in one period", low=0.01),
    Param("load", "float", 0.8, "offered load: process arrival rate = load * C / mean slot length", low=1e-6),
    Param("periods", "int", 3, "planning periods per replication", low=1),
    Param("width_low", "int", 2, "fewest processes of a parallel job", low=1),
    Param("width_high", "int", 8, "most processes of a parallel job", low=1),
    Param("length_low", "float", 10.0, "shortest nominal process length (time units at speed 1)", low=1e-6),
    Param("length_high", "float", 100.0, "longest nominal process length", low=1e-6),
    Param("p_max", "int", 3, "priorities are uniform on the integers 1 .. p_max", low=1),
    Param("dep_prob", "float", 0.1, "probability that a job depends on one earlier job of its period",
          low=0.0, high=1.0),
    Param("objective", "str", "gmean", "GA objective: the source's geometric mean of weighted unit lengths, "
          "makespan, priority-weighted mean completion, or a plug-in 'package.module:function' "
          "(`schedsweep workloads ga`)", choices=OBJECTIVES, plugin=True),
    Param("docking", "str", "tau_first", "rank GA candidates by (docking gap tau, objective) as the source, "
          "or by the objective alone (idle genes still pin each unit's first slot)", choices=DOCKING),
    Param("population", "int", 50, "Z: individuals per island (spec: 50 non-parallel, 25 parallel)", low=2),
    Param("pc", "float", 0.3, "crossover probability per pair", low=0.0, high=1.0),
    Param("pm", "float", 0.00032, "mutation probability per gene (spec: 0.00032 non-parallel, 0.00065 parallel)",
          low=0.0, high=1.0),
    Param("elite", "float", 0.1, "E: fraction of each island kept unchanged (at least one individual)",
          low=0.0, high=1.0),
    Param("tournament", "int", 2, "tournament size of the parent selection (1 = uniform)", low=1),
    Param("islands", "int", 1, "P: island subpopulations", low=1),
    Param("migration_interval", "int", 50, "I_m: generations between ring migrations (and stop checks)", low=1),
    Param("migrants", "int", 1, "best individuals each island sends to the next one", low=0),
    Param("init_mutations", "int", 5, "swap attempts perturbing each initial individual but the first", low=0),
    Param("island_execution", "str", "in_process", "run the islands of a replication in its own process, or "
          "as separate tasks exchanging migrants on the sweep's Dask cluster (--cluster dask or slurm, or "
          "--scheduler); results are identical", choices=("in_process", "dask")),
    Param("evaluation_cost", "float", 1.0, "model time of one objective evaluation on one computing module "
          "(time units; an island-generation costs Z of them; 1 = model time counts evaluations)", low=0.0),
    Param("migration_latency", "float", 0.0, "model time of one exchange of migrants, whatever their size (time "
          "units; all P ring sends of a migration at once)", low=0.0),
    Param("migration_gene_time", "float", 0.0, "model time to send one gene of a migrant, 1 / bandwidth (time "
          "units; a migrant is its whole chromosome, N + C genes)", low=0.0),
    Param("stall_generations", "int", 100, "stop when the best has not improved for this many generations", low=1),
    Param("max_generations", "int", 100_000, "stop after this many generations per period, a safety net "
          "behind the stall rule (runs it stops are counted in capped_periods; 5,000 before, which stopped "
          "every run from D = 4 on)", low=0),
    Param("target", "str", "one_island", "the fixed quality time to solution is counted against, per period: "
          "the final best of one island with these settings on the same problem (so T_1 / T_p compares "
          "equal quality for every P and I_m; costs one more one-island run per period when P > 1), or each "
          "run's own final best (the measure before); one_island_apart: as one_island but the reference "
          "island draws from a stream of its own (the first child of the instance stream), where one_island "
          "copies island 0's, so that island 0 repeats the reference's search until its first migrant arrives",
          choices=("one_island", "one_island_apart", "own_final")),
    Param("target_within", "float", 0.01, "our rule: a period reaches its target at the first generation whose "
          "best has the target's docking gap (or less) and an objective at most this fraction above the target's "
          "(gmean: f <= (1 + it) f_target). 0.01 is the measure of before; a larger fraction is a target every "
          "run reaches (benchmarks/calibration.md, GA, 'a target every run reaches'); time_to_solution_within "
          "records 0.01 .. 0.2 in every run", low=0.0),
)

METRICS = (
    Metric("objective_value", "time", "the chosen objective of each period's schedule, mean over periods "
           "(gmean: f; makespan and weighted_completion: from the period end)"),
    Metric("gmean_length", "time", "the source objective f (geometric mean of weighted unit lengths), "
           "mean over periods"),
    Metric("makespan", "time", "last slot end minus the period end, mean over periods"),
    Metric("weighted_completion", "time", "sum p C / sum p over slots, C from the period end, mean over periods"),
    Metric("mean_wait", "time", "mean over jobs of start minus arrival"),
    Metric("wait_quantiles", "time", "percentiles over jobs of start minus arrival", dims=QUANTILES),
    Metric("tau", "time", "docking gap: sum over periods and units of first start minus previous end"),
    Metric("generations", "generations", "GA generations run, summed over periods (NaN for baselines)"),
    Metric("generations_to_solution", "generations", "generations until the best reaches the period's target "
           "(params target, target_within), summed over periods (NaN for baselines or if a period never reached it)"),
    Metric("time_to_solution_within", "evaluations", "time_to_solution with the target's tolerance "
           "target_within set to each of these fractions instead (NaN where a period never reached it)",
           dims=(("within", tuple(f"{w:g}" for w in WITHIN_LEVELS)),)),
    Metric("generations_to_own_final", "generations", "generations until the best is within 1% of the period's "
           "own final best, summed over periods (the measure before the fixed target; NaN for baselines)"),
    Metric("capped_periods", "periods", "periods whose GA was stopped by max_generations, not by stalling "
           "(NaN for baselines)"),
    Metric("time_to_solution", "evaluations", "T_p: generations_to_solution x Z, the deterministic cost on one "
           "computing module per island (NaN for baselines)"),
    Metric("evaluations", "evaluations", "objective evaluations over all islands and periods (NaN for baselines)"),
    Metric("model_time_to_solution", "time", "T_p in model time on P computing modules (one island each): "
           "generations_to_solution x Z x evaluation_cost + the exchanges before it x (migration_latency + "
           "migrants x (N + C) x migration_gene_time), summed over periods (NaN where time_to_solution is)"),
    Metric("model_speedup", "ratio", "k_p = T_1 / T_p in model time: T_1 the one-island reference run's model "
           "time to the same target (no migration), T_p model_time_to_solution (NaN for target own_final)"),
    Metric("model_time_one_island", "time", "T_1: the one-island reference run's model time to the target, "
           "summed over periods (NaN for target own_final)"),
    Metric("model_time", "time", "model time of the whole GA run on P modules (every generation and exchange)"),
    Metric("migrations_to_solution", "exchanges", "exchanges of migrants before the target was reached, summed "
           "over periods (T_p at another latency L: time_to_solution x evaluation_cost + this x L + "
           "genes_to_solution x gene time)"),
    Metric("genes_to_solution", "genes", "genes each ring link carried before the target (migrants x (N + C) "
           "per exchange), summed over periods"),
    Metric("migrations", "exchanges", "exchanges of migrants in the whole run, summed over periods"),
    Metric("wall_per_generation", "s", "wall time of the island epochs per generation (islands in one process "
           "one after another, or as Dask tasks: then with the tasks' scheduling and transfers)", timing=True),
    Metric("wall_per_migration", "s", "wall time per exchange of selecting the emigrants until they are ready "
           "(NaN without migration)", timing=True),
    Metric("jobs", "jobs", "jobs scheduled over all periods"),
    Metric("processes", "processes", "processes scheduled over all periods"),
    Metric("wall_seconds", "s", "wall time of the scheduler over all periods", timing=True),
)

REASONS = {
    0: ("none", "the replication produced every metric"),
    1: ("no_jobs", "no job arrived in any period"),
    2: ("target_not_reached", "a period's GA never reached its target quality (time to solution undefined)"),
}


def check_params(params: Mapping[str, Any]) -> list[str]:
    errors = []
    if params["groups"] > params["units"]:
        errors.append(f"groups ({params['groups']}) must not exceed units ({params['units']})")
    if params["speed_low"] > params["speed_high"]:
        errors.append(f"speed_low ({params['speed_low']}) must not exceed speed_high ({params['speed_high']})")
    if params["length_low"] > params["length_high"]:
        errors.append(f"length_low ({params['length_low']}) must not exceed length_high ({params['length_high']})")
    # checked even when parallel is false: a swept `parallel` must not make a bad pair valid
    if params["width_low"] > params["width_high"]:
        errors.append(f"width_low ({params['width_low']}) must not exceed width_high ({params['width_high']})")
    if params["parallel"]:
        smallest = params["units"] // params["groups"] if params["groups"] <= params["units"] else 0
        if params["width_high"] > smallest:
            errors.append(f"width_high ({params['width_high']}) must not exceed the smallest group "
                          f"(units // groups = {smallest}) when parallel is true")
    if params["migrants"] >= params["population"]:
        errors.append(f"migrants ({params['migrants']}) must be smaller than population ({params['population']})")
    return errors


def reference_stream(seed) -> np.random.Generator:
    """The stream of target ``one_island_apart``'s reference island: the first child of the
    instance stream's seed sequence, so it is the same for every P and I_m and none of the
    islands' streams (children 1 .. P of the replication's seed sequence)."""
    instance_seq = np.random.SeedSequence(int(seed)).spawn(1)[0]
    return np.random.Generator(np.random.PCG64(instance_seq.spawn(1)[0]))


def instance_settings(params: Mapping[str, Any]) -> InstanceSettings:
    from .instance import InstanceSettings

    return InstanceSettings(**{k: params[k] for k in InstanceSettings.__dataclass_fields__})


def ga_settings(params: Mapping[str, Any]) -> GASettings:
    from .islands import GASettings

    return GASettings(**{k: params[k] for k in GASettings.__dataclass_fields__})


def uses_cluster(params: Mapping[str, Any]) -> bool:
    """The replications submit their islands as tasks to the sweep's Dask cluster
    (``pipeline.execution.subtasks``): the GA with ``island_execution = "dask"``."""
    return params["island_execution"] == "dask" and params["algorithm"] == "ga"


def costs(params: Mapping[str, Any]) -> Costs:
    """The model time's costs (:class:`.planning.Costs`) of ``params``."""
    from .planning import Costs

    return Costs(params["evaluation_cost"], params["migration_latency"], params["migration_gene_time"])


def _island_runner(params: Mapping[str, Any]):
    if uses_cluster(params):
        from .dask_islands import run_islands_dask

        return run_islands_dask
    from .islands import run_islands

    return run_islands


@fails_loudly
def run_batch(params: Mapping[str, Any], seeds: np.ndarray) -> dict[str, np.ndarray]:
    from .instance import make_instance
    from .planning import plan

    out = empty_outputs(METRICS, len(seeds))
    inst_settings, settings = instance_settings(params), ga_settings(params)
    method = params["algorithm"]
    for r, seed in enumerate(seeds):
        streams = substreams(seed, 1 + settings.islands)
        inst = make_instance(inst_settings, streams[0])
        if inst.arrival.size == 0:
            out["reason"][r] = 1
            continue
        res = plan(inst, method, settings, streams[1:], run=_island_runner(params), target=params["target"],
                   within=params["target_within"], reference_rng=reference_stream(seed), costs=costs(params))
        f = np.exp(res.log_gmean)
        chosen = {"gmean": f, "makespan": res.makespan, "weighted_completion": res.weighted_completion}
        out["objective_value"][r] = np.mean(chosen.get(settings.objective, res.plugin_objective))
        out["gmean_length"][r] = np.mean(f)
        out["makespan"][r] = np.mean(res.makespan)
        out["weighted_completion"][r] = np.mean(res.weighted_completion)
        out["mean_wait"][r] = np.mean(res.waits)
        out["wait_quantiles"][r] = quantiles(res.waits)
        out["tau"][r] = np.sum(res.tau)
        out["jobs"][r] = inst.arrival.size
        out["processes"][r] = inst.width.sum()
        out["wall_seconds"][r] = res.wall_seconds
        if method == "ga":
            out["generations"][r] = res.generations
            out["generations_to_own_final"][r] = res.generations_to_own_final
            out["capped_periods"][r] = res.capped_periods
            out["evaluations"][r] = res.counters[0]
            out["time_to_solution_within"][r] = np.where(res.reached_within,
                                                         res.generations_within * settings.population, np.nan)
            _model_times(out, r, res)
            if res.reached:
                out["generations_to_solution"][r] = res.generations_to_solution
                out["time_to_solution"][r] = res.generations_to_solution * settings.population
            else:
                out["reason"][r] = 2
    return out


def _model_times(out: dict[str, np.ndarray], r: int, res: PlanResult) -> None:
    """Replication ``r``'s time on P modules and the wall time per generation and exchange."""
    out["model_time"][r] = res.model_time
    out["migrations"][r] = res.migrations
    out["wall_per_generation"][r] = res.epoch_seconds / res.generations if res.generations else np.nan
    out["wall_per_migration"][r] = res.migration_seconds / res.migrations if res.migrations else np.nan
    if res.reached:
        out["model_time_to_solution"][r] = res.model_time_to_solution
        out["model_time_one_island"][r] = res.model_time_one_island
        with np.errstate(divide="ignore", invalid="ignore"):   # T_p = 0: the initial population was good enough
            out["model_speedup"][r] = (np.float64(res.model_time_one_island) / res.model_time_to_solution
                                       if res.model_time_to_solution > 0 else np.nan)
        out["migrations_to_solution"][r] = res.migrations_to_solution
        out["genes_to_solution"][r] = res.genes_to_solution


def job_records(params: Mapping[str, Any], seed: int) -> dict[str, np.ndarray]:
    """Per-job records of replication ``seed`` (``pipeline.store.records``): one row per process
    of every job scheduled, on its computing unit (``size`` 1; ``submit`` = the job's
    arrival, ``start``/``end`` its slot), ``status`` 0. The same run as ``run_batch``'s
    (in-process islands)."""
    from .instance import make_instance
    from .planning import plan

    settings = ga_settings(params)
    streams = substreams(np.uint64(seed), 1 + settings.islands)
    inst = make_instance(instance_settings(params), streams[0])
    res = plan(inst, params["algorithm"], settings, streams[1:], keep=True, target=params["target"],
               within=params["target_within"], reference_rng=reference_stream(seed))
    parts = {name: [] for name in ("job", "submit", "start", "end", "resource")}
    for s in res.schedules:
        pj = s.problem.proc_job
        parts["job"].append(s.jobs[pj])
        parts["submit"].append(s.problem.arrival[pj])
        parts["start"].append(s.start[pj])
        parts["end"].append((s.start + s.dur)[pj])
        parts["resource"].append(s.unit_of)
    out = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    out["job"], out["resource"] = out["job"].astype(np.int64), out["resource"].astype(np.int64)
    out["size"] = np.ones(out["job"].size, np.int64)
    out["status"] = np.zeros(out["job"].size, np.int64)
    return out
