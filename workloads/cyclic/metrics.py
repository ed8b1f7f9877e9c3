"""Per-replication metrics of a cycle (``docs/models/cyclic.md``, "Metrics"): means over the jobs scheduled."""
from __future__ import annotations

import numpy as np

from .._contract import quantiles
from .batch import CRITERION_NAMES
from .cycle import Cycle
from .execution import job_times, node_busy

OWNER_NODE = 0
_TIMES = ("start", "runtime", "finish", "proc_time", "cost")


def _mean(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    return float(x.sum() / len(x)) if len(x) else np.nan


def _by_criterion(values: np.ndarray, criterion: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Mean of ``values`` over the kept jobs of each criterion group (NaN for an empty group)."""
    sel = keep & ~np.isnan(values)
    groups = len(CRITERION_NAMES)
    counts = np.bincount(criterion[sel], minlength=groups)
    sums = np.bincount(criterion[sel], weights=values[sel], minlength=groups)
    out = np.full(groups, np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


def cycle_metrics(cycle: Cycle, interval: float) -> dict[str, float | np.ndarray]:
    """Every metric of one cycle (names as in ``METRICS``), plus ``reason``."""
    b = cycle.batch
    plan = cycle.plan
    planned = job_times(plan.start, plan.nodes, cycle.node_len, cycle.node_cost)
    actual = job_times(cycle.actual_start, cycle.actual_nodes, cycle.node_len, cycle.node_cost, b.rho)
    ran = ~np.isnan(plan.start)
    out: dict[str, float | np.ndarray] = {}
    for name in _TIMES:
        out[name] = _mean(getattr(planned, name))
    out["f_value"] = _mean(planned.f_value)
    for name in ("start", "finish"):
        values = getattr(planned, name)
        out[name + "_quantiles"] = quantiles(values[~np.isnan(values)])
    for name in ("start", "runtime", "finish", "proc_time"):
        out["actual_" + name] = _mean(getattr(actual, name))
    out["actual_f_value"] = _mean(actual.f_value)
    alternatives = plan.alternatives
    out["alternatives"] = _mean(alternatives[cycle.cyclic]) if cycle.cyclic.any() else np.nan
    out["scheduled"] = float(ran.sum())
    out["failure"] = float(not ran.all())
    out["actual_failure"] = float(np.isnan(cycle.actual_start).any())
    out["dp_flagged"] = float(plan.flagged) if cycle.cyclic.any() else np.nan
    busy = node_busy(plan.start, plan.nodes, cycle.node_len)
    price = cycle.env.price
    out["owner_busy"] = float(busy[OWNER_NODE])
    out["owner_util"] = float(busy[OWNER_NODE] / interval)
    out["owner_income"] = float(price[OWNER_NODE] * busy[OWNER_NODE])
    out["owner_unit_price"] = float(price[OWNER_NODE])
    out["owner_performance"] = float(cycle.env.perf[OWNER_NODE])
    out["util_mean"] = float(busy.mean() / interval)
    out["income_total"] = float((price * busy).sum())
    out["schedule_time"] = cycle.seconds * 1e6
    for name in _TIMES:
        out["crit_" + name] = _by_criterion(getattr(planned, name), b.criterion, ran)
    out["crit_actual_finish"] = _by_criterion(actual.finish, b.criterion, ~np.isnan(cycle.actual_start))
    out["crit_alternatives"] = _by_criterion(alternatives, b.criterion, cycle.cyclic)
    counts = np.array([(b.criterion[ran] == c).sum() for c in range(len(CRITERION_NAMES))], np.float64)
    out["crit_jobs"] = counts
    out["reason"] = 0 if ran.all() else (1 if ran.any() else 2)
    return out


def cycle_records(cycle: Cycle) -> dict[str, np.ndarray]:
    """Per-job records of a cycle's plan (``pipeline.store.records``): one row per job and node of
    its window, ``end`` = start + that node's slot length, ``size`` 1 (one slot), ``status`` 0
    scheduled, 2 postponed (one row, node -1, NaN times). The batch arrives at the cycle's
    start, so ``submit`` is 0."""
    plan = cycle.plan
    ran = ~np.isnan(plan.start)
    pieces = np.where(ran, (plan.nodes >= 0).sum(axis=1), 1)
    job = np.repeat(np.arange(len(plan.start)), pieces)
    node = np.full(job.size, -1, np.int64)
    end = np.full(job.size, np.nan)
    first = np.concatenate(([0], np.cumsum(pieces)[:-1]))
    for j in np.flatnonzero(ran):
        ks = plan.nodes[j][plan.nodes[j] >= 0]
        node[first[j]:first[j] + ks.size] = ks
        end[first[j]:first[j] + ks.size] = plan.start[j] + cycle.node_len[j, ks]
    return {"job": job.astype(np.int64), "submit": np.zeros(job.size), "start": plan.start[job], "end": end,
            "resource": node, "size": np.ones(job.size, np.int64), "status": np.where(ran, 0, 2)[job]}
