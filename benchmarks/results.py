"""Results files: figures written by the benchmark that measures them, included in the pages.

A benchmark run with ``--record`` writes ``benchmarks/results/NAME.json``: its figures (label,
value, unit), the command that measured them, and where (commit, machine, load before and
after). A page includes them in a generated region::

    <!-- results: bench_tasks -->
    ...the table, written by `python -m benchmarks.results PAGE`...
    <!-- /results -->

``python -m benchmarks.results PAGE...`` rewrites every region from its file;
``--check`` only lists the stale ones (tests/test_figures.py runs the check, so a region edited
by hand, or not regenerated after a new measurement, fails). Outside the regions a page states
no figure by hand (the same test).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

RESULTS = Path(__file__).resolve().parent / "results"
REPO = RESULTS.parents[1]
#: A generated region of a Markdown page: the results file it shows, and its body.
REGION = re.compile(r"(?ms)^<!-- results: ([\w.-]+) -->\n(.*?)^<!-- /results -->$")


def _commit() -> str:
    """The commit measured, with "+changes" when the tree differed from it."""
    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    commit = git("rev-parse", "--short=10", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return commit + ("+changes" if dirty else "")


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """One line: the CPU, its cores, the OS, Python and numba (the things a figure depends on)."""
    try:
        import numba
        jit = f", numba {numba.__version__}"
    except ImportError:
        jit = ""
    return f"{_cpu()}, {os.cpu_count()} cores, {platform.system()}, Python {platform.python_version()}{jit}"


def load() -> float:
    """The 1-minute load average (other processes' work moves wall times)."""
    return round(os.getloadavg()[0], 2)


def record(name: str, figures: Iterable[tuple[str, float, str]], load_before: float,
           argv: list[str] | None = None, note: str = "") -> Path:
    """Write ``results/NAME.json``: each figure (label, value, unit) with the command that
    measured it (``argv``, default this process's), the commit, machine and load."""
    argv = sys.argv if argv is None else argv
    module = Path(argv[0]).stem
    command = "python -m benchmarks." + " ".join([module, *argv[1:]])
    data = {"benchmark": name, "command": command, "commit": _commit(), "machine": machine(),
            "load": [load_before, load()], "note": note,
            "figures": [{"label": label, "value": value, "unit": unit} for label, value, unit in figures]}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def value_text(value: float, unit: str) -> str:
    """Three significant figures, in the unit the benchmark gave ("0.318 ms", "94.4 %")."""
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 100 or abs(value) >= 1000:
        text = f"{value:,.0f}"  # never 1.34e+03: whole units, thousands separated
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def render(name: str) -> str:
    """The Markdown of a results file: a table of its figures and where they were measured."""
    path = RESULTS / f"{name}.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"benchmarks/results/{name}.json: cannot be read ({exc}); run its benchmark with --record")
    lines = ["| figure | value |", "|---|---|"]
    lines += [f"| {f['label']} | {value_text(f['value'], f['unit'])} |" for f in data["figures"]]
    before, after = data["load"]
    lines += ["", f"Measured by `{data['command']}` at commit `{data['commit']}` on {data['machine']}; "
                  f"load {before} before, {after} after (`benchmarks/results/{name}.json`)."]
    if data.get("note"):
        lines += ["", data["note"]]
    return "\n".join(lines) + "\n"


def regions(text: str) -> list[tuple[str, str]]:
    """(results name, body) of every generated region of a page."""
    return [(m.group(1), m.group(2)) for m in REGION.finditer(text)]


def regenerate(text: str) -> str:
    return REGION.sub(lambda m: f"<!-- results: {m.group(1)} -->\n{render(m.group(1))}<!-- /results -->", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite the results regions of Markdown pages from their files.")
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="list stale regions, rewrite nothing (exit 1 if any)")
    args = parser.parse_args(argv)
    stale = []
    for page in args.pages:
        text = page.read_text()
        new = regenerate(text)
        if new != text:
            stale.append(str(page))
            if not args.check:
                page.write_text(new)
    if stale:
        print(("stale: " if args.check else "rewritten: ") + ", ".join(stale))
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
