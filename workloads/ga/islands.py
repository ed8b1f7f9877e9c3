"""Island GA: P subpopulations, ring migration every ``I_m`` generations, stopping rules.

The run is cut into epochs of ``migration_interval`` generations. In an epoch every
island first takes in the migrants sent at the end of the previous epoch (they replace
its worst individuals), then evolves on its own with its own random stream. After the
epoch each island sends copies of its ``migrants`` best to the next island of the ring
(island k -> k+1 mod P). The stop rules (no improvement of the best over all islands for
``stall_generations`` generations, or ``max_generations`` reached) are checked at epoch
ends (our rule), so islands need to meet only there: in one process or as Dask tasks
(:mod:`.dask_islands`) the same generations run on the same data and the results are
identical.

:func:`drive` holds the whole schedule of an island run; it calls the island functions
through ``submit``/``gather``, which are plain calls here and Dask calls in
:mod:`.dask_islands`. Island functions never change their inputs (Dask may still need
them) and never touch the caller's generators: the advanced generators come back in the
result.
"""
from __future__ import annotations

import operator
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..kernel_support.plugins import is_path
from .baselines import backfill_kernel, fcfs_kernel
from .choices import DOCKING  # handed on from here too
from .model import Problem
from .objectives import OBJECTIVES, PLUGIN
from .operators import evaluate, evolve, make_scratch, random_swaps, ranking
from .plugins import ObjectiveNaN, plugin_of



@dataclass(frozen=True)
class GASettings:
    """GA parameters (defaults: the spec's non-parallel ones)."""

    population: int = 50          # Z, individuals per island
    pc: float = 0.3               # crossover probability per pair
    pm: float = 0.00032           # mutation probability per gene
    elite: float = 0.1            # E, fraction kept unchanged (at least one individual)
    tournament: int = 2           # tournament size of the selection (our rule)
    islands: int = 1              # P
    migration_interval: int = 50  # I_m, generations between migrations (and stop checks)
    migrants: int = 1             # best individuals sent to the next island
    init_mutations: int = 5       # swap attempts perturbing each initial individual but the first
    stall_generations: int = 100
    max_generations: int = 100_000
    objective: str = "gmean"
    docking: str = "tau_first"    # rank by (tau, f) (source) or by f alone

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES and not is_path(self.objective):
            raise ValueError(f"objective {self.objective!r} must be one of {OBJECTIVES} or a plug-in "
                             f"'package.module:function'")
        if self.docking not in DOCKING:
            raise ValueError(f"docking {self.docking!r} must be one of {DOCKING}")
        if self.population < 2 or not 0 <= self.migrants < self.population:
            raise ValueError("population must be >= 2 and 0 <= migrants < population")
        if self.tournament < 1:
            raise ValueError("tournament must be >= 1")
        if self.islands < 1 or self.migration_interval < 1:
            raise ValueError("islands and migration_interval must be >= 1")

    @property
    def n_elite(self) -> int:
        """Elite size: round(E Z), at least 1 so the best is never lost (our rule)."""
        return int(min(self.population, max(1, round(self.elite * self.population))))


@dataclass
class IslandState:
    bodies: np.ndarray    # int64[Z, N]
    headers: np.ndarray   # int64[Z, C]
    taus: np.ndarray      # float64[Z]
    fits: np.ndarray      # float64[Z]
    rng: np.random.Generator
    counters: np.ndarray  # int64[4]: evaluations, crossovers, crossover fallbacks, swaps


@dataclass
class IslandResult:
    body: np.ndarray          # best chromosome over all islands
    header: np.ndarray
    tau: float
    fitness: float
    hist_tau: np.ndarray      # best over all islands after each generation (0 = initial)
    hist_fit: np.ndarray
    generations: int
    counters: np.ndarray      # summed over islands
    rngs: list                # the islands' generators, advanced
    final_taus: np.ndarray    # (tau, fitness) of every individual of every final island
    final_fits: np.ndarray
    migrations: int = 0       # exchanges of migrants (one after every epoch but the last)
    epoch_seconds: float = 0.0      # wall time of the epochs (submit to the histories' gather)
    migration_seconds: float = 0.0  # wall time of selecting and handing over the migrants


def _context(problem: Problem) -> tuple:
    """Arrays the kernels need beyond the problem: job lists by width (built once)."""
    cached = problem.__dict__.get("_ga_context")
    if cached is None:
        cached = problem.__dict__["_ga_context"] = _build_context(problem)
    return cached


def _build_context(problem: Problem) -> tuple:
    width = problem.width.astype(np.int64)
    by_width = np.argsort(width, kind="stable").astype(np.int64)
    offsets = np.searchsorted(width[by_width], np.arange(width.max() + 2)).astype(np.int64)
    index_in_width = np.empty_like(width)
    index_in_width[by_width] = np.arange(width.shape[0]) - offsets[width[by_width]]
    parallel = bool(width.max() > 1)
    has_deps = bool(np.any(problem.pred >= 0))
    return parallel, has_deps, by_width, offsets, index_in_width


def _copy_rng(rng: np.random.Generator) -> np.random.Generator:
    """An independent generator in the same state (as ``copy.deepcopy``, ~10x cheaper:
    the deep copy cost ~0.15 ms per epoch)."""
    bg = type(rng.bit_generator)(0)   # any seed: the state is overwritten
    bg.state = rng.bit_generator.state
    return np.random.Generator(bg)


def objective_args(objective: str) -> tuple:
    """``(objective code, plug-in)`` for the kernels: a built-in's index and None, or
    ``PLUGIN`` and the compiled plug-in objective."""
    if objective in OBJECTIVES:
        return OBJECTIVES.index(objective), None
    return PLUGIN, plugin_of(objective)


def _scratch(problem: Problem) -> tuple:
    return make_scratch(problem.n_procs, problem.n_units, problem.n_jobs)


def init_island(problem: Problem, settings: GASettings, rng: np.random.Generator) -> IslandState:
    """Initial population: individual 0 = FCFS (non-parallel) or Backfill (parallel) with
    the mask; the others the same with random ties and ``init_mutations`` swap attempts."""
    rng = _copy_rng(rng)
    P = problem.arrays()
    parallel, has_deps, by_width, offsets, index_in_width = _context(problem)
    heuristic = backfill_kernel if parallel else fcfs_kernel
    Z, N, C = settings.population, problem.n_procs, problem.n_units
    bodies = np.empty((Z, N), np.int64)
    headers = np.empty((Z, C), np.int64)
    taus = np.empty(Z)
    fits = np.empty(Z)
    scratch = _scratch(problem)
    code, plugin = objective_args(settings.objective)
    for i in range(Z):
        body, header, _, _ = heuristic(P, i > 0, rng)
        if i > 0:
            random_swaps(body, header, P, settings.init_mutations, rng, parallel, has_deps,
                         by_width, offsets, index_in_width, scratch)
        ok, taus[i], fits[i] = evaluate(body, header, P, code, settings.docking == "tau_first",
                                        problem.period_end, scratch, plugin)
        if not ok:
            raise RuntimeError("initial individual is inconsistent (bug)")
        if plugin is not None and np.isnan(fits[i]):
            raise ObjectiveNaN(f"objective {settings.objective} returned nan for initial individual {i} "
                               f"(generation 0); an objective must return a number (smaller is better)")
        bodies[i], headers[i] = body, header
    return IslandState(bodies, headers, taus, fits, rng, np.array([Z, 0, 0, 0], np.int64))


def select_emigrants(state: IslandState, n: int) -> tuple:
    """Copies of the island's ``n`` best individuals (best first)."""
    best = ranking(state.taus, state.fits)[:n]
    return state.bodies[best].copy(), state.headers[best].copy(), state.taus[best].copy(), state.fits[best].copy()


def island_epoch(state: IslandState, problem: Problem, settings: GASettings, n_gens: int,
                 incoming: tuple | None) -> tuple:
    """Take in ``incoming`` migrants (replacing the worst), then evolve ``n_gens``
    generations. Returns ``(new state, hist_tau[n_gens], hist_fit[n_gens])``; the input
    state is left as it was."""
    s = IslandState(state.bodies.copy(), state.headers.copy(), state.taus.copy(), state.fits.copy(),
                    _copy_rng(state.rng), state.counters.copy())
    if incoming is not None and incoming[0].shape[0] > 0:
        worst = ranking(s.taus, s.fits)[::-1][: incoming[0].shape[0]]
        s.bodies[worst], s.headers[worst], s.taus[worst], s.fits[worst] = incoming
    parallel, has_deps, by_width, offsets, index_in_width = _context(problem)
    hist_tau = np.empty(n_gens)
    hist_fit = np.empty(n_gens)
    code, plugin = objective_args(settings.objective)
    evolve(s.bodies, s.headers, s.taus, s.fits, problem.arrays(), n_gens, s.rng, settings.pc, settings.pm,
           settings.n_elite, settings.tournament, code, settings.docking == "tau_first",
           problem.period_end, parallel, has_deps, by_width, offsets, index_in_width, hist_tau, hist_fit,
           s.counters, _scratch(problem), plugin)
    return s, hist_tau, hist_fit


def _island_best(state: IslandState) -> tuple[float, float]:
    i = ranking(state.taus, state.fits)[0]
    return float(state.taus[i]), float(state.fits[i])


def _lex_min(taus: np.ndarray, fits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per generation (axis 1), the lexicographic minimum over islands (axis 0)."""
    t = taus.min(axis=0)
    f = np.where(taus == t, fits, np.inf).min(axis=0)
    return t, f


def drive(problem: Problem, settings: GASettings, rngs: list, submit: Callable, gather: Callable,
          wait: Callable = lambda handles: None) -> IslandResult:
    """Run the island GA; ``submit(fn, *args)`` returns a handle, ``gather(handles)`` values,
    ``wait(handles)`` returns once they are computed (where they stay). Also times the epochs and
    the migrations (wall seconds; a migration = selecting the emigrants until they are ready)."""
    if len(rngs) != settings.islands:
        raise ValueError(f"need one generator per island ({settings.islands}), got {len(rngs)}")
    P = settings.islands
    states = [submit(init_island, problem, settings, rngs[k]) for k in range(P)]
    firsts = gather([submit(_island_best, s) for s in states])
    hist_tau = [min(firsts)[0]]
    hist_fit = [min(firsts)[1]]
    best = (hist_tau[0], hist_fit[0])
    last_improved = 0
    gen = 0
    incoming: list[Any] = [None] * P
    epoch_seconds = migration_seconds = 0.0

    def more() -> bool:
        return gen < settings.max_generations and gen - last_improved < settings.stall_generations

    migrations = 0
    while more():
        n = min(settings.migration_interval, settings.max_generations - gen)
        t0 = time.perf_counter()
        outs = [submit(island_epoch, states[k], problem, settings, n, incoming[k]) for k in range(P)]
        states = [submit(operator.getitem, o, 0) for o in outs]
        hists = gather([submit(operator.getitem, o, i) for o in outs for i in (1, 2)])
        epoch_seconds += time.perf_counter() - t0
        _check_nan(hists[1::2], gen, settings.objective)
        t, f = _lex_min(np.array(hists[0::2]), np.array(hists[1::2]))
        for g in range(n):
            if t[g] < best[0] or (t[g] == best[0] and f[g] < best[1]):
                best = (t[g], f[g])
                last_improved = gen + g + 1
        hist_tau.extend(t)
        hist_fit.extend(f)
        gen += n
        if migrating(settings) and more():   # after the last epoch no one would take the migrants in
            migrations += 1
            t0 = time.perf_counter()
            sent = [submit(select_emigrants, s, settings.migrants) for s in states]
            wait(sent)
            migration_seconds += time.perf_counter() - t0
            incoming = [sent[(k - 1) % P] for k in range(P)]
    final = gather(states)
    k_best = min(range(P), key=lambda k: (*_island_best(final[k]), k))
    s = final[k_best]
    i = ranking(s.taus, s.fits)[0]
    return IslandResult(
        body=s.bodies[i].copy(), header=s.headers[i].copy(), tau=float(s.taus[i]), fitness=float(s.fits[i]),
        hist_tau=np.array(hist_tau), hist_fit=np.array(hist_fit), generations=gen,
        counters=np.sum([x.counters for x in final], axis=0), rngs=[x.rng for x in final],
        final_taus=np.concatenate([x.taus for x in final]), final_fits=np.concatenate([x.fits for x in final]),
        migrations=migrations,
        epoch_seconds=epoch_seconds, migration_seconds=migration_seconds,
    )


def migrating(settings: GASettings) -> bool:
    """Islands exchange migrants at epoch ends (more than one island, at least one migrant)."""
    return settings.islands > 1 and settings.migrants > 0


def migrations_before(generation: int, settings: GASettings) -> int:
    """Exchanges delivered before generation ``generation`` (1-based; 0 = the initial
    population) is computed: one at the end of every full epoch before it."""
    if not migrating(settings) or generation <= 0:
        return 0
    return (generation - 1) // settings.migration_interval


def _check_nan(hist_fits: list, gen: int, objective: str) -> None:
    """Raise :class:`ObjectiveNaN` if an island's epoch stopped on a NaN objective (only a
    plug-in can give one: the built-ins are finite on every schedule)."""
    for k, h in enumerate(hist_fits):
        bad = np.flatnonzero(np.isnan(h))
        if bad.size:
            raise ObjectiveNaN(f"objective {objective} returned nan for a child in generation {gen + bad[0] + 1} "
                               f"(island {k}); an objective must return a number (smaller is better)")


def run_islands(problem: Problem, settings: GASettings, rngs: list) -> IslandResult:
    """The island GA with every island in this process."""
    return drive(problem, settings, rngs, submit=lambda fn, *a: fn(*a), gather=list)


def generations_to_solution(result: IslandResult, objective: str, within: float = 0.01) -> int:
    """First generation whose best has the final tau and is within ``within`` of the final
    objective (for ``gmean`` compared as ``log f``, i.e. f within a factor 1 + within)."""
    return generations_to_target(result, result.hist_tau[-1], result.hist_fit[-1], objective, within)


def generations_to_target(result: IslandResult, target_tau: float, target_fit: float, objective: str,
                          within: float = 0.01) -> int:
    """First generation whose best reaches the target quality ``(target_tau, target_fit)``:
    a smaller docking gap, or the same gap and an objective within ``within`` of the target
    (for ``gmean``, whose fitness is ``log f``: f within a factor 1 + within). -1 if never."""
    if objective == "gmean":
        close = result.hist_fit - target_fit <= np.log1p(within)
    else:
        close = result.hist_fit <= target_fit + within * abs(target_fit)
    ok = (result.hist_tau < target_tau) | ((result.hist_tau == target_tau) & close)
    return int(np.argmax(ok)) if ok.any() else -1
