"""What runs on a worker: a batch of replications of one cell, and the pilot.

A batch that raises is re-run one replication at a time, so that only the seeds that
really fail are marked failed, each with its own traceback, and the rest are kept.
"""
from __future__ import annotations

import time
import traceback
from typing import Any

import numpy as np

import workloads
from workloads._contract import empty_outputs


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


def run_replications(workload: str, params: dict[str, Any], seeds: np.ndarray) -> dict[str, Any]:
    """Run one replication per seed; returns outputs, ``failed`` {offset: traceback} and seconds."""
    module = workloads.get(workload)
    t0 = time.perf_counter()
    n = len(seeds)
    try:
        outputs = _checked(module, module.run_batch(params, seeds), n)
        failed: dict[int, str] = {}
    except Exception:  # noqa: BLE001 - any workload error is isolated per seed below
        outputs = empty_outputs(module.METRICS, n)
        failed = {}
        for k in range(n):
            try:
                one = _checked(module, module.run_batch(params, seeds[k:k + 1]), 1)
            except Exception:  # noqa: BLE001
                failed[k] = traceback.format_exc()
                continue
            for name, arr in one.items():
                outputs[name][k] = arr[0]
    return {"outputs": outputs, "failed": failed, "seconds": time.perf_counter() - t0}


def pilot(workload: str, params: dict[str, Any], seeds: np.ndarray, budget: float) -> dict[str, Any]:
    """Run the first replications in doubling batches until ``budget`` seconds are spent.

    Returns the results of every replication run (a real batch, starting at the cell's
    replication 0) and the time per replication of the last, largest batch, which is
    free of first-call costs (imports, loading compiled kernels).
    """
    # The first replication alone pays the first-call costs; the clock starts after it.
    parts = [run_replications(workload, params, seeds[:1])]
    per_rep = parts[0]["seconds"]
    done, size = 1, 1
    t0 = time.perf_counter()
    while done < len(seeds) and time.perf_counter() - t0 < budget:
        part = run_replications(workload, params, seeds[done:done + size])
        parts.append(part)
        per_rep = part["seconds"] / size
        done += size
        size = min(size * 2, len(seeds) - done)
    outputs = {name: np.concatenate([p["outputs"][name] for p in parts]) for name in parts[0]["outputs"]}
    failed: dict[int, str] = {}
    offset = 0
    for p in parts:
        failed.update({offset + k: tb for k, tb in p["failed"].items()})
        offset += len(p["outputs"]["reason"])
    return {"outputs": outputs, "failed": failed, "seconds": sum(p["seconds"] for p in parts),
            "n": done, "seconds_per_rep": per_rep}
