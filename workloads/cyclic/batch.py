"""The batch of one scheduling cycle (``docs/models/cyclic.md``, "The jobs of a batch").

Every job draws, in every method, its size, runtime and price margin (batch stream), its
user's criterion (criteria stream) and its actual-runtime factor (runtime stream), so that
all methods see the same batch in replication r.

Units: ``runtime`` T_i is the reservation time on the slowest node (time); on node k the
job needs a slot of ``len_k = T_i * p_ref / p_k``; ``price_max`` F_i is money per time
unit, ``budget`` S_i = F_i T_i n_i money.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: User criteria (FRSM): index -> name. Drawn uniformly.
CRITERION_NAMES = ("start", "runtime", "finish", "cost")


class Batch(NamedTuple):
    """N jobs in batch order (position = priority, 0 highest)."""

    slots: np.ndarray      #: int64[N], n_i, slots (distinct nodes) the job needs
    runtime: np.ndarray    #: float64[N], T_i, reservation time on the slowest node
    margin: np.ndarray     #: float64[N], m_i, price margin over p_ref
    price_max: np.ndarray  #: float64[N], F_i = p_ref (1 + m_i), money per time unit
    budget: np.ndarray     #: float64[N], S_i = F_i T_i n_i
    criterion: np.ndarray  #: int64[N], the user's criterion (index into CRITERION_NAMES)
    rho: np.ndarray        #: float64[N], actual runtime / reserved runtime

    @property
    def size(self) -> int:
        return self.slots.shape[0]


def draw_batch(batch_rng: np.random.Generator, criteria_rng: np.random.Generator,
               runtime_rng: np.random.Generator, jobs: int, perf_ref: float, *,
               slots_min: int = 1, slots_max: int = 5, runtime_min: float = 50.0,
               runtime_max: float = 150.0, margin_min: float = -0.2, margin_max: float = 0.6,
               rho_min: float = 0.2, rho_max: float = 1.0) -> Batch:
    """Draw a batch: n_i, then T_i, then m_i (batch stream); criteria; runtime factors rho_i."""
    slots = batch_rng.integers(slots_min, slots_max + 1, size=jobs).astype(np.int64)
    runtime = batch_rng.uniform(runtime_min, runtime_max, size=jobs)
    margin = batch_rng.uniform(margin_min, margin_max, size=jobs)
    criterion = criteria_rng.integers(0, len(CRITERION_NAMES), size=jobs).astype(np.int64)
    rho = runtime_rng.uniform(rho_min, rho_max, size=jobs)
    price_max = perf_ref * (1.0 + margin)
    return Batch(slots, runtime, margin, price_max, price_max * runtime * slots, criterion, rho)


def job_matrices(batch: Batch, perf: np.ndarray, price: np.ndarray, perf_ref: float) -> tuple[np.ndarray, np.ndarray]:
    """Per job and node the slot length ``T_i p_ref / p_k`` and its cost ``c_k len``: float64[N, nodes] each."""
    node_len = np.ascontiguousarray(batch.runtime[:, None] * perf_ref / perf[None, :])
    return node_len, np.ascontiguousarray(node_len * price[None, :])


def priority_order(batch: Batch, key: str) -> np.ndarray:
    """Job indices in priority order: ``first`` (batch order), ``cost`` (largest S_i first),
    ``runtime`` (largest T_i first); ties by batch order (stable sort)."""
    if key == "first":
        return np.arange(batch.size, dtype=np.int64)
    if key == "cost":
        return np.argsort(-batch.budget, kind="stable").astype(np.int64)
    if key == "runtime":
        return np.argsort(-batch.runtime, kind="stable").astype(np.int64)
    raise ValueError(f"priority must be 'first', 'cost' or 'runtime', got {key!r}")
