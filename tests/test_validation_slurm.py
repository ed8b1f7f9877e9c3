"""The Slurm route exposes nothing by default. A SweepSLURMCluster is built
here (its scheduler really starts, in a process of its own, and listens; no job is
submitted) and the sockets this process and its children opened are inspected: nothing on
0.0.0.0 or ::, the dashboard on loopback, the scheduler on TLS with a per-run certificate
that is removed at close."""
from __future__ import annotations

import contextlib
import json
import os
import stat

import psutil
import pytest

from schedsweep.pipeline.execution import slurm as S

ANY = {"0.0.0.0", "::", ""}


def _listening() -> set[tuple[str, int]]:
    """What this process and its children listen on."""
    me = psutil.Process()
    found = set()
    for process in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            found |= {(c.laddr.ip, c.laddr.port) for c in process.net_connections(kind="inet")
                      if c.status == psutil.CONN_LISTEN}
    return found


@pytest.fixture
def built(tmp_path):
    """Build a cluster from options; yield (cluster, sockets it opened); close it after."""
    made = []

    def build(**changes):
        options = S.resolve_options()
        for key, value in dict(tls_directory=str(tmp_path / "tls"), **changes).items():
            setattr(options, key, value)
        before = _listening()
        cluster = S.build_cluster(options)
        made.append(cluster)
        return cluster, _listening() - before

    yield build
    for cluster in made:
        cluster.close()


def test_default_cluster_binds_nothing_to_all_interfaces_and_uses_tls(built, tmp_path):
    cluster, opened = built()
    assert opened, "the scheduler should be listening"
    assert not {ip for ip, _ in opened} & ANY, opened
    assert cluster.scheduler_address.startswith("tls://")
    dashboard_port = cluster.scheduler_info["services"]["dashboard"]
    assert ("127.0.0.1", dashboard_port) in opened          # dashboard on loopback only
    assert cluster.dashboard_link == f"http://127.0.0.1:{dashboard_port}/status"  # the link says so
    # the certificate and key live in a private folder, the key readable by this user only
    (folder,) = (tmp_path / "tls").iterdir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "key.pem").stat().st_mode) == 0o600
    script = cluster.job_script()
    for arg in ("--protocol tls://", f"--tls-ca-file {folder}/cert.pem", f"--tls-key {folder}/key.pem",
                "--no-dashboard", "--dashboard-address 127.0.0.1:0", cluster.scheduler_address):
        assert arg in script, arg
    cluster.close()
    assert not folder.exists()                                # removed with the scheduler


def test_the_scheduler_runs_apart_and_answers_the_handover(built):
    """The scheduler is another process (its CPU per task is not the client's), it was given
    its arguments on stdin (a TLS key never on a command line) and it answers the handover's
    handlers over TLS."""
    from schedsweep.pipeline.execution import handover

    cluster, _ = built(dashboard_address="127.0.0.1:0")
    process = psutil.Process(cluster.scheduler.process.pid)
    assert process.pid != os.getpid() and process.ppid() == os.getpid()
    assert not any("key" in word or "tls" in word for word in process.cmdline()), process.cmdline()
    view = cluster.sync(getattr(cluster.scheduler_comm, handover.WORKERS))
    assert view["batch_seconds"] == 0.0 and list(view["workers"]) == []
    outcome = cluster.sync(getattr(cluster.scheduler_comm, handover.HAND_BACK), address="tls://127.0.0.1:1")
    assert outcome == {"handed_back": 0, "processing": 0}
    json.dumps(view)  # plain values
    cluster.close()
    assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE


def test_interface_keeps_the_scheduler_on_it(built):
    cluster, opened = built(interface="lo", dashboard_address="127.0.0.1:0")
    assert {ip for ip, _ in opened} == {"127.0.0.1"}
    assert cluster.scheduler_address.startswith("tls://127.0.0.1:")


def test_without_tls_the_scheduler_still_listens_on_one_address(built):
    cluster, opened = built(tls=False, dashboard_address="127.0.0.1:0")
    assert cluster.scheduler_address.startswith("tcp://")
    assert not {ip for ip, _ in opened} & ANY, opened


def test_all_interfaces_only_when_asked():
    options = S.resolve_options()
    assert S.cluster_kwargs(options)["scheduler_options"]["host"] not in ANY
    options.scheduler_host, options.dashboard_address = "0.0.0.0", ":8787"
    kwargs = S.cluster_kwargs(options)
    assert kwargs["scheduler_options"] == {"host": "0.0.0.0", "dashboard_address": ":8787"}


@pytest.mark.parametrize("text, key", [("tls: maybe\n", "tls"), ("scheduler_host: 5\n", "scheduler_host"),
                                       ('dashboard_address: ""\n', "dashboard_address")])
def test_security_profile_entries_are_checked(tmp_path, text, key):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(S.SlurmOptionError, match=key):
        S.resolve_options(profile=str(path))


def test_example_profile_documents_what_is_exposed():
    text = (S.PROFILE_DIR / "example-site.yaml").read_text()
    assert "ssh -L 8787:127.0.0.1:8787" in text and "tls:" in text


def test_no_way_to_make_a_certificate_is_one_line_before_any_job(tmp_path, monkeypatch, capsys):
    """Without `cryptography` and `openssl`, --cluster slurm stops in one line (exit 2), never
    falling back to plain TCP on its own, and no store is made."""
    from schedsweep.pipeline import cli

    monkeypatch.setattr(S.shutil, "which", lambda name: None)
    monkeypatch.setitem(__import__("sys").modules, "cryptography", None)  # import fails
    monkeypatch.setenv("HOME", str(tmp_path))
    spec = tmp_path / "s.toml"
    spec.write_text('workload = "mm1"\nreplications = 2\nseed = 1\n')
    code = cli.main(["run", str(spec), "--cluster", "slurm", "--store", str(tmp_path / "s.zarr"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "tls" in err and "openssl" in err, err
    assert not (tmp_path / "s.zarr").exists()
