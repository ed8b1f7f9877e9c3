"""The GA workload against the DEAP peer ``ga_islands_deap.py`` (outside the repository, benchmarks/outside.py; skipped without it), target >= 20x.

The peer's problem (independent tasks, work U[1, 100], machine speeds U[1, 4], makespan),
one island of 50, 200 tasks on 20 machines, the same seed; our CPU seconds per generation over
the peer's (its generation loop, run in this process: ``_common.run_peer_cpu``), alternating.
"""
from __future__ import annotations

import numpy as np

from ._common import cpu_seconds, run_peer_cpu

TASKS, MACHINES, POP, GENERATIONS, SEED = 200, 20, 50, 300, 1


def peer_problem(tasks: int, machines: int, seed: int):
    """The DEAP peer's instance, drawn exactly as the peer draws it (a ``ga.model.Problem``)."""
    from schedsweep.workloads.ga.model import Problem

    rng = np.random.Generator(np.random.PCG64(seed))
    w = rng.uniform(1, 100, tasks)
    s = rng.uniform(1, 4, machines)
    return Problem(speed=s, group=np.zeros(machines, np.int64), ready=np.zeros(machines),
                   prev_end=np.full(machines, np.nan), width=np.ones(tasks, np.int64), length=w,
                   prio=np.ones(tasks, np.int64), pred=np.full(tasks, -1), mask=np.ones((tasks, machines), bool),
                   arrival=np.zeros(tasks), period_end=0.0)


def peer_settings(tasks: int, pop: int, islands: int, interval: int, generations: int):
    """Our ``GASettings`` equal to the peer's (per-gene mutation rate = its 0.1 per individual x 1/n)."""
    from schedsweep.workloads.ga.islands import GASettings

    return GASettings(population=pop, pc=0.3, pm=0.1 / tasks, elite=0.1, islands=islands,
                      migration_interval=interval, migrants=2, stall_generations=generations + 1,
                      max_generations=generations, objective="makespan", docking="idle_genes_only")


class GAVsDEAP:
    timeout = 300.0

    def setup(self) -> None:
        from schedsweep.workloads.ga.islands import run_islands

        problem = peer_problem(TASKS, MACHINES, SEED)
        settings = peer_settings(TASKS, POP, 1, 50, GENERATIONS)
        self.run = lambda: run_islands(problem, settings, [np.random.default_rng([SEED, 0])])
        self.run()                                              # compile, or load the cache

    def ours(self) -> float:
        seconds, res = cpu_seconds(self.run)
        return seconds / res.generations

    def track_vs_deap(self) -> float:
        """Our CPU seconds per generation over DEAP's (3 alternating rounds, fewest of each)."""
        args = ["--tasks", str(TASKS), "--machines", str(MACHINES), "--islands", "1", "--pop", str(POP),
                "--generations", str(GENERATIONS), "--seed", str(SEED)]
        ours = peer = float("inf")
        for _ in range(3):
            ours = min(ours, self.ours())
            peer = min(peer, run_peer_cpu("ga_islands_deap", args)["wall_s"] / GENERATIONS)
        return ours / peer

    track_vs_deap.unit = "ours/peer time"
