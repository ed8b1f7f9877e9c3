"""Make the trace excerpts the tests run on (``tests/data/traces/*.excerpt.swf.gz``).

    python tests/data/make_excerpts.py                 # the full logs from the trace cache
    python tests/data/make_excerpts.py --from FOLDER   # or from a folder holding the archive files

Each excerpt is the full log's header, kept line for line (with its ``Acknowledge`` line),
two note lines saying what was cut, then whole windows of consecutive data lines, verbatim.
The input must have the catalogue's SHA-256 (``pipeline/spec/traces.toml``), so an excerpt is
known to come from the catalogued bytes; the output is gzip with no time stamp, so running
the script again writes the same bytes.

The logs are from the Parallel Workloads Archive (D. G. Feitelson, D. Tsafrir, D. Krakov,
"Experience with using the Parallel Workloads Archive", JPDC 74(10), 2014); whoever
publishes results made with them cites the archive and each log's acknowledgement.

Why these windows: every excerpt begins with the log's first jobs (the tests that simulate
a head of a log); the others hold the records the readers and simulators must decide on:
KTH's jobs that request fewer processors than they were allocated (all after job 15,000,
most after 25,000), the raw KTH's run times of 0 and run times above the request, CTC's
requested time of -1 (job index 741) and run times of 0, SDSC-BLUE's run times of -1 and 0
and its requested-processor counts that differ from the allocated ones, HPC2N's first
request below its allocation.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from schedsweep.pipeline.spec import traces  # noqa: E402

#: catalogue name -> windows (first data line, 0-based; number of lines)
WINDOWS = {
    "KTH-SP2-1996-2.1-cln-filtered": [(0, 1000), (25500, 1000)],
    "KTH-SP2-1996-2-raw": [(0, 1000), (2440, 50), (25900, 1000)],
    "CTC-SP2-1996-3.1-cln": [(0, 1000), (8800, 100)],
    "SDSC-BLUE-2000-4.2-cln": [(0, 1500), (19050, 200), (48850, 100)],
    "HPC2N-2002-2.2-cln": [(0, 1000), (35600, 100)],
}
OUT = HERE / "traces"


def excerpt(source: Path, trace: traces.Trace, windows: list[tuple[int, int]]) -> bytes:
    """The excerpt's gzip bytes: header, notes, the windows' data lines."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != trace.sha256:
        sys.exit(f"{source}: sha256 {digest} is not that of {trace.name} ({trace.sha256})")
    with gzip.open(source, "rt") as fh:
        lines = fh.read().splitlines()
    header = [ln for ln in lines if ln.startswith(";")]
    data = [ln for ln in lines if ln.strip() and not ln.startswith(";")]
    cut = " and ".join(f"{a + 1}-{a + n}" for a, n in windows)
    notes = [f"; Note: EXCERPT, not the full log: data lines {cut} of {trace.file} (sha256 {trace.sha256}),",
             "; Note: made by tests/data/make_excerpts.py; the header's counts describe the full log."]
    kept = [ln for a, n in windows for ln in data[a:a + n]]
    text = "\n".join(header + notes + kept) + "\n"
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="folder", type=Path,
                    help="folder of the archive files (default: the trace cache, schedsweep traces)")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    for name, windows in WINDOWS.items():
        trace = traces.entry(name)
        source = (args.folder / trace.file) if args.folder else traces.cached_path(trace)
        out = OUT / f"{name}.excerpt.swf.gz"
        out.write_bytes(excerpt(source, trace, windows))
        print(f"{out.relative_to(HERE.parents[1])}: {sum(n for _, n in windows)} jobs, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
