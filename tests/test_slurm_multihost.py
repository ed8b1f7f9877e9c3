"""Sweeps across hosts: the multi-host Slurm of slurm/multihost.sh (a login host and two
compute hosts, each a network namespace with its own address, linked by veth pairs).

- ``--cluster slurm`` from the login host, one worker job per compute host, TLS between hosts,
  scheduler and workers on the profile's interface: while both hosts run workers, nothing on any
  host listens outside loopback and the host's own address; one compute host is then powered
  off mid-sweep (every process of it killed: slurmd, job steps, workers) and the store still
  equals a local run bit for bit;
- the same without ``interface`` in the profile: everything still on its host's own address;
- ``slurm/sweep.sbatch`` with two nodes: scheduler on the first, a worker on each, same store;
- sleeping replications (``benchmarks.napper``): a walltime of one minute (jobs hand over to
  replacements submitted ahead, none ends as TIMEOUT, no batch failed or retried); the
  controller killed (its jobs leave the queue, the same command resumes and removes the dead
  run's TLS folder); ``sweep.sbatch`` cancelled or at its time limit, then resubmitted; a
  compute host's link cut for 60 s or for good. Each store equals a local run bit for bit.

Skipped when the multi-host Slurm is not up (``bash slurm/multihost.sh up``, as root), unless
SCHEDSWEEP_EXPECT_MULTIHOST=1 (``.ci/run``): then they fail.
"""
from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline.store import zarrstore as store_mod
from tests.test_slurm_cluster import _data
from tests.test_slurm_cluster import _done_count as single_node_done_count

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "slurm" / "multihost.sh"
ADDRESS = {"login": "10.231.7.1", "c1": "10.231.7.11", "c2": "10.231.7.12"}
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")

# About 12 ms per replication on a quiet core (the single-node tests' 1e6 customers take 25),
# 120 replications in 30 tasks: 1.5 CPU-seconds, so the second host's worker (registered
# 0.1-0.2 s after the first here) joins before the end and it can be killed mid-sweep.
SPEC = """
name = "multihost"
workload = "mm1"
replications = 60
seed = 4242
[params]
service_rate = 1.0
customers = 500000
warmup = 300
[sweep]
arrival_rate = [0.4, 0.7]
"""
TOTAL = 2 * 60


@pytest.fixture(autouse=True)
def _status_without_delay(monkeypatch):
    """These tests watch a running sweep's status: its journal compacted every 0.2 s, not 10 s."""
    monkeypatch.setenv("SCHEDSWEEP_COMPACT_SECONDS", "0.2")


def _problem() -> str | None:
    """None when the multi-host Slurm answers with both compute nodes idle, else what is wrong."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    try:
        proc = subprocess.run(["bash", str(SCRIPT), "status"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"slurm/multihost.sh status did not answer: {exc}"
    return None if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()


@pytest.fixture(scope="module")
def multihost():
    """The cluster, checked once; afterwards every host is up again (a test powers one off)."""
    problem = _problem()
    if problem is not None:
        if os.environ.get("SCHEDSWEEP_EXPECT_MULTIHOST") == "1":
            pytest.fail(f"SCHEDSWEEP_EXPECT_MULTIHOST=1 but the multi-host Slurm is not up: {problem}")
        pytest.skip(f"multi-host Slurm not up ({problem}); start it with: bash slurm/multihost.sh up")
    yield
    subprocess.run(["bash", str(SCRIPT), "up"], check=True, timeout=120)


@pytest.fixture
def all_hosts(multihost):
    """Both compute hosts up and idle before the test (an earlier one may have powered one off
    or cut its link): ``multihost.sh up`` restarts what is missing and resumes a node Slurm set down."""
    subprocess.run(["bash", str(SCRIPT), "up"], check=True, timeout=120)


def on(host: str, *cmd: str) -> list[str]:
    """A command line that runs ``cmd`` on ``host`` (its namespace, hostname and /etc/hosts)."""
    return ["bash", str(SCRIPT), "run", host, *cmd]


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "multihost.toml"
    path.write_text(textwrap.dedent(SPEC))
    return path


def _done_count(store: Path) -> int:
    try:
        return single_node_done_count(store)
    except Exception:  # noqa: BLE001 - the store may not exist yet or be half-created while we look
        return 0


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory):
    """The sweep on two local processes of this machine (no Slurm, no namespace)."""
    tmp = tmp_path_factory.mktemp("local")
    return _data(pipeline.run(_spec(tmp), tmp / "local.zarr", workers=2, progress=False))


def listeners(host: str) -> list[tuple[str, str]]:
    """(local address, process) of every listening TCP and UDP socket on ``host``."""
    out = subprocess.run(["ip", "netns", "exec", f"ssw-{host}", "ss", "-ltunpH"], capture_output=True,
                         text=True, check=True, timeout=30).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        local = parts[4]                       # netid state recv-q send-q local peer [process]
        address = local.rsplit(":", 1)[0].strip("[]").split("%")[0]
        found.append((address, " ".join(parts[6:])))
    return found


def assert_listens_only_on_own_addresses(dask_hosts: list[str]) -> None:
    """Every listener of every host is on loopback or on the host's own address (no wildcard),
    and each of ``dask_hosts`` has a Python process (scheduler or worker) on its own address."""
    for host in ADDRESS:
        found = listeners(host)
        for address, process in found:
            ok = address == ADDRESS[host] or (address not in ("*", "0.0.0.0", "::")
                                               and ipaddress.ip_address(address) in LOOPBACK)
            assert ok, f"on {host} {process} listens on {address}: neither loopback nor {ADDRESS[host]}"
        if host in dask_hosts:
            assert any(a == ADDRESS[host] and "python" in p for a, p in found), f"no Dask process on {host}: {found}"


def _worker_hosts(log_dir: Path) -> dict[str, str]:
    """{Slurm job id: compute host address} of every worker that registered with the scheduler."""
    hosts = {}
    for log in log_dir.glob("schedsweep-worker-*.err"):
        text = log.read_text()
        start = re.search(r"Start worker at:\s+tls://([\d.]+):", text)
        if start and re.search(r"Registered to:\s+tls://10\.231\.7\.1:", text):
            hosts[log.stem.rsplit("-", 1)[1]] = start.group(1)
    return hosts


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_sbatch_route_on_two_nodes(multihost, tmp_path, local_reference):
    """slurm/sweep.sbatch with --nodes=2: the scheduler on the first node and a worker on each
    node listen on their node's own address, TLS; the store equals the local run."""
    store = tmp_path / "sbatch.zarr"
    # No SCHEDSWEEP_INTERFACE: the defaults choose each node's own address.
    env = dict(os.environ, SCHEDSWEEP_PYTHON=sys.executable, SCHEDSWEEP_SCHEDULER_DIR=str(tmp_path),
               PYTHONPATH=str(REPO))
    env.pop("SCHEDSWEEP_INTERFACE", None)
    env.pop("SCHEDSWEEP_HOST", None)
    submit = subprocess.run(
        on("login", "sbatch", "--parsable", "--nodes=2", "--ntasks=2", "--mem-per-cpu=500M", "--time=00:10:00",
           f"--chdir={tmp_path}", f"--output={tmp_path}/sweep-%j.out", str(REPO / "slurm" / "sweep.sbatch"),
           str(_spec(tmp_path)), str(store), "--batch-size", "4"),
        capture_output=True, text=True, env=env, timeout=60)
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip().split(";")[0]
    out_file = tmp_path / f"sweep-{job}.out"
    checked = False
    try:
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline:
            queued = subprocess.run(on("login", "squeue", "-h", "-j", job, "-o", "%T"), capture_output=True,
                                    text=True, timeout=30)
            if queued.returncode != 0 or not queued.stdout.strip():
                break   # the job left the queue
            text = out_file.read_text() if out_file.exists() else ""
            if not checked and "workers at scheduler" in text and "exited with status" not in text:
                assert_listens_only_on_own_addresses(["c1", "c2"])   # while both workers run
                checked = True
            time.sleep(0.3)   # each squeue is an RPC to the controller
        else:
            pytest.fail(f"sbatch job {job} still queued or running after 200 s")
    finally:
        subprocess.run(on("login", "scancel", job), capture_output=True, timeout=30)
    out = out_file.read_text()
    assert "schedsweep run exited with status 0" in out, out
    assert f"2 workers at scheduler tls://{ADDRESS['c1']}:" in out, out   # the first node, TLS
    assert checked, f"the sweep ran too briefly to look at its listeners; job log:\n{out}"
    assert re.search(r"dashboard: http://127\.0\.0\.1:\d+/status", out), out   # where it listens
    assert not list(tmp_path.glob("schedsweep-scheduler-*.json")), "the scheduler file was left behind"
    xr.testing.assert_identical(_data(store), local_reference)


def _start_sweep_on_login_host(tmp_path: Path, store: Path, interface: bool) -> tuple[subprocess.Popen, Path]:
    """``schedsweep run --cluster slurm`` on the login host, two worker jobs (one per compute host);
    the profile slurm/multihost.yaml, without its ``interface`` if not ``interface``."""
    lines = (REPO / "slurm" / "multihost.yaml").read_text().splitlines()
    lines = [x for x in lines if interface or not x.startswith("interface:")]
    profile = tmp_path / "profile.yaml"
    profile.write_text("\n".join(lines) + f"\nlog_directory: {tmp_path / 'logs'}\njobs: 2\nmin_jobs: 2\n")
    run_log = tmp_path / "run.log"
    cmd = on("login", sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(_spec(tmp_path)), "--store",
             str(store), "--cluster", "slurm", "--profile", str(profile), "--batch-size", "4", "--no-progress")
    with open(run_log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(REPO)))
    return proc, run_log


def _wait_for_both_hosts(proc: subprocess.Popen, tmp_path: Path, store: Path, run_log: Path) -> None:
    """Until a worker of each compute host has registered with the scheduler over TLS and
    results are coming in; then check every host's listeners."""
    workers: dict[str, str] = {}
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _worker_hosts(tmp_path / "logs") if (tmp_path / "logs").exists() else {}
        if sorted(workers.values()) == [ADDRESS["c1"], ADDRESS["c2"]] and _done_count(store) > 0:
            break
        time.sleep(0.1)
    assert sorted(workers.values()) == [ADDRESS["c1"], ADDRESS["c2"]], \
        f"workers did not join from both compute hosts: {workers}; run log:\n{run_log.read_text()}"
    assert_listens_only_on_own_addresses(["login", "c1", "c2"])


def test_sweep_from_login_host_without_interface(multihost, tmp_path, local_reference):
    """--cluster slurm with a profile that names no interface: the scheduler on the login host's
    outward address, each worker on its node's, none on 0.0.0.0; same store."""
    store = tmp_path / "no-interface.zarr"
    proc, run_log = _start_sweep_on_login_host(tmp_path, store, interface=False)
    try:
        _wait_for_both_hosts(proc, tmp_path, store, run_log)
        proc.wait(timeout=200)
    finally:
        _stop(proc)
    assert proc.returncode == 0, run_log.read_text()
    xr.testing.assert_identical(_data(store), local_reference)


def test_compute_host_powered_off_mid_sweep(multihost, tmp_path, local_reference):
    """--cluster slurm from the login host, the profile's interface, workers on both compute
    hosts; c2 dies mid-sweep (every process of it killed) and the store is still the local run's."""
    store = tmp_path / "killed.zarr"
    proc, run_log = _start_sweep_on_login_host(tmp_path, store, interface=True)
    try:
        _wait_for_both_hosts(proc, tmp_path, store, run_log)
        done_at_kill = _done_count(store)
        subprocess.run(["bash", str(SCRIPT), "poweroff", "c2"], check=True, timeout=60)
        assert proc.poll() is None and done_at_kill < TOTAL, \
            "the sweep ended before a compute host was killed; make SPEC longer"
        proc.wait(timeout=200)
    finally:
        _stop(proc)
    assert proc.returncode == 0, run_log.read_text()
    result = _data(store)
    assert (result["status"] == store_mod.OK).all()
    xr.testing.assert_identical(result, local_reference)


# Sleeping replications (no CPU): 2 x 160 of 0.25 s in batches of 4 on one worker job at a
# time, about 80 s of work: with a walltime of one minute, at least one job hands over.
NAP = """
name = "walltime"
workload = "benchmarks.napper"
replications = 160
seed = 7
[params]
seconds = 0.25
[sweep]
cell = [0, 1]
"""


def _nap_spec(tmp_path: Path, seconds: float = 0.25) -> Path:
    path = tmp_path / "nap.toml"
    path.write_text(textwrap.dedent(NAP).replace("seconds = 0.25", f"seconds = {seconds}"))
    return path


def _nap_data(store: Path) -> xr.Dataset:
    ds = pipeline.open_store(store)[["draw", "status", "reason", "seed"]].load()
    ds.attrs = {}
    return ds


_NAP_REFERENCES: dict[float, xr.Dataset] = {}


def _nap_reference(tmp_path: Path, seconds: float = 0.25) -> xr.Dataset:
    """The sleeping sweep on 16 local processes of this machine (they sleep: no CPU); run once
    per nap length for the file, since it depends on nothing else."""
    if seconds not in _NAP_REFERENCES:
        folder = tmp_path / "local"
        folder.mkdir()
        _NAP_REFERENCES[seconds] = _nap_data(pipeline.run(_nap_spec(folder, seconds), folder / "local.zarr",
                                                          workers=16, progress=False))
    return _NAP_REFERENCES[seconds]


def _jobs_of(log_dir: Path) -> dict[str, dict[str, str]]:
    """{job id: {"state", "submit", "start", "end"}} from Slurm's job completion log, for the
    worker jobs that left a log in ``log_dir``."""
    ids = {p.stem.rsplit("-", 1)[1] for p in log_dir.glob("schedsweep-worker-*.err")}
    out = subprocess.run(on("login", "sacct", "-c", "-P", "-n", "-o", "jobid,state,submit,start,end"),
                         capture_output=True, text=True, check=True, timeout=30).stdout
    rows = {}
    for line in out.splitlines():
        job, state, submit, start, end = line.split("|")
        if job in ids:
            rows[job] = {"state": state, "submit": submit, "start": start, "end": end}
    return rows


def _run_on_login(tmp_path: Path, spec: Path, store: Path, *extra: str, jobs: int = 1) -> list[str]:
    lines = [x for x in (REPO / "slurm" / "multihost.yaml").read_text().splitlines()
             if not x.startswith("log_directory:")]
    profile = tmp_path / "profile.yaml"
    profile.write_text("\n".join(lines) + f"\nlog_directory: {tmp_path / 'logs'}\njobs: {jobs}\nmin_jobs: {jobs}\n"
                       f"tls_directory: {tmp_path / 'tls'}\n")
    return on("login", sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(spec), "--store", str(store),
              "--cluster", "slurm", "--profile", str(profile), "--no-progress", *extra)


def test_walltime_hands_over_without_losing_a_batch(all_hosts, tmp_path):
    """--walltime 00:01:00: each worker job's replacement is submitted before it ends, the old
    job finishes or hands back its batch (no batch failed or retried), leaves before Slurm's
    TIMEOUT, and the user is told; the store equals a local run bit for bit."""
    spec = _nap_spec(tmp_path)
    store = tmp_path / "walltime.zarr"
    run_log = tmp_path / "run.log"
    with open(run_log, "w") as err:
        proc = subprocess.run(_run_on_login(tmp_path, spec, store, "--walltime", "00:01:00", "--batch-size", "4"),
                              stdout=err, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(REPO)),
                              timeout=280)
    log = run_log.read_text()
    assert proc.returncode == 0, log
    retired = re.findall(r"Slurm worker job (\d+) retired before its walltime, replaced by job (\d+)", log)
    assert retired, f"no worker job reached its walltime; run log:\n{log}"
    assert "a worker died" not in log and "failed" not in log, log   # nothing counted as lost or failed
    jobs = _jobs_of(tmp_path / "logs")
    assert jobs and all(j["state"] != "TIMEOUT" for j in jobs.values()), jobs
    for old, new in retired:
        assert jobs[old]["state"] == "COMPLETED", (old, jobs)        # its workers closed: the job ended
        assert jobs[new]["submit"] < jobs[old]["end"], (old, new, jobs)   # overlapping, not after
    result = _nap_data(store)
    assert (result["status"] == store_mod.OK).all()
    xr.testing.assert_identical(result, _nap_reference(tmp_path))


def _queued(job_ids: set[str]) -> set[str]:
    out = subprocess.run(on("login", "squeue", "-h", "-o", "%i"), capture_output=True, text=True, timeout=30).stdout
    return job_ids & set(out.split())


def test_killed_controller_empties_the_queue_and_the_same_command_resumes(all_hosts, tmp_path):
    """SIGKILL of `schedsweep run --cluster slurm` on the login host mid-sweep: its worker jobs
    leave the queue within a minute; the same command resumes, removes the dead run's TLS
    folder (saying so), and the store equals a local run bit for bit."""
    spec, store = _nap_spec(tmp_path), tmp_path / "killed.zarr"
    cmd = _run_on_login(tmp_path, spec, store, "--batch-size", "4", jobs=2)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open(tmp_path / "first.log", "w") as err:
        proc = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, env=env)   # execs into the client
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and proc.poll() is None and _done_count(store) < 40:
            time.sleep(0.2)
        assert proc.poll() is None and 0 < _done_count(store) < 2 * 160, (tmp_path / "first.log").read_text()
        jobs = {p.stem.rsplit("-", 1)[1] for p in (tmp_path / "logs").glob("schedsweep-worker-*.err")}
        proc.kill()
        proc.wait()
        killed_at = time.monotonic()
        while _queued(jobs) and time.monotonic() - killed_at < 60:
            time.sleep(1)
        assert not _queued(jobs), f"worker jobs {_queued(jobs)} still queued a minute after their controller died"
    finally:
        _stop(proc)
    stale = list((tmp_path / "tls").glob("run-*"))
    assert stale, "the killed run left no TLS folder: nothing to check"
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=200)
    assert again.returncode == 0, again.stderr
    assert all(f"removed {p}" in again.stderr for p in stale), again.stderr
    assert not list((tmp_path / "tls").glob("run-*")), "a TLS folder outlived its run"
    xr.testing.assert_identical(_nap_data(store), _nap_reference(tmp_path))


def _sbatch(tmp_path: Path, spec: Path, store: Path, *extra: str) -> str:
    env = dict(os.environ, SCHEDSWEEP_PYTHON=sys.executable, SCHEDSWEEP_SCHEDULER_DIR=str(tmp_path),
               PYTHONPATH=str(REPO), SCHEDSWEEP_COMPACT_SECONDS="0.2")
    submit = subprocess.run(
        on("login", "sbatch", "--parsable", "--nodes=2", "--ntasks=2", "--mem-per-cpu=500M", *extra,
           f"--chdir={tmp_path}", f"--output={tmp_path}/sweep-%j.out", str(REPO / "slurm" / "sweep.sbatch"),
           str(spec), str(store), "--batch-size", "4"),
        capture_output=True, text=True, env=env, timeout=60)
    assert submit.returncode == 0, submit.stderr
    return submit.stdout.strip().split(";")[0]


def _wait_gone(job: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and _queued({job}):
        time.sleep(0.5)
    assert not _queued({job}), f"sbatch job {job} still queued after {seconds:.0f} s"


def _after_stop(text: str) -> str:
    """The job log after the client's "stopping" line: the resume hint, and no traceback of any client."""
    return text.split("schedsweep: stopping (", 1)[1]


@pytest.mark.parametrize("end", ["scancel", "time limit"])
def test_sbatch_job_ended_then_resubmitted_resumes(all_hosts, tmp_path, end):
    """slurm/sweep.sbatch cancelled mid-sweep, or killed at its time limit: the client says it
    stops and how to resume, and no traceback follows; the same sbatch resumes; the store equals a local run.
    Replications of 0.75 s where the job meets its time limit of a minute (120 s of work on two
    workers: Slurm ends a job up to half a minute past its limit, and 80 s of work once finished
    before that); of 0.25 s where it is cancelled (after 40 of 320 are done)."""
    nap = 0.75 if end == "time limit" else 0.25
    spec, store = _nap_spec(tmp_path, nap), tmp_path / "sbatch.zarr"
    job = _sbatch(tmp_path, spec, store, *(["--time=00:01:00"] if end == "time limit" else ["--time=00:10:00"]))
    try:
        if end == "scancel":
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline and _done_count(store) < 40 and _queued({job}):
                time.sleep(0.3)
            assert 0 < _done_count(store) < 2 * 160, "the sweep did not run, or ended before the cancel"
            subprocess.run(on("login", "scancel", job), check=True, timeout=30)
        _wait_gone(job, 150)
    finally:
        subprocess.run(on("login", "scancel", job), capture_output=True, timeout=30)
    first = (tmp_path / f"sweep-{job}.out").read_text()
    assert 0 < _done_count(store) < 2 * 160, first
    assert "run the same command again to resume" in first, first
    assert "Traceback" not in _after_stop(first) and "distributed.client" not in _after_stop(first), first
    again = _sbatch(tmp_path, spec, store, "--time=00:10:00")
    try:
        _wait_gone(again, 200)
    finally:
        subprocess.run(on("login", "scancel", again), capture_output=True, timeout=30)
    second = (tmp_path / f"sweep-{again}.out").read_text()
    assert "schedsweep run exited with status 0" in second, second
    xr.testing.assert_identical(_nap_data(store), _nap_reference(tmp_path, nap))


@pytest.mark.parametrize("outage", [60, None], ids=["60s", "for-good"])
def test_compute_host_cut_off(all_hosts, tmp_path, outage):
    """c2's link goes down mid-sweep (its processes live on, unreachable) for 60 s, or for good:
    the sweep finishes on what it can reach, the store equals a local run bit for bit, and a
    host lost for good is said in one line."""
    spec, store = _nap_spec(tmp_path), tmp_path / "cut.zarr"
    run_log = tmp_path / "run.log"
    with open(run_log, "w") as err:
        proc = subprocess.Popen(_run_on_login(tmp_path, spec, store, "--batch-size", "4", jobs=2),
                                stdout=err, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and proc.poll() is None:
            hosts = _worker_hosts(tmp_path / "logs") if (tmp_path / "logs").exists() else {}
            if sorted(hosts.values()) == [ADDRESS["c1"], ADDRESS["c2"]] and _done_count(store) >= 40:
                break
            time.sleep(0.2)
        assert proc.poll() is None and _done_count(store) < 2 * 160, run_log.read_text()
        assert sorted(hosts.values()) == [ADDRESS["c1"], ADDRESS["c2"]], hosts
        subprocess.run(["bash", str(SCRIPT), "cut", "c2"], check=True, timeout=30)
        if outage is not None:
            time.sleep(outage)   # the outage itself, not a wait for a result
            subprocess.run(["bash", str(SCRIPT), "mend", "c2"], check=True, timeout=30)
        proc.wait(timeout=280)
    finally:
        subprocess.run(["bash", str(SCRIPT), "mend", "c2"], capture_output=True, timeout=30)
        _stop(proc)
    log = run_log.read_text()
    assert proc.returncode == 0, log
    result = _nap_data(store)
    assert (result["status"] == store_mod.OK).all()
    xr.testing.assert_identical(result, _nap_reference(tmp_path))
    if outage is None:
        assert re.search(r"Slurm (worker job \d+ ended \(\w+|put worker job \d+ back in the queue)", log), log
