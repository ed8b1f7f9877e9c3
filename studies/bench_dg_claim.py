"""Paired W of desktop-grid policies against Gcµ, per variant of one case.

Chases the published claim "LPAS_DG beats Gcµ on the HiHi system (B)" where it fails
(System B, alpha2 with failures 0.02/2): runs each policy on the same replication seeds as
``jobs/desktop-grid-BE.toml`` (root 20100602, replication r's seed as the pipeline derives
it), so every variant is paired across policies, and prints per variant the mean W of each
policy, the paired difference policy − Gcµ with its 95% t-interval, the relative difference
(our Delta with the sign flipped: + = worse than Gcµ) and the stability margin of the
variant (lambda* of the LP over all machines, times the long-run up fraction of a machine;
1/that is the long-run load).

    python studies/bench_dg_claim.py --reps 10 \
        --vary horizon=5000,20000,40000 --vary arrival_scale=1.0,0.98,0.9615
    python studies/bench_dg_claim.py --case alpha2:none --vary arrival_scale=1.0,1.04

Each ``--vary KEY=v1,v2`` is one group of variants (the others at the base values);
``--set KEY=VALUE`` changes the base. CPU: about 1.5 s per replication and policy at
horizon 20,000 (System B, alpha2).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats as sps

from schedsweep.pipeline.base.seeding import replication_seeds
from schedsweep.workloads import desktop_grid as dg
from schedsweep.workloads.desktop_grid.lp import max_throughput

BE_ROOT = 20100602


def _value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def margin(params: dict) -> float:
    """lambda* over all machines times the long-run up fraction (exponential failures):
    the long-run throughput scaling; its inverse is the long-run load."""
    p = dg.with_case(dg.default_params(**params))
    sysm, alpha = dg.system_of(p)
    a = dg.cpu_model(p, sysm)["a"]
    lam = max_throughput(sysm.mu_nom * a[None, :], alpha)
    if p["failures"] == "exponential":
        lam *= (1.0 / p["fail_rate"]) / (1.0 / p["fail_rate"] + p["down_mean"])
    return lam


def run_variant(base: dict, policies: list[str], seeds: np.ndarray) -> dict[str, np.ndarray]:
    """W per policy and replication (NaN where unstable)."""
    out = {}
    for pol in policies:
        params = dg.default_params(**{**base, "policy": pol})
        out[pol] = np.array([dg.simulate(params, int(s))["W"] for s in seeds])
    return out


def paired(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Mean of x − y and the half-width of its t-interval (NaN pairs dropped)."""
    d = (x - y)[np.isfinite(x - y)]
    if d.size < 2:
        return float("nan"), float("nan")
    half = sps.t.ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    return float(d.mean()), float(half)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--system", default="B")
    ap.add_argument("--case", default="alpha2:0.02/2")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--first", type=int, default=0, help="first replication index")
    ap.add_argument("--policies", nargs="+", default=["gcmu", "lpas_dg", "lpas_dg_robust"])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2")
    ap.add_argument("--idle", type=float, default=0.0, metavar="HORIZON",
                    help="instead: idle-while-waiting fractions of replication 0 at this horizon")
    ap.add_argument("--margins", action="store_true",
                    help="instead: time-averaged lambda* of the available sets (and how often the vertex / "
                         "robust S_j change) on replications 0-2 of System B-E cases")
    args = ap.parse_args()
    if args.margins:
        print_margins()
        return

    base = {"system": args.system, "case": args.case, "horizon": 20000.0, "system_seed": 1}
    for kv in args.set:
        k, v = kv.split("=", 1)
        base[k] = _value(v)
    variants = [dict(base)] if not args.vary else []
    for group in args.vary:
        k, vs = group.split("=", 1)
        variants += [{**base, k: _value(v)} for v in vs.split(",")]
    seeds = replication_seeds(BE_ROOT, args.first, args.first + args.reps)
    if args.idle:
        for v in variants:
            for pol in args.policies:
                frac, waiting = idle_while_waiting({**v, "policy": pol, "horizon": args.idle}, int(seeds[0]))
                print(f"{v['case']} {pol}: idle while a task waits {frac:.2%} of available machine-time; "
                      f"a task waits {waiting:.1%} of the time", flush=True)
        return
    ref = args.policies[0]
    print(f"system {args.system}, replications {args.first}..{args.first + args.reps - 1} of seed root "
          f"{BE_ROOT}; differences against {ref} (+ = worse than {ref})")
    for v in variants:
        t0 = time.process_time()
        shown = {k: v[k] for k in v if base.get(k) != v[k] or k in ("case",)}
        line = [f"{shown}  margin {margin(v):.4f}"]
        w = run_variant(v, args.policies, seeds)
        for pol in args.policies:
            n_ok = int(np.isfinite(w[pol]).sum())
            line.append(f"  {pol}: W {np.nanmean(w[pol]):.4f} ({n_ok}/{args.reps} stable)")
        for pol in args.policies[1:]:
            d, h = paired(w[pol], w[ref])
            rel = d / np.nanmean(w[ref])
            line.append(f"  {pol} - {ref}: {d:+.4f} ± {h:.4f} ({rel:+.1%})")
        line.append(f"  [{time.process_time() - t0:.0f} CPU-s]")
        print("\n".join(line), flush=True)


def idle_while_waiting(params: dict, seed: int) -> tuple[float, float]:
    """From one replication's event trace: the fraction of available machine-time that
    machines spent idle while at least one task waited (Gcµ never does: 0), and the fraction
    of time some task waited. Trace-based, so for short horizons (a few thousand)."""
    from schedsweep.workloads.desktop_grid.simulator import (TR_COMPLETE, TR_FAIL, TR_QUEUE, TR_REPAIR,
                                                             TR_START)
    p = dg.default_params(**params)
    res = dg.simulate(p, seed, trace=1)
    res = dg.simulate(p, seed, trace=3 * int(res["events"]) + 1)
    m = dg.system_of(dg.with_case(p))[0].n_machines
    queued: set[int] = set()
    busy = np.zeros(m, bool)
    up = np.ones(m, bool)
    idle_wait = avail_time = wait_time = 0.0
    last = 0.0
    for t, kind, j, task in res["trace"]:
        dt = t - last
        n_up = int(up.sum())
        avail_time += n_up * dt
        if queued:
            idle_wait += (n_up - int((busy & up).sum())) * dt
            wait_time += dt
        last = t
        if kind == TR_QUEUE:
            queued.add(task)
        elif kind == TR_START:
            queued.discard(task)
            busy[j] = True
        elif kind == TR_COMPLETE:
            busy[j] = False
        elif kind == TR_FAIL:
            up[j], busy[j] = False, False
        elif kind == TR_REPAIR:
            up[j] = True
    return idle_wait / avail_time, wait_time / last


MARGIN_CASES = (("B", "alpha2:0.02/2"), ("B", "alpha2:0.04/1"), ("B", "alpha2:0.01/4"), ("B", "alpha1:0.05/4"),
                ("C", "alpha2:0.02/2"), ("D", "alpha2:0.02/2"), ("E", "alpha2:0.02/2"))


def print_margins(reps: int = 3) -> None:
    """Per case: the up fraction times lambda* over all machines (what a policy free to shift
    capacity between classes over time can use at least) against the time average of lambda*
    over the available sets (what LPAS_DG's per-state allocation gives every class), the time
    with lambda* < 1, and the share of machines (up before and after) whose S_j changes at a
    failure or repair, for the vertex and the robust support."""
    from schedsweep.workloads.desktop_grid.lp import solve_states, solve_states_robust
    from schedsweep.workloads.desktop_grid.timeline import estimated_views, lp_keys

    for system, case in MARGIN_CASES:
        p = dg.with_case(dg.default_params(system=system, case=case))
        sysm, alpha = dg.system_of(p)
        m = sysm.n_machines
        u = (1 / p["fail_rate"]) / (1 / p["fail_rate"] + p["down_mean"])
        avg, below, churn = [], [], {"vertex": [], "robust": []}
        for s in replication_seeds(BE_ROOT, 0, reps):
            ch = np.random.SeedSequence(int(s)).spawn(6)   # the workload's streams: 2 machines, 4 estimates
            tl = dg._timeline(p, sysm, np.random.Generator(np.random.PCG64(ch[2])))
            v0, cv = estimated_views(np.random.Generator(np.random.PCG64(ch[4])), np.ones(m), tl, 0.0)
            key, states = lp_keys(tl, v0, cv)
            dur = np.diff(np.concatenate([[0.0], tl.time, [p["horizon"]]]))
            prev = np.concatenate([[0], key[:-1]])
            up_both = (states[prev] >= 0) & (states[key] >= 0)
            for name, solve in (("vertex", solve_states), ("robust", solve_states_robust)):
                sol, _ = solve(sysm.mu_nom, alpha, states, np.random.Generator(np.random.PCG64(ch[5])))
                el = sol.elig.astype(bool)
                changed = (el[prev] != el[key]).any(axis=1) & up_both
                churn[name].append((changed.sum(1) / np.maximum(up_both.sum(1), 1)).mean())
                if name == "vertex":
                    lam_t = np.concatenate([[sol.lambda_star[0]], sol.lambda_star[key]])
                    avg.append(np.sum(dur * lam_t) / dur.sum())
                    below.append(dur[lam_t < 1].sum() / dur.sum())
                    lam_all = sol.lambda_star[0]
        print(f"{system} {case}: up fraction x lambda*(all) {u * lam_all:.4f}; time-average lambda*(available "
              f"set) {np.mean(avg):.4f}; time with lambda* < 1 {np.mean(below):.1%}; S_j changes per failure/"
              f"repair: vertex {np.mean(churn['vertex']):.1%}, robust {np.mean(churn['robust']):.1%}", flush=True)


if __name__ == "__main__":
    main()
