"""The scheduler's side of the walltime handover (pipeline.execution.handover), on a real
Dask scheduler with two workers: a draining worker keeps a running batch that ends before it
must leave, hands back one that would not (its future then completes on the other worker,
neither an error nor a try), gives back a queued one uncounted, and takes no new one."""
from __future__ import annotations

import time

import pytest

distributed = pytest.importorskip("distributed")

from schedsweep.pipeline.execution import handover  # noqa: E402

NAP = 2.0  # seconds a batch takes here: long against a heartbeat (0.5 s), so it is seen running


def _nap(seconds: float, tag: int) -> str:
    time.sleep(seconds)
    return distributed.get_worker().address


@pytest.fixture
def two_workers():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        a, b = sorted(client.scheduler_info()["workers"])
        client.submit(_nap, NAP, 0, workers=[a], pure=False).result()  # the scheduler learns how long a nap takes
        yield client, a, b


def _wait_running(client, address: str, key: str) -> None:
    """Until a heartbeat of the worker tells the scheduler it runs ``key`` (what the handover reads)."""
    deadline = time.monotonic() + 30
    while key not in client.run_on_scheduler(lambda dask_scheduler: [ts.key for ts in
                                                                     dask_scheduler.workers[address].executing]):
        assert time.monotonic() < deadline, f"{key} never seen running on {address}"
        time.sleep(0.05)


def _on_scheduler(client, fn, *args):
    return client.run_on_scheduler(lambda dask_scheduler: fn(dask_scheduler, *args))


def test_a_batch_that_would_end_too_late_is_handed_back_and_completes_elsewhere(two_workers):
    client, a, b = two_workers
    running = client.submit(_nap, NAP, 1, workers=[a], allow_other_workers=True, pure=False)
    queued = client.submit(_nap, 0.1, 2, workers=[a], allow_other_workers=True, pure=False)
    _wait_running(client, a, running.key)
    outcome = _on_scheduler(client, handover.drain, a, 0.0, "test-drain")
    assert outcome == {"handed_back": 1, "processing": 0}   # the queued one went back uncounted
    assert running.result() == b and queued.result() == b
    assert running.status == "finished" and queued.status == "finished"
    # the drained worker takes nothing new
    assert client.submit(_nap, 0.1, 3, pure=False).result() == b
    view = _on_scheduler(client, handover.workers)
    assert view["batch_seconds"] > 0   # the naps' average (one kind of task: their prefix)
    assert {w["address"]: w["processing"] for w in view["workers"]} == {a: 0, b: 0}


def test_a_batch_that_ends_in_time_is_kept(two_workers):
    client, a, b = two_workers
    running = client.submit(_nap, NAP, 4, workers=[a], allow_other_workers=True, pure=False)
    _wait_running(client, a, running.key)
    outcome = _on_scheduler(client, handover.drain, a, 10 * NAP, "test-drain")
    assert outcome == {"handed_back": 0, "processing": 1}
    assert running.result() == a


def test_at_leave_time_a_kept_batch_is_handed_back_and_an_unknown_worker_is_nothing(two_workers):
    client, a, b = two_workers
    running = client.submit(_nap, NAP, 5, workers=[a], allow_other_workers=True, pure=False)
    _wait_running(client, a, running.key)
    assert _on_scheduler(client, handover.drain, a, 10 * NAP, "test-drain")["handed_back"] == 0
    assert _on_scheduler(client, handover.hand_back, a) == {"handed_back": 1, "processing": 0}
    assert running.result() == b   # a draining worker gets nothing back
    assert _on_scheduler(client, handover.hand_back, "inproc://nowhere/1/1") == {"handed_back": 0, "processing": 0}
    assert _on_scheduler(client, handover.drain, "inproc://nowhere/1/1", 0.0, "x") == {"handed_back": 0,
                                                                                     "processing": 0}
