"""Sweeps on a real Slurm (the one slurm/start.sh runs here, or any reachable Slurm):
``--cluster slurm`` gives the LocalCluster's store bit for bit, a worker job cancelled with
scancel mid-sweep still ends in a complete and correct store, and the sbatch route
(slurm/sweep.sbatch) produces the store.

Skipped when no Slurm is reachable, unless SCHEDSWEEP_EXPECT_SLURM=1 (CI): then they fail.
"""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline.store import zarrstore as store_mod

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(400)]

REPO = Path(__file__).resolve().parents[1]
OUR_CONF = Path(os.environ.get("SCHEDSWEEP_SLURM_DIR", "/tmp/schedsweep-slurm")) / "slurm.conf"
DATA = ["mean_wait", "mean_time_in_system", "status", "reason", "seed"]  # mm1 has no timing metric

SMALL = """
name = "slurm-small"
workload = "mm1"
replications = 24
seed = 4242
[params]
service_rate = 1.0
customers = 3000
warmup = 300
[sweep]
arrival_rate = [0.4, 0.7]
"""
# Long enough (about 25 ms per replication, 40 tasks, 4 s of CPU) to cancel a job mid-sweep.
LONG = SMALL.replace("replications = 24", "replications = 80").replace("customers = 3000", "customers = 1000000")


@pytest.fixture(autouse=True)
def _status_without_delay(monkeypatch):
    """These tests watch a running sweep's status: its journal compacted every 0.2 s, not 10 s."""
    monkeypatch.setenv("SCHEDSWEEP_COMPACT_SECONDS", "0.2")


@functools.cache
def _slurm_problem() -> str | None:
    """None when a Slurm with a usable node answers, else what is wrong."""
    if "SLURM_CONF" not in os.environ and not Path("/etc/slurm/slurm.conf").exists() and OUR_CONF.exists():
        os.environ["SLURM_CONF"] = str(OUR_CONF)   # slurm/start.sh could not link the system path
    try:
        proc = subprocess.run(["bash", str(REPO / "slurm" / "check.sh")], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"slurm/check.sh did not answer: {exc}"
    return None if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()


def require_slurm() -> None:
    problem = _slurm_problem()
    if problem is None:
        return
    if os.environ.get("SCHEDSWEEP_EXPECT_SLURM") == "1":
        pytest.fail(f"SCHEDSWEEP_EXPECT_SLURM=1 but no Slurm is reachable: {problem}")
    pytest.skip(f"no Slurm reachable ({problem}); start one with slurm/install.sh && slurm/start.sh")


def _spec(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(textwrap.dedent(text))
    return path


def _profile(tmp_path: Path, jobs: int, min_jobs: int) -> Path:
    """slurm/local.yaml with this test's log folder, so its worker jobs' logs are its own."""
    text = (REPO / "slurm" / "local.yaml").read_text()
    text += f"\nlog_directory: {tmp_path / 'logs'}\njobs: {jobs}\nmin_jobs: {min_jobs}\n"
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    return path


def _data(path: Path) -> xr.Dataset:
    ds = pipeline.open_store(path)[DATA].load()
    ds.attrs = {}
    return ds


def _done_count(store: Path) -> int:
    import zarr

    return int((zarr.open_group(store, mode="r")["status"][...] != 0).sum())


def _slurm_cli(spec: Path, store: Path, profile: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(spec), "--store", str(store), "--cluster", "slurm",
            "--profile", str(profile), "--no-progress", *extra]


def _stop(proc: subprocess.Popen) -> None:
    """Interrupt a run still going (Ctrl-C closes its cluster, which cancels its jobs)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _running_worker_jobs() -> list[str]:
    out = subprocess.run(["squeue", "-h", "-n", "schedsweep-worker", "-t", "RUNNING", "-o", "%i"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory):
    """The SMALL sweep on a two-worker LocalCluster, computed on first call (after the
    test has checked for Slurm, so a missing Slurm fails or skips at once)."""
    cache: list[xr.Dataset] = []

    def get() -> xr.Dataset:
        if not cache:
            tmp = tmp_path_factory.mktemp("local")
            cache.append(_data(pipeline.run(_spec(tmp, SMALL, "small"), tmp / "local.zarr", workers=2,
                                            progress=False)))
        return cache[0]

    return get


def test_slurm_cluster_equals_local_cluster(tmp_path, local_reference):
    require_slurm()
    store = tmp_path / "slurm.zarr"
    log = tmp_path / "run.log"
    with open(log, "w") as err:
        proc = subprocess.run(_slurm_cli(_spec(tmp_path, SMALL, "small"), store, _profile(tmp_path, 2, 2),
                                         "--jobs", "2"), stdout=err, stderr=subprocess.STDOUT, timeout=300)
    assert proc.returncode == 0, log.read_text()
    # The work really ran in Slurm jobs: each worker job left its log with the worker's registration.
    worker_logs = sorted((tmp_path / "logs").glob("schedsweep-worker-*.err"))
    assert worker_logs, f"no Slurm worker job ran; run log:\n{log.read_text()}"
    assert any("Registered to:" in p.read_text() for p in worker_logs)
    xr.testing.assert_identical(_data(store), local_reference())


def test_worker_job_cancelled_mid_sweep_loses_nothing(tmp_path):
    require_slurm()
    spec = _spec(tmp_path, LONG, "long")
    store = tmp_path / "cancelled.zarr"
    log = tmp_path / "run.log"
    total = 2 * 80
    # At most one worker job: the sweep can only finish if the cancelled job is replaced.
    # Two worker processes in it: distributed alone never replaces such a job (its workers'
    # names are not the job's name), so this also tests pipeline.execution.slurm's job watch.
    with open(log, "w") as err:
        proc = subprocess.Popen(_slurm_cli(spec, store, _profile(tmp_path, 1, 1), "--cores-per-job", "2",
                                           "--batch-size", "4"),
                                stdout=err, stderr=subprocess.STDOUT)
    try:
        cancelled, done_at_cancel = [], 0
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                done = _done_count(store)
            except Exception:  # noqa: BLE001 - the store may be half-created while we look
                done = 0
            if done >= 8:
                cancelled = _running_worker_jobs()
                subprocess.run(["scancel", *cancelled], check=True)
                done_at_cancel = _done_count(store)
                break
            try:
                proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
        assert cancelled, f"no running worker job to cancel; run log:\n{log.read_text()}"
        assert proc.poll() is None, "the sweep ended before its worker job was cancelled; make LONG longer"
        assert done_at_cancel < total, "the sweep was complete before the cancel; make LONG longer"
        proc.wait(timeout=300)
    finally:
        _stop(proc)
    assert proc.returncode == 0, log.read_text()
    # The cancelled job's log ends with Slurm's cancellation, and a new job finished the sweep.
    err_logs = {p.name: p.read_text() for p in (tmp_path / "logs").glob("schedsweep-worker-*.err")}
    assert any("CANCELLED" in err_logs.get(f"schedsweep-worker-{j}.err", "") for j in cancelled), err_logs.keys()
    assert set(err_logs) - {f"schedsweep-worker-{j}.err" for j in cancelled}, "no replacement worker job ran"
    result = _data(store)
    assert (result["status"] == store_mod.OK).all()
    reference = _data(pipeline.run(spec, tmp_path / "serial.zarr", workers=0, progress=False))
    xr.testing.assert_identical(result, reference)


def _wait_gone(job: str, seconds: float) -> None:
    """Until Slurm's queue no longer holds ``job`` (failing after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        queued = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True)
        if queued.returncode != 0 or not queued.stdout.strip():
            return
        time.sleep(0.5)   # poll interval: each squeue is an RPC to the controller
    pytest.fail(f"sbatch job {job} still queued or running after {seconds:.0f} s")


def test_sbatch_route_produces_the_store(tmp_path, local_reference):
    require_slurm()
    spec = _spec(tmp_path, SMALL, "small")
    store = tmp_path / "sbatch.zarr"
    env = dict(os.environ, SCHEDSWEEP_PYTHON=sys.executable, SCHEDSWEEP_INTERFACE="lo",
               SCHEDSWEEP_SCHEDULER_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    submit = subprocess.run(
        ["sbatch", "--parsable", "--ntasks=2", "--mem-per-cpu=500M", "--time=00:10:00", f"--chdir={tmp_path}",
         f"--output={tmp_path}/sweep-%j.out", str(REPO / "slurm" / "sweep.sbatch"), str(spec), str(store)],
        capture_output=True, text=True, env=env, check=True)
    job = submit.stdout.strip().split(";")[0]
    try:
        _wait_gone(job, 300)
    finally:
        subprocess.run(["scancel", job], capture_output=True)
    out = (tmp_path / f"sweep-{job}.out").read_text()
    assert "schedsweep run exited with status 0" in out, out
    assert "2 workers at scheduler" in out, out
    assert not list(tmp_path.glob("schedsweep-scheduler-*.json")), "the scheduler file was left behind"
    xr.testing.assert_identical(_data(store), local_reference())


NAPS = """
name = "requeue"
workload = "benchmarks.napper"
replications = 80
seed = 7
[params]
seconds = 0.25
[sweep]
cell = [0, 1]
"""


def test_slurm_requeues_sweep_sbatch_when_its_time_limit_nears(tmp_path):
    """sbatch --signal=B:USR1@N: the signal (sent here by scancel --signal=USR1 --batch, as Slurm
    sends it N s before the limit) stops the sweep, keeping what is stored; the job requeues
    itself, starts again under the same id, resumes and finishes: the store equals a local
    run of the same spec bit for bit. Slurm holds a requeued job about two minutes first."""
    require_slurm()
    spec, store = _spec(tmp_path, NAPS, "naps"), tmp_path / "naps.zarr"
    env = dict(os.environ, SCHEDSWEEP_PYTHON=sys.executable, SCHEDSWEEP_INTERFACE="lo",
               SCHEDSWEEP_SCHEDULER_DIR=str(tmp_path), PYTHONPATH=str(REPO), SCHEDSWEEP_COMPACT_SECONDS="0.2")
    submit = subprocess.run(
        ["sbatch", "--parsable", "--ntasks=2", "--mem-per-cpu=500M", "--time=00:10:00", "--signal=B:USR1@10",
         f"--chdir={tmp_path}", f"--output={tmp_path}/sweep-%j.out", str(REPO / "slurm" / "sweep.sbatch"),
         str(spec), str(store), "--batch-size", "4"],
        capture_output=True, text=True, env=env, check=True)
    job = submit.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not store.exists() or _done_count(store) < 20):
            time.sleep(0.3)
        assert 20 <= _done_count(store) < 160, "the sweep did not run, or ended before the signal"
        subprocess.run(["scancel", "--signal=USR1", "--batch", job], check=True)
        _wait_gone(job, 330)   # the requeued job too
    finally:
        subprocess.run(["scancel", job], capture_output=True)
    out = (tmp_path / f"sweep-{job}.out").read_text()
    first, _, second = out.partition("requeueing job")
    assert second, out
    assert "time limit near (SIGUSR1)" in first and "schedsweep run exited with status 143" in first, out
    assert "resuming" in second and "schedsweep run exited with status 0" in second, out
    local = tmp_path / "local"
    local.mkdir()
    reference = pipeline.run(_spec(local, NAPS, "naps"), local / "naps.zarr", workers=16, progress=False)

    def data(path: Path) -> xr.Dataset:
        ds = pipeline.open_store(path)[["draw", "status", "reason", "seed"]].load()
        ds.attrs = {}
        return ds

    xr.testing.assert_identical(data(store), data(reference))
