"""Continuous planning over periods with docking.

At the end of period q the jobs that arrived in it are scheduled together and the
schedule is appended after the previous ones: each unit's idle gene pins its first slot
to ``max(end of the previous schedule on it, end of period q)`` (``Problem.ready``). The
GA's island generators continue from period to period.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .baselines import BASELINES
from .choices import METHODS, WITHIN_LEVELS  # handed on from here too
from .instance import Instance, period_problem
from .islands import (GASettings, IslandResult, _copy_rng, generations_to_solution, generations_to_target,
                      migrations_before, objective_args, run_islands)
from .model import Problem, timed
from .objectives import log_gmean, makespan, tau, weighted_completion
from .plugins import ObjectiveNaN, call_objective

TARGETS = ("one_island", "one_island_apart", "own_final")
REFERENCE_INTERVAL = 50  # I_m of the one-island reference run (epochs set when it checks for a stall)


@dataclass(frozen=True)
class Costs:
    """Time on P computing modules, one island per module (model time units).

    An island-generation costs ``Z * evaluation`` (every individual counted, as docs/models/ga.md's
    deterministic cost); the islands evolve in parallel and meet at every migration, where
    one exchange costs ``latency + migrants * (N + C) * gene_time``: all P ring sends at once,
    each migrant its whole chromosome, body (N genes) and header (C), sent over a link of
    ``1 / gene_time`` genes per time unit *(our rule: S11 states a cost per exchange, not its
    form)*. With the defaults (1, 0, 0) the time is the evaluation count.
    """

    evaluation: float = 1.0   # time units per objective evaluation
    latency: float = 0.0      # time units per exchange
    gene_time: float = 0.0    # time units per gene sent (1 / bandwidth)

    def exchange(self, problem: Problem, settings: GASettings) -> float:
        """Model time of one exchange of migrants on ``problem``."""
        return self.latency + settings.migrants * (problem.n_procs + problem.n_units) * self.gene_time

    def to_generation(self, generation: int, problem: Problem, settings: GASettings) -> float:
        """Model time until generation ``generation`` is computed (0 = the initial population)."""
        return (generation * settings.population * self.evaluation
                + migrations_before(generation, settings) * self.exchange(problem, settings))


@dataclass
class PeriodSchedule:
    problem: Problem
    jobs: np.ndarray       # global job indices
    body: np.ndarray
    header: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    unit_of: np.ndarray    # unit of each process


@dataclass
class PlanResult:
    log_gmean: list = field(default_factory=list)   # per period
    plugin_objective: list = field(default_factory=list)  # per period, a plug-in objective's value
    makespan: list = field(default_factory=list)
    weighted_completion: list = field(default_factory=list)
    tau: list = field(default_factory=list)
    waits: list = field(default_factory=list)       # per job, start - arrival
    generations: int = 0
    generations_to_solution: int = 0               # to the fixed target, summed over periods
    reached: bool = True                           # every period reached its target
    # the same at each tolerance of WITHIN_LEVELS
    generations_within: np.ndarray = field(default_factory=lambda: np.zeros(len(WITHIN_LEVELS), np.int64))
    reached_within: np.ndarray = field(default_factory=lambda: np.ones(len(WITHIN_LEVELS), bool))
    generations_to_own_final: int = 0
    capped_periods: int = 0                        # periods stopped by max_generations
    # time on P modules (Costs), summed over periods: to the target, the whole run, one island to the target
    model_time_to_solution: float = 0.0
    model_time: float = 0.0
    model_time_one_island: float = 0.0             # T_1: the one-island reference run (NaN without one)
    migrations_to_solution: int = 0                # exchanges before the target, summed over periods
    genes_to_solution: int = 0                     # migrants' genes sent before the target (N + C each)
    migrations: int = 0                            # exchanges delivered in the whole run
    epoch_seconds: float = 0.0                     # wall time of the island epochs
    migration_seconds: float = 0.0                 # wall time of the migrations
    targets: list = field(default_factory=list)    # (tau, fitness) target of each period
    counters: np.ndarray = field(default_factory=lambda: np.zeros(4, np.int64))
    wall_seconds: float = 0.0
    schedules: list = field(default_factory=list)   # PeriodSchedule, if kept


def _reference(problem: Problem, settings: GASettings, rng0, run=run_islands) -> IslandResult:
    """The one-island reference run of a period: one island with these settings but I_m =
    REFERENCE_INTERVAL (with one island I_m only sets when a stall is noticed) on this
    problem, from (a copy of) ``rng0``: the same for every P and I_m. Its final best (tau,
    fitness) is the period's target; ``rngs[0]`` is the copy, advanced past the run."""
    return run(problem, _one_island(settings), [_copy_rng(rng0)])


def _one_island(settings: GASettings) -> GASettings:
    return GASettings(**{**settings.__dict__, "islands": 1, "migration_interval": REFERENCE_INTERVAL})


def _final(res: IslandResult) -> tuple[float, float]:
    return float(res.hist_tau[-1]), float(res.hist_fit[-1])


def plan(inst: Instance, method: str, settings: GASettings | None, rngs: list,
         run=run_islands, keep: bool = False, target: str = "one_island", within: float = 0.01,
         reference_rng: np.random.Generator | None = None, costs: Costs = Costs()) -> PlanResult:
    """Schedule every period of ``inst`` with ``method``; ``run`` runs the island GA
    (``run_islands`` or a Dask variant taking the same arguments). A period's GA reaches
    its ``target`` at the first generation whose best has the target's docking gap (or a
    smaller one) and an objective at most ``within`` (a fraction) above the target's.
    ``one_island`` runs the reference island on a copy of island 0's generator, so island 0
    repeats the reference's search until its first migrant arrives (with ``migrants = 0``
    throughout: it misses only if the run stops first); ``one_island_apart`` runs it on
    ``reference_rng``, a stream of its own (advanced from period to period). The reference runs
    through ``run`` too. ``costs``: the model time on P modules (:class:`Costs`)."""
    if method not in METHODS:
        raise ValueError(f"method {method!r} must be one of {METHODS}")
    if target not in TARGETS:
        raise ValueError(f"target {target!r} must be one of {TARGETS}")
    if not within >= 0:
        raise ValueError(f"target_within {within!r} must be >= 0")
    if target == "one_island_apart" and method == "ga" and reference_rng is None:
        raise ValueError("target 'one_island_apart' needs reference_rng, the reference island's own stream")
    out = PlanResult()
    C = inst.speed.shape[0]
    unit_end = np.full(C, np.nan)
    plugin = objective_args(settings.objective)[1] if settings is not None else None
    t0 = time.perf_counter()
    for q in range(inst.n_periods):
        problem, jobs = period_problem(inst, q, unit_end)
        if jobs.size == 0:
            continue
        if method == "ga":
            # With one island and the reference's I_m the reference run is this run itself.
            itself = settings.islands == 1 and settings.migration_interval == REFERENCE_INTERVAL
            try:
                ref_run = None
                if target == "one_island" and not itself:
                    ref_run = _reference(problem, settings, rngs[0], run)
                elif target == "one_island_apart":
                    ref_run = _reference(problem, settings, reference_rng, run)
                    reference_rng = ref_run.rngs[0]
                res = run(problem, settings, rngs)
            except ObjectiveNaN as err:
                raise ObjectiveNaN(f"period {q}: {err}") from None
            reference = None if ref_run is None else _final(ref_run)
            if ref_run is None and target != "own_final":
                ref_run = res   # one island at the reference's I_m: the reference run is this run
            rngs = res.rngs
            body, header = res.body, res.header
            start, dur, unit_of = timed(problem, body, header)
            out.generations += res.generations
            out.capped_periods += res.generations >= settings.max_generations
            out.generations_to_own_final += generations_to_solution(res, settings.objective)
            goal = (res.hist_tau[-1], res.hist_fit[-1]) if reference is None else reference
            out.targets.append(goal)
            g = generations_to_target(res, *goal, settings.objective, within)
            out.reached &= g >= 0
            out.generations_to_solution += max(g, 0)
            _add_model_time(out, costs, problem, settings, res, max(g, 0), ref_run, goal, within)
            for i, level in enumerate(WITHIN_LEVELS):
                g = generations_to_target(res, *goal, settings.objective, level)
                out.reached_within[i] &= g >= 0
                out.generations_within[i] += max(g, 0)
            out.counters += res.counters
            out.migrations += res.migrations
            out.epoch_seconds += res.epoch_seconds
            out.migration_seconds += res.migration_seconds
        else:
            body, header, start, dur = BASELINES[method](problem)
            unit_of = np.repeat(np.arange(C), header)[np.argsort(body)]
        P = problem.arrays()
        out.log_gmean.append(log_gmean(body, header, P, dur))
        out.makespan.append(makespan(start, dur, problem.period_end))
        out.weighted_completion.append(weighted_completion(P, start, dur, problem.period_end))
        out.tau.append(tau(body, header, P, start))
        if plugin is not None:
            value = call_objective(plugin, body, header, P, start, dur, problem.period_end)
            if np.isnan(value):
                raise ObjectiveNaN(f"period {q}: objective {settings.objective} returned nan for the {method} "
                                   "schedule; an objective must return a number (smaller is better)")
            out.plugin_objective.append(value)
        out.waits.extend(start - problem.arrival)
        end = (start + dur)[problem.proc_job]
        np.fmax.at(unit_end, unit_of, end)
        if keep:
            out.schedules.append(PeriodSchedule(problem, jobs, body, header, start, dur, unit_of))
    out.wall_seconds = time.perf_counter() - t0
    return out


def _add_model_time(out: PlanResult, costs: Costs, problem: Problem, settings: GASettings, res: IslandResult,
                    g: int, ref_run: IslandResult | None, goal: tuple, within: float) -> None:
    """Add one period's model times (:class:`Costs`) to ``out``: to generation ``g`` (the
    target), the whole run, and the one-island reference run to the same target (T_1)."""
    out.model_time_to_solution += costs.to_generation(g, problem, settings)
    out.model_time += costs.to_generation(res.generations, problem, settings)
    m = migrations_before(g, settings)
    out.migrations_to_solution += m
    out.genes_to_solution += m * settings.migrants * (problem.n_procs + problem.n_units)
    if ref_run is None:
        out.model_time_one_island = np.nan
    else:
        g1 = generations_to_target(ref_run, *goal, settings.objective, within)
        out.model_time_one_island += costs.to_generation(g1, problem, _one_island(settings))
