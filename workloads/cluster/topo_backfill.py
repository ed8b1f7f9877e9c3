"""Queue policies of the Python job-level scheduler (``netsched.simulate_network``).

The topology-aware methods of ``topo_allocation.py`` run in Python, so their queue
policies are written here, at job granularity, mirroring part 1's numba kernels
(``queue_policies.py``; read its docstring) decision for decision:

- ``fcfs``: start the queue head while it can be placed;
- ``mpfs_scan``: queue ordered by requested cores, descending (ties by arrival); every
  job that can be placed now starts;
- ``easy``: start the head while it can be placed; then the head's shadow time is the
  first estimated end of a running job at which enough capacity is free (every job
  ending at that instant counted), ``extra`` the capacity left over then; a later job
  starts now if it can be placed now and either ends by its estimate before the shadow
  (estimate / slowest node the method gives it now) or uses at most ``extra`` (which it
  then uses up). The head's first shadow is its recorded guarantee (``bound``);
- ``conservative``: every waiting job holds a reservation in a free-capacity profile,
  taken at arrival at its earliest fit, planned with ``t / s_slowest`` (slowest node of
  the cluster, never an under-estimate); when capacity is given back early (a job ended
  before its plan, or started on faster nodes than planned) the queue is compressed at
  the next scheduling pass in FCFS order, each job moving to its earliest fit, never
  later; a job starts when its reservation time comes. The first reservation is the
  job's guarantee (``bound``).

Plans use the user's estimate; completions come from the (network-simulated) real time,
and a job still running at ``start + t / min s`` is killed, so a plan is never exceeded.

Capacity units *(our rule)*. Part 1's policies count cores. Topology-aware methods
allocate whole idle nodes (a job needing ``m = ceil(n / cap)`` nodes holds them alone),
so for them the capacity is the number of *idle nodes* and a job's size is ``m``:
EASY's shadow and ``extra`` and the conservative profile are in idle nodes. A
reservation guarantees a number of idle nodes, not a shape. When the guaranteed time
comes and the method cannot place the job although enough nodes are idle (shape or
fragmentation: ``contiguous``, ``quasi_contiguous``, ``paging`` with pages larger than
one node), the job starts as soon as the method can place it, tried at every later
scheduling pass. Conservative: the late job's reservation becomes "now" at every pass
(it is tried with the due jobs, in queue order) and its profile window slides with it,
``[now, now + plan)``, so the profile keeps counting the nodes it will hold and no
later job backfills into them (the idle nodes it cannot use stay idle unless a job's
own reservation fits elsewhere). EASY: the late head stays the head; the shadow is
recomputed at every pass as usual.

Such jobs are counted once each in ``shape_delays`` (the run's ``Result.unplaceable``):
a conservative job that could not be placed at its reservation time; an EASY head that
could not be placed at some pass although its node count was idle (before or after its
shadow: either can make it start after the shadow). A delay can push later
reservations (the profile may then go below zero where windows overlap); those jobs
start late too and are visible in the ``late_starts`` metric (start later than the
guarantee). With ``shape_delays = 0`` no job starts after its guarantee (tested).

For ``first_fit`` (part 1's policy, kept in the Python scheduler as the oracle of the
numba kernel) the unit is the core, exactly as in part 1, and the schedules are
identical to the kernel's for every queue policy (tested).

The scheduler calls :meth:`Queues.schedule` once after all events of a time that held
an arrival or a job end (or kill), and :meth:`Queues.start_due` when the time held only
reservation wake-ups, as part 1's kernel does.
"""
from __future__ import annotations

import bisect
import heapq
import math
from typing import Callable

import numpy as np

from . import profile

POLICIES = ("fcfs", "mpfs_scan", "easy", "conservative")

#: ``place(j)`` -> ``(nodes, slowest speed among them)`` or None; ``commit(j, placed)`` starts j.
Place = Callable[[int], "tuple[np.ndarray, float] | None"]
Commit = Callable[[int, "tuple[np.ndarray, float]"], None]


class Profile:
    """Free capacity over time for the Python scheduler: part 1's step-function profile
    (``profile.py``, the same numba functions) behind a small face that grows its arrays
    and clips windows to the live part (a shape-delayed job's window slides, see above)."""

    def __init__(self, total: int, capacity: int = 64) -> None:
        self.pt, self.pf, self.meta = profile.new(capacity, total)
        self.pt[0] = -math.inf

    def add(self, a: float, b: float, delta: int) -> None:
        """Add ``delta`` free units on ``[a, b)`` (a is clipped to the first live step)."""
        if self.meta[1] + 2 >= self.pt.size:       # every add inserts at most two steps
            self.pt = np.concatenate([self.pt, np.zeros(self.pt.size)])
            self.pf = np.concatenate([self.pf, np.zeros(self.pf.size, np.int64)])
        profile.add(self.pt, self.pf, self.meta, max(a, self.pt[self.meta[0]]), b, delta)

    def prune(self, now: float) -> None:
        """Forget the steps that ended by ``now``; the first live step starts at now."""
        profile.prune(self.pt, self.pf, self.meta, now)

    def earliest(self, now: float, n: int, d: float, limit: float) -> float:
        """Earliest s in [now, limit) with >= n free over [s, min(s + d, limit)); else limit."""
        return float(profile.earliest(self.pt, self.pf, self.meta, now, n, d, limit))


class Queues:
    """Waiting jobs, guarantees and capacity accounting of one replication.

    ``units[j]``: job j's size in capacity units (cores, or idle nodes for topology-aware
    methods; more than ``total`` if it can never be placed); ``cores[j]`` its requested
    cores (MPFS order); ``estimate[j]`` the user's estimate t (s, unit speed);
    ``speed`` the node speeds.
    """

    def __init__(self, policy: str, units: np.ndarray, total: int, cores: np.ndarray, estimate: np.ndarray,
                 speed: np.ndarray) -> None:
        if policy not in POLICIES:
            raise ValueError(f"queue {policy!r} not one of {', '.join(POLICIES)}")
        nj = units.size
        self.policy = policy
        self.units = [int(u) for u in units]
        self.cores = [int(c) for c in cores]
        self.est = [float(e) for e in estimate]
        self.smax = float(np.max(speed))
        self.dplan = [float(x) for x in np.asarray(estimate, np.float64) / float(np.min(speed))]
        self.free = int(total)
        self.queue: list[int] = []
        self.bound = np.full(nj, np.nan)            # guaranteed start: first shadow / first reservation
        self.res = [math.nan] * nj                  # current reservation (conservative)
        self.plan_end = [math.inf] * nj             # end of the job's window in the profile
        self.running: dict[int, tuple[float, int]] = {}    # j -> (estimated end, units)  (EASY)
        self.profile = Profile(int(total)) if policy == "conservative" else None
        self.wakeups: list[tuple[float, int]] = []
        self.compress = False
        self.shape_delayed: set[int] = set()

    # ------------------------------------------------------------ bookkeeping
    def arrive(self, j: int) -> None:
        if self.policy == "mpfs_scan":             # after every job with >= cores (stable)
            keys = [-self.cores[i] for i in self.queue]
            self.queue.insert(bisect.bisect_right(keys, -self.cores[j]), j)
        else:
            self.queue.append(j)

    def started(self, j: int, now: float, lim: float) -> None:
        """Job j started at ``now``; ``lim = t / min s`` over its nodes (its kill time - now)."""
        self.queue.remove(j)
        u = self.units[j]
        self.free -= u
        if self.policy == "easy":
            self.running[j] = (now + lim, u)
        elif self.policy == "conservative" and now + lim < self.plan_end[j]:
            self.profile.add(now + lim, self.plan_end[j], u)       # faster nodes than planned
            self.plan_end[j] = now + lim
            self.compress = True

    def ended(self, j: int, now: float) -> None:
        """Job j ended (or was killed) at ``now``: its capacity is free again."""
        u = self.units[j]
        self.free += u
        if self.policy == "easy":
            del self.running[j]
        elif self.policy == "conservative" and now < self.plan_end[j]:
            self.profile.add(now, self.plan_end[j], u)             # ended before its plan
            self.compress = True

    def next_wakeup(self) -> float:
        return self.wakeups[0][0] if self.wakeups else math.inf

    def pop_wakeups(self, now: float, started: np.ndarray) -> bool:
        """Handle the reservation wake-ups at ``now``; True if some job is due now."""
        due = False
        while self.wakeups and self.wakeups[0][0] == now:
            _, j = heapq.heappop(self.wakeups)
            due |= bool(np.isnan(started[j])) and self.res[j] == now     # stale wake-ups are ignored
        return due

    # ------------------------------------------------------------ passes
    def schedule(self, now: float, arrived: list[int], place: Place, commit: Commit) -> None:
        """One scheduling pass at ``now`` (after this time's arrivals and ends)."""
        if self.policy == "fcfs":
            self._start_heads(place, commit)
        elif self.policy == "mpfs_scan":
            for j in list(self.queue):
                if self.units[j] <= self.free:
                    placed = place(j)
                    if placed is not None:
                        commit(j, placed)
        elif self.policy == "easy":
            self._easy(now, place, commit)
        else:
            self._conservative(now, arrived, place, commit)

    def _start_heads(self, place: Place, commit: Commit) -> int:
        """Start the head while it can be placed; the first job left, or -1."""
        while self.queue:
            j = self.queue[0]
            placed = place(j) if self.units[j] <= self.free else None
            if placed is None:
                return j
            commit(j, placed)
        return -1

    def _easy(self, now: float, place: Place, commit: Commit) -> None:
        head = self._start_heads(place, commit)
        if head < 0:
            return
        need = self.units[head]
        if need <= self.free:                       # its node count is idle, the method finds no shape
            self.shape_delayed.add(head)
        if self.free == 0 and not np.isnan(self.bound[head]):
            return                                  # nothing can backfill, the guarantee is recorded
        avail, shadow, extra = self.free, math.inf, 0
        run = sorted(self.running.values())
        for k, (end, u) in enumerate(run):
            avail += u
            if avail >= need and (k + 1 == len(run) or run[k + 1][0] != end):
                shadow, extra = end, avail - need
                break
        if np.isnan(self.bound[head]):
            self.bound[head] = shadow
        for j in self.queue[1:]:
            if self.free == 0:
                break
            u = self.units[j]
            if u > self.free or (u > extra and now + self.est[j] / self.smax > shadow):
                continue                            # cannot fit, or ends after the shadow on any nodes
            placed = place(j)
            if placed is not None:
                e = self.est[j] / placed[1]
                if now + e <= shadow or u <= extra:
                    if now + e > shadow:
                        extra -= u
                    commit(j, placed)

    def _reserve(self, j: int, s: float, now: float) -> None:
        self.profile.add(s, s + self.dplan[j], -self.units[j])
        self.res[j] = s
        self.plan_end[j] = s + self.dplan[j]
        if np.isnan(self.bound[j]):
            self.bound[j] = s
        if now < s < math.inf:
            heapq.heappush(self.wakeups, (s, j))

    def _conservative(self, now: float, arrived: list[int], place: Place, commit: Commit) -> None:
        prof = self.profile
        prof.prune(now)
        for j in self.queue:                        # overdue (shape-delayed) jobs: window slides to now
            r = self.res[j]
            if r < now:
                prof.add(max(now, r + self.dplan[j]), now + self.dplan[j], -self.units[j])
                self.res[j] = now
                self.plan_end[j] = now + self.dplan[j]
        if self.compress:
            self.compress = False
            for j in self.queue:
                r, u = self.res[j], self.units[j]
                if math.isnan(r):                   # arrived now: first placement
                    self._reserve(j, prof.earliest(now, u, self.dplan[j], math.inf), now)
                    continue
                if r <= now:
                    continue
                s = prof.earliest(now, u, self.dplan[j], r)
                if s < r:
                    prof.add(r, r + self.dplan[j], u)
                    self._reserve(j, s, now)
        else:
            for j in arrived:
                self._reserve(j, prof.earliest(now, self.units[j], self.dplan[j], math.inf), now)
        self.start_due(now, place, commit)

    def start_due(self, now: float, place: Place, commit: Commit) -> None:
        """Start, in queue order, the jobs whose reservation time is now."""
        for j in list(self.queue):
            if self.res[j] == now:
                placed = place(j) if self.units[j] <= self.free else None
                if placed is not None:
                    commit(j, placed)
                elif self.units[j] <= self.free:
                    self.shape_delayed.add(j)
