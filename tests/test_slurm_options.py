"""Slurm options without a Slurm: profile < CLI precedence, validation messages, Slurm time
syntax, retirement before walltime, and the job script a worker job gets."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from schedsweep.pipeline.execution import slurm as S

REPO = Path(__file__).resolve().parents[1]


def _profile(tmp_path: Path, text: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return str(path)


def test_cli_overrides_profile_overrides_defaults(tmp_path):
    prof = _profile(tmp_path, 'jobs: 7\nmemory: 3GB\nwalltime: "02:00:00"\npartition: short\ninterface: lo\n')
    o = S.resolve_options(profile=prof, jobs=3, partition="long")
    assert (o.jobs, o.partition) == (3, "long")                      # explicit options win
    assert (o.memory, o.walltime, o.interface) == ("3GB", "02:00:00", "lo")  # profile values kept
    assert o.cores_per_job == S.SlurmOptions().cores_per_job        # default where neither says
    assert S.resolve_options(profile=prof).jobs == 7


def test_min_jobs_is_clamped_to_jobs_and_memory_defaults_per_core(tmp_path):
    o = S.resolve_options(profile=_profile(tmp_path, "min_jobs: 5\n"), jobs=2, cores_per_job=3)
    assert (o.min_jobs, o.jobs) == (2, 2)
    assert o.job_memory() == "6GB"


@pytest.mark.parametrize("text, key", [
    ("jobz: 3\n", "jobz"),
    ("walltime: 4:00:00\n", "walltime"),      # unquoted: YAML 1.1 makes it the number 14400
    ("jobs: 0\n", "jobs"),
    ("cores_per_job: 1.5\n", "cores_per_job"),
    ("memory: lots\n", "memory"),
    ('walltime: "1:2:3:4"\n', "walltime"),
    ("job_script_prologue: module load x\n", "job_script_prologue"),
])
def test_bad_profile_entries_are_named(tmp_path, text, key):
    with pytest.raises(S.SlurmOptionError, match=key):
        S.resolve_options(profile=_profile(tmp_path, text))


def test_bad_cli_value_names_the_option():
    with pytest.raises(S.SlurmOptionError, match=r"jobs = -1 \(from --jobs\)"):
        S.resolve_options(jobs=-1)
    with pytest.raises(S.SlurmOptionError, match="no such file"):
        S.resolve_options(profile="no-such-profile")


@pytest.mark.parametrize("text, seconds", [
    ("90", 90 * 60), ("5:30", 5 * 60 + 30), ("01:00:00", 3600), ("2-0", 2 * 86400),
    ("1-02:03", 86400 + 2 * 3600 + 3 * 60), ("1-02:03:04", 86400 + 2 * 3600 + 3 * 60 + 4),
])
def test_walltime_in_slurm_syntax(text, seconds):
    assert S.walltime_seconds(text) == seconds


@pytest.mark.parametrize("batch", [0.0, 1.0, 60.0, 600.0])
@pytest.mark.parametrize("jobs", [1, 2, 16])
def test_changeover_leaves_before_walltime_with_a_margin_of_a_batch(batch, jobs):
    """Every job of a run: its replacement submitted before it stops taking batches, a batch
    started just before that still ends before its workers leave, and they leave EXIT_SECONDS
    before the walltime; the jobs stop taking batches at distinct times spread over one batch."""
    deadline, start = 10_000.0, 40.0
    times = [S.changeover(deadline, batch, start, rank, jobs) for rank in range(jobs)]
    for t in times:
        assert t.leave_at == deadline - S.EXIT_SECONDS
        assert t.drain_at + S.JOB_POLL_SECONDS + batch <= t.leave_at   # a poll late, a batch still fits
        assert t.replace_at <= t.drain_at - start         # the replacement is up before the old job drains
    drains = [t.drain_at for t in times]
    assert drains == sorted(drains, reverse=True)
    assert max(drains) - min(drains) <= batch
    if batch and jobs > 1:
        assert len(set(drains)) == jobs                   # spread, not all at once


def test_shipped_profiles_load_and_make_the_job_script():
    site = S.resolve_options(profile=str(REPO / "slurm" / "example-site.yaml"))
    script = S.job_script(site)
    for line in ("#SBATCH -p compute", "#SBATCH -A myproject", "#SBATCH --cpus-per-task=16",
                 "#SBATCH -t 04:00:00", "#SBATCH --qos=normal", "module load python/3.11",
                 "--nworkers 16", "--nthreads 1", "--interface ib0", "--local-directory $TMPDIR",
                 "export OMP_NUM_THREADS=1"):
        assert line in script, line
    local = S.resolve_options(profile="local")  # a bare name finds slurm/local.yaml
    assert local.interface == "lo" and "--interface lo" in S.job_script(local)


def test_workers_without_interface_listen_on_the_address_they_advertise():
    """No interface: the job script gives each worker --host $(...), which the job's shell
    turns into Dask's get_ip() of the node (the address a worker advertises); with one, none."""
    import re
    import subprocess

    from distributed.utils import get_ip

    line = S.job_script(S.resolve_options()).splitlines()[-1]
    command = re.search(r"--host \$\((.+?')\)", line)   # the quoted python -c '...' inside $(...)
    assert command, line
    out = subprocess.run(["bash", "-c", f"echo $({command.group(1)})"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == get_ip()
    assert "--host" not in S.job_script(S.resolve_options(profile="local")).splitlines()[-1]


def test_stale_tls_folders_removed_only_when_provably_a_dead_runs(tmp_path):
    """A later run removes a run folder whose owner (this host) is dead or whose pid was reused,
    and nothing else: not a live run's, not another host's, not one holding other files, not
    one without an owner file, not a path outside the run-* names."""
    import socket
    import subprocess

    host = socket.gethostname()
    sleeper = subprocess.Popen(["sleep", "30"])
    dead_start = S._process_start(sleeper.pid)
    sleeper.kill()
    sleeper.wait()

    def folder(name: str, owner: str | None, *extra: str) -> Path:
        path = tmp_path / name
        path.mkdir()
        (path / "cert.pem").write_text("c")
        if owner is not None:
            (path / S.TLS_OWNER).write_text(owner)
        for e in extra:
            (path / e).write_text("x")
        return path

    dead = folder("run-dead", f"schedsweep {host} {sleeper.pid} {dead_start}\n")
    reused = folder("run-reused", f"schedsweep {host} {os.getpid()} 1\n")   # our pid, another start
    alive = folder("run-alive", S._owner_line())
    other_host = folder("run-other", f"schedsweep not-{host} {sleeper.pid} {dead_start}\n")
    foreign = folder("run-foreign", f"schedsweep {host} {sleeper.pid} {dead_start}\n", "notes.txt")
    no_owner = folder("run-plain", None)
    outside = folder("keep", f"schedsweep {host} {sleeper.pid} {dead_start}\n")
    assert sorted(S.remove_stale_tls(tmp_path)) == sorted([dead, reused])
    assert not dead.exists() and not reused.exists()
    assert all(p.exists() for p in (alive, other_host, foreign, no_owner, outside))


def test_orphan_check_exits_a_job_whose_run_is_gone(tmp_path):
    """The job script line: exit 0 with a message when the owner file is old or missing; nothing when fresh."""
    import subprocess

    line = S.orphan_check(str(tmp_path)) + "\necho started"
    run = lambda: subprocess.run(["bash", "-c", line], capture_output=True, text=True)  # noqa: E731
    missing = run()
    assert missing.returncode == 0 and "gone" in missing.stderr and "started" not in missing.stdout
    owner = tmp_path / S.TLS_OWNER
    owner.write_text("x")
    assert run().stdout.strip() == "started"
    old = time.time() - S.ORPHAN_SECONDS - 5
    os.utime(owner, (old, old))
    assert "started" not in run().stdout
