"""Trace windows: which jobs of a trace one replication simulates (``trace_window_jobs``).

A window is ``W`` consecutive jobs of the trace in queue order, after its dropping rules
(``swf.read``). ``trace_window_draw = "sequential"``: replication r simulates jobs
``[r W, (r + 1) W)``, so a log of n jobs has ``n // W`` windows (the last ``n mod W`` jobs
fill none and are left out: every window holds the same number of jobs). ``"random"``: the
window's first job is drawn uniformly from ``[0, n − W]`` with the replication's job
stream (stream 1, one integer; trace flows draw nothing else from it). Either way the same
replication index and seed give the same window in every cell of a sweep that reads the
same trace, so paired comparisons pair window with window.

Each window runs from an empty machine, its submit times shifted so that its first job is
submitted at 0 *(our rule)*. Its first ``floor(trace_window_warmup × W)`` jobs are a
warm-up *(our rule)*: simulated, so the measured jobs meet a machine loaded as in the
log, but left out of the per-job metrics (``metrics.compute``'s ``warmup``). A fraction
rather than a count, so that one value suits every window size; 10% by default, the
share of a run commonly discarded as its transient, so 90% of the jobs simulated are
measured; 0 makes a window exactly the whole-trace run of a file holding its jobs.
Time averages need no cut: utilisation, CL, memory and disk are averaged only while the
queue is non-empty, which an emptying machine's start mostly is not.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np


def count(n_jobs: int, window: int) -> int:
    """Sequential windows of ``window`` jobs in a trace of ``n_jobs`` (0 when ``window`` is 0)."""
    return n_jobs // window if window > 0 else 0


def warmup_jobs(p: Mapping[str, Any]) -> int:
    """The warm-up jobs of each window (0 for a whole trace)."""
    w = int(p.get("trace_window_jobs", 0))
    return int(np.floor(p.get("trace_window_warmup", 0.1) * w)) if w > 0 else 0


def bounds(p: Mapping[str, Any], n_jobs: int, rng_jobs: np.random.Generator,
           replication: int | None) -> tuple[int, int]:
    """Jobs ``[a, b)`` of the trace that the replication simulates (``(0, n_jobs)``: all)."""
    w = int(p.get("trace_window_jobs", 0))
    if w == 0:
        return 0, n_jobs
    if w > n_jobs:
        raise ValueError(f"trace_window_jobs = {w} exceeds the trace's {n_jobs} jobs")
    if p.get("trace_window_draw", "sequential") == "random":
        a = int(rng_jobs.integers(0, n_jobs - w + 1))
        return a, a + w
    if replication is None:
        raise ValueError("trace_window_draw = 'sequential' needs the replication index (run_batch's "
                         "replications, given by the pipeline)")
    if not 0 <= replication < count(n_jobs, w):
        raise ValueError(f"replication {replication}: the trace has {count(n_jobs, w)} windows of {w} jobs "
                         f"(replications 0-{count(n_jobs, w) - 1})")
    return replication * w, (replication + 1) * w
