"""Sequential replication control: how many replications a cell needs (docs/contracts.md, "Statistics").

The confidence-interval method with look-ahead of Hoad, Robinson & Davies (J. Oper. Res.
Soc. 61, 2010): after n replications, the relative precision is the CI half-width over
|mean|; a cell is done at the first n whose precision meets the target and keeps meeting
it over the next ``look_ahead(n)`` replications. Decisions depend only on the results of
the replications 0..n-1 of the cell, never on timing or on other cells, so a sweep stops
every cell at the same replication whatever the workers, batches or waves.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


GROWTH_CAP = 4  # a wave at most quadruples a cell's replications (early precision estimates are rough)


@dataclass(frozen=True)
class Decision:
    done: bool          # no more replications for this cell
    met: bool           # the target precision was reached (and held over the look-ahead)
    next_n: int         # replications the cell should have after its next wave (== n when done)
    precision: float    # relative precision of the n replications run (NaN if undefined)


def look_ahead(n: int, base: int) -> int:
    """Replications over which the target must keep holding: ``base`` up to 100, then base % of n."""
    return base if n <= 100 else math.ceil(base / 100 * n)


def prefix_precision(x: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Relative CI half-width after each prefix 1..len(x); NaN values (no result) are skipped."""
    ok = np.isfinite(x)
    v = np.where(ok, x, 0.0)
    n = np.cumsum(ok).astype(float)
    s1, s2 = np.cumsum(v), np.cumsum(v * v)
    from ..base.stats import t_quantile  # here: pipeline.base.stats loads xarray, which a plain run never needs

    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / n
        var = (s2 - n * mean * mean) / (n - 1)
        half = t_quantile(level, n) * np.sqrt(np.maximum(var, 0.0) / n)
        rel = np.where(n >= 2, half / np.abs(mean), np.nan)
    return rel


def decide(x: np.ndarray, target: float, base_look_ahead: int, min_n: int, max_n: int,
           level: float = 0.95) -> Decision:
    """What to do with a cell whose first ``len(x)`` replications gave ``x``."""
    n = len(x)
    if n < min_n:
        return Decision(False, False, min(min_n, max_n), float("nan"))
    rel = prefix_precision(x, level)
    good = rel <= target  # NaN compares False
    for k in range(min_n, n + 1):  # the first k that meets the target and holds it over the look-ahead
        end = k + look_ahead(k, base_look_ahead)
        if end > n:
            break
        if good[k - 1:end].all():
            return Decision(True, True, n, float(rel[-1]))
    if n >= max_n:
        return Decision(True, False, n, float(rel[-1]))
    p = rel[-1]
    if np.isfinite(p) and p > 0:
        needed = math.ceil(n * (p / target) ** 2)  # precision ~ 1/sqrt(n)
    else:
        needed = 2 * n
    needed = max(needed, n + 1)
    next_n = min(max_n, GROWTH_CAP * n, needed + look_ahead(needed, base_look_ahead))
    return Decision(False, False, max(next_n, n + 1), float(p))
