"""Communication metrics (spec "Metrics" 6, *our rule*: the source only names them).

- ``SD``: mean over jobs of the sum over unordered process pairs of the hop distance
  between their nodes (0 for two processes on one node);
- ``JD``: mean over jobs of distinct nodes used / n_j;
- ``MB``: mean time from a blocking receive's call to the arrival of its message (s);
  the network kernel sums the blocking (``A_BLOCK``) and counts the receives.
"""
from __future__ import annotations

import numpy as np

from . import network as net
from .topology import Topology


def job_sd(topo: Topology, proc_nodes: np.ndarray) -> float:
    """Sum over unordered process pairs of the routed hop distance between their nodes."""
    nodes = np.asarray(proc_nodes, np.int64)
    if nodes.size < 2:
        return 0.0
    # group by node: pairs on nodes a != b contribute count_a * count_b * hops(a, b)
    uniq, count = np.unique(nodes, return_counts=True)
    h = topo.hops[np.ix_(uniq, uniq)]
    return float(count @ h @ count) / 2.0


def job_jd(proc_nodes: np.ndarray) -> float:
    nodes = np.asarray(proc_nodes)
    return np.unique(nodes).size / nodes.size


def sd_jd(topo: Topology, allocations: list[np.ndarray]) -> tuple[float, float]:
    """(SD, JD) over the jobs' process-to-node maps (NaN if there are none)."""
    if not allocations:
        return np.nan, np.nan
    return (float(np.mean([job_sd(topo, a) for a in allocations])),
            float(np.mean([job_jd(a) for a in allocations])))


def mb(acc: np.ndarray) -> float:
    """Mean receive blocking (s) from the network's sums; NaN if no message was received."""
    return float(acc[net.A_BLOCK] / acc[net.A_RECVS]) if acc[net.A_RECVS] > 0 else np.nan


def contention(acc: np.ndarray) -> float:
    """Measured message time over idle-network time, summed over delivered messages (>= 1)."""
    return float(acc[net.A_MSGTIME] / acc[net.A_FREETIME]) if acc[net.A_FREETIME] > 0 else np.nan
