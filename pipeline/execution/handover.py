"""The scheduler's side of a worker job's walltime handover (:mod:`pipeline.execution.slurm`).

The Slurm cluster's scheduler runs in a process of its own (as ``--cluster dask``'s does,
:func:`pipeline.execution.executors.local_cluster`), so that its CPU per task is not the
client's. The handover needs the scheduler's own state (which batch each worker runs, for
how long, how long batches take), so these handlers are added to that scheduler and the
cluster calls them over its connection to it (``cluster.scheduler_comm.<name>(...)``).
Each takes and returns plain values (msgpack): names, addresses, keys, seconds.
"""
from __future__ import annotations

import functools
from typing import Any

# the names the cluster calls them by
WORKERS = "schedsweep_workers"
DRAIN = "schedsweep_drain"
HAND_BACK = "schedsweep_hand_back"


def install(scheduler: Any) -> None:
    """Add the handover's handlers to a ``distributed.Scheduler``."""
    def bound(fn: Any) -> Any:  # named as the function: the server logs a handler by its __name__
        return functools.update_wrapper(functools.partial(fn, scheduler), fn)

    scheduler.handlers.update({WORKERS: bound(workers), DRAIN: bound(drain), HAND_BACK: bound(hand_back)})


def batch_seconds(scheduler: Any) -> float:
    """The longest average task duration the scheduler has seen (0 before any)."""
    prefixes = getattr(scheduler, "task_prefixes", {}).values()
    return max((p.duration_average for p in prefixes if p.duration_average and p.duration_average > 0),
               default=0.0)


def workers(scheduler: Any) -> dict[str, Any]:
    """Every worker's name, address and number of tasks it holds, and the batch length seen."""
    return {"batch_seconds": batch_seconds(scheduler),
            "workers": [{"name": str(ws.name), "address": ws.address, "processing": len(ws.processing)}
                        for ws in list(scheduler.workers.values())]}


def _task_seconds(scheduler: Any, ts: Any) -> float:
    """How long a task of this kind takes (its prefix's average), else the longest kind seen."""
    average = getattr(getattr(ts, "prefix", None), "duration_average", None)
    return average if average and average > 0 else batch_seconds(scheduler)


def _reschedule(scheduler: Any, address: str, tasks: list[Any]) -> int:
    """Reschedule ``tasks`` of the worker at ``address`` on other workers: the worker forgets
    them, the client's futures stay pending (no error, no try). Returns how many."""
    for ts in tasks:
        scheduler._reschedule(ts.key, worker=address, stimulus_id=f"schedsweep-hand-back-{ts.key}")
    return len(tasks)


def _outcome(scheduler: Any, address: str, handed_back: int) -> dict[str, int]:
    ws = scheduler.workers.get(address)
    return {"handed_back": handed_back, "processing": len(ws.processing) if ws is not None else 0}


def drain(scheduler: Any, address: str, leave_in: float, stimulus_id: str) -> dict[str, int]:
    """No new batch for this worker; its queued ones go back at once; a running one is kept
    when it ends within ``leave_in`` seconds, else handed back. Returns how many running
    batches were handed back (queued ones lose nothing and are not counted) and how many
    tasks the worker still holds."""
    from distributed.core import Status

    ws = scheduler.workers.get(address)
    if ws is None:
        return _outcome(scheduler, address, 0)
    scheduler.handle_worker_status_change(Status.closing_gracefully, ws, stimulus_id)
    comm = scheduler.stream_comms.get(address)
    if comm is not None:
        comm.send({"op": "worker-status-change", "status": Status.closing_gracefully.name,
                   "stimulus_id": stimulus_id})
    running = {getattr(ts, "key", ts): elapsed for ts, elapsed in ws.executing.items()}
    late = []
    for ts in list(ws.processing):
        if ts.key not in running:
            _reschedule(scheduler, address, [ts])   # not started: nothing lost, not counted
        elif max(0.0, _task_seconds(scheduler, ts) - running[ts.key]) > leave_in:
            late.append(ts)
    return _outcome(scheduler, address, _reschedule(scheduler, address, late))


def hand_back(scheduler: Any, address: str) -> dict[str, int]:
    """Everything the worker at ``address`` still holds goes to other workers (as :func:`drain` returns)."""
    ws = scheduler.workers.get(address)
    return _outcome(scheduler, address, _reschedule(scheduler, address, list(ws.processing)) if ws is not None else 0)
