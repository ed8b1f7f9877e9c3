"""Start-up of the command line: wall seconds of a fresh ``python -m schedsweep ...`` process.

The fewest of ``--repeat`` runs of each command (other processes only ever add time), after one
run that fills the byte-code cache. Wall time, since start-up is what a user waits for; the
load it was measured at is in the results file.

    python -m benchmarks.bench_startup [--repeat 7] [--record]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import results

REPO = Path(__file__).resolve().parents[1]
COMMANDS = (("--help",), ("workloads",), ("jobs", "--help"))


def wall(args: tuple[str, ...]) -> float:
    """Wall seconds of one ``python -m schedsweep ARGS`` process, from this checkout."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "schedsweep", *args], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command; the fewest seconds count")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_startup.json")
    args = parser.parse_args()
    before = results.load()
    figures = []
    for command in COMMANDS:
        wall(command)  # byte-code compiled, files in the page cache
        best = min(wall(command) for _ in range(args.repeat))
        figures.append((f"`schedsweep {' '.join(command)}`, wall (fewest of {args.repeat})", best, "s"))
        print(f"schedsweep {' '.join(command)}: {best:.3f} s")
    if args.record:
        print(results.record("bench_startup", figures, before))


if __name__ == "__main__":
    main()
