"""Jobs simulated per second: the cluster kernel against the plain-Python peer, same run.

For each trace and algorithm (EASY, conservative): parse once, compile once (a short
warm-up run), then time ``simulator.simulate`` (best of ``--repeats``) and the peer's
``simulate`` on the same jobs, and check that every job's start time is equal.
Parsing and compilation are excluded from both. Times are CPU seconds of this process
(``time.process_time``), which other users of a shared machine disturb less than wall
time; ``--clock wall`` uses ``time.perf_counter`` instead. The full logs come from the trace
cache and the peer from the peers' folder (benchmarks/outside.py); without them the script
says which is missing and measures nothing.

    python benchmarks/bench_cluster.py                       # KTH-SP2 (filtered) and CTC-SP2, full
    python benchmarks/bench_cluster.py --traces KTH-SP2-1996-2.1-cln.filtered.swf.gz --no-peer
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import results  # noqa: E402
from benchmarks.outside import Missing, full_trace, peer as peer_script, skip_without  # noqa: E402
from schedsweep.workloads.cluster import simulator, swf  # noqa: E402


def load_peer(path: Path):
    spec = importlib.util.spec_from_file_location("easy_backfill_python", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ours(tr: swf.Trace, algo: str, limit: int | None = None):
    k = tr.n_jobs if limit is None else limit
    m = tr.max_procs
    z = np.zeros(k)
    return simulator.simulate(tr.submit[:k], tr.procs[:k], z, z, tr.estimate[:k], tr.run[:k], np.ones(m, np.int64),
                              np.ones(m), np.ones(m), np.ones(m), algo, "first_fit", 1)


def best_time(tr: swf.Trace, algo: str, repeats: int, clock=time.process_time) -> tuple[float, simulator.Result]:
    """Our kernel's best time (s) of ``repeats`` runs on the whole trace, compiled (or
    loaded from the cache) beforehand, and the schedule of the last run."""
    ours(tr, algo, limit=min(200, tr.n_jobs))
    best = np.inf
    for _ in range(repeats):
        t0 = clock()
        res = ours(tr, algo)
        best = min(best, clock() - t0)
    return best, res


# Functions a benchmark harness can call (each parses its trace and compiles first; the
# time measured is the kernel's alone). The one that would have caught the regression of
# commit e939585 (conservative backfilling halved on KTH-SP2) is conservative_kth_rate.
KTH, CTC = "KTH-SP2-1996-2.1-cln.filtered.swf.gz", "CTC-SP2-1996-3.1-cln.swf.gz"


def rate(trace: str, algo: str, repeats: int = 5) -> float:
    """Jobs simulated per CPU second by our kernel on a whole log of the trace cache."""
    tr = swf.read(full_trace(trace))
    return tr.n_jobs / best_time(tr, algo, repeats)[0]


def ratio(trace: str, algo: str, repeats: int = 5) -> float:
    """Our speed over the plain-Python peer's on the same jobs, both measured in this call
    (the form of the targets: a machine's load moves both sides alike)."""
    path = full_trace(trace)
    tr = swf.read(path)
    ours_s = best_time(tr, algo, repeats)[0]
    peer = load_peer(peer_script("easy_backfill_python.py"))
    pjobs, _m, _skipped = peer.read_swf(path)
    t0 = time.process_time()
    peer.simulate(pjobs, tr.max_procs, algo)
    return (time.process_time() - t0) / ours_s


def conservative_kth_rate() -> float:
    """Conservative backfilling on KTH-SP2 (filtered), jobs per CPU second."""
    return rate(KTH, "conservative")


def conservative_kth_ratio() -> float:
    """Conservative backfilling on KTH-SP2 (filtered): times the peer's speed (target 25)."""
    return ratio(KTH, "conservative")


def main() -> int:
    try:
        _main()
    except Missing as exc:   # the full logs or the peer are not here: say which, measure nothing
        return skip_without(exc)
    return 0


def _main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", nargs="+", default=["KTH-SP2-1996-2.1-cln.filtered.swf.gz",
                                                      "CTC-SP2-1996-3.1-cln.swf.gz"])
    ap.add_argument("--algos", nargs="+", default=["easy", "conservative"], choices=["easy", "conservative"])
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of our kernel (best is reported)")
    ap.add_argument("--peer", help="the peer script (default: easy_backfill_python.py of the peers' folder, "
                                   "benchmarks/outside.py)")
    ap.add_argument("--no-peer", action="store_true", help="skip the peer (and the equality check)")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_cluster.json")
    args = ap.parse_args()
    load_before = results.load()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    peer = None if args.no_peer else load_peer(Path(args.peer) if args.peer else peer_script("easy_backfill_python.py"))

    rows = []
    for name in args.traces:
        path = full_trace(name) if not Path(name).exists() else name   # a catalogued log, or a file
        tr = swf.read(path)
        for algo in args.algos:
            best, res = best_time(tr, algo, args.repeats, clock)
            row = dict(trace=name, jobs=tr.n_jobs, algo=algo, ours_s=best, ours_jps=tr.n_jobs / best,
                       wait=float(np.mean(res.start - tr.submit)))
            if peer is not None:
                pjobs, _m, _skipped = peer.read_swf(path)
                t0 = clock()
                peer.simulate(pjobs, tr.max_procs, algo)
                ps = clock() - t0
                by_id = {j.id: j.start for j in pjobs}
                theirs = np.array([by_id[i] for i in tr.job_id])
                row.update(peer_s=ps, peer_jps=len(pjobs) / ps, speedup=ps / best,
                           mismatches=int(np.sum(theirs != res.start)))
            rows.append(row)
            print(_fmt(row), flush=True)
    if args.record:
        print(results.record("bench_cluster", [f for row in rows for f in _figures(row, args.clock)], load_before,
                             note=f"Our kernel: the best of {args.repeats} runs, compiled beforehand; the peer: one "
                                  "run in the same process, just after."))


def _figures(r: dict, clock: str) -> list[tuple[str, float, str]]:
    """What a row records: our jobs per second, and against the peer its speed-up and mismatches."""
    what = f"{r['algo']}, {Path(r['trace']).name.split('.swf')[0]} ({r['jobs']:,} jobs)"
    out = [(f"{what}: our jobs per {'CPU-' if clock == 'cpu' else ''}second", round(r["ours_jps"]), "jobs/s")]
    if "peer_s" in r:
        out += [(f"{what}: our speed over the Python peer's", round(r["speedup"], 1), "x"),
                (f"{what}: start times differing from the peer's", r["mismatches"], "")]
    return out


def _fmt(r: dict) -> str:
    s = (f"| {r['trace']} | {r['jobs']} | {r['algo']} | {r['ours_s']:.4f} | {r['ours_jps']:,.0f} | "
         f"{r['wait']:.1f} |")
    if "peer_s" in r:
        s += f" {r['peer_s']:.2f} | {r['peer_jps']:,.0f} | {r['speedup']:,.0f}x | {r['mismatches']} |"
    return s


if __name__ == "__main__":
    print("| trace | jobs | algo | ours s | ours jobs/s | mean wait s | peer s | peer jobs/s | speed-up | start mismatches |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    sys.exit(main())
