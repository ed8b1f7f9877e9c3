"""Trace windows: what a window costs against one whole-trace run, same process.

``cluster.run_batch`` (the replication's whole path: the trace's window, the kernel, the
metrics) once on the whole trace (``trace_window_jobs = 0``, one replication) and once on
every sequential window of ``--window`` jobs (one replication per window, its warm-up
included), the same queue policy, the trace parsed and the kernels compiled beforehand.
CPU seconds of this process (``time.process_time``), one run each.

Two ratios:

- ``vs_excerpt`` = the windows' CPU over that of whole-trace runs of files holding exactly
  their jobs (written here, submit times shifted; each parsed before it is timed, runs
  alternating window, excerpt): what choosing a window of a trace costs beyond simulating
  its jobs (the trace is parsed once per process, a window is a slice of it); 1 = nothing;
- ``per_job`` = (CPU per job simulated in the windows) / (CPU per job of the whole-trace
  run): above 1 by the fixed cost of a replication (its random streams, the kernel's state,
  the metrics), which a window of a fast kernel pays once per few thousand jobs.

    python -m benchmarks.bench_windows                       # a generated 20,000-job flow, written as SWF
    python -m benchmarks.bench_windows --trace PATH.swf.gz --window 2000 --queue easy conservative
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import results
from schedsweep.workloads import cluster
from schedsweep.workloads.cluster import swf


def generated_trace(path: str, jobs: int = 20_000, seed: int = 1) -> str:
    """A Lublin-Feitelson flow (the workload's generator, load 0.85) written as an SWF trace."""
    f, _ = cluster.flow(cluster.params.with_defaults({"jobs": jobs, "load": 0.85}), seed)
    swf.write_flow(path, f.job_id, f.submit, f.tau, f.cores_req, f.estimate, int(f.node_cores.sum()),
                   comment="generated flow for benchmarks/bench_windows.py")
    return path


def measure(trace: str, window: int, queue: str, warmup: float = 0.1) -> dict:
    """CPU seconds of the whole trace and of all its sequential windows, and the per-job ratio."""
    base = {"source": "swf", "trace": trace, "queue": queue, "allocation": "first_fit"}
    windowed = {**base, "trace_window_jobs": window, "trace_window_warmup": warmup}
    n = swf.read_cached(trace).n_jobs
    k = n // window
    seeds = np.arange(1, k + 1, dtype=np.uint64)
    cluster.run_batch(windowed, seeds[:1], np.zeros(1, np.int64))     # parse and compile, untimed
    cluster.run_batch(base, seeds[:1])
    t0 = time.process_time()
    whole = cluster.run_batch(base, seeds[:1])
    t_whole = time.process_time() - t0
    t_windows = t_excerpts = 0.0
    tr = swf.read_cached(trace)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(k):
            a, b = r * window, (r + 1) * window
            excerpt = str(Path(tmp) / f"w{r}.swf")     # the textbook reading of it gives the window's jobs
            swf.write_flow(excerpt, tr.job_id[a:b], tr.submit[a:b] - tr.submit[a], tr.run[a:b], tr.procs[a:b],
                           tr.estimate[a:b], tr.max_procs)
            swf.read_cached(excerpt)                   # parsed, untimed
            runs = [lambda: cluster.run_batch(windowed, seeds[r:r + 1], np.array([r], np.int64)),
                    lambda: cluster.run_batch({**base, "trace": excerpt}, seeds[r:r + 1])]
            times, outs = [0.0, 0.0], [{}, {}]
            for i in ((0, 1) if r % 2 == 0 else (1, 0)):  # which runs first alternates
                t0 = time.process_time()
                outs[i] = runs[i]()
                times[i] = time.process_time() - t0
            got, ref = outs
            t_windows, t_excerpts = t_windows + times[0], t_excerpts + times[1]
            if not np.isclose(got["makespan"][0], ref["makespan"][0], rtol=1e-9):  # the SWF file keeps 6 decimals
                raise RuntimeError(f"window {r}: makespan {got['makespan'][0]} != its excerpt's {ref['makespan'][0]}")
    per_job_whole, per_job_window = t_whole / n, t_windows / (k * window)
    return {"queue": queue, "jobs": n, "window": window, "windows": k, "warmup_jobs": int(np.floor(warmup * window)),
            "whole_cpu_s": round(t_whole, 4), "windows_cpu_s": round(t_windows, 4),
            "excerpts_cpu_s": round(t_excerpts, 4), "per_window_cpu_ms": round(1e3 * t_windows / k, 3),
            "vs_excerpt": round(t_windows / t_excerpts, 3), "per_job": round(per_job_window / per_job_whole, 3),
            "whole_kernel_s": round(float(whole["sim_seconds"][0]), 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", help="an SWF trace (default: a generated 20,000-job flow)")
    ap.add_argument("--window", type=int, default=2000, help="jobs per window")
    ap.add_argument("--warmup", type=float, default=0.1, help="trace_window_warmup")
    ap.add_argument("--queue", nargs="+", default=["easy", "conservative"], choices=["fcfs", "easy", "conservative"])
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_windows.json "
                                                          "(bench_windows_trace.json with --trace)")
    args = ap.parse_args()
    load_before = results.load()
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = args.trace or generated_trace(str(Path(tmp) / "flow.swf"))
        for queue in args.queue:
            row = measure(trace, args.window, queue, args.warmup)
            print(json.dumps(row))
            what = f"{queue}, {row['windows']} windows of {row['window']:,} jobs"
            figures += [(f"{what}: `vs_excerpt`", row["vs_excerpt"], ""), (f"{what}: `per_job`", row["per_job"], "")]
    if args.record:
        source = Path(args.trace).name if args.trace else "a generated 20,000-job flow"
        print(results.record("bench_windows" + ("_trace" if args.trace else ""), figures, load_before,
                             note=f"{source[0].upper()}{source[1:]}; warm-up {args.warmup:g} of a window; CPU of "
                                  "this process, one run each."))


if __name__ == "__main__":
    main()
