"""Random instances of the ``ga`` workload (spec defaults; every choice a parameter).

Draw order from the instance stream: unit speeds, unit memory, unit software; the number
of jobs, their arrival times, widths, lengths, priorities, memory requests, software
requests, dependency coins and dependency picks (all drawn for every job, parallel or
not); then redraws of the resource requests of jobs no group can host.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Problem

MEM_UNIT = (4, 8)
MEM_REQUEST = (2, 4, 8)
MEM_REQUEST_P = (0.5, 0.3, 0.2)
SW_ON_UNIT = 0.8
SW_REQUIRED = 0.5
MAX_REDRAWS = 100


@dataclass(frozen=True)
class InstanceSettings:
    units: int = 32
    groups: int = 4
    speed_low: float = 1.0
    speed_high: float = 2.0
    density: float = 4.0        # D = N / C, processes per unit per period
    load: float = 0.8
    periods: int = 3
    parallel: bool = False
    width_low: int = 2
    width_high: int = 8
    length_low: float = 10.0
    length_high: float = 100.0
    p_max: int = 3
    dep_prob: float = 0.1

    @property
    def mean_slot(self) -> float:
        """Mean nominal length times E[1/k] (time units): about 55 ln 2 = 38 by default."""
        lo, hi = self.speed_low, self.speed_high
        inv_k = np.log(hi / lo) / (hi - lo) if hi > lo else 1.0 / lo
        return 0.5 * (self.length_low + self.length_high) * inv_k

    @property
    def process_rate(self) -> float:
        """lambda = load C / mean slot, processes per time unit."""
        return self.load * self.units / self.mean_slot

    @property
    def period_length(self) -> float:
        """T_q = D C / lambda (time units)."""
        return self.density * self.units / self.process_rate


@dataclass(frozen=True)
class Instance:
    speed: np.ndarray
    group: np.ndarray
    mem: np.ndarray
    sw: np.ndarray
    arrival: np.ndarray
    width: np.ndarray
    length: np.ndarray
    prio: np.ndarray
    mem_req: np.ndarray
    sw_req: np.ndarray
    pred: np.ndarray      # global job index, -1 if none (always in the same period)
    period: np.ndarray    # planning period of each job
    period_length: float
    n_periods: int

    def mask(self) -> np.ndarray:
        return (self.mem_req[:, None] <= self.mem[None, :]) & (~self.sw_req[:, None] | self.sw[None, :])


def _hostable(mask_row: np.ndarray, group: np.ndarray, width: int) -> bool:
    return any(np.count_nonzero(mask_row & (group == g)) >= width for g in np.unique(group))


def make_instance(s: InstanceSettings, rng: np.random.Generator) -> Instance:
    """Draw one replication's units and jobs."""
    C = s.units
    group = (np.arange(C) * s.groups) // C
    speed = rng.uniform(s.speed_low, s.speed_high, C)
    mem = rng.choice(np.array(MEM_UNIT), C)
    sw = rng.random(C) < SW_ON_UNIT
    mean_width = 0.5 * (s.width_low + s.width_high) if s.parallel else 1.0
    horizon = s.periods * s.period_length
    K = int(rng.poisson(s.process_rate / mean_width * horizon))
    arrival = np.sort(rng.uniform(0.0, horizon, K))
    width = rng.integers(s.width_low, s.width_high + 1, K)
    if not s.parallel:
        width = np.ones(K, np.int64)
    length = rng.uniform(s.length_low, s.length_high, K)
    prio = rng.integers(1, s.p_max + 1, K)
    mem_req = rng.choice(np.array(MEM_REQUEST), K, p=np.array(MEM_REQUEST_P))
    sw_req = rng.random(K) < SW_REQUIRED
    dep_coin = rng.random(K)
    dep_pick = rng.random(K)
    period = np.minimum((arrival // s.period_length).astype(np.int64), s.periods - 1)
    pred = np.full(K, -1, np.int64)
    first = np.searchsorted(period, period)  # first job of each job's period
    for i in range(K):
        earlier = i - first[i]
        if earlier > 0 and dep_coin[i] < s.dep_prob:
            pred[i] = first[i] + int(dep_pick[i] * earlier)
    for i in range(K):
        tries = 0
        while not _hostable((mem_req[i] <= mem) & (~sw_req[i] | sw), group, width[i]):
            tries += 1
            if tries > MAX_REDRAWS:  # no unit has the resources: ask for the least
                mem_req[i], sw_req[i] = MEM_REQUEST[0], False
                break
            mem_req[i] = rng.choice(np.array(MEM_REQUEST), p=np.array(MEM_REQUEST_P))
            sw_req[i] = rng.random() < SW_REQUIRED
    return Instance(speed, group.astype(np.int64), mem, sw, arrival, width.astype(np.int64), length,
                    prio.astype(np.int64), mem_req, sw_req, pred, period, s.period_length, s.periods)


def period_problem(inst: Instance, q: int, unit_end: np.ndarray) -> tuple[Problem, np.ndarray]:
    """The problem of period ``q`` given each unit's previous schedule end (NaN if none),
    and the global indices of its jobs."""
    jobs = np.flatnonzero(inst.period == q)
    period_end = (q + 1) * inst.period_length
    pred = inst.pred[jobs]
    local = np.where(pred >= 0, pred - (jobs[0] if jobs.size else 0), -1)
    problem = Problem(
        speed=inst.speed, group=inst.group, ready=np.fmax(unit_end, period_end), prev_end=unit_end.copy(),
        width=inst.width[jobs], length=inst.length[jobs], prio=inst.prio[jobs], pred=local.astype(np.int64),
        mask=inst.mask()[jobs], arrival=inst.arrival[jobs], period_end=float(period_end),
    )
    return problem, jobs
