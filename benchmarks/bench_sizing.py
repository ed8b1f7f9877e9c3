"""How big a store of a million replications is: files, bytes and the client's memory.

Computed, not timed: the figures ``schedsweep run --dry-run`` prints (``pipeline.execution.sizing``) for
a sweep of 10^6 replications of the ``cluster`` workload (the most metrics of the shipped
workloads), as one cell and as 1,000 cells of 1,000, with the store's chunks made for batches
of one replication (the most files: replications slower than a batch) and of 1,500. Being a
function of the code alone, ``tests/test_figures.py`` recomputes them and compares them with the
recorded file, so a change of the store's layout that leaves the docs behind fails.

    python -m benchmarks.bench_sizing [--record]
"""
from __future__ import annotations

import argparse

from benchmarks import results

WORKLOAD = "cluster"
#: (cells, replications per cell): the same million runs as one cell and as 1,000 cells.
SHAPES = ((1, 1_000_000), (1_000, 1_000))
CHUNKS = (1, 1_500)


def spec_text(cells: int, replications: int) -> str:
    values = ", ".join(str(0.5 + 0.4 * k / cells) for k in range(cells))
    return (f'name = "million"\nworkload = "{WORKLOAD}"\nreplications = {replications}\nseed = 1\n'
            f"[sweep]\nload = [{values}]\n")


def figures() -> list[tuple[str, float, str]]:
    """(label, value, unit) of every shape and chunk."""
    from schedsweep.pipeline.execution import sizing
    from schedsweep.pipeline.spec.sweep import parse, workload_of

    out = []
    for cells, reps in SHAPES:
        spec = parse(spec_text(cells, reps), "<bench_sizing>")
        module = workload_of(spec)
        for chunk in CHUNKS:
            s = sizing.size(spec, module, chunk)
            where = f"{cells:,} cell{'s' if cells > 1 else ''} x {reps:,}, batches of {chunk:,}"
            out += [(f"store files ({where})", s.files, ""),
                    (f"store bytes uncompressed ({where})", round(s.bytes / 1e6, 1), "MB")]
        out.append((f"client memory ({cells:,} cell{'s' if cells > 1 else ''} x {reps:,})",
                    round(sizing.client_bytes(cells, reps) / 1e6, 1), "MB"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/bench_sizing.json")
    args = parser.parse_args()
    before = results.load()
    rows = figures()
    for label, value, unit in rows:
        print(f"{label}: {results.value_text(value, unit)}")
    if args.record:
        print(results.record("bench_sizing", rows, before, note="Computed from the code (pipeline.execution.sizing), "
                             "not timed: the commit alone fixes them."))


if __name__ == "__main__":
    main()
