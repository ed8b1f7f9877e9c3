#!/usr/bin/env python3
"""The conflict-free searches of the combination step, the current one against the search with
a greedy-colouring bound (``studies/cyclic_clique.py``), on recorded calls.

Records every call of the combination step of ``--cycles`` cycles (seeds 0 ..., calibrated
defaults, ``combination = "search"``; ``bench_cyclic_sequential.record``), or loads them from
``--calls`` (a pickle written by ``--save``), then replays the two searches that dominate the
step as ``dp._choose_conflicts`` runs them:

- ``any``: a conflict-free combination of every job regardless of the limit (``ANY_PLAIN_LIMIT``
  plain tries, then weighted up to ``ANY_LIMIT``);
- ``limit``: one within the limit (``FEASIBLE_LIMIT`` plain tries; only where ``any`` found one).

Per search and call: tries (choices tried), CPU seconds, and the decision (found / none =
proved there is none / capped), for the current ``dp._feasible`` and for ``cyclic_clique._coloured``
(the same search with a colouring bound and/or the nogood cache), each at the same caps; then
totals, and on the calls both decide: whether the decisions and the combinations are the same.
``--choose``: the whole combination step (``dp.choose``) with the nogood cache that came out of
this (``dp.NOGOOD_BITS``) off and on, alternating call by call.

    python studies/bench_cyclic_clique.py --method css --cycles 100 --save /tmp/css100.pkl --bound 1
    python studies/bench_cyclic_clique.py --calls /tmp/css100.pkl --bound 0 --memo-bits 14 --memo-depth 12
    python studies/bench_cyclic_clique.py --calls /tmp/css100.pkl --choose
"""
from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))     # bench_cyclic_sequential

from bench_cyclic_sequential import record  # noqa: E402
from schedsweep.workloads._contract import defaults  # noqa: E402
from schedsweep.workloads.cyclic import PARAMS  # noqa: E402
from schedsweep.workloads.cyclic import dp  # noqa: E402
from studies.cyclic_clique import _coloured  # noqa: E402


def searches(call):
    """The arguments of the two searches of ``dp._choose_conflicts`` on one recorded call."""
    offsets, v, g, maximize, resolution, conflict = call
    offsets, v, g, limit, G = dp.prepared(offsets, v, g, resolution)
    conflict = np.asarray(conflict, np.bool_)
    gq = dp.levels(g, resolution)
    degree = conflict.sum(axis=1).astype(np.float64)
    loose = degree * (float(np.abs(g).max()) + 1.0) + g
    key = -v if maximize else v
    return (offsets, loose, gq, np.int64(gq.sum()), conflict), (offsets, key, gq, np.int64(G), conflict)


DEPTH = [1 << 30]
MEMO = [0, 1 << 30]          # memo_bits, memo_depth of cyclic_clique._coloured
MEMO_IN = ["limit"]          # the searches the cache is used in


def _timed(a, limit, weighted, colour, search):
    """``(choice, found, complete, tries, CPU s)``. ``colour`` -1: ``dp._feasible`` itself timed,
    its tries counted by ``cyclic_clique._coloured`` without a bound (the same tries; checked here)."""
    t0 = time.process_time()
    if colour >= 0:
        memo = MEMO if search in MEMO_IN else [0, 1 << 30]
        choice, found, complete, tries = _coloured(*a, limit, weighted, colour, DEPTH[0], *memo)
        return choice, found, complete, tries, time.process_time() - t0
    choice, found, complete = dp._feasible(*a, limit, weighted)
    t = time.process_time() - t0
    same, f2, c2, tries = _coloured(*a, limit, weighted, 0, 1 << 30, 0, 1 << 30)
    assert f2 == found and c2 == complete and np.array_equal(same, choice)
    return choice, found, complete, tries, t


def any_search(a, colour):
    """Plain up to ANY_PLAIN_LIMIT, then weighted up to ANY_LIMIT (as dp._choose_conflicts)."""
    choice, found, complete, tries, t = _timed(a, dp.ANY_PLAIN_LIMIT, False, colour, "any")
    if not complete:
        choice, found, complete, t2, s2 = _timed(a, dp.ANY_LIMIT, True, colour, "any")
        tries += t2
        t += s2
    return choice, found, complete, tries, t


def limit_search(a, colour):
    """Plain up to FEASIBLE_LIMIT (as dp._choose_conflicts, where ``any`` found one)."""
    return _timed(a, dp.FEASIBLE_LIMIT, False, colour, "limit")


def choose_both(calls) -> None:
    """``dp.choose`` on every call with the nogood cache off (``NOGOOD_BITS`` 0, the code before)
    and on, alternating call by call: CPU, flagged, postponed, and the calls whose choice moved."""
    bits = dp.NOGOOD_BITS
    out = {0: [], bits: []}
    cpu = {0: 0.0, bits: 0.0}
    dp.choose(*calls[0])
    try:
        for call in calls:
            for b in (0, bits):
                dp.NOGOOD_BITS = b
                t0 = time.process_time()
                out[b].append(dp.choose(*call))
                cpu[b] += time.process_time() - t0
    finally:
        dp.NOGOOD_BITS = bits
    for b, name in ((0, "without the cache"), (bits, f"cache 2^{bits}")):
        res = out[b]
        print(f"  choose, {name:>17}: {cpu[b]:6.2f} CPU-s, flagged {sum(r.flagged for r in res):3d}, postponed jobs "
              f"{sum(int((r.choice < 0).sum()) for r in res):4d}, total v {sum(r.value for r in res):.1f}")
    moved = [(a, c) for a, c in zip(out[0], out[bits]) if not np.array_equal(a.choice, c.choice) or a.flagged != c.flagged]
    print(f"  choices moved in {len(moved)} calls: flagged before -> after "
          f"{sum(a.flagged for a, _ in moved)} -> {sum(c.flagged for _, c in moved)}, postponed "
          f"{sum(int((a.choice < 0).sum()) for a, _ in moved)} -> {sum(int((c.choice < 0).sum()) for _, c in moved)}, "
          f"total v {sum(a.value for a, _ in moved):.1f} -> {sum(c.value for _, c in moved):.1f}")
    for a, c in moved:
        print(f"    flagged {a.flagged} -> {c.flagged}, postponed {int((a.choice < 0).sum())} -> {int((c.choice < 0).sum())}, "
              f"v {a.value:.1f} -> {c.value:.1f}, limit {a.limit:.0f}")


def decision(found, complete):
    return "found" if found else ("none" if complete else "capped")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=24)
    ap.add_argument("--method", default="css")
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--calls", help="pickle of recorded calls (instead of recording)")
    ap.add_argument("--save", help="write the recorded calls to this pickle")
    ap.add_argument("--per-call", action="store_true")
    ap.add_argument("--choose", action="store_true",
                    help="instead: dp.choose with the nogood cache of the search within the limit off and on")
    ap.add_argument("--bound", type=int, default=1, choices=(0, 1, 2, 3),
                    help="cyclic_clique._coloured's bound: 0 none, 1 colour count, 2 + matching, "
                         "3 first-fit by degree + matching")
    ap.add_argument("--memo-bits", type=int, default=0, help="nogood cache of 2^bits subproblems (0: none)")
    ap.add_argument("--memo-in", nargs="+", default=["limit"], choices=("any", "limit"),
                    help="the searches the nogood cache is used in")
    ap.add_argument("--memo-depth", type=int, default=1 << 30, help="the cache only at this depth or above")
    ap.add_argument("--depth", type=int, default=1 << 30, help="bound only above this depth (jobs chosen)")
    args = ap.parse_args()
    DEPTH[0] = args.depth
    MEMO[:] = [args.memo_bits, args.memo_depth]
    MEMO_IN[:] = args.memo_in
    if args.calls:
        calls = pickle.loads(Path(args.calls).read_bytes())
    else:
        params = defaults(PARAMS)
        params.update(nodes=args.nodes, method=args.method, combination="search")
        calls, _ = record(params, args.cycles)
        if args.save:
            Path(args.save).write_bytes(pickle.dumps(calls))
    if args.choose:
        print(f"{args.method}: {len(calls)} calls")
        choose_both(calls)
        return
    a0, l0 = searches(calls[0])
    for colour in (-1, args.bound):           # warm-up (compile / cache)
        any_search(a0, colour), limit_search(l0, colour)
    rows = []
    for k, call in enumerate(calls):
        a, lim = searches(call)
        row = {}
        for colour, name in ((-1, "cur"), (args.bound, "col")):
            ca = any_search(a, colour)
            row[name, "any"] = ca
            if ca[1]:
                row[name, "limit"] = limit_search(lim, colour)
        rows.append(row)
        if args.per_call:
            parts = []
            for s in ("any", "limit"):
                for name in ("cur", "col"):
                    r = row.get((name, s))
                    parts.append(f"{s}/{name} {decision(r[1], r[2]):>6} {r[3]:>8d} {1e3 * r[4]:8.1f}ms" if r else f"{s}/{name}        -")
            print(f"{k:3d} " + " | ".join(parts), flush=True)
    print(f"{args.method}: {len(calls)} calls; cur = dp._feasible's search, col = with bound {args.bound} above depth {args.depth}, "
          f"nogood cache 2^{args.memo_bits} to depth {args.memo_depth} in {' and '.join(args.memo_in)}")
    for s in ("any", "limit"):
        for name in ("cur", "col"):
            rs = [r[name, s] for r in rows if (name, s) in r]
            dec = [decision(r[1], r[2]) for r in rs]
            print(f"  {s:>5} {name}: {len(rs):3d} calls, found {dec.count('found'):3d}, none {dec.count('none'):3d}, "
                  f"capped {dec.count('capped'):3d}; tries {sum(r[3] for r in rs):>11d}, CPU {sum(r[4] for r in rs):7.2f} s")
        both = [r for r in rows if ("cur", s) in r and ("col", s) in r]
        done = [r for r in both if r["cur", s][2] and r["col", s][2]]
        print(f"        both complete {len(done)}: same decision {sum(r['cur', s][1] == r['col', s][1] for r in done)}, "
              f"same combination {sum(np.array_equal(r['cur', s][0], r['col', s][0]) for r in done if r['cur', s][1])} "
              f"of {sum(r['cur', s][1] for r in done)} found; there tries {sum(r['cur', s][3] for r in done)} / "
              f"{sum(r['col', s][3] for r in done)}, CPU {sum(r['cur', s][4] for r in done):.2f} / "
              f"{sum(r['col', s][4] for r in done):.2f} s (cur / col); decided by one only: "
              f"cur {sum(r['cur', s][2] and not r['col', s][2] for r in both)}, col {sum(r['col', s][2] and not r['cur', s][2] for r in both)}")


if __name__ == "__main__":
    main()
