"""What runs on a worker: a batch of replications of one cell, and the pilot.

The replications run in a child process (:mod:`pipeline.execution.child`) with a time limit; the
task itself, on the worker or with ``--workers 0`` in the client, only waits and narrows.
A batch that raises, times out or kills its process is re-run one replication at a time,
so that only the seeds that really fail are marked failed, and the rest are kept.

A failed replication has status 3 (failed) in the store and a failure record naming its
seed and its *kind*, a pipeline-level code distinct from a workload's ``REASONS``:

- ``error``: the workload raised; the record keeps the traceback;
- ``timeout``: it did not finish within the task time limit when run alone;
- ``crashed``: its process died when run alone (``os._exit``, a segfault, the OOM killer).
"""
from __future__ import annotations

import time
import traceback
from typing import Any

import numpy as np

from schedsweep import workloads
from schedsweep.workloads._contract import empty_outputs

from . import child, subtasks

FAILURE_KINDS = ("error", "timeout", "crashed")
# A batch's replications are re-run alone after it timed out; once this many in a row time
# out alone too (a cell whose every replication hangs), the rest are marked without waiting.
TIMEOUTS_IN_A_ROW = 3


def _checked(module: Any, out: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """Convert a workload's outputs to the declared shapes; a mismatch is a workload bug."""
    checked = {}
    for metric in module.METRICS:
        if metric.name not in out:
            raise ValueError(f"run_batch returned no metric {metric.name!r}")
        arr = np.asarray(out[metric.name], dtype=np.float64)
        if arr.shape != (n, *metric.shape):
            raise ValueError(f"metric {metric.name!r} has shape {arr.shape}, expected {(n, *metric.shape)}")
        checked[metric.name] = arr
    reason = np.asarray(out.get("reason", np.zeros(n)), dtype=np.int8)
    if reason.shape != (n,):
        raise ValueError(f"reason has shape {reason.shape}, expected ({n},)")
    checked["reason"] = reason
    return checked


def load(workload: str) -> None:
    """Import the workload (in the child, before the timed call)."""
    workloads.get(workload)


def warm(workload: str) -> None:
    """Start this thread's replication process and import the workload in it, ahead of the
    first task. A failure is not reported here: the first task tries again and reports it."""
    try:
        child.call_once(load, workload, timeout=child.START_TIMEOUT)
    except Exception:  # noqa: BLE001 - see the docstring
        pass


def _run_batch(module: Any, params: dict[str, Any], seeds: np.ndarray,
               replications: np.ndarray | None) -> dict[str, np.ndarray]:
    """``module.run_batch``, given the replication indices too when the workload declares
    ``TAKES_REPLICATIONS`` (``workloads._contract``); every other workload as before."""
    if getattr(module, "TAKES_REPLICATIONS", False):
        if replications is None:
            raise ValueError(f"workload {module.__name__!r} takes the replication indices (TAKES_REPLICATIONS), "
                             "but none were given")
        return module.run_batch(params, seeds, np.asarray(replications, np.int64))
    return module.run_batch(params, seeds)


def _part(replications: np.ndarray | None, a: int, b: int) -> np.ndarray | None:
    return None if replications is None else replications[a:b]


def run_replications(workload: str, params: dict[str, Any], seeds: np.ndarray,
                     replications: np.ndarray | None = None) -> dict[str, Any]:
    """Run one replication per seed in this process (``replications``: each seed's
    replication index, for a workload that takes them).

    Returns ``outputs`` (one array per metric and ``reason``), ``failed``
    {offset: (kind, text)} and ``seconds`` (wall time).
    """
    module = workloads.get(workload)
    t0 = time.perf_counter()
    n = len(seeds)
    failed: dict[int, tuple[str, str]] = {}
    try:
        outputs = _checked(module, _run_batch(module, params, seeds, replications), n)
    except Exception:  # noqa: BLE001 - any workload error is isolated per seed below
        outputs = None
    if outputs is None:  # outside the handler, so a seed's traceback is its own, not chained to the batch's
        outputs = empty_outputs(module.METRICS, n)
        for k in range(n):
            try:
                one = _checked(module, _run_batch(module, params, seeds[k:k + 1], _part(replications, k, k + 1)), 1)
            except Exception:  # noqa: BLE001
                failed[k] = ("error", traceback.format_exc())
                continue
            for name, arr in one.items():
                outputs[name][k] = arr[0]
    return {"outputs": outputs, "failed": failed, "seconds": time.perf_counter() - t0}


def run_isolated(workload: str, params: dict[str, Any], seeds: np.ndarray, timeout: float,
                 replications: np.ndarray | None = None) -> dict[str, Any]:
    """:func:`run_replications` in the child process, at most ``timeout`` seconds.

    If the batch times out or its process dies, each replication is run alone (each with
    the same limit) and one that times out or dies again is marked failed with kind
    ``timeout`` or ``crashed``. ``seconds`` is the wall time spent, waits included.
    """
    t0 = time.perf_counter()
    try:
        # Imports (numba, the model) are not the batch's time: a fresh child loads them first.
        child.call_once(load, workload, timeout=child.START_TIMEOUT)
        return _call_replications(workload, params, seeds, timeout, replications)
    except (child.ChildTimeout, child.ChildDied) as exc:
        whole = exc
    n = len(seeds)
    outputs = empty_outputs(workloads.get(workload).METRICS, n)
    if n == 1:
        return {"outputs": outputs, "failed": {0: _fault(whole)}, "seconds": time.perf_counter() - t0}
    failed: dict[int, tuple[str, str]] = {}
    in_a_row = 0
    for k in range(n):
        if in_a_row >= TIMEOUTS_IN_A_ROW:
            failed[k] = ("timeout", f"not run alone: the {in_a_row} replications before it in its batch of {n} "
                                    f"each timed out alone (limit {timeout:g} s); rerun with --retry-failed")
            continue
        try:
            child.call_once(load, workload, timeout=child.START_TIMEOUT)
            one = _call_replications(workload, params, seeds[k:k + 1], timeout, _part(replications, k, k + 1))
        except (child.ChildTimeout, child.ChildDied) as exc:
            failed[k] = _fault(exc, f"; its batch of {n} had {_what(whole)} first")
            in_a_row = in_a_row + 1 if isinstance(exc, child.ChildTimeout) else 0
            continue
        in_a_row = 0
        for name, arr in one["outputs"].items():
            outputs[name][k] = arr[0]
        if 0 in one["failed"]:
            failed[k] = one["failed"][0]
    return {"outputs": outputs, "failed": failed, "seconds": time.perf_counter() - t0}


def _call_replications(workload: str, params: dict[str, Any], seeds: np.ndarray, timeout: float,
                       replications: np.ndarray | None = None) -> dict[str, Any]:
    """:func:`run_replications` in this thread's child process. A workload that submits tasks to
    the sweep's Dask cluster (:mod:`pipeline.execution.subtasks`) gets the cluster's address, and this
    task gives its worker slot back while the child drives them."""
    cluster = subtasks.worker_cluster() if subtasks.uses_cluster(workloads.get(workload), params) else None
    if cluster is None:
        return child.call(run_replications, workload, params, seeds, replications, timeout=timeout)
    with subtasks.seceded():
        return child.call(subtasks.run_connected, cluster, run_replications, workload, params, seeds,
                          replications, timeout=timeout)


def _what(exc: Exception) -> str:
    return "timed out" if isinstance(exc, child.ChildTimeout) else "died"


def _fault(exc: Exception, context: str = "") -> tuple[str, str]:
    """(kind, text) of a replication run alone that timed out or whose process died."""
    if isinstance(exc, child.ChildTimeout):
        return "timeout", f"timeout: run alone, it did not finish within {exc.timeout:g} s (task_timeout){context}"
    return "crashed", f"crashed: run alone, {exc}{context}"


def pilot(workload: str, params: dict[str, Any], seeds: np.ndarray, budget: float,
          timeout: float, replications: np.ndarray | None = None) -> dict[str, Any]:
    """Run the first replications in doubling batches until ``budget`` seconds are spent.

    Each part runs isolated with at most ``timeout`` seconds (:func:`run_isolated`).
    Returns the results of every replication run (a real batch, starting at the cell's
    replication 0) and the time per replication of the last, largest batch, which is
    free of first-call costs (imports, loading compiled kernels); NaN when no part ran
    cleanly. A part that timed out or crashed ends the pilot (its time says nothing).
    """
    # The first replication alone pays the first-call costs; the clock starts after it.
    parts = [run_isolated(workload, params, seeds[:1], timeout, _part(replications, 0, 1))]
    clean = _clean(parts[0])
    per_rep = parts[0]["seconds"] if clean else float("nan")
    done, size = 1, 1
    t0 = time.perf_counter()
    while clean and done < len(seeds) and time.perf_counter() - t0 < budget:
        part = run_isolated(workload, params, seeds[done:done + size], timeout, _part(replications, done, done + size))
        parts.append(part)
        clean = _clean(part)
        if clean:
            per_rep = part["seconds"] / size
        done += size
        size = min(size * 2, len(seeds) - done)
    outputs = {name: np.concatenate([p["outputs"][name] for p in parts]) for name in parts[0]["outputs"]}
    failed: dict[int, tuple[str, str]] = {}
    offset = 0
    for p in parts:
        failed.update({offset + k: f for k, f in p["failed"].items()})
        offset += len(p["outputs"]["reason"])
    return {"outputs": outputs, "failed": failed, "seconds": sum(p["seconds"] for p in parts),
            "n": done, "seconds_per_rep": per_rep}


def _clean(part: dict[str, Any]) -> bool:
    """No replication of the part timed out or crashed (errors take no time to speak of)."""
    return all(kind == "error" for kind, _ in part["failed"].values())
