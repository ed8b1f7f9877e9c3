"""Plain, obvious reference of pyss's cluster semantics (``docs/models/cluster.md``, last section).

Readable, not fast: every capacity question is answered by scanning a list of
``(start, end, procs)`` intervals. The machine is ``m`` interchangeable processors.

Rules implemented (the spec's "Literature-compatible semantics (pyss)"):
- events one at a time, ordered by time, then Submission < Termination < Start;
  a scheduling pass after each submission (only if the new job fits now) and after
  each termination; a start event only schedules the job's termination;
- the capacity "snapshot" holds every running job as the interval
  ``[start, start + estimate)`` (and, in conservative, every waiting job's reservation),
  so a running job's estimated end is free capacity from then on, even if its
  termination event at that instant has not been handled yet;
- FCFS: start jobs from the head while the head fits now;
- EASY: FCFS, then reserve the head at its earliest start in the snapshot and start
  every later job (queue order) that fits now without touching that reservation;
- conservative: each submitted job is reserved at its earliest start; after a
  termination the waiting jobs, in queue order, are each moved to their earliest start
  (one pass), and jobs whose reservation is now start.

Trace conversion as pyss's source does it: :func:`convert_pyss`.
"""
from __future__ import annotations

import heapq

SUBMIT, TERMINATE, START = 0, 1, 2     # priority at equal times


def convert_pyss(fields: list[list[float]], machine: int,
                 processors: str = "requested") -> list[tuple[int, float, float, int, float]]:
    """SWF records (18 numbers each) -> jobs ``(id, submit, run, procs, estimate)``, record
    by record as pyss's ``_job_input_to_job`` (predictsim, ``simulation/pyss/src/base/prototype.py``)
    does it on a machine of ``machine`` processors, with the processor count ``count`` read
    as pyss runs (``processors = "requested"``: field 8 if it is positive, else field 5) or as
    predictsim's source reads it (``"allocated"``: field 5):

    - run time <= 0, count <= 0 or submit < 0: a 1 s job (estimate 1 s) on
      max(1, count) processors, submitted at max(submit, 1);
    - otherwise: estimate = int(max(requested time, run time, 1)),
      run = int(max(min(requested time, run time), 1)), processors = count, clamped to
      [1, machine];
    - nothing is dropped (a malformed record larger than the machine could never start:
      left out here, as ``swf.read`` does). Queue order: submit time, ties in file order.
    """
    jobs = []
    for f in fields:
        jid, submit, run, alloc, req_time = int(f[0]), int(f[1]), f[3], int(f[4]), int(f[8])
        if processors == "requested" and int(f[7]) > 0:
            alloc = int(f[7])
        if run <= 0 or alloc <= 0 or submit < 0:
            job = (jid, float(max(submit, 1)), 1.0, max(1, alloc), 1.0)
        else:
            est = int(max(req_time, run, 1))
            actual = int(max(min(req_time, run), 1))
            job = (jid, float(submit), float(actual), max(min(alloc, machine), 1), float(est))
        if job[3] <= machine:
            jobs.append(job)
    jobs.sort(key=lambda j: j[1])      # stable: file order at equal submit times
    return jobs


def _used(snapshot, t0: float, t1: float) -> int:
    """Largest number of processors used at any instant of [t0, t1) by the snapshot."""
    points = {t0} | {s for s, e, p in snapshot if t0 < s < t1}
    return max(sum(p for s, e, p in snapshot if s <= t and t < e) for t in points)


def _fits(snapshot, m: int, t: float, procs: int, est: float) -> bool:
    return _used(snapshot, t, t + est) + procs <= m


def _earliest(snapshot, m: int, now: float, procs: int, est: float) -> float:
    """Earliest time >= now at which ``procs`` processors are free for ``est`` seconds."""
    for t in sorted({now} | {e for s, e, p in snapshot if e > now}):
        if _fits(snapshot, m, t, procs, est):
            return t
    raise AssertionError("job larger than the machine")


def simulate_pyss(jobs, m: int, queue: str) -> dict[int, float]:
    """Start time of every job (by id). ``jobs`` as returned by :func:`convert_pyss`."""
    job = {j[0]: j for j in jobs}
    events: list = []
    for k, (jid, submit, run, procs, est) in enumerate(jobs):
        heapq.heappush(events, (submit, SUBMIT, k, jid))
    seq = len(jobs)
    running: dict[int, tuple] = {}       # id -> (start, start + est, procs)
    reserved: dict[int, tuple] = {}      # conservative: id -> (start, start + est, procs)
    waiting: list[int] = []
    start_time: dict[int, float] = {}

    def snapshot():
        return list(running.values()) + list(reserved.values())

    def start(jid: int, now: float):
        nonlocal seq
        _, _, run, procs, est = job[jid]
        waiting.remove(jid)
        reserved.pop(jid, None)
        running[jid] = (now, now + est, procs)
        start_time[jid] = now
        seq += 1
        heapq.heappush(events, (now, START, seq, jid))

    def fcfs_pass(now: float):
        while waiting and _fits(snapshot(), m, now, job[waiting[0]][3], job[waiting[0]][4]):
            start(waiting[0], now)

    def easy_pass(now: float):
        fcfs_pass(now)
        if len(waiting) > 1:
            head = waiting[0]
            t_head = _earliest(snapshot(), m, now, job[head][3], job[head][4])
            head_res = (t_head, t_head + job[head][4], job[head][3])
            for jid in list(waiting[1:]):
                if _fits(snapshot() + [head_res], m, now, job[jid][3], job[jid][4]):
                    start(jid, now)

    def conservative_compress(now: float):
        for jid in list(waiting):
            if reserved[jid][0] > now:
                del reserved[jid]
                t = _earliest(snapshot(), m, now, job[jid][3], job[jid][4])
                reserved[jid] = (t, t + job[jid][4], job[jid][3])
            if reserved[jid][0] == now:
                start(jid, now)

    while events:
        now, kind, _, jid = heapq.heappop(events)
        if kind == SUBMIT:
            _, _, run, procs, est = job[jid]
            waiting.append(jid)
            if queue == "conservative":
                t = _earliest(snapshot(), m, now, procs, est)
                reserved[jid] = (t, t + est, procs)
                if t == now:
                    start(jid, now)
            elif _fits(snapshot(), m, now, procs, est):
                (fcfs_pass if queue == "fcfs" else easy_pass)(now)
        elif kind == START:
            seq += 1
            heapq.heappush(events, (now + job[jid][2], TERMINATE, seq, jid))
        else:
            del running[jid]
            if queue == "conservative":
                conservative_compress(now)
            elif queue == "fcfs":
                fcfs_pass(now)
            else:
                easy_pass(now)
    return start_time
