"""Figures that cannot go stale: no cost in a spec's description, no hand-written performance
figure in the documentation.

A spec's run time is its estimate line (``jobs/estimates.json``, measured by
``python -m benchmarks.estimate_jobs`` and shown by ``schedsweep jobs``), so a description that
also states a cost contradicts it as soon as the code moves. A *figure* is a number with a unit of
time, speed or cost (s, ms, µs, min, h, seconds, minutes, hours, CPU-s, CPU-minutes, CPU-hours,
tasks/s, jobs/s, a factor such as 3x)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

_BARE = r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?"
_NUM = rf"(?<![\w.])~?{_BARE}"
_RANGE = rf"{_NUM}(?:\s*(?:-|–|to)\s*{_BARE})?"
_UNIT = (r"(?:CPU-|core-)?(?:µs|us|ms|s|sec|seconds?|min|minutes?|h|hours?)"
         r"|CPU-(?:seconds?|minutes?|hours?|s|ms)|(?:jobs|tasks|replications|events)/s")
#: A number with a time, speed or cost unit ("0.3 ms", "1.5–1.7 ms", "~11 h", "20 CPU-minutes",
#: "500 tasks/s"), or a factor written against its number ("3x", "1.4×").
FIGURE = re.compile(rf"{_RANGE}\s*(?:{_UNIT})(?![\w/])|{_NUM}[x×](?!\w)")
#: Words that state a cost without a number ("a few CPU-minutes", "Cost:").
COST_WORDS = re.compile(r"\bCPU-(?:s|ms|seconds?|minutes?|hours?)\b|\bcore-hours?\b|\bCost( measured here)?:")


def test_figure_pattern():
    for text in ("0.3 ms", "1.5–1.7 ms per task", "~11 h", "20 CPU-minutes", "500 tasks/s", "3x less",
                 "1.4× faster", "60-160 s", "2 CPU-hours", "0.27 CPU-s", "10 µs", "45 seconds"):
        assert FIGURE.search(text), text
    for text in ("2-D torus 8 x 8", "20,000 time units", "1e-4 (time_scale)", "jobs/mm1.toml",
                 "p10s", "Figs. 5-8", "System H", "24 nodes", "0.05/4", "a 3-ary tree", "x 5000"):
        assert not FIGURE.search(text), text
    assert COST_WORDS.search("Cost: a few CPU-minutes") and not COST_WORDS.search("min_cost, cost per unit")


def descriptions() -> list[tuple[str, str]]:
    return [(p.name, tomllib.loads(p.read_text()).get("description", ""))
            for p in sorted((REPO / "jobs").glob("*.toml"))]


@pytest.mark.parametrize("name,description", descriptions(), ids=[n for n, _ in descriptions()])
def test_spec_descriptions_state_no_cost(name, description):
    """The run time of a spec is its estimate (`schedsweep jobs`), never its description."""
    found = [m.group(0) for m in FIGURE.finditer(description)] + \
        [m.group(0) for m in COST_WORDS.finditer(description)]
    assert not found, (f"jobs/{name}: description states a cost {found}; the estimate line "
                       "(jobs/estimates.json, `schedsweep jobs`) says what a spec costs")
