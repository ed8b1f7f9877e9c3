"""pyss mode against the plain reference (tests/naive_pyss.py), job for job, and textbook
against pyss mode, on the first N jobs of SWF traces.

    python benchmarks/bench_pyss.py --jobs 2000 --queues easy [TRACE ...]
    python benchmarks/bench_pyss.py --speed          # whole traces: pyss mode's time against textbook's

Prints, per trace and queue: jobs compared, jobs whose start time differs between the
pyss kernel and the naive reference (must be 0) and the share equal, jobs the conversion
of the earlier reading kept and how many of them the conversion from pyss's source moves,
the share equal between textbook and pyss modes (same trace lines; each mode with its own
conversion), and wall times.
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from naive_pyss import convert_pyss, simulate_pyss  # noqa: E402

from benchmarks import results  # noqa: E402
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


def earlier_reading(data: np.ndarray, m: int, queue: str) -> dict[int, float]:
    """Start times in pyss mode under the conversion this project used before it was taken
    from pyss's source (processors requested first; a job past its request cut there with
    the request as estimate; run 0 or request -1 a 1 s job; other bad records dropped):
    how many jobs the conversion fix moves."""
    from schedsweep.workloads.cluster.pyss_kernel import NAMES, simulate_pyss as kernel

    run, req_time = data[:, 3], data[:, 8]
    procs = np.where(data[:, 7] > 0, data[:, 7], data[:, 4]).astype(np.int64)
    one = (run == 0) | (req_time == -1)
    est = np.where(one, 1.0, req_time)
    run = np.where(one, 1.0, np.minimum(run, req_time))
    procs = np.where(one & (procs <= 0), 1, procs)
    keep = (run >= 0) & (procs > 0) & (est > 0) & (procs <= m)
    ids, submit = data[keep, 0].astype(np.int64), data[keep, 1]
    order = np.lexsort((ids, submit))
    start = kernel(np.ascontiguousarray(submit[order]), np.ascontiguousarray(run[keep][order]),
                   np.ascontiguousarray(procs[keep][order]), np.ascontiguousarray(est[keep][order]), m,
                   NAMES.index(queue))
    return dict(zip(ids[order].tolist(), start.tolist()))


def compare(trace: str, n: int, queue: str, textbook: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "head.swf")
        m = head(trace, n, path)
        data, _ = swf.read_fields(path)
        t0 = time.perf_counter()
        f, r, wall = schedule({"source": "swf", "trace": path, "semantics": "pyss", "queue": queue}, 1)
        t_kernel = time.perf_counter() - t0
        jobs = convert_pyss(data.tolist(), m)
        t0 = time.perf_counter()
        ref = simulate_pyss(jobs, m, queue)
        t_naive = time.perf_counter() - t0
        got = dict(zip(f.job_id.tolist(), r.start.tolist()))
        assert set(got) == set(ref), "pyss conversion: kernel and naive keep different jobs"
        same = sum(got[j] == ref[j] for j in ref)
        old = earlier_reading(data, m, queue)
        moved = sum(old[j] != got[j] for j in old if j in got)
        row = dict(trace=os.path.basename(trace), queue=queue, jobs=len(ref), differ_from_naive=len(ref) - same,
                   pyss_vs_naive=same / len(ref), kept_before=len(old), moved_by_conversion=moved,
                   t_kernel=t_kernel, t_naive=t_naive)
        if textbook:
            ft, rt, _ = schedule({"source": "swf", "trace": path, "queue": queue, "allocation": "first_fit"}, 1)
            tb = dict(zip(ft.job_id.tolist(), rt.start.tolist()))
            common = [j for j in ref if j in tb]
            row["textbook_vs_pyss"] = sum(tb[j] == got[j] for j in common) / len(common)
            row["common"] = len(common)
        return row


def speed(trace: str, queue: str, repeats: int) -> dict:
    """Kernel CPU seconds (best of ``repeats``) of textbook and pyss modes on the whole
    trace, each with its own conversion, parsing excluded, compiled beforehand."""
    from schedsweep.workloads.cluster import pyss_kernel, simulator

    def best(run) -> float:
        run()                            # compile or load from the cache
        times = []
        for _ in range(repeats):
            c0 = time.process_time()
            run()
            times.append(time.process_time() - c0)
        return min(times)

    tb = swf.read(trace)
    m, z = tb.max_procs, np.zeros(tb.n_jobs)
    one = np.ones(m)
    t_text = best(lambda: simulator.simulate(tb.submit, tb.procs, z, z, tb.estimate, tb.run, np.ones(m, np.int64),
                                             one, one, one, queue, "first_fit", 1))
    ps = swf.read(trace, conversion="pyss")
    args = [np.ascontiguousarray(x) for x in (ps.submit, ps.run, ps.procs.astype(np.int64), ps.estimate)]
    t_pyss = best(lambda: pyss_kernel.simulate_pyss(*args, ps.max_procs, pyss_kernel.NAMES.index(queue)))
    got = dict(zip(ps.job_id.tolist(), pyss_kernel.simulate_pyss(*args, ps.max_procs,
                                                                 pyss_kernel.NAMES.index(queue)).tolist()))
    old = earlier_reading(swf.read_fields(trace)[0], ps.max_procs, queue)
    moved = sum(old[j] != got[j] for j in old if j in got)
    return dict(trace=os.path.basename(trace), queue=queue, jobs_textbook=tb.n_jobs, jobs_pyss=ps.n_jobs,
                textbook_s=t_text, pyss_s=t_pyss, pyss_over_textbook=t_pyss / t_text, kept_before=len(old),
                moved_by_conversion=moved)


def _cached_logs() -> list[str]:
    """Every catalogued log in the trace cache (the absent ones named on stderr)."""
    from benchmarks.outside import Missing, full_trace
    from schedsweep.pipeline.spec import traces

    found = []
    for name in sorted(traces.catalogue()):
        try:
            found.append(full_trace(name))
        except Missing as exc:
            print(f"skipped: {exc}", file=sys.stderr)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", help="SWF files or catalogued logs (default: every log of the trace "
                                              "cache, schedsweep traces)")
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--queues", nargs="+", default=["fcfs", "easy", "conservative"])
    ap.add_argument("--no-textbook", action="store_true", help="skip the textbook run (its kernel compile)")
    ap.add_argument("--speed", action="store_true",
                    help="whole traces: kernel CPU s of textbook and pyss modes (no naive reference)")
    ap.add_argument("--repeats", type=int, default=3, help="--speed: best of this many runs")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_pyss.json "
                                                          "(bench_pyss_speed.json with --speed)")
    a = ap.parse_args()
    load_before = results.load()
    a.traces = a.traces or _cached_logs()
    figures = []
    for tr in a.traces:
        for q in a.queues:
            r = speed(tr, q, a.repeats) if a.speed else compare(tr, a.jobs, q, not a.no_textbook)
            print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()), flush=True)
            what = f"{r['trace'].split('.swf')[0]}, {q}"
            if a.speed:
                figures.append((f"{what}: pyss mode's kernel time over textbook's (best of {a.repeats})",
                                round(r["pyss_over_textbook"], 2), "x"))
            else:
                figures.append((f"{what}: start times equal to the plain pyss reference, first {r['jobs']:,} jobs",
                                round(100 * r["pyss_vs_naive"], 2), "%"))
    if a.record:
        note = ("Whole traces, kernel CPU, parsing excluded, compiled beforehand; each mode with its own conversion."
                if a.speed else "The pyss kernel against tests/naive_pyss.py, job for job, on the head of each trace.")
        print(results.record("bench_pyss_speed" if a.speed else "bench_pyss", figures, load_before, note=note))


if __name__ == "__main__":
    main()
