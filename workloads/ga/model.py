"""The schedule model of the ``ga`` workload and its chromosome encoding.

A *problem* is one planning period: C computing units (speed ``k_m``, group, the time
``ready[m]`` from which the unit is free, i.e. the end of its fixed idle gene, and the end
``prev_end[m]`` of the previous schedule on it, NaN if none) and J jobs (width = number of
processes, nominal length, priority, at most one predecessor in the same period, resource
mask ``mask[j, m]``). Job ``j`` owns the processes ``job_first[j] .. job_first[j] +
width[j] - 1``.

*(our rule)* The processes of one parallel job share the job's resource request, length
and priority, and the job runs at the speed of its slowest unit, so all its slots start
and end together: its duration is ``length / min_m k_m`` over its units. A non-parallel
job is a job of width 1, so its slot on unit m lasts ``length / k_m`` (the source's
rescaling ``|s_h| = |s_m| k_m / k_h``).

Chromosome = header + body (source). ``header[m]`` = number of slots on unit m; ``body``
= the process ids unit by unit in execution order. Slot lengths are a function of
(process, unit), so they are recomputed by :func:`decode` rather than stored.

Timing (:func:`decode`) is semi-active: every job starts at the latest of its units'
previous slot ends (or ``ready``), and its predecessor's end, so no idle gap is left that
the unit orders, group synchronisation and dependencies do not force (gaps they do force
are filled by :func:`operators.compact_job`). A body whose unit orders and dependencies
form a cycle cannot be timed: it is *inconsistent*, and operators never keep such a child.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from schedsweep.workloads._contract import kernel_array

from ..kernel_support.jit import kernel


@dataclass(frozen=True)
class Problem:
    """One planning period's scheduling problem, as plain arrays (times in time units)."""

    speed: np.ndarray      # float64[C], speed coefficient k_m
    group: np.ndarray      # int64[C], group (site) of each unit
    ready: np.ndarray      # float64[C], end of the unit's idle gene: no slot starts before
    prev_end: np.ndarray   # float64[C], end of the previous schedule on the unit, NaN if none
    width: np.ndarray      # int64[J], processes per job (1 = non-parallel)
    length: np.ndarray     # float64[J], nominal length (time units at speed 1)
    prio: np.ndarray       # int64[J], priority in 1 .. p_max
    pred: np.ndarray       # int64[J], index of the job it depends on, -1 if none
    mask: np.ndarray       # bool[J, C], the job may run on the unit
    arrival: np.ndarray    # float64[J], arrival time
    period_end: float      # end of the planning period (no slot may start before it)

    @property
    def n_units(self) -> int:
        return int(self.speed.shape[0])

    @property
    def n_jobs(self) -> int:
        return int(self.width.shape[0])

    @property
    def n_procs(self) -> int:
        return int(self.width.sum())

    @property
    def job_first(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.width)[:-1])).astype(np.int64)

    @property
    def proc_job(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_jobs, dtype=np.int64), self.width)

    def arrays(self) -> tuple:
        """The tuple every numba kernel takes (see :data:`ARRAYS_DOC`), built once."""
        return self._arrays

    @cached_property
    def _arrays(self) -> tuple:
        return (
            kernel_array(self.speed, np.float64), kernel_array(self.group, np.int64),
            kernel_array(self.ready, np.float64), kernel_array(self.prev_end, np.float64),
            kernel_array(self.width, np.int64), kernel_array(self.length, np.float64),
            kernel_array(self.prio, np.int64), kernel_array(self.pred, np.int64),
            kernel_array(self.mask, np.bool_), self.proc_job, self.job_first,
            bool(np.all(self.width == 1) and np.all(self.pred < 0)),
            np.ascontiguousarray(self.mask.all(axis=1)),
        )

    def validate(self) -> None:
        """Raise ValueError if the arrays do not describe a schedulable problem."""
        J, C = self.n_jobs, self.n_units
        for name in ("width", "length", "prio", "pred", "arrival"):
            if getattr(self, name).shape != (J,):
                raise ValueError(f"Problem.{name} must have shape ({J},)")
        for name in ("group", "ready", "prev_end"):
            if getattr(self, name).shape != (C,):
                raise ValueError(f"Problem.{name} must have shape ({C},)")
        if self.mask.shape != (J, C):
            raise ValueError(f"Problem.mask must have shape ({J}, {C})")
        if np.any(self.width < 1):
            raise ValueError("Problem.width must be >= 1")
        if np.any((self.pred >= np.arange(J)) | (self.pred < -1)):
            raise ValueError("Problem.pred must name an earlier job or be -1")
        for j in range(J):
            if not any(int(np.count_nonzero(self.mask[j] & (self.group == g))) >= self.width[j]
                       for g in np.unique(self.group)):
                raise ValueError(f"job {j} (width {self.width[j]}) has no group with enough allowed units")


ARRAYS_DOC = ("(speed, group, ready, prev_end, width, length, prio, pred, mask, proc_job, job_first, simple, "
              "anywhere)")
"""``simple``: every job is non-parallel and none has a predecessor (decoding is then one pass);
``anywhere[j]``: job j's mask allows every unit."""


@kernel
def segment_starts(header: np.ndarray) -> np.ndarray:
    """Offset of each unit's first gene in the body (length C + 1)."""
    C = header.shape[0]
    seg = np.zeros(C + 1, np.int64)
    for m in range(C):
        seg[m + 1] = seg[m] + header[m]
    return seg


@kernel
def decode(body, header, P, start, dur, unit_of):
    """Time a chromosome semi-actively.

    Fills ``start[J]`` and ``dur[J]`` (time units) and ``unit_of[N]`` (unit of each
    process). Returns False if the body is inconsistent (a cycle of unit orders and
    dependencies, a job on units of several groups or twice on one unit, a process
    missing or placed twice); the outputs are then meaningless.
    """
    C = header.shape[0]
    N = body.shape[0]
    J = P[4].shape[0]
    return decode_into(body, header, P, start, dur, unit_of, np.empty(N, np.int64), np.empty(C + 1, np.int64),
                       np.empty(C, np.int64), np.empty(C), np.empty(J, np.bool_))


@kernel
def _decode_simple(body, header, speed, ready, length, proc_job, start, dur, unit_of, pos_of):
    """Non-parallel jobs without dependencies: each unit's slots run back to back."""
    N = body.shape[0]
    pos_of[:] = -1
    i = 0
    for m in range(header.shape[0]):
        t = ready[m]
        for _ in range(header[m]):
            if i >= N:
                return False
            u = body[i]
            if u < 0 or u >= N or pos_of[u] >= 0:
                return False
            pos_of[u] = i
            unit_of[u] = m
            j = proc_job[u]
            start[j] = t
            dur[j] = length[j] / speed[m]
            t += dur[j]
            i += 1
    return i == N


@kernel
def decode_into(body, header, P, start, dur, unit_of, pos_of, seg, ptr, avail, done):
    """:func:`decode` with its work arrays given (``pos_of[N]``, ``seg[C+1]``, ``ptr[C]``,
    ``avail[C]``, ``done[J]``), so the GA's inner loop allocates nothing."""
    speed, group, ready, prev_end, width, length, prio, pred, mask, proc_job, job_first, simple, _ = P
    C = header.shape[0]
    N = body.shape[0]
    J = width.shape[0]
    if simple:
        return _decode_simple(body, header, speed, ready, length, proc_job, start, dur, unit_of, pos_of)
    seg[0] = 0
    for m in range(C):
        seg[m + 1] = seg[m] + header[m]
    if seg[C] != N:
        return False
    pos_of[:] = -1
    for m in range(C):
        for i in range(seg[m], seg[m + 1]):
            u = body[i]
            if u < 0 or u >= N or pos_of[u] >= 0:
                return False
            pos_of[u] = i
            unit_of[u] = m
    for j in range(J):
        f = job_first[j]
        if width[j] == 1:
            dur[j] = length[j] / speed[unit_of[f]]
            continue
        mink = np.inf
        g = group[unit_of[f]]
        for u in range(f, f + width[j]):
            m = unit_of[u]
            if group[m] != g:
                return False
            for u2 in range(f, u):
                if unit_of[u2] == m:
                    return False
            mink = min(mink, speed[m])
        dur[j] = length[j] / mink
    for m in range(C):
        ptr[m] = seg[m]
        avail[m] = ready[m]
    done[:] = False
    remaining = J
    progress = True
    while progress and remaining > 0:
        progress = False
        for m in range(C):
            while ptr[m] < seg[m + 1]:
                j = proc_job[body[ptr[m]]]
                p = pred[j]
                if p >= 0 and not done[p]:
                    break
                t = avail[m]
                f = job_first[j]
                at_heads = True
                for u in range(f, f + width[j]):
                    m2 = unit_of[u]
                    if ptr[m2] != pos_of[u]:
                        at_heads = False
                        break
                    t = max(t, avail[m2])
                if not at_heads:
                    break
                if p >= 0:
                    t = max(t, start[p] + dur[p])
                start[j] = t
                done[j] = True
                remaining -= 1
                progress = True
                for u in range(f, f + width[j]):
                    m2 = unit_of[u]
                    avail[m2] = t + dur[j]
                    ptr[m2] += 1
    return remaining == 0


@kernel
def respects_mask(body, header, P) -> bool:
    """Every process sits on a unit its job's resource mask allows."""
    mask = P[8]
    proc_job = P[9]
    C = header.shape[0]
    seg = segment_starts(header)
    for m in range(C):
        for i in range(seg[m], seg[m + 1]):
            if not mask[proc_job[body[i]], m]:
                return False
    return True


@kernel
def body_from_units(unit_of, seq, C):
    """Chromosome from each process's unit and a key ``seq >= 0`` that orders slots on a
    unit: processes by (unit, seq, process index), i.e. a stable argsort of ``unit * S +
    seq``, done as two stable counting sorts (by seq, then by unit) in O(N + S + C)."""
    N = unit_of.shape[0]
    S = 0
    for u in range(N):
        S = max(S, seq[u] + 1)
    at = np.zeros(S + 1, np.int64)
    for u in range(N):
        at[seq[u] + 1] += 1
    for k in range(S):
        at[k + 1] += at[k]
    by_seq = np.empty(N, np.int64)
    for u in range(N):
        by_seq[at[seq[u]]] = u
        at[seq[u]] += 1
    header = np.zeros(C, np.int64)
    for u in range(N):
        header[unit_of[u]] += 1
    fill = np.empty(C, np.int64)
    f = 0
    for m in range(C):
        fill[m] = f
        f += header[m]
    body = np.empty(N, np.int64)
    for i in range(N):
        u = by_seq[i]
        body[fill[unit_of[u]]] = u
        fill[unit_of[u]] += 1
    return body, header


def timed(problem: Problem, body: np.ndarray, header: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(start[J], dur[J], unit_of[N])`` of a chromosome; ValueError if it is inconsistent."""
    start = np.zeros(problem.n_jobs)
    dur = np.zeros(problem.n_jobs)
    unit_of = np.zeros(problem.n_procs, np.int64)
    N, C, J = problem.n_procs, problem.n_units, problem.n_jobs
    # decode_into with work arrays made here: one kernel fewer to compile than decode
    if not decode_into(np.asarray(body, np.int64), np.asarray(header, np.int64), problem.arrays(), start, dur, unit_of,
                       np.empty(N, np.int64), np.empty(C + 1, np.int64), np.empty(C, np.int64), np.empty(C),
                       np.empty(J, np.bool_)):
        raise ValueError("inconsistent chromosome")
    return start, dur, unit_of
