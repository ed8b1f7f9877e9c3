"""benchmarks/ga_claims.py: the statistics that judge the S11 claims, on hand-made cells."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ga_claims  # noqa: E402


def _cells(times: list[list[float]], reasons: list[list[int]], along: str = "islands",
           values: tuple = (1, 2)) -> xr.Dataset:
    t = np.array(times, dtype=float)
    return xr.Dataset({"time_to_solution": ((along, "replication"), t),
                       "reason": ((along, "replication"), np.array(reasons, dtype=np.int8)),
                       "capped_periods": ((along, "replication"), np.zeros_like(t))},
                      coords={along: list(values)})


def test_not_reached_counts_as_slowest_in_median_and_sign_test():
    # cell 2: replication 2 missed its target (NaN, reason 2); it must count as slower than cell 1
    ds = _cells([[10, 20, 30, 40], [5, 15, np.nan, 50]], [[0, 0, 0, 0], [0, 0, 2, 0]])
    rows = ga_claims.cell_rows(ds, "time_to_solution", "islands", 0.95)
    assert rows[1].split("|")[3].strip() == "1"              # one not reached
    assert rows[1].split("|")[-2].strip() == "32.5"           # median of 5, 15, 50, inf = (15 + 50) / 2
    assert abs(float(rows[1].split("|")[5].split("±")[0]) - np.mean([5, 15, 50])) < 0.01  # the mean drops it
    # b faster than a: replications 0 and 1 (5 < 10, 15 < 20); slower: 2 (inf > 30) and 3 (50 > 40)
    pair = ga_claims.paired_rows(ds, "time_to_solution", "islands", [(1, 2)], 0.95)[0]
    assert "2 of 4" in pair


def test_sign_test_ignores_replications_without_a_run():
    a = np.array([1.0, 2.0, np.nan, 4.0])   # NaN with reason 0: no result at all (not a miss)
    b = np.array([0.5, 3.0, 1.0, 4.0])      # replication 3 ties: left out of the count
    assert ga_claims._sign_test(a, b).startswith("1 of 2")


def test_line_fit_recovers_an_exact_line_and_no_quadratic_term():
    d = (1.0, 2.0, 4.0, 8.0)
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 1e-9, (4, 5))
    t = [[3.0 + 2.5 * x + noise[i, r] for r in range(5)] for i, x in enumerate(d)]
    ds = _cells(t, [[0] * 5] * 4, along="density", values=d)
    lines = ga_claims.fit_rows(ds, "time_to_solution", "density")
    assert "slope 2.5 per unit" in lines[0] and "R² 1.0000" in lines[0]
    slope, half = ga_claims._ols_last(np.repeat(d, 5), np.array(t).ravel(), 1)
    assert abs(slope - 2.5) < 1e-6 and half < 1e-6
    quad, qhalf = ga_claims._ols_last(np.repeat(d, 5), np.array(t).ravel(), 2)
    assert abs(quad) < 1e-6 and qhalf < 1e-6
