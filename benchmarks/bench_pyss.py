"""pyss mode against the plain reference (tests/naive_pyss.py), job for job, and textbook
against pyss mode, on the first N jobs of SWF traces.

    python benchmarks/bench_pyss.py --jobs 2000 --queues easy [TRACE ...]

Prints, per trace and queue: jobs compared, share of start times equal between the
pyss kernel and the naive reference (must be 100%), share equal between textbook and
pyss modes (same trace lines; each mode with its own conversion), and wall times.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from naive_pyss import convert_pyss, simulate_pyss  # noqa: E402

from schedsweep.workloads.cluster import schedule, swf  # noqa: E402


def head(trace: str, n: int, out: str) -> int:
    """Write the header and the first ``n`` data lines of ``trace`` to ``out``; MaxProcs."""
    _, mp = swf.read_fields(trace)
    k = 0
    with gzip.open(trace, "rt") if trace.endswith(".gz") else open(trace) as fh, open(out, "w") as w:
        w.write(f"; MaxProcs: {mp}\n")
        for line in fh:
            s = line.strip()
            if not s or s[0] == ";":
                continue
            w.write(s + "\n")
            k += 1
            if k == n:
                break
    return mp


def compare(trace: str, n: int, queue: str, textbook: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "head.swf")
        m = head(trace, n, path)
        data, _ = swf.read_fields(path)
        t0 = time.perf_counter()
        f, r, wall = schedule({"source": "swf", "trace": path, "semantics": "pyss", "queue": queue}, 1)
        t_kernel = time.perf_counter() - t0
        jobs = [j for j in convert_pyss(data.tolist()) if j[3] <= m]
        t0 = time.perf_counter()
        ref = simulate_pyss(jobs, m, queue)
        t_naive = time.perf_counter() - t0
        got = dict(zip(f.job_id.tolist(), r.start.tolist()))
        assert set(got) == set(ref), "pyss conversion: kernel and naive keep different jobs"
        same = sum(got[j] == ref[j] for j in ref)
        row = dict(trace=os.path.basename(trace), queue=queue, jobs=len(ref), pyss_vs_naive=same / len(ref),
                   t_kernel=t_kernel, t_naive=t_naive)
        if textbook:
            ft, rt, _ = schedule({"source": "swf", "trace": path, "queue": queue, "allocation": "first_fit"}, 1)
            tb = dict(zip(ft.job_id.tolist(), rt.start.tolist()))
            common = [j for j in ref if j in tb]
            row["textbook_vs_pyss"] = sum(tb[j] == got[j] for j in common) / len(common)
            row["common"] = len(common)
        return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", default=sorted(glob.glob(str(Path(__file__).resolve().parents[2] / "shared" / "traces" / "*.swf.gz"))))
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--queues", nargs="+", default=["fcfs", "easy", "conservative"])
    ap.add_argument("--no-textbook", action="store_true", help="skip the textbook run (its kernel compile)")
    a = ap.parse_args()
    for tr in a.traces:
        for q in a.queues:
            r = compare(tr, a.jobs, q, not a.no_textbook)
            print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()), flush=True)


if __name__ == "__main__":
    main()
