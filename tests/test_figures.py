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
_RATE = r"(?:jobs|tasks|replications|events|generations)(?:/s| per (?:core-|CPU-)?second)"
_UNIT = (r"(?:CPU-|core-)?(?:ns|µs|us|ms|s|sec|seconds?|min|minutes?|h|hours?)"
         rf"|CPU-(?:seconds?|minutes?|hours?|s|ms)|(?:[kM]\s*)?{_RATE}")
#: A number with a time, speed or cost unit ("0.3 ms", "1.5–1.7 ms", "~11 h", "20 CPU-minutes",
#: "500 tasks/s", "4.2M jobs/s", "5M events per core-second"), a count of thousands or millions
#: beside such a rate ("4.19M / 702k jobs/s": both), or a factor against its number ("3x", "1.4×").
FIGURE = re.compile(rf"{_RANGE}\s*(?:{_UNIT})(?![\w/])|{_NUM}[x×](?!\w)"
                    rf"|{_NUM}[kM](?=(?:\s*/\s*{_BARE}[kM])*\s*(?:\(|{_RATE}))")
#: Words that state a cost without a number ("a few CPU-minutes", "Cost:").
COST_WORDS = re.compile(r"\bCPU-(?:s|ms|seconds?|minutes?|hours?)\b|\bcore-hours?\b|\bCost( measured here)?:")


def test_figure_pattern():
    for text in ("0.3 ms", "1.5–1.7 ms per task", "~11 h", "20 CPU-minutes", "500 tasks/s", "3x less",
                 "1.4× faster", "60-160 s", "2 CPU-hours", "0.27 CPU-s", "10 µs", "45 seconds",
                 "4.2M jobs/s", "5M events per core-second", "702k jobs/s", "12 events/s", "30-80 ns"):
        assert FIGURE.search(text), text
    for text in ("2-D torus 8 x 8", "20,000 time units", "1e-4 (time_scale)", "jobs/mm1.toml",
                 "p10s", "Figs. 5-8", "System H", "24 nodes", "0.05/4", "a 3-ary tree", "x 5000"):
        assert not FIGURE.search(text), text
    assert [m.group(0) for m in FIGURE.finditer("4.19M / 702k jobs/s")] == ["4.19M", "702k jobs/s"]
    assert not FIGURE.search("5M replications in 2 cells") and not FIGURE.search("a 64k cache")
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


#: The pages whose figures must come from results files.
def figure_pages() -> list[Path]:
    return [REPO / "README.md", REPO / "benchmarks" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


FENCE = re.compile(r"(?ms)^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1")
INLINE_CODE = re.compile(r"`[^`\n]+`")
HTML_COMMENT = re.compile(r"(?s)<!--.*?-->")
#: Figures by hand that remain, per page: ``page<TAB>figure<TAB>count<TAB>kind``, kind
#: ``setting`` (not a measurement: a default, a limit, a model parameter; it stays), ``target``
#: (a goal in the first column of benchmarks/README.md's Targets table; it stays) or ``pending``
#: (a measurement still to move into a results file). The test fails on a figure not listed and
#: on a listed one that is gone, so the list only shrinks as figures move into results regions.
HAND_FIGURES = REPO / "tests" / "hand_figures.tsv"
#: How many ``pending`` lines the list may hold: it only goes down, as figures move into results
#: regions. At 0 the kind ``pending`` is refused: a measured figure is a results region, never a
#: line of the list (only settings and targets stay).
PENDING_AT_MOST = 0


def hand_figures(page: Path) -> dict[str, int]:
    """Every figure of a page's prose (code, comments and generated results regions removed)."""
    from benchmarks.results import REGION

    text = REGION.sub("", page.read_text())
    text = INLINE_CODE.sub("", HTML_COMMENT.sub("", FENCE.sub("", text)))
    counts: dict[str, int] = {}
    for m in FIGURE.finditer(text):
        key = " ".join(m.group(0).split())
        counts[key] = counts.get(key, 0) + 1
    return counts


def listed(path: Path = HAND_FIGURES, pending_at_most: int | None = None) -> dict[tuple[str, str], int]:
    """The figures by hand the list allows, by (page, figure): their counts. A missing list allows none."""
    pending_at_most = PENDING_AT_MOST if pending_at_most is None else pending_at_most
    kinds = ("setting", "target") + (("pending",) if pending_at_most else ())
    out, pending = {}, 0
    lines = path.read_text().splitlines() if path.exists() else []
    for k, line in enumerate(lines, 1):
        if line and not line.startswith("#"):
            page, figure, count, kind = line.split("\t")
            assert kind in kinds, f"{path.name}:{k}: kind {kind!r}: {', '.join(kinds)}" + (
                "" if pending_at_most else " (a measured figure comes from a results region, not from this list)")
            pending += kind == "pending"
            out[(page, figure)] = int(count)
    assert pending <= pending_at_most, (f"{path.name}: {pending} pending figures, at most {pending_at_most}: "
                                        "the list only shrinks (lower PENDING_AT_MOST as figures move)")
    return out


def test_no_figure_is_written_by_hand():
    """A performance or cost figure in the pages comes from a results region
    (``benchmarks/results.py``); the hand-written ones left are listed, and the list only shrinks."""
    found = {(str(page.relative_to(REPO)), figure): n
             for page in figure_pages() for figure, n in hand_figures(page).items()}
    known = listed()
    new = sorted(f"{p}: {f!r} x{n}" for (p, f), n in found.items() if n > known.get((p, f), 0))
    gone = sorted(f"{p}: {f!r}" for (p, f), n in known.items() if found.get((p, f), 0) < n)
    assert not new, ("figures written by hand (measure them with a benchmark's --record and include "
                     "its results region, `python -m benchmarks.results PAGE`):\n" + "\n".join(new))
    assert not gone, (f"listed in {HAND_FIGURES.relative_to(REPO)} but no longer on the page (remove "
                      "the line):\n" + "\n".join(gone))


def test_results_regions_are_generated_from_their_files():
    """A region edited by hand, or not rewritten after a new measurement, fails; so does a results
    file without its provenance."""
    from benchmarks import results

    stale, shown = [], set()
    for page in figure_pages():
        text = page.read_text()
        for name, body in results.regions(text):
            shown.add(name)
            if body != results.render(name):
                stale.append(f"{page.relative_to(REPO)}: {name}")
    assert not stale, "stale results regions (python -m benchmarks.results PAGE):\n" + "\n".join(stale)
    for path in sorted(results.RESULTS.glob("*.json")):
        data = __import__("json").loads(path.read_text())
        assert data["commit"] and data["machine"] and len(data["load"]) == 2 and data["command"], path.name
    assert shown, "no page includes a results file"


def test_the_list_only_shrinks(tmp_path):
    """A pending line beyond PENDING_AT_MOST fails; at 0 the kind is refused outright; no list, no figure."""
    tsv = tmp_path / "hand.tsv"
    tsv.write_text("# comment\npages/a.md\t5 s\t1\tsetting\npages/a.md\t3 ms\t2\tpending\n")
    assert listed(tsv, pending_at_most=1) == {("pages/a.md", "5 s"): 1, ("pages/a.md", "3 ms"): 2}
    with pytest.raises(AssertionError, match="kind 'pending': setting, target"):
        listed(tsv, pending_at_most=0)
    tsv.write_text(tsv.read_text() + "pages/a.md\t4 ms\t1\tpending\n")
    with pytest.raises(AssertionError, match="2 pending figures, at most 1"):
        listed(tsv, pending_at_most=1)
    assert listed(tmp_path / "absent.tsv") == {}


def test_hand_figures_reads_prose_only(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("It takes 1.5 ms per task and 3x less.\n\n```bash\nsleep 5s  # 2 s\n```\n"
                    "`--batch-seconds 20 s`\n<!-- results: x -->\n| a | 0.3 ms |\n<!-- /results -->\n")
    assert hand_figures(page) == {"1.5 ms": 1, "3x": 1}


def test_a_results_file_is_recorded_rendered_and_included(tmp_path, monkeypatch):
    """record() keeps the figures with command, commit, machine and load; a region shows exactly
    render(); a region edited by hand is rewritten (and so reads as stale to the check)."""
    from benchmarks import results

    monkeypatch.setattr(results, "RESULTS", tmp_path)
    results.record("demo", [("per task", 0.31849, "ms"), ("tasks", 4000, "")], 1.5,
                   argv=["benchmarks/bench_demo.py", "--n", "3"])
    text = results.render("demo")
    assert "| per task | 0.318 ms |" in text and "| tasks | 4,000 |" in text
    assert results.value_text(1335.79, "ms") == "1,336 ms" and results.value_text(94.44, "%") == "94.4 %"
    assert "`python -m benchmarks.bench_demo --n 3`" in text and "load 1.5 before" in text
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- results: demo -->\n| per task | 0.1 ms |\n<!-- /results -->\nend\n")
    assert results.main([str(page), "--check"]) == 1
    assert results.main([str(page)]) == 0 and results.main([str(page), "--check"]) == 0
    assert results.regions(page.read_text()) == [("demo", text)]
    assert page.read_text().startswith("intro\n") and page.read_text().endswith("<!-- /results -->\nend\n")


def test_computed_figures_equal_the_code():
    """bench_sizing's figures are a function of the code (pipeline.execution.sizing): the recorded file
    holds what the code computes now, so a change of the store's layout refreshes the docs."""
    import json

    from benchmarks import bench_sizing, results

    data = json.loads((results.RESULTS / "bench_sizing.json").read_text())
    recorded = [(f["label"], f["value"], f["unit"]) for f in data["figures"]]
    assert recorded == bench_sizing.figures(), \
        "benchmarks/results/bench_sizing.json is stale: python -m benchmarks.bench_sizing --record, " \
        "then python -m benchmarks.results docs/running-on-slurm.md"
