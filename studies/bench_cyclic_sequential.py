#!/usr/bin/env python3
"""The two combination steps with shared alternatives on the same recorded calls.

Runs ``--cycles`` cycles (seeds 0 ...) of each method with the calibrated defaults and the
search (``combination = "search"``), records every call of the combination step (its
alternatives, values, quantities and conflicts), then replays each call with both rules:
CPU time per call, flagged calls, postponed jobs, and the total v (processor time for
min_time) of the chosen combination where both place the same jobs and neither is flagged.
Then the cycles end to end (``run_batch``, the same seeds, postponed jobs retried as the
defaults say): mean failure rate, jobs scheduled, flagged, processor time and cost per job.

    python studies/bench_cyclic_sequential.py --nodes 24 --methods css frsm --cycles 100
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schedsweep.workloads._contract import defaults  # noqa: E402
from schedsweep.workloads.cyclic import PARAMS, frsm, run_batch, run_cycle  # noqa: E402
from schedsweep.workloads.cyclic.dp import choose  # noqa: E402
from schedsweep.workloads.cyclic.sequential import choose_sequential  # noqa: E402


def record(params: dict, cycles: int) -> tuple[list[tuple], float]:
    """The combination calls of ``cycles`` cycles, and their total scheduling seconds."""
    calls, real = [], frsm.choose

    def spy(offsets, v, g, maximize, resolution=1.0, conflict=None):
        calls.append((offsets, v, g, maximize, resolution, conflict))
        return real(offsets, v, g, maximize, resolution, conflict)

    frsm.choose = spy
    try:
        seconds = sum(run_cycle(params, seed).seconds for seed in range(cycles))
    finally:
        frsm.choose = real
    return [c for c in calls if c[5] is not None], seconds


def replay(calls, rule) -> tuple[float, list]:
    rule(*calls[0])                      # warm-up (compile / cache)
    out, cpu0 = [], time.process_time()
    for c in calls:
        out.append(rule(*c))
    return time.process_time() - cpu0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=24)
    ap.add_argument("--methods", nargs="+", default=["css", "frsm"])
    ap.add_argument("--cycles", type=int, default=100)
    args = ap.parse_args()
    for method in args.methods:
        params = defaults(PARAMS)
        params.update(nodes=args.nodes, method=method, combination="search")
        calls, sched = record(params, args.cycles)
        t_search, search = replay(calls, choose)
        t_seq, seq = replay(calls, choose_sequential)
        same = [k for k, (a, b) in enumerate(zip(search, seq))
                if not a.flagged and not b.flagged and np.array_equal(a.choice >= 0, b.choice >= 0)]
        ratio = np.array([seq[k].value / search[k].value for k in same])
        print(f"{method}: {len(calls)} calls, {sched:.1f} s scheduling with the search (cycles' schedule time)")
        for name, t, res in (("search", t_search, search), ("sequential", t_seq, seq)):
            print(f"  {name:>10}: {t:7.2f} CPU-s replayed ({1e3 * t / len(calls):7.2f} ms a call), "
                  f"flagged {sum(r.flagged for r in res):3d}, postponed jobs {sum(int((r.choice < 0).sum()) for r in res):4d}, "
                  f"identical choices {sum(np.array_equal(a.choice, b.choice) for a, b in zip(search, seq))}")
        if len(same):
            print(f"  total v sequential / search on the {len(same)} calls both unflagged with the same jobs placed: "
                  f"mean {ratio.mean():.4f}, median {np.median(ratio):.4f}, min {ratio.min():.4f}, max {ratio.max():.4f}; "
                  f"sequential lower in {(ratio < 1 - 1e-12).sum()}, "
                  f"higher in {(ratio > 1 + 1e-12).sum()} (min_time: lower is better)", flush=True)
        seeds = np.arange(args.cycles, dtype=np.uint64)
        for combination in ("search", "sequential"):
            out = run_batch(dict(params, combination=combination), seeds)
            print(f"  cycles, {combination:>10}: failure {np.mean(out['failure']):.3f}, scheduled "
                  f"{np.mean(out['scheduled']):.2f}, flagged {np.mean(out['dp_flagged']):.2f}, proc_time "
                  f"{np.nanmean(out['proc_time']):.1f}, cost {np.nanmean(out['cost']):.1f}, income_total "
                  f"{np.mean(out['income_total']):.0f}", flush=True)


if __name__ == "__main__":
    main()
