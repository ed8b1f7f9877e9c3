"""``--cluster dask``: the scheduler in a process of its own (not the client's, where it took
CPU for every task beside the client), on the loopback interface only, with the client's
Dask configuration; it ends with the cluster and with the client; a sweep through it gives
the store of ``workers=0`` bit for bit."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import dask
import distributed  # noqa: F401 - its config defaults loaded before dask.config.set changes one
import psutil
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.execution.executors import open_executor
from schedsweep.pipeline.execution.sizing import TASK_COST
from tests.test_pipeline_run import SPEC, _data


def _worker_ttl(dask_scheduler) -> float:
    return dask_scheduler.worker_ttl


def test_the_scheduler_runs_in_its_own_process_on_loopback_with_the_clients_config():
    with dask.config.set({"distributed.scheduler.worker-ttl": "42s"}), \
            open_executor(workers=2, cluster="dask", task_timeout=None) as ex:
        client = ex.client
        scheduler_pid = client.run_on_scheduler(os.getpid)
        worker_pids = set(client.run(os.getpid).values())
        assert scheduler_pid != os.getpid() and scheduler_pid not in worker_pids and len(worker_pids) == 2
        assert psutil.Process(scheduler_pid).ppid() == os.getpid()  # this client's, not some other scheduler
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
        assert all(w.startswith("tcp://127.0.0.1:") for w in client.scheduler_info()["workers"])
        assert ex.dashboard_link.startswith("http://127.0.0.1:")
        assert client.run_on_scheduler(_worker_ttl) == 42.0  # the client's setting, which the test of frozen workers needs
        assert client.submit(pow, 3, 4, pure=False).result() == 81
        assert ex.task_cost == TASK_COST["dask"]  # the pilot's rule costs this route as two processes
    assert not psutil.pid_exists(scheduler_pid) or psutil.Process(scheduler_pid).status() == psutil.STATUS_ZOMBIE


def test_the_scheduler_ends_when_its_client_is_killed(tmp_path):
    script = tmp_path / "client.py"
    script.write_text(textwrap.dedent("""\
        import os, sys, time
        from schedsweep.pipeline.execution.executors import open_executor
        if __name__ == "__main__":
            with open_executor(workers=1, cluster="dask") as ex:
                print(ex.client.run_on_scheduler(os.getpid), flush=True)
                time.sleep(600)
    """))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    client = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        scheduler = psutil.Process(int(client.stdout.readline()))
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=30)
        scheduler.wait(timeout=30)  # psutil.TimeoutExpired if it outlived its client
    finally:
        client.kill()
        client.wait()


def test_a_sweep_through_it_equals_the_serial_store(write_spec, tmp_path):
    spec = write_spec(SPEC.replace("warmup = 200\n", ""))
    want = _data(pipeline.run(spec, tmp_path / "serial.zarr", workers=0, progress=False))
    assert (want["status"] == store_mod.OK).all()
    got = _data(pipeline.run(spec, tmp_path / "dask.zarr", workers=2, cluster="dask", progress=False))
    xr.testing.assert_identical(want, got)
