"""Plain-Python oracle of the ga workload's model time on P computing modules.

It replays a run's schedule step by step, without the workload's formulas: every
generation each island evaluates its Z individuals on its own module, the islands side by
side, so the clock advances by one island's evaluations; between two epochs of I_m
generations the islands exchange migrants (each its whole chromosome, N + C genes) and the
clock advances by one exchange. The time to solution is the clock when the best over all
islands first reaches the target.
"""
from __future__ import annotations

import math


def reaches(tau: float, fit: float, target_tau: float, target_fit: float, gmean: bool, within: float) -> bool:
    """The best (tau, fit) reaches the target: a smaller gap, or the same gap and fit close enough."""
    near = fit - target_fit <= math.log1p(within) if gmean else fit <= target_fit + within * abs(target_fit)
    return tau < target_tau or (tau == target_tau and near)


def schedule(generations: int, islands: int, population: int, interval: int, migrants: int) -> list[tuple]:
    """The events of a run, in order: ("evaluate", generation, island, individuals) for every
    island of every generation, and ("exchange", after generation) between epochs."""
    events = []
    for g in range(1, generations + 1):
        for k in range(islands):
            events.append(("evaluate", g, k, population))
        if g % interval == 0 and g < generations and islands > 1 and migrants > 0:
            events.append(("exchange", g))
    return events


def clock_after(events: list[tuple], generation: int, evaluation: float, latency: float, gene_time: float,
                migrants: int, genes: int) -> float:
    """Model time until ``generation`` is computed: the islands of one generation run side by
    side (the generation takes as long as its slowest island), exchanges one after another."""
    per_generation: dict[int, float] = {}
    exchanges = 0
    for event in events:
        if event[0] == "evaluate" and event[1] <= generation:
            _, g, _, individuals = event
            per_generation[g] = max(per_generation.get(g, 0.0), individuals * evaluation)
        elif event[0] == "exchange" and event[1] < generation:
            exchanges += 1
    return sum(per_generation.values()) + exchanges * (latency + migrants * genes * gene_time)


def time_to_solution(hist_tau, hist_fit, target: tuple, gmean: bool, within: float, islands: int, population: int,
                     interval: int, migrants: int, genes: int, evaluation: float, latency: float,
                     gene_time: float) -> float:
    """Model time of the first generation of the history whose best reaches ``target``;
    NaN if none does."""
    events = schedule(len(hist_tau) - 1, islands, population, interval, migrants)
    for g, (t, f) in enumerate(zip(hist_tau, hist_fit)):
        if reaches(t, f, target[0], target[1], gmean, within):
            return clock_after(events, g, evaluation, latency, gene_time, migrants, genes)
    return math.nan
