"""Per-replication metrics of a simulated schedule (``docs/models/cluster.md`` "Metrics").

Time-averaged quantities come from the kernel's integrals: node utilisations are
averaged over the time the queue is non-empty (delta mask), the cluster performance
loss over the time its sigma mask holds. Job metrics: wait ``w = start − submit``,
real time ``T = end − start``, bounded slowdown ``max(1, (w + T) / max(T, tau))`` over
jobs that were not killed. Variances are population variances (ddof = 0). Percentiles
(p50, p90, p99 of wait, response and bounded slowdown) are ``numpy.percentile``'s, linear.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._contract import QUANTILES, Metric, quantiles

if TYPE_CHECKING:       # the package declares METRICS from here without importing the kernels
    from .simulator import Result

METRICS = (
    Metric("utilization", "%", "mean core utilisation U_cores over nodes, while the queue is non-empty"),
    Metric("cluster_loss", "%", "cluster performance loss CL: speed-weighted free cores while cl_mask holds"),
    Metric("makespan", "s", "C_max: last completion time (time 0 = start of the flow or trace)"),
    Metric("mean_wait", "s", "mean waiting time start - submit over all jobs"),
    Metric("mean_bsld", "1", "mean bounded slowdown max(1, (w + T) / max(T, bsld_threshold)), killed jobs excluded"),
    Metric("mem_util", "%", "mean memory utilisation over nodes, while the queue is non-empty"),
    Metric("disk_util", "%", "mean disk utilisation over nodes, while the queue is non-empty"),
    Metric("var_core_util", "%^2", "D_u: variance across nodes of the time-averaged core utilisation"),
    Metric("var_mem_util", "%^2", "D_m: variance across nodes of the time-averaged memory utilisation"),
    Metric("var_disk_util", "%^2", "D_d: variance across nodes of the time-averaged disk utilisation"),
    Metric("max_wait", "s", "maximum waiting time"),
    Metric("max_bsld", "1", "maximum bounded slowdown (killed jobs excluded)"),
    Metric("var_wait", "s^2", "fairness: variance of the waiting time over jobs"),
    Metric("killed_jobs", "jobs", "jobs killed at their estimate t / min s"),
    Metric("spread", "1", "JD: mean over jobs of distinct nodes used / cores requested"),
    Metric("jobs_simulated", "jobs", "jobs simulated (after dropping)"),
    Metric("dropped_jobs", "jobs",
           "trace jobs dropped: run time < 0 or no processor count, or larger than the machine (the whole "
           "trace's, also for a window of it)"),
    Metric("dropped_too_large", "jobs", "trace jobs dropped because they ask for more processors than the machine"),
    Metric("offered_load", "%", "eq. (8) load of the simulated flow: sum n tau / (sum s c * max a)"),
    Metric("sim_seconds", "s", "wall time of the simulation kernel (no parsing, generation or compilation)",
           timing=True),
    Metric("jobs_per_second", "jobs/s", "jobs simulated per second of kernel wall time", timing=True),
    Metric("wait_quantiles", "s", "percentiles over jobs of the waiting time start - submit", dims=QUANTILES),
    Metric("response_quantiles", "s", "percentiles over jobs of the response time end - submit", dims=QUANTILES),
    Metric("bsld_quantiles", "1", "percentiles over jobs of the bounded slowdown (killed jobs excluded)",
           dims=QUANTILES),
)

REASONS = {
    0: ("none", "the replication produced every metric"),
    1: ("no queue", "the queue was never non-empty (or cl_mask never held): U_cores, CL, memory and disk use are NaN"),
    2: ("no jobs", "the flow or trace has no job to simulate: every metric is NaN"),
    3: ("unschedulable", "some job could never be placed (memory or disk per process too large): metrics are NaN"),
}


def offered_load(cores_req: np.ndarray, tau: np.ndarray, submit: np.ndarray, node_speed: np.ndarray,
                 node_cores: np.ndarray) -> float:
    """Eq. (8) as a percentage: sum_j n_j tau_j / (sum_i s_i c_i * max_j a_j) * 100."""
    span = float(np.max(submit)) if submit.size else 0.0
    cap = float(np.sum(node_speed * node_cores))
    if span <= 0.0 or cap <= 0.0:
        return np.nan
    return float(np.sum(cores_req * tau)) / (cap * span) * 100.0


def compute(res: Result, submit: np.ndarray, cores_req: np.ndarray, node_speed: np.ndarray,
            node_cores: np.ndarray, bsld_threshold: float, warmup: int = 0) -> tuple[dict[str, float], int]:
    """Metric values of one replication and its reason code. The first ``warmup`` jobs (a
    trace window's warm-up, ``windows.py``) are left out of the per-job metrics."""
    out: dict[str, Any] = {m.name: np.full(m.shape, np.nan) if m.shape else np.nan for m in METRICS}
    if submit.size == 0:
        return out, 2
    if np.isnan(res.start).any():
        return out, 3
    m = slice(warmup, None)      # the measured jobs
    wait = res.start[m] - submit[m]
    real = res.end[m] - res.start[m]
    ok = res.killed[m] == 0
    bsld = np.maximum(1.0, (wait[ok] + real[ok]) / np.maximum(real[ok], bsld_threshold))
    out.update(
        makespan=float(res.end.max()), mean_wait=float(wait.mean()), max_wait=float(wait.max()),
        var_wait=float(wait.var()), killed_jobs=float((~ok).sum()),
        mean_bsld=float(bsld.mean()) if bsld.size else np.nan, max_bsld=float(bsld.max()) if bsld.size else np.nan,
        spread=float(np.mean(res.nodes_used[m] / cores_req[m])), jobs_simulated=float(submit.size),
        wait_quantiles=quantiles(wait), response_quantiles=quantiles(res.end[m] - submit[m]),
        bsld_quantiles=quantiles(bsld),
    )
    reason = 0
    if res.masked_time > 0:
        u, m, d = res.node_core_util * 100, res.node_mem_util * 100, res.node_disk_util * 100
        out.update(utilization=float(u.mean()), mem_util=float(m.mean()), disk_util=float(d.mean()),
                   var_core_util=float(u.var()), var_mem_util=float(m.var()), var_disk_util=float(d.var()))
    else:
        reason = 1
    if res.sigma_time > 0:
        cap = float(np.sum(node_speed * node_cores))
        out["cluster_loss"] = res.cl_integral / (res.sigma_time * cap) * 100.0
    else:
        reason = 1
    return out, reason


def late_starts(res: Result, warmup: int = 0) -> float:
    """Jobs that started after their guaranteed start (``Result.bound``; NaN bound: none),
    the first ``warmup`` jobs left out."""
    with np.errstate(invalid="ignore"):
        return float(np.sum(res.start[warmup:] > res.bound[warmup:]))
