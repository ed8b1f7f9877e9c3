"""Dask workers as Slurm jobs: a ``dask_jobqueue.SLURMCluster`` built from CLI options and a
profile file (``slurm/*.yaml``), scaled adaptively between bounds.

Each worker job runs ``cores_per_job`` single-threaded worker processes (as the LocalCluster
runs one per core). Worker jobs that Slurm ends (walltime, ``scancel``, node failure) are
forgotten and replaced by the adaptive scaling; workers retire gracefully shortly before
their walltime, so a long sweep rolls over to fresh jobs instead of losing running batches.
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


def lifetime_args(walltime: str) -> list[str]:
    """``dask worker`` arguments that retire a worker before its job's walltime.

    Margin: a tenth of the walltime, at most 5 minutes; the lifetime is staggered by half the
    margin so the jobs of one sweep do not all leave at once, and never exceeds
    walltime - margin/2. Running batches move to other workers; the data is kept.
    """
    total = walltime_seconds(walltime)
    margin = min(300, total // 10)
    if margin < 2:
        return []
    return ["--lifetime", f"{total - margin}s", "--lifetime-stagger", f"{margin // 2}s"]


class SweepSLURMCluster(SLURMCluster):
    """A SLURMCluster that forgets worker jobs Slurm has ended, so adaptive scaling replaces them.

    distributed alone notices a lost worker only after ``lost-worker-timeout`` (15 s), only
    for one-process jobs (a multi-process job's workers are named ``<job>-<i>`` and never
    matched), and never for a job that ended before its worker connected (killed while
    pending, node failure at start): adaptive scaling then counts the dead job as planned
    and does not replace it, and a sweep whose jobs all died waits forever. Asking squeue
    every few seconds covers all three.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._seen_workers: set[str] = set()
        self._ended_jobs: list[str] = []
        self.loop.add_callback(self._install_job_watch)

    def _install_job_watch(self) -> None:
        from tornado.ioloop import PeriodicCallback

        pc = PeriodicCallback(self._forget_ended_jobs, JOB_POLL_SECONDS * 1000)
        self.periodic_callbacks["schedsweep-job-watch"] = pc
        pc.start()

    async def _forget_ended_jobs(self) -> None:
        if self.status.name not in ("running", "created"):
            return
        for ws in list(getattr(self.scheduler, "workers", {}).values()):
            self._seen_workers.add(str(ws.name))
        jobs = {name: job.job_id for name, job in list(self.workers.items()) if getattr(job, "job_id", None)}
        if not jobs:
            return
        try:
            out = await self.job_cls._call(["squeue", "-h", "-o", "%i %T", "-u", getpass.getuser()])
        except Exception as exc:  # noqa: BLE001 - controller busy or unreachable: decide nothing now
            logger.debug("squeue failed: %s", exc)
            return
        alive = {line.split()[0] for line in out.splitlines()
                 if len(line.split()) == 2 and line.split()[1] in ALIVE_STATES}
        ended = [name for name, job_id in jobs.items() if job_id not in alive]
        for name in ended:
            job_id = jobs[name]
            self._ended_jobs.append(job_id)
            if not any(w == str(name) or w.startswith(f"{name}-") for w in self._seen_workers):
                print(f"schedsweep: Slurm worker job {job_id} ended before any of its workers connected; "
                      f"see its log ({self._log_hint(job_id)}) and the Slurm options", file=sys.stderr)
            self.worker_spec.pop(name, None)
        if ended:
            await self._correct_state()

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
    folder = tempfile.mkdtemp(prefix="run-", dir=base)  # mode 0700: the key is readable by this user only
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=schedsweep"],
                   check=True, capture_output=True)
    os.chmod(key, 0o600)
    roles = {f"tls_{role}_{part}": path for role in ("scheduler", "worker", "client")
             for part, path in (("cert", cert), ("key", key))}
    return Security(tls_ca_file=cert, require_encryption=True, **roles), folder


def cluster_kwargs(options: SlurmOptions, security: Any = None) -> dict[str, Any]:
    """Keyword arguments of ``SLURMCluster`` for these options (no cluster is started).

    ``security``: the TLS settings when ``options.tls`` (:func:`temporary_security`)."""
    worker_args = lifetime_args(options.walltime) if options.retire_before_walltime else []
    # a worker's dashboard (and the HTTP server it keeps for /health even without one) would
    # listen on every interface of the compute node
    worker_args = worker_args + ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
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
    if kwargs["log_directory"]:
        os.makedirs(kwargs["log_directory"], exist_ok=True)
    if kwargs.get("shared_temp_directory"):
        os.makedirs(kwargs["shared_temp_directory"], mode=0o700, exist_ok=True)
    try:
        cluster = SweepSLURMCluster(**kwargs)
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
