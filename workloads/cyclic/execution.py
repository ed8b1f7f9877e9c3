"""Plans against reality (``docs/models/cyclic.md``, "Plan against reality"): per-job quantities.

A window (start, nodes) of job i reserves ``len_k = T_i p_ref / p_k`` on each node; the job
actually occupies ``rho_i * len_k`` there. CSS/FRSM keep their planned starts, backfilling
re-plans (its actual start comes from the execution with the true ``rho``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class JobTimes(NamedTuple):
    """Per job (NaN where the job did not run): start, runtime, finish, processor time, cost (time / money)."""

    start: np.ndarray
    runtime: np.ndarray
    finish: np.ndarray
    proc_time: np.ndarray
    cost: np.ndarray

    @property
    def f_value(self) -> np.ndarray:
        """``F = start + processor time``."""
        return self.start + self.proc_time


def job_times(start: np.ndarray, nodes: np.ndarray, node_len: np.ndarray, node_cost: np.ndarray,
              rho: np.ndarray | None = None) -> JobTimes:
    """Quantities of windows ``(start, nodes)``; with ``rho`` the actual ones (``rho * len_k`` per node)."""
    used = nodes >= 0
    safe = np.where(used, nodes, 0)
    rows = np.arange(len(start))[:, None]
    lens = np.where(used, node_len[rows, safe], 0.0)
    costs = np.where(used, node_cost[rows, safe], 0.0)
    runtime = lens.max(axis=1) if lens.shape[1] else np.zeros(len(start))
    proc = lens.sum(axis=1)
    if rho is not None:
        runtime = rho * runtime
        proc = rho * proc
    ran = ~np.isnan(start)
    nan = np.full(len(start), np.nan)
    runtime = np.where(ran, runtime, nan)
    proc = np.where(ran, proc, nan)
    return JobTimes(start.copy(), runtime, start + runtime, proc, np.where(ran, costs.sum(axis=1), nan))


def node_busy(start: np.ndarray, nodes: np.ndarray, node_len: np.ndarray) -> np.ndarray:
    """Per node, the total reserved length of the VO jobs' slots placed on it (``t_c``, time)."""
    used = (nodes >= 0) & ~np.isnan(start)[:, None]
    rows = np.broadcast_to(np.arange(len(start))[:, None], nodes.shape)[used]
    ks = nodes[used]
    return np.bincount(ks, weights=node_len[rows, ks], minlength=node_len.shape[1])
