"""Speed of the desktop_grid kernel against the SimPy peer, in one run, on the same system.

The system is the peer's built-in one (the peer ``desktop_grid_simpy.py``, outside the
repository: benchmarks/outside.py): 4 classes,
6 groups of ``--per-group`` machines, a_j cycling 1, .85, .7, .55, .4 within a group,
failures at rate 0.002 with mean down time 50, arrival rates = load * lambda* / 4 where
lambda* is the LP capacity with every rate scaled by the up fraction. Both sides simulate
``--horizon`` time units; ``tasks/s`` = tasks that arrived / wall seconds and ``events/s`` =
events / wall seconds, each side counting its own events (ours: arrivals, completions and
availability changes; SimPy: every processed SimPy event, about 1.3 per one of ours).

    python benchmarks/bench_desktop_grid.py --seeds 1 2 --simpy-path /tmp/simpy_pkg
    python benchmarks/bench_desktop_grid.py --systems      # our LP cost on Systems A and B

``--lp-solvers simplex highs`` runs LPAS_DG with each ``lp_solver`` (rows ``lpas_dg/simplex``
...); ``--repeat R`` times each of our replications R times and keeps the fastest (the
machine is shared); the last column is our wall time over our Gcµ's for the same seed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import results  # noqa: E402
from benchmarks.outside import Missing, peer as peer_script, skip_without  # noqa: E402
from benchmarks.suite.desktop_grid import peer_params  # noqa: E402
from schedsweep.workloads import desktop_grid as dg  # noqa: E402

PEER_POLICY = {"fcfs": "FCFS", "pst": "PST", "gcmu": "Gcmu", "lpas_dg": "LPAS_DG"}


def run_ours(params: dict, seed: int, repeat: int = 1) -> dict:
    wall = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = dg.simulate(params, seed)
        wall = min(wall, time.perf_counter() - t0)
    return {"W": r["W"], "events": r["events"], "tasks": r["tasks_arrived"], "wall_s": wall,
            "lp_keys": r["lp_keys"], "lp_s": r["lp_wall_s"], "reason": r["reason"]}


def run_peer(policy: str, seed: int, args) -> dict | None:
    if policy not in PEER_POLICY:
        return None
    env = dict(os.environ)
    if args.simpy_path:
        env["PYTHONPATH"] = args.simpy_path + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, str(args.peer), "--policy", PEER_POLICY[policy], "--seed", str(seed),
           "--horizon", str(args.horizon), "--per-group", str(args.per_group), "--load", str(args.load),
           "--fail-rate", str(args.fail_rate), "--down-mean", str(args.down_mean), "--lp", "scipy"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    j = json.loads(out.stdout.strip().splitlines()[-1])
    return {"W": j["W"] if j["W"] is not None else float("nan"), "events": j["events"],
            "tasks": j["tasks_per_s"] * j["wall_s"], "wall_s": j["wall_s"],
            "lp_keys": j["lp_solves"], "lp_s": j["lp_wall_s"], "reason": int(j["unfinished_measured"] > 0)}


def row(who: str, policy: str, seed: int, r: dict, gcmu_wall: float | None = None) -> str:
    ratio = f"{r['wall_s'] / gcmu_wall:.2f}" if gcmu_wall else "–"
    return (f"| {who} | {policy} | {seed} | {r['W']:.3f}{' (unstable)' if r['reason'] else ''} | "
            f"{r['events']:.0f} | {r['tasks']:.0f} | {r['wall_s']:.3f} | {r['events'] / r['wall_s']:.3g} | "
            f"{r['tasks'] / r['wall_s']:.3g} | {r['lp_keys']} | {r['lp_s']:.3f} | {ratio} |")


def variants(policies: list[str], lp_solvers: list[str]) -> list[tuple[str, str]]:
    """(label, policy) with lp_solver variants of lpas_dg; Gcµ first (the ratio's base)."""
    out = [("gcmu", "gcmu")] if "gcmu" in policies else []
    for policy in policies:
        if policy == "lpas_dg":
            out += [(f"lpas_dg/{sol}", sol) for sol in lp_solvers]
        elif policy != "gcmu":
            out.append((policy, policy))
    return out


def compare_with_peer(args) -> list[tuple[str, float, str]]:
    """Ours and the peer, policy by policy and seed by seed; the figures to record."""
    figures = []
    print(f"peer system: M = {6 * args.per_group}, load {args.load}, horizon {args.horizon:g}")
    print("| simulator | policy | seed | W | events | tasks | wall s | events/s | tasks/s | LP keys | LP s | / Gcµ |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    gcmu_wall: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, what in variants(args.policies, args.lp_solvers):
            policy = "lpas_dg" if label.startswith("lpas_dg/") else what
            params = peer_params(args.per_group, args.load, args.fail_rate, args.down_mean,
                                 args.horizon, policy, os.path.join(tmp, "rates.csv"))
            if policy == "lpas_dg":
                params["lp_solver"] = what
            dg.simulate({**params, "horizon": 10.0}, 0)        # numba compile / cache load
            for seed in args.seeds:
                r = run_ours(params, seed, args.repeat)
                if policy == "gcmu":
                    gcmu_wall[seed] = r["wall_s"]
                print(row("schedsweep", label, seed, r, gcmu_wall.get(seed)), flush=True)
                what_ran = f"{label}, seed {seed}"
                figures += [(f"{what_ran}: our wall per replication (fewest of {args.repeat})",
                             round(r["wall_s"] * 1e3, 2), "ms"),
                            (f"{what_ran}: tasks per second of our wall", round(r["tasks"] / r["wall_s"]), "tasks/s")]
                if policy != "gcmu" and gcmu_wall.get(seed):
                    figures.append((f"{what_ran}: our wall over our Gcµ's", round(r["wall_s"] / gcmu_wall[seed], 2),
                                    "x"))
                if not args.no_peer and (policy != "lpas_dg" or what == args.lp_solvers[0]):
                    peer = run_peer(policy, seed, args)
                    if peer is not None:
                        print(row("SimPy peer", policy, seed, peer), flush=True)
                        figures.append((f"{what_ran}: the SimPy peer's wall over ours",
                                        round(peer["wall_s"] / r["wall_s"], 1), "x"))
    return figures


def our_systems(args) -> None:
    """Cost split (kernel vs LP) on the paper's systems, where LP keys are many."""
    print("| system | case | policy | W | tasks | wall s | tasks/s | LP keys | LP s | LP ms/key | / Gcµ |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    policies = ["gcmu", "lpas_dg"] + (["lpas_dg_robust"] if args.robust else [])
    for system, case in [("A", "alpha1:none"), ("A", "alpha1:0.02/2"), ("A", "alpha1:0.05/4"),
                         ("B", "alpha2:0.02/2")]:
        gcmu_wall = None
        for label, what in variants(policies, args.lp_solvers):
            policy = "lpas_dg" if label.startswith("lpas_dg/") else what
            params = dg.default_params(system=system, case=case, policy=policy, horizon=args.horizon)
            if policy == "lpas_dg":
                params["lp_solver"] = what
            dg.simulate({**params, "horizon": 10.0}, 0)        # numba compile / cache load
            r = run_ours(params, 1, args.repeat)
            gcmu_wall = r["wall_s"] if policy == "gcmu" else gcmu_wall
            keys = r["lp_keys"] if np.isfinite(r["lp_keys"]) else 0
            per = 1e3 * r["lp_s"] / keys if keys else float("nan")
            ratio = f"{r['wall_s'] / gcmu_wall:.2f}" if policy != "gcmu" else "–"
            print(f"| {system} | {case} | {label} | {r['W']:.4f} | {r['tasks']:.0f} | {r['wall_s']:.2f} | "
                  f"{r['tasks'] / r['wall_s']:.3g} | {keys:.0f} | {r['lp_s']:.3f} | {per:.4f} | {ratio} |",
                  flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--horizon", type=float, default=20_000.0)
    ap.add_argument("--per-group", type=int, default=5)
    ap.add_argument("--load", type=float, default=0.7)
    ap.add_argument("--fail-rate", type=float, default=0.002)
    ap.add_argument("--down-mean", type=float, default=50.0)
    ap.add_argument("--policies", nargs="+", default=["gcmu", "lpas_dg", "pst"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[1])
    ap.add_argument("--peer", type=Path, help="the SimPy peer (default: desktop_grid_simpy.py of the peers' "
                                              "folder, benchmarks/outside.py)")
    ap.add_argument("--simpy-path", default="", help="directory holding simpy (pip install --target)")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--systems", action="store_true", help="our LP cost on Systems A and B instead")
    ap.add_argument("--robust", action="store_true", help="with --systems: lpas_dg_robust rows too")
    ap.add_argument("--lp-solvers", nargs="+", default=["simplex"], choices=["simplex", "highs"],
                    help="lp_solver values to run lpas_dg with")
    ap.add_argument("--repeat", type=int, default=1, help="time each of our replications R times, keep the fastest")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_desktop_grid.json "
                                                          "(the comparison with the peer)")
    args = ap.parse_args()
    load_before = results.load()
    if args.systems:
        our_systems(args)
        return 0
    if not args.no_peer and args.peer is None:
        try:
            args.peer = peer_script("desktop_grid_simpy.py")
        except Missing as exc:   # this part compares with the peer: without it, nothing to measure
            return skip_without(exc)
    figures = compare_with_peer(args)
    if args.record:
        print(results.record("bench_desktop_grid", figures, load_before,
                             note=f"The peer's system (M = {6 * args.per_group}, load {args.load}, horizon "
                                  f"{args.horizon:g}); wall times, ours in this process (compiled beforehand), "
                                  "the peer's self-timed section in its own process."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
