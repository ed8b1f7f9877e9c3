"""Cost of one ``lpas_dg_robust`` replication, ``robust_solver`` ipm (HiGHS vertex + interior
point, the former default) against face (numba simplex vertex + exact maximal support of the
optimal face, the default), in one run (benchmarks/lpas.md).

The configuration is the slowest replication of ``jobs/desktop-grid-estimation-error.toml``:
System A, system_seed 1, case ``alpha1:0.02/2+partial``, horizon 20,000, estimation error
``--I`` (default 1.0: every repair re-draws every estimate, so every key is new).

    python benchmarks/bench_lpas.py                       # seconds per replication, ms per key
    python benchmarks/bench_lpas.py --metrics --seeds 1 2 3 --I 0.0 1.0   # W and Delta, old vs new
    python benchmarks/bench_lpas.py --supports --horizon 2000             # per-key supports, old vs new

Each solver first runs one short replication (horizon 200) so compilation is not timed; the
process-wide IPM support cache is cleared before each timed replication (a sweep worker
would start with it empty for these keys: estimates are continuous, so keys never repeat).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import results  # noqa: E402
from schedsweep.workloads import desktop_grid as dg  # noqa: E402
from schedsweep.workloads.desktop_grid import lp as L  # noqa: E402
from schedsweep.workloads.desktop_grid.timeline import lp_keys  # noqa: E402

SOLVERS = ("ipm", "face")


def params(policy: str, estimation_error: float, horizon: float, robust_solver: str = "face") -> dict:
    return dg.default_params(system="A", system_seed=1, case="alpha1:0.02/2+partial", horizon=horizon,
                             estimation_error=estimation_error, policy=policy, robust_solver=robust_solver)


def replicate(p: dict, seed: int, keep_inputs: bool = False) -> dict:
    L._ROBUST_CACHE.clear()
    return dg.simulate(p, seed, keep_inputs=keep_inputs)


def warm_up(solvers) -> None:
    for rs in solvers:
        dg.simulate(params("lpas_dg_robust", 1.0, 200.0, rs), 1)


def speed(args) -> list[tuple[str, float, str]]:
    """Wall seconds of one robust replication per solver; the figures to record."""
    warm_up(args.solvers)
    print(f"lpas_dg_robust, System A seed 1, alpha1:0.02/2+partial, horizon {args.horizon:g}, "
          f"I = {args.I[0]:g}")
    print(f"{'solver':6} {'seed':>4} {'wall s':>7} {'LP s':>7} {'keys':>6} {'ms/key':>7} "
          f"{'LP solves':>9} {'W':>8}")
    walls = {rs: [] for rs in args.solvers}
    for seed in args.seeds:
        for rs in args.solvers:
            r = replicate(params("lpas_dg_robust", args.I[0], args.horizon, rs), seed)
            walls[rs].append(r["wall_s"])
            print(f"{rs:6} {seed:4d} {r['wall_s']:7.2f} {r['lp_wall_s']:7.2f} {r['lp_keys']:6.0f} "
                  f"{1e3 * r['lp_wall_s'] / r['lp_keys']:7.3f} {r['lp_solves']:9.0f} {r['W']:8.5f}")
    if len(args.solvers) == 2:
        a, b = (np.mean(walls[rs]) for rs in args.solvers)
        print(f"mean wall: {args.solvers[0]} {a:.2f} s, {args.solvers[1]} {b:.2f} s, ratio {a / b:.1f}")
    what = f"one `lpas_dg_robust` replication (horizon {args.horizon:g}, I = {args.I[0]:g}), wall"
    return [(f"{what}, robust_solver {rs} (mean of {len(walls[rs])} seeds)", round(float(np.mean(walls[rs])), 2), "s")
            for rs in args.solvers]


def metrics(args) -> None:
    """W per policy and Delta over Gcmu (mean over the seeds, paired) for ipm and face."""
    warm_up(args.solvers)
    names = ["gcmu", "lpas_dg"] + [f"robust/{rs}" for rs in args.solvers]
    print(f"System A seed 1, alpha1:0.02/2+partial, horizon {args.horizon:g}, seeds {args.seeds}")
    print(f"{'I':>4} {'seed':>4} " + " ".join(f"{n:>13}" for n in names) + "  (W)")
    for I in args.I:
        w = {n: [] for n in names}
        for seed in args.seeds:
            w["gcmu"].append(replicate(params("gcmu", I, args.horizon), seed)["W"])
            w["lpas_dg"].append(replicate(params("lpas_dg", I, args.horizon), seed)["W"])
            for rs in args.solvers:
                w[f"robust/{rs}"].append(replicate(params("lpas_dg_robust", I, args.horizon, rs), seed)["W"])
            print(f"{I:4.1f} {seed:4d} " + " ".join(f"{w[n][-1]:13.5f}" for n in names))
        g = np.mean(w["gcmu"])
        print(f"{I:4.1f} Delta% " + " ".join(f"{100 * (g - np.mean(w[n])) / g:13.2f}" for n in names))


def supports(args) -> None:
    """Per key, the face support against the IPM support; differing entries classified by
    their maximum over the optimal face (HiGHS, lp.face_maxima) relative to the largest."""
    warm_up(args.solvers)
    zt = L.ZERO_TOL
    for seed in args.seeds:
        tabs, inputs = {}, None
        for rs in SOLVERS:
            out = replicate(params("lpas_dg_robust", args.I[0], args.horizon, rs), seed, keep_inputs=True)
            inputs = out["inputs"]
            tabs[rs] = inputs["table"]
        _, states = lp_keys(inputs["timeline"], inputs["view0"], inputs["chg_view"])
        mu, alpha = inputs["system"].mu_nom, inputs["alpha"]
        diff = tabs["ipm"].elig != tabs["face"].elig
        keys = np.flatnonzero(diff.any(axis=(1, 2)))
        bands: dict[str, int] = {}
        out_keys = ms_equal = 0
        for k in keys:
            av = states[k] >= 0
            fm = L.face_maxima(mu * np.where(av, states[k], 1.0)[None, :], alpha, av)
            ms_equal += np.array_equal(L.support_of(fm, av), tabs["face"].elig[k].astype(bool))
            outside = False
            for i, j in zip(*np.nonzero(diff[k])):
                rel = fm[i, j] / fm.max()
                band = ("in band" if zt / 30 <= rel <= 30 * zt else
                        ("face max > 30 zt" if rel > 30 * zt else "face max < zt/30"))
                outside |= band != "in band"
                side = "only IPM has it" if tabs["ipm"].elig[k, i, j] else "only face has it"
                bands[f"{band}, {side}"] = bands.get(f"{band}, {side}", 0) + 1
            out_keys += outside
        print(f"seed {seed}, I = {args.I[0]:g}, horizon {args.horizon:g}: {states.shape[0]} keys, "
              f"{keys.size} with a different support ({int(diff.sum())} entries), {out_keys} of them "
              f"with an entry outside [zero_tol/30, 30 zero_tol]; on those keys the face support = "
              f"max_support on {ms_equal}")
        for band, count in sorted(bands.items()):
            print(f"  {band}: {count} entries")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--horizon", type=float, default=20_000.0)
    ap.add_argument("--I", type=float, nargs="+", default=[1.0], help="estimation error(s)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    ap.add_argument("--metrics", action="store_true", help="W and Delta over Gcmu, old vs new")
    ap.add_argument("--supports", action="store_true", help="per-key supports, old vs new")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_lpas.json (speed)")
    args = ap.parse_args()
    load_before = results.load()
    if args.metrics:
        metrics(args)
    elif args.supports:
        supports(args)
    else:
        figures = speed(args)
        if args.record:
            print(results.record("bench_lpas", figures, load_before,
                                 note="System A, system_seed 1, case alpha1:0.02/2+partial; compilation excluded "
                                      "(a short replication first), the solver's cache emptied before each."))


if __name__ == "__main__":
    main()
