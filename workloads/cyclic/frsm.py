"""The cyclic scheme: CSS, and FRSM with ``k`` sub-batches (``docs/models/cyclic.md``, "CSS" and "FRSM").

CSS = one batch, first-fit alternatives, DP. FRSM = the batch split into ``k`` sub-batches
in priority order (sub-batch b takes positions ``floor(b J / k) ... floor((b+1) J / k) - 1``),
each with alternatives by its jobs' own criteria, its own limit and DP; its chosen windows
are cut from the slot list before the next sub-batch and its unchosen alternatives go back.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .alternatives import Alternatives, conflicts, find_alternatives
from .choices import COMBINATIONS, TIME_QUANTITIES  # handed on from here too
from .dp import STRATEGIES, choose, strategy_arrays
from .plugins import criterion_of, vo_values
from .search import cut_spans
from .sequential import choose_sequential


class Plan(NamedTuple):
    """Windows per job (job ids index the batch); unscheduled jobs have NaN start and -1 nodes."""

    start: np.ndarray         #: float64[N] (time)
    nodes: np.ndarray         #: int64[N, nmax], node ids ascending, -1 padded
    alternatives: np.ndarray  #: float64[N], alternatives found (NaN for jobs outside the cyclic part)
    flagged: bool             #: some sub-batch's DP met no combination within its limit


def empty_plan(jobs: int, nmax: int) -> Plan:
    return Plan(np.full(jobs, np.nan), np.full((jobs, nmax), -1, np.int64), np.full(jobs, np.nan), False)


def sub_batches(J: int, k: int) -> list[range]:
    """Positions of each of the ``k`` sub-batches of ``J`` jobs in priority order."""
    if not 1 <= k:
        raise ValueError(f"frsm_k must be >= 1, got {k}")
    return [range(b * J // k, (b + 1) * J // k) for b in range(k)]


def alternative_time(alts: Alternatives, quantity: str) -> np.ndarray:
    """The "time" of each alternative for the DP: processor time, runtime or finish."""
    if quantity == "proc_time":
        return alts.proc_time
    if quantity == "runtime":
        return alts.runtime
    if quantity == "finish":
        return alts.start + alts.runtime
    raise ValueError(f"dp_time must be one of {', '.join(TIME_QUANTITIES)}, got {quantity!r}")


def schedule_cyclic(slots: tuple[np.ndarray, np.ndarray, np.ndarray], order: np.ndarray,
                    node_len: np.ndarray, node_cost: np.ndarray, budget: np.ndarray, n: np.ndarray,
                    criterion: np.ndarray, *, k: int = 1, cap: int = 10, strategy: str = "min_time",
                    dp_time: str = "proc_time", resolution: float = 1.0, plan: Plan | None = None,
                    shared: bool = False, vo_limit: str = "cost",
                    retry: bool = False, combination: str = "search", spread: int = 1) -> Plan:
    """Schedule the jobs ``order`` (priority order) by the cyclic scheme on ``slots``.

    ``criterion``: kernel criterion code per job id (all ``FIRST_FIT`` for CSS). ``plan``:
    a plan to fill in (else a fresh one for ``len(budget)`` jobs). ``shared``: alternatives of
    different jobs may share slots; the combination step keeps conflict-free combinations.
    ``strategy``: a built-in (:data:`.dp.STRATEGIES`) or a plug-in VO criterion
    "pkg.mod:func" (:mod:`.plugins`), minimised under ``sum g <= g*`` with g = ``vo_limit``.
    ``retry`` (with ``shared``): a job the combination step had to postpone (every alternative
    conflicts) searches once more, in priority order, for one window by its criterion on the
    slots left after the sub-batch's chosen windows *(our rule)*; postponed only if none.
    ``combination`` (with ``shared``): the conflict-free search (:func:`.dp.choose`) or the
    sequential rule (:mod:`.sequential`) *(our rule)*. ``spread`` (with ``shared``): a first-fit job
    keeps every ``spread``-th window it finds (:func:`.alternatives.find_alternatives`) *(our rule)*.
    """
    if combination not in COMBINATIONS:
        raise ValueError(f"combination must be one of {', '.join(COMBINATIONS)}, got {combination!r}")
    plugin = None if strategy in STRATEGIES else criterion_of(strategy)
    if plan is None:
        plan = empty_plan(len(budget), int(n.max()) if len(n) else 1)
    flagged = plan.flagged
    parts = sub_batches(len(order), k)
    for b, part in enumerate(parts):
        last = b == len(parts) - 1
        jobs = np.asarray(order[part.start:part.stop], np.int64)
        if len(jobs) == 0:
            continue
        alts, _ = find_alternatives(*slots, jobs, node_len, node_cost, budget, n, criterion, cap, shared=shared,
                                    spread=spread)
        counts = np.diff(alts.offsets)
        plan.alternatives[jobs] = counts
        have = np.flatnonzero(counts > 0)          # jobs without alternatives are postponed
        if len(have) == 0:
            continue
        # jobs without alternatives own no rows, so the rows are every alternative in order (and
        # the conflict matrix is used as computed: selecting its rows and columns was a copy
        # costing about 0.25 ms a CSS cycle)
        rows = np.arange(alts.offsets[-1])
        offsets = np.concatenate(([0], np.cumsum(counts[have])))
        if plugin is None:
            v, g, maximize = strategy_arrays(strategy, alternative_time(alts, dp_time)[rows], alts.cost[rows])
        else:
            v, g, maximize = _plugin_arrays(plugin, strategy, vo_limit, alts, rows, counts[have],
                                            jobs[have], budget, dp_time)
        conflict = conflicts(alts, node_len) if shared else None
        if conflict is not None and combination == "sequential":
            combo = choose_sequential(offsets, v, g, maximize, resolution, conflict)
        else:
            combo = choose(offsets, v, g, maximize, resolution, conflict)
        flagged = flagged or combo.flagged
        again = shared and retry and bool((combo.choice < 0).any())
        for p, q in enumerate(have):
            if combo.choice[p] < 0:      # postponed: no conflict-free place (shared alternatives)
                continue
            a = alts.offsets[q] + combo.choice[p]
            j = jobs[q]
            plan.start[j] = alts.start[a]
            plan.nodes[j, :alts.nodes.shape[1]] = alts.nodes[a]
            if not last or again:     # the next sub-batch (or a retry) sees the slots minus the chosen windows
                chosen = alts.nodes[a][alts.nodes[a] >= 0]
                slots = cut_spans(*slots, chosen, alts.start[a], node_len[j, chosen])
        if again:
            for p, q in enumerate(have):
                if combo.choice[p] >= 0:
                    continue
                j = jobs[q]
                one, _ = find_alternatives(*slots, np.array([j], np.int64), node_len, node_cost, budget, n,
                                           criterion, 1)
                if one.count(0) == 0:
                    continue
                plan.start[j] = one.start[0]
                plan.nodes[j, :one.nodes.shape[1]] = one.nodes[0]
                chosen = one.nodes[0][one.nodes[0] >= 0]
                slots = cut_spans(*slots, chosen, one.start[0], node_len[j, chosen])
    return plan._replace(flagged=flagged)


def _plugin_arrays(plugin, name: str, vo_limit: str, alts: Alternatives, rows: np.ndarray, counts: np.ndarray,
                   jobs: np.ndarray, budget: np.ndarray, dp_time: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(v, g, maximize)`` of a plug-in VO criterion on the step's alternatives ``rows``."""
    time_q = alternative_time(alts, dp_time)[rows]
    cost = alts.cost[rows]
    owner = np.repeat(jobs, counts)
    v = vo_values(plugin, name, time_q, cost, alts.start[rows], alts.runtime[rows], alts.proc_time[rows],
                  np.asarray(budget, np.float64)[owner], owner)
    if vo_limit not in ("cost", "time"):
        raise ValueError(f"vo_limit must be 'cost' or 'time', got {vo_limit!r}")
    return v, (cost if vo_limit == "cost" else time_q), False
