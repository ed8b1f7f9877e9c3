"""Dask workers as Slurm jobs: a ``dask_jobqueue.SLURMCluster`` built from CLI options and a
profile file (``slurm/*.yaml``), scaled adaptively between bounds.

Each worker job runs ``cores_per_job`` single-threaded worker processes (as the LocalCluster
runs one per core). Worker jobs that Slurm ends (``scancel``, node failure) are forgotten
and replaced by the adaptive scaling; before its walltime each job hands over to a
replacement submitted ahead of time (:func:`changeover`), finishing or handing back its
running batch, so a long sweep rolls over to fresh jobs without a gap or a lost batch.
The execution loop resubmits any batch whose worker died anyway.

Exposure: by default the dashboard listens on 127.0.0.1 of the login node only
(reach it with ``ssh -L 8787:127.0.0.1:8787 login-node``), the scheduler listens on the
profile's ``interface`` (or, without one, on this machine's outward address, never
0.0.0.0), and scheduler, workers and client talk TLS with a temporary self-signed
certificate made for this run, so only processes given its key can join or submit work.
Worker dashboards are off. ``tls: false``, ``scheduler_host: 0.0.0.0`` and
``dashboard_address: ":8787"`` undo each of these, only when a profile asks.
"""
from __future__ import annotations

import contextlib
import getpass
import logging
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import weakref
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from dask.utils import parse_bytes
from dask_jobqueue import SLURMCluster

from ..base import shipped
from ..base.console import say as _say
from . import handover
from .scheduler import scheduler_process

logger = logging.getLogger(__name__)

PROFILE_DIR = shipped.folder("slurm")
# Slurm job states in which a worker job may still deliver workers (squeue's %T names).
ALIVE_STATES = frozenset({"PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "REQUEUED", "REQUEUE_FED",
                          "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT"})
JOB_POLL_SECONDS = 3.0  # how often squeue is asked which worker jobs are still alive
# Workers keep running this long without tasks before the adaptive scaling releases
# their jobs: a queued job costs minutes on a busy site, an idle one only its cores.
IDLE_BEFORE_RELEASE_SECONDS = 30
# Threads of numeric libraries: one per worker process, as on the LocalCluster (sites
# often start jobs with a clean environment, so set them in the job script itself).
# Run on a compute node, prints the address its workers listen on when no interface is set.
OWN_ADDRESS = "from distributed.utils import get_ip; print(get_ip())"
SINGLE_THREAD_EXPORTS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class SlurmOptionError(ValueError):
    """An invalid Slurm option or profile entry; the message names it, its value and what is allowed."""


@dataclass
class SlurmOptions:
    """Everything that shapes the worker jobs. Units: memory per job, walltime per job."""

    jobs: int = 4                    # maximum number of worker jobs
    min_jobs: int = 1                # jobs kept even when idle (clamped to ``jobs``)
    cores_per_job: int = 1           # cores per job = single-threaded worker processes per job
    memory: str | None = None        # per job, e.g. "4GB"; default 2 GB per core
    walltime: str = "01:00:00"       # per job, Slurm syntax ([D-]HH:MM:SS, MM:SS, minutes)
    partition: str | None = None
    account: str | None = None
    interface: str | None = None     # network interface of scheduler and workers, e.g. ib0, lo
    local_directory: str | None = None   # worker scratch on node-local disk, e.g. $TMPDIR or /tmp
    log_directory: str | None = None     # where worker jobs' stdout/stderr go (default: Slurm's, cwd)
    job_extra_directives: list[str] = field(default_factory=list)  # more #SBATCH lines, e.g. --qos=normal
    job_script_prologue: list[str] = field(default_factory=list)   # shell lines before the worker starts
    python: str | None = None        # Python on the compute nodes (default: this interpreter)
    death_timeout: float = 60.0      # seconds a worker waits for an unreachable scheduler
    dashboard_address: str = "127.0.0.1:8787"  # scheduler dashboard; loopback: reach it by an ssh tunnel
    retire_before_walltime: bool = True   # workers leave gracefully before their walltime
    tls: bool = True                 # scheduler-worker-client traffic over TLS, temporary certificate
    scheduler_host: str | None = None    # address the scheduler listens on (default: interface's, else outward IP)
    tls_directory: str = "~/.schedsweep/tls"  # shared folder for the workers' certificate files (private, 0700)

    def job_memory(self) -> str:
        return self.memory or f"{2 * self.cores_per_job}GB"


_CLI_NAMES = ("jobs", "cores_per_job", "memory", "walltime", "partition", "account")


def load_profile(profile: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a profile: a YAML mapping of :class:`SlurmOptions` fields.

    ``profile`` is a path, or a bare name found as ``slurm/<name>.yaml`` shipped with schedsweep (the checkout's
    folder, or the installed package's).
    """
    import yaml

    path = Path(profile).expanduser()
    if not path.exists() and path.suffix == "" and len(path.parts) == 1:
        path = PROFILE_DIR / f"{profile}.yaml"
    if not path.exists():
        raise SlurmOptionError(f"--profile {profile}: no such file (profiles live in {PROFILE_DIR})")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise SlurmOptionError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SlurmOptionError(f"{path}: a profile is a mapping of option: value, not {type(data).__name__}")
    known = {f.name for f in fields(SlurmOptions)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SlurmOptionError(f"{path}: unknown key(s) {', '.join(map(repr, unknown))}; "
                               f"allowed: {', '.join(sorted(known))}")
    return data


def resolve_options(*, jobs: int | None = None, cores_per_job: int | None = None, memory: str | None = None,
                    walltime: str | None = None, partition: str | None = None, account: str | None = None,
                    profile: str | None = None) -> SlurmOptions:
    """Merge defaults < profile < explicit options (``None`` = not given) and validate."""
    merged = asdict(SlurmOptions())
    source = dict.fromkeys(merged, "default")
    if profile:
        for key, value in load_profile(profile).items():
            merged[key], source[key] = value, f"profile {profile}"
    given = {"jobs": jobs, "cores_per_job": cores_per_job, "memory": memory, "walltime": walltime,
             "partition": partition, "account": account}
    for key, value in given.items():
        if value is not None:
            merged[key], source[key] = value, "--" + key.replace("_", "-")
    _validate(merged, source)
    merged["min_jobs"] = min(merged["min_jobs"], merged["jobs"])
    return SlurmOptions(**merged)


def _validate(o: dict[str, Any], source: dict[str, str]) -> None:
    def bad(key: str, allowed: str) -> SlurmOptionError:
        return SlurmOptionError(f"{key} = {o[key]!r} (from {source[key]}): {allowed}")

    for key, low in (("jobs", 1), ("min_jobs", 0), ("cores_per_job", 1)):
        if isinstance(o[key], bool) or not isinstance(o[key], int) or o[key] < low:
            raise bad(key, f"must be an integer >= {low}")
    if o["memory"] is not None:
        try:
            if parse_bytes(str(o["memory"])) <= 0:
                raise ValueError
        except (ValueError, TypeError):
            raise bad("memory", "must be a positive size such as 4GB or 500MB") from None
    if not isinstance(o["walltime"], str):  # YAML reads an unquoted 4:00:00 as 14400
        raise bad("walltime", "must be a string in Slurm time syntax; quote it in YAML: \"04:00:00\"")
    try:
        walltime_seconds(o["walltime"])
    except ValueError:
        raise bad("walltime", "must be Slurm time syntax: HH:MM:SS, D-HH:MM:SS, MM:SS or minutes") from None
    for key in ("partition", "account", "interface", "local_directory", "log_directory", "python",
                "dashboard_address", "scheduler_host", "tls_directory"):
        if o[key] is not None and (not isinstance(o[key], str) or not o[key]):
            raise bad(key, "must be a non-empty string")
    for key in ("job_extra_directives", "job_script_prologue"):
        if not isinstance(o[key], list) or not all(isinstance(x, str) for x in o[key]):
            raise bad(key, "must be a list of strings")
    if isinstance(o["death_timeout"], bool) or not isinstance(o["death_timeout"], (int, float)) \
            or not o["death_timeout"] > 0:
        raise bad("death_timeout", "must be a positive number of seconds")
    for key in ("retire_before_walltime", "tls"):
        if not isinstance(o[key], bool):
            raise bad(key, "must be true or false")
    if not isinstance(o["dashboard_address"], str) or not o["dashboard_address"]:
        raise bad("dashboard_address", "must be HOST:PORT, e.g. 127.0.0.1:8787")


_WALLTIME = re.compile(r"^(?:(?P<d>\d+)-)?(?P<a>\d+)(?::(?P<b>\d+))?(?::(?P<c>\d+))?$")


def walltime_seconds(text: str) -> int:
    """Seconds in a Slurm time limit: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``."""
    m = _WALLTIME.match(text.strip())
    if not m:
        raise ValueError(f"not a Slurm time: {text!r}")
    d, a, b, c = (int(x) if x is not None else None for x in m.group("d", "a", "b", "c"))
    if d is None:
        if b is None:
            seconds = a * 60                      # minutes
        elif c is None:
            seconds = a * 60 + b                  # minutes:seconds
        else:
            seconds = (a * 60 + b) * 60 + c       # hours:minutes:seconds
    else:
        seconds = d * 86400 + a * 3600 + (b or 0) * 60 + (c or 0)
    if seconds <= 0:
        raise ValueError(f"time limit must be positive: {text!r}")
    return seconds


# A retiring worker is closed (its last batch finished or handed back) this long before its
# job's walltime: a poll of squeue, the hand-over of its unfetched results, the worker and its
# job script ending. Slurm's own TIMEOUT then never comes.
EXIT_SECONDS = 15.0
# Until a worker job of this run has been seen starting, this is how long one is assumed to
# take from submission to its first worker (queue wait and start-up): replacements are
# submitted that long before the job they replace stops taking batches.
START_SECONDS = 60.0


@dataclass(frozen=True)
class Changeover:
    """When a worker job hands over to its replacement (seconds on one clock)."""

    replace_at: float   # the replacement job is submitted (the old one keeps working)
    drain_at: float     # the old job's workers take no new batch; they finish the running one
    leave_at: float     # anything still running is handed back; the workers close


def changeover(deadline: float, batch_seconds: float, start_seconds: float, rank: int, jobs: int) -> Changeover:
    """The changeover of a worker job whose walltime ends at ``deadline``.

    A batch started just before ``drain_at`` still ends before ``leave_at``, even seen a poll
    late: the margin grows with the batch length. The ``jobs`` jobs of a run (``rank`` 0..jobs-1 among them) stop
    taking batches spread over one more batch length, so jobs started together do not all
    hand over at once; each replacement is submitted ``start_seconds`` (the start-up seen so
    far) and one poll ahead, so it works before the old job stops.
    """
    leave_at = deadline - EXIT_SECONDS
    # a poll of squeue late, the running batch still ends before leave_at
    drain_at = leave_at - JOB_POLL_SECONDS - batch_seconds * (1.0 + rank / max(1, jobs))
    return Changeover(drain_at - start_seconds - JOB_POLL_SECONDS, drain_at, leave_at)


@dataclass
class _Retiring:
    """A worker job taken out of the adaptive plan because its walltime nears."""

    name: str
    job: Any
    job_id: str
    times: Changeover
    others: frozenset[str]        # the jobs already there: any new one is its replacement
    state: str = "planned"        # planned -> draining -> closing
    handed_back: int = 0          # batches it had started and gave back to other workers
    replaced_by: list[str] = field(default_factory=list)


async def _close_job(job: Any) -> None:
    """Cancel a worker job (nothing if it has ended) and mark it closed, as the cluster's own scale-down does."""
    from distributed.core import Status

    await job.close()
    job.status = Status.closed


class SweepSLURMCluster(SLURMCluster):
    """A SLURMCluster that forgets worker jobs Slurm has ended, so adaptive scaling replaces them,
    and hands each job over to its replacement before its walltime without a gap.

    distributed alone notices a lost worker only after ``lost-worker-timeout`` (15 s), only
    for one-process jobs (a multi-process job's workers are named ``<job>-<i>`` and never
    matched), and never for a job that ended before its worker connected (killed while
    pending, node failure at start): adaptive scaling then counts the dead job as planned
    and does not replace it, and a sweep whose jobs all died waits forever. Asking squeue
    every few seconds covers all three.

    Walltime: the time each job has left comes from squeue. Ahead of its end
    (:func:`changeover`) the job leaves the adaptive plan, so a replacement is submitted
    while it still works; then its workers take no new batch (queued ones go back at once),
    finish the running one if it ends before ``leave_at`` (else hand it back: Dask reschedules
    it, which is neither a failure nor a try), and close, so the job ends before Slurm's TIMEOUT.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        self._used: set[str] = set()             # every job name given out (never reused)
        super().__init__(*args, **kwargs)
        self._seen_workers: set[str] = set()
        self._ended_jobs: list[str] = []
        self._submitted: dict[str, float] = {}    # job name -> when its id was first seen
        self._start_seconds: list[float] = []     # submission -> first worker, per job seen starting
        self._seen_start: set[str] = set()        # jobs whose first worker has registered
        self._slurm_state: dict[str, str] = {}    # job id -> last squeue state
        self._retiring: dict[str, _Retiring] = {}
        self._job_rank: dict[str, int] = {}
        self._view: dict[str, Any] = {"batch_seconds": 0.0, "workers": []}   # the scheduler's, last poll
        self.loop.add_callback(self._install_job_watch)

    def _install_job_watch(self) -> None:
        from tornado.ioloop import PeriodicCallback

        pc = PeriodicCallback(self._watch_jobs, JOB_POLL_SECONDS * 1000)
        self.periodic_callbacks["schedsweep-job-watch"] = pc
        pc.start()

    def new_worker_spec(self) -> dict[str, Any]:
        """The next job's spec under a name no job of this cluster had: a retiring job's workers
        still hold theirs, and the scheduler refuses a name taken."""
        while self._new_worker_name(self._i) in self.worker_spec or self._new_worker_name(self._i) in self._used:
            self._i += 1
        name = self._new_worker_name(self._i)
        self._used.add(name)
        return {name: self.new_spec}

    def _workers_of(self, name: str) -> list[dict[str, Any]]:
        """The workers of job ``name`` (``name``, or ``name-<i>`` with several processes) as the
        scheduler last said (:func:`pipeline.execution.handover.workers`)."""
        return [w for w in self._view["workers"] if w["name"] == name or w["name"].startswith(f"{name}-")]

    async def _ask(self, handler: str, **kwargs: Any) -> Any:
        """Call one of the handover's handlers in the scheduler's process; None when it did not answer in a poll."""
        import asyncio

        try:
            return await asyncio.wait_for(getattr(self.scheduler_comm, handler)(**kwargs), JOB_POLL_SECONDS)
        except Exception as exc:  # noqa: BLE001 - scheduler busy: decide nothing now, ask again next poll
            logger.debug("%s failed: %s", handler, exc)
            return None

    async def _squeue(self) -> dict[str, tuple[str, float | None]] | None:
        """{job id: (state, seconds left)} of this user's jobs, or None when squeue did not answer."""
        try:
            out = await self.job_cls._call(["squeue", "-h", "-o", "%i|%T|%L", "-u", getpass.getuser()])
        except Exception as exc:  # noqa: BLE001 - controller busy or unreachable: decide nothing now
            logger.debug("squeue failed: %s", exc)
            return None
        jobs = {}
        for line in out.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 3:
                try:
                    left: float | None = float(walltime_seconds(parts[2]))
                except ValueError:  # UNLIMITED, NOT_SET, INVALID
                    left = None
                jobs[parts[0]] = (parts[1], left)
        return jobs

    async def _watch_jobs(self) -> None:
        if self.status.name not in ("running", "created"):
            return
        import time

        now = time.monotonic()
        folder = getattr(self, "_schedsweep_tls_folder", None)
        if folder:  # alive: a job starting later finds its run here (orphan_check)
            with contextlib.suppress(OSError):
                os.utime(os.path.join(folder, TLS_OWNER))
        view = await self._ask(handover.WORKERS)
        if view is None:
            return
        self._view = view
        self._seen_workers.update(w["name"] for w in view["workers"])
        jobs = {name: job.job_id for name, job in list(self.workers.items()) if getattr(job, "job_id", None)}
        for name in jobs:
            self._note_start(name, now)
        if not jobs and not self._retiring:
            return
        queue = await self._squeue()
        if queue is None:
            return
        alive = {job_id for job_id, (state, _) in queue.items() if state in ALIVE_STATES}
        await self._forget_ended(jobs, alive)
        self._say_requeued(jobs, queue)
        if getattr(self, "schedsweep_options", SlurmOptions()).retire_before_walltime:
            await self._plan_retirements(queue, now)
            await self._drive_retirements(alive, now)

    def _note_start(self, name: str, now: float) -> None:
        """Submission time of each job, and how long it took until its first worker registered."""
        if name not in self._submitted:
            self._submitted[name] = now
            self._job_rank[name] = len(self._job_rank)
        elif name not in self._seen_start and any(w == name or w.startswith(f"{name}-") for w in self._seen_workers):
            self._seen_start.add(name)
            self._start_seconds.append(now - self._submitted[name])

    async def _forget_ended(self, jobs: dict[str, str], alive: set[str]) -> None:
        """Jobs Slurm ended that this cluster did not retire: said, and replaced."""
        ended = [name for name, job_id in jobs.items() if job_id not in alive]
        for name in ended:
            job_id = jobs[name]
            self._ended_jobs.append(job_id)
            if not any(w == str(name) or w.startswith(f"{name}-") for w in self._seen_workers):
                print(f"schedsweep: Slurm worker job {job_id} ended before any of its workers connected; "
                      f"see its log ({self._log_hint(job_id)}) and the Slurm options", file=sys.stderr)
            else:
                _say(f"Slurm worker job {job_id} ended {await self._how_ended(job_id)}; "
                     "its running batches rerun on the other workers and a new job replaces it")
            self.worker_spec.pop(name, None)
        if ended:
            await self._correct_state()

    async def _how_ended(self, job_id: str) -> str:
        """"(NODE_FAIL on mh-c2)" from scontrol while Slurm still knows the job, else ""."""
        try:
            out = await self.job_cls._call(["scontrol", "-o", "show", "job", job_id])
        except Exception:  # noqa: BLE001 - already purged, or the controller busy
            return "(its state is no longer known to Slurm)"
        fields_ = dict(x.split("=", 1) for x in out.split() if "=" in x)
        where = f" on {fields_['NodeList']}" if fields_.get("NodeList") not in (None, "", "(null)") else ""
        return f"({fields_.get('JobState', '?')}{where})"

    def _say_requeued(self, jobs: dict[str, str], queue: dict[str, tuple[str, float | None]]) -> None:
        """A running worker job put back in the queue (its node went down): said once."""
        for job_id in jobs.values():
            state = queue.get(job_id, ("", None))[0]
            before = self._slurm_state.get(job_id)
            if before == "RUNNING" and state in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"):
                _say(f"Slurm put worker job {job_id} back in the queue ({state}: its node was lost); "
                     "its running batches rerun on the other workers")
            if state:
                self._slurm_state[job_id] = state

    async def _plan_retirements(self, queue: dict[str, tuple[str, float | None]], now: float) -> None:
        """Take jobs whose changeover is due out of the adaptive plan: a replacement is submitted."""
        start = 1.5 * max(self._start_seconds) if self._start_seconds else START_SECONDS
        batch = self._view["batch_seconds"]
        jobs = getattr(self, "schedsweep_options", SlurmOptions()).jobs
        due = []
        for name, job in list(self.workers.items()):
            job_id = getattr(job, "job_id", None)
            state, left = queue.get(str(job_id), ("", None))
            if state != "RUNNING" or left is None or name not in self._seen_start:
                continue  # only a job whose workers run is handed over
            times = changeover(now + left, batch, start, self._job_rank.get(name, 0) % max(1, jobs), jobs)
            if now >= times.replace_at:
                due.append((name, job, str(job_id), times))
        if not due:
            return
        async with self._lock:
            for name, job, job_id, times in due:
                self.worker_spec.pop(name, None)
                self.workers.pop(name, None)
                self._retiring[name] = _Retiring(name, job, job_id, times, frozenset(self.workers))
                _say(f"Slurm worker job {job_id}: replacement asked for; it drains in {times.drain_at - now:.0f} s, "
                     f"leaves in {times.leave_at - now:.0f} s (batches of {batch:.1f} s, start-up {start:.0f} s)",
                     detail=True)
        await self._correct_state()

    async def _drive_retirements(self, alive: set[str], now: float) -> None:
        for r in list(self._retiring.values()):
            if not r.replaced_by:
                r.replaced_by = sorted(str(j.job_id) for n, j in list(self.workers.items())
                                       if n not in r.others and getattr(j, "job_id", None))
            if r.job_id not in alive:
                self._retiring.pop(r.name, None)
                await _close_job(r.job)
                self._say_retired(r, now)
                continue
            workers = self._workers_of(r.name)
            if r.state == "planned" and now >= r.times.drain_at:
                r.state = "draining"
                for w in workers:
                    await self._tell(r, w, handover.DRAIN, leave_in=r.times.leave_at - now,
                                     stimulus_id=f"schedsweep-walltime-{r.job_id}")
            if r.state == "draining":
                if now >= r.times.leave_at:
                    for w in workers:
                        await self._tell(r, w, handover.HAND_BACK)
                if not any(w["processing"] for w in workers):
                    r.state = "closing"
                    addresses = [w["address"] for w in workers]
                    if addresses:
                        self.loop.add_callback(self._close_workers, r, addresses)
            if r.state == "closing" and now >= r.times.leave_at + EXIT_SECONDS - 2 * JOB_POLL_SECONDS:
                await _close_job(r.job)   # still not gone two polls before the walltime: cancelled, never TIMEOUT

    async def _tell(self, r: _Retiring, worker: dict[str, Any], handler: str, **kwargs: Any) -> None:
        """Drain a worker or hand its batches back (:mod:`pipeline.execution.handover`); count
        the running batches handed back and keep what it still holds."""
        outcome = await self._ask(handler, address=worker["address"], **kwargs)
        if outcome is not None:
            r.handed_back += outcome["handed_back"]
            worker["processing"] = outcome["processing"]

    async def _close_workers(self, r: _Retiring, addresses: list[str]) -> None:
        """Its results moved to other workers, each worker closes (and its nanny): the job ends."""
        try:
            retired = await self.scheduler_comm.retire_workers(
                workers=addresses, close_workers=True, remove=True, stimulus_id=f"schedsweep-walltime-{r.job_id}")
        except Exception as exc:  # noqa: BLE001 - the job is cancelled before its walltime anyway
            logger.debug("retiring %s failed: %s", addresses, exc)
            retired = {}
        if set(addresses) - set(retired or {}):
            r.state = "draining"   # no other worker took its results yet: try again next poll

    def _say_retired(self, r: _Retiring, now: float) -> None:
        by = f"replaced by job {', '.join(r.replaced_by)}" if r.replaced_by else "not replaced (no batch left)"
        back = (f"; {r.handed_back} running batch{'es' if r.handed_back != 1 else ''} handed back to other workers"
                if r.handed_back else "; it finished its running batches")
        _say(f"Slurm worker job {r.job_id} retired before its walltime, {by}{back}")

    @property
    def dashboard_link(self) -> str:
        """The dashboard as it listens: a loopback dashboard gets a 127.0.0.1 link (distributed
        would print the scheduler's address, where nothing answers); reach it by an ssh tunnel."""
        link = super().dashboard_link
        address = str(getattr(self, "schedsweep_options", SlurmOptions()).dashboard_address)
        if link and address.rsplit(":", 1)[0] in ("127.0.0.1", "localhost"):
            from distributed.utils import format_dashboard_link

            return format_dashboard_link("127.0.0.1", self.scheduler_info["services"]["dashboard"])
        return link

    async def _close(self) -> None:
        try:
            for r in list(self._retiring.values()):   # out of the plan, so super() would not cancel them
                await _close_job(r.job)
            self._retiring.clear()
            await super()._close()
        finally:  # the run's certificate and key go with the scheduler
            folder = getattr(self, "_schedsweep_tls_folder", None)
            if folder:
                shutil.rmtree(folder, ignore_errors=True)

    def _log_hint(self, job_id: str) -> str:
        log_dir = getattr(self, "_schedsweep_log_directory", None)
        return f"{log_dir}/schedsweep-worker-{job_id}.err" if log_dir else f"slurm-{job_id}.out"

    @property
    def ended_jobs(self) -> list[str]:
        """Slurm ids of worker jobs that ended while this cluster ran (and were replaced)."""
        return list(self._ended_jobs)


def scheduler_host(options: SlurmOptions) -> str | None:
    """Where the scheduler listens: the explicit host, else the profile's interface (None: dask-jobqueue
    binds that interface), else this machine's outward address (what workers reach), never 0.0.0.0."""
    if options.scheduler_host:
        return options.scheduler_host
    if options.interface:
        return None
    from distributed.utils import get_ip

    return get_ip()


def temporary_security(directory: str) -> tuple[Any, str | None]:
    """A ``distributed.security.Security`` with a fresh self-signed certificate for every role.

    A certificate made by ``openssl`` in a new private folder under ``directory`` (returned
    too, so the caller removes it at the end): the files every worker job reads are ours,
    named and private. Without ``openssl``, ``Security.temporary()`` when the ``cryptography``
    package is there (dask-jobqueue then writes the workers' part into its
    ``shared_temp_directory``).
    """
    from distributed.security import Security

    if shutil.which("openssl") is None:
        try:
            import cryptography  # noqa: F401 - what Security.temporary needs
        except ImportError:
            raise SlurmOptionError("tls = true needs the openssl command or the Python package 'cryptography' to "
                                   "make a temporary certificate; install one, or set tls: false and an interface "
                                   "that only the cluster reaches") from None
        return Security.temporary(), None
    base = Path(os.path.expanduser(directory))
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    for stale in remove_stale_tls(base):
        _say(f"removed {stale}: the TLS folder of a schedsweep run that ended without removing it")
    folder = tempfile.mkdtemp(prefix="run-", dir=base)  # mode 0700: the key is readable by this user only
    Path(folder, TLS_OWNER).write_text(_owner_line())
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=schedsweep"],
                   check=True, capture_output=True)
    os.chmod(key, 0o600)
    roles = {f"tls_{role}_{part}": path for role in ("scheduler", "worker", "client")
             for part, path in (("cert", cert), ("key", key))}
    return Security(tls_ca_file=cert, require_encryption=True, **roles), folder


# In each run's TLS folder: who made it (host, pid, the pid's start time), touched at every poll
# of squeue while the run lives.
TLS_OWNER = "schedsweep-owner"
TLS_FILES = frozenset({"cert.pem", "key.pem", TLS_OWNER})
# A worker job that starts when its run's owner file has not been touched for this long exits at
# once: its controller is gone (killed), and nobody would ever give it work.
ORPHAN_SECONDS = 120


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc), None when there is none."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _owner_line() -> str:
    import socket

    return f"schedsweep {socket.gethostname()} {os.getpid()} {_process_start(os.getpid())}\n"


def remove_stale_tls(base: Path) -> list[Path]:
    """Remove the run folders in ``base`` that are provably a dead run's: named ``run-*``, owned
    by this user, holding only the files a run writes, with an owner file that names this host
    and a process that no longer lives (or a pid reused since). Returns what was removed."""
    import socket
    import stat

    removed = []
    for folder in sorted(base.glob("run-*")):
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            if not set(os.listdir(folder)) <= TLS_FILES:
                continue
            words = (folder / TLS_OWNER).read_text().split()
        except OSError:
            continue
        if len(words) != 4 or words[0] != "schedsweep" or words[1] != socket.gethostname() \
                or not words[2].isdigit():
            continue
        if _process_start(int(words[2])) == words[3]:
            continue  # its run is alive
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def orphan_check(folder: str) -> str:
    """A job script line: exit at once when the run that submitted this job is gone (its owner
    file in ``folder`` untouched for ORPHAN_SECONDS, or removed), rather than wait for it."""
    owner = shlex.quote(os.path.join(folder, TLS_OWNER))
    return (f"if [ ! -e {owner} ] || [ $(( $(date +%s) - $(stat -c %Y {owner}) )) -gt {ORPHAN_SECONDS} ]; then "
            f"echo 'schedsweep: the run that submitted this job is gone; exiting' >&2; exit 0; fi")


def cluster_kwargs(options: SlurmOptions, security: Any = None) -> dict[str, Any]:
    """Keyword arguments of ``SLURMCluster`` for these options (no cluster is started).

    ``security``: the TLS settings when ``options.tls`` (:func:`temporary_security`)."""
    # (retirement before the walltime is the cluster's, SweepSLURMCluster: not Dask's --lifetime,
    # which cancels the batch a worker runs and is replaced only once the job has gone)
    # a worker's dashboard (and the HTTP server it keeps for /health even without one) would
    # listen on every interface of the compute node
    worker_args = ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    python = options.python or sys.executable
    if not options.interface:
        # Given no address, a worker listens on every interface of its node (0.0.0.0 and ::),
        # and tells the scheduler its outward one (Dask's get_ip): listen on that one only.
        worker_args += ["--host", f"$({shlex.quote(python)} -c {shlex.quote(OWN_ADDRESS)})"]
    prologue = [f"export {name}=1" for name in SINGLE_THREAD_EXPORTS] + list(options.job_script_prologue)
    kwargs: dict[str, Any] = dict(
        cores=options.cores_per_job, processes=options.cores_per_job, memory=options.job_memory(),
        walltime=options.walltime, queue=options.partition, account=options.account,
        interface=options.interface, local_directory=options.local_directory,
        log_directory=os.path.expanduser(options.log_directory) if options.log_directory else None,
        job_extra_directives=list(options.job_extra_directives), job_script_prologue=prologue,
        python=python, death_timeout=options.death_timeout,
        worker_extra_args=worker_args, job_name="schedsweep-worker",
    )
    scheduler_options: dict[str, Any] = {"dashboard_address": options.dashboard_address}
    host = scheduler_host(options)
    if host is not None:
        scheduler_options["host"] = host
    kwargs["scheduler_options"] = scheduler_options
    if options.tls and security is not None:
        kwargs.update(security=security, protocol="tls://",
                      shared_temp_directory=os.path.expanduser(options.tls_directory))
    return kwargs


def job_script(options: SlurmOptions, scheduler: str = "tcp://SCHEDULER:8786") -> str:
    """The batch script each worker job would get (for review; starts nothing)."""
    from dask_jobqueue.slurm import SLURMJob

    security = None
    if options.tls:  # placeholders: the real files are made when the cluster starts
        from distributed.security import Security

        folder = os.path.join(options.tls_directory, "run-XXXX")
        security = Security(tls_ca_file=f"{folder}/cert.pem", tls_worker_cert=f"{folder}/cert.pem",
                            tls_worker_key=f"{folder}/key.pem")
        scheduler = scheduler.replace("tcp://", "tls://")
    kwargs = cluster_kwargs(options, security)
    for key in ("scheduler_options", "shared_temp_directory"):
        kwargs.pop(key, None)
    return SLURMJob(scheduler=scheduler, name=kwargs["job_name"], **kwargs).job_script()


def build_cluster(options: SlurmOptions) -> SweepSLURMCluster:
    """The scheduler here, secured as the options say, and no worker job yet (nothing submitted)."""
    security, folder = temporary_security(options.tls_directory) if options.tls else (None, None)
    kwargs = cluster_kwargs(options, security)
    if folder:
        kwargs["job_script_prologue"] = kwargs["job_script_prologue"] + [orphan_check(folder)]
    if kwargs["log_directory"]:
        os.makedirs(kwargs["log_directory"], exist_ok=True)
    if kwargs.get("shared_temp_directory"):
        os.makedirs(kwargs["shared_temp_directory"], mode=0o700, exist_ok=True)
    try:  # the scheduler in a process of its own: its CPU per task is not the client's
        cluster = SweepSLURMCluster(scheduler_cls=scheduler_process(), **kwargs)
    except BaseException:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    if folder:  # the certificate lives as long as the cluster (removed by close, else at exit)
        cluster._schedsweep_tls_folder = folder
        weakref.finalize(cluster, shutil.rmtree, folder, True)
    cluster._schedsweep_log_directory = kwargs["log_directory"]
    cluster.schedsweep_options = options
    return cluster


def make_cluster(*, jobs: int | None = None, cores_per_job: int | None = None, memory: str | None = None,
                 walltime: str | None = None, partition: str | None = None, account: str | None = None,
                 profile: str | None = None) -> SLURMCluster:
    """Start a scheduler here and worker jobs on Slurm, scaled adaptively between
    ``min_jobs`` and ``jobs`` (profile values are defaults; explicit arguments win).

    The caller connects ``distributed.Client(cluster)`` and closes both at the end
    (closing the cluster cancels its jobs).
    """
    options = resolve_options(jobs=jobs, cores_per_job=cores_per_job, memory=memory, walltime=walltime,
                              partition=partition, account=account, profile=profile)
    cluster = build_cluster(options)
    cluster.schedsweep_options = options
    cluster.max_workers = options.jobs * options.cores_per_job  # for sizing batches before workers arrive
    wait_count = max(1, math.ceil(IDLE_BEFORE_RELEASE_SECONDS))  # adapt runs once a second
    cluster.adapt(minimum_jobs=options.min_jobs, maximum_jobs=options.jobs, interval="1s", wait_count=wait_count)
    return cluster
