"""The ga kernels after the compile-structure changes (shared sorts,
merged operators) give the schedules of the code before, bit for bit.

Every non-timing metric (but those of the Python target rule) of 20 small cells: non-parallel
and parallel jobs, with and without dependencies (fast and general paths), every built-in
objective, both dockings, one and two islands, FCFS and Backfill; stored by
``tests/golden/ga_kernels.py`` from the code before (main at c9e7ab0).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden" / "ga_kernels.json"


# A geometric mean (``gmean_length``, and the objective value when it is one) goes through log
# and exp, whose last bit differs between builds of the math library numba links: those two are
# kept to within ULPS units in the last place; every other value bit for bit.
ULPS = 4
THROUGH_LOG_EXP = {"gmean_length", "objective_value"}


def _same(a: list, b: list, ulps: int = ULPS) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y))
                                    or abs(x - y) <= ulps * math.ulp(max(abs(x), abs(y))) for x, y in zip(a, b))


def test_same_allows_only_the_last_bits():
    x = 494.5714603861777
    assert _same([x], [math.nextafter(x, 1e9)]) and _same([float("nan")], [float("nan")])
    assert not _same([x], [x * (1 + 1e-12)]) and not _same([1.0], [1.0, 2.0]) and not _same([0.0], [1e-300])
    assert not _same([x], [math.nextafter(x, 1e9)], 0)


def test_golden_cells_cover_every_path():
    from tests.golden.ga_kernels import OBJECTIVES, cells

    data = json.loads(GOLDEN.read_text())
    assert [d["params"] for d in data] == cells()          # the stored file is for these cells
    ga = [c for c in cells() if c["algorithm"] == "ga"]
    assert {(c["parallel"], c["dep_prob"] > 0, c["objective"]) for c in ga} == {
        (p, d, o) for p in (False, True) for d in (False, True) for o in OBJECTIVES}
    assert {c["islands"] for c in ga} == {1, 2} and {c["docking"] for c in ga} == {"tau_first", "idle_genes_only"}
    assert {(c["algorithm"], c["parallel"]) for c in cells()} >= {("fcfs", True), ("backfill", False)}


@pytest.mark.parametrize("index", range(20))
def test_kernels_give_the_values_of_the_code_before(index):
    from tests.golden.ga_kernels import values

    cell = json.loads(GOLDEN.read_text())[index]
    got = values(cell["params"])
    assert got.keys() == cell["values"].keys()
    bad = [k for k, v in cell["values"].items() if not _same(got[k], v, ULPS if k in THROUGH_LOG_EXP else 0)]
    assert not bad, (cell["params"], {k: (got[k], cell["values"][k]) for k in bad})
