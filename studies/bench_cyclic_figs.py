"""T14 Figs. 3-4 and Table 3 under the calibrated cyclic defaults and under the disjoint model.

Runs the cells of ``jobs/cyclic-subbatches.toml`` (Fig. 3), ``jobs/cyclic-css-bf-split.toml``
(Fig. 4) and ``jobs/cyclic-planned-vs-actual.toml`` (Table 3) in this process on the same seeds
(common random numbers: every cell of a model sees the same environments and batches), once
with the workload's calibrated defaults and once with :data:`workloads.cyclic.DISJOINT_MODEL`
(with the load levels each model's spec chose), and prints per cell the mean of each metric and,
for Fig. 3, the paired difference against k = 1 (mean +- 95% CI half-width over replications).
``--set KEY=VALUE`` (repeatable, TOML values) overrides a parameter in every cell: the variants of
``benchmarks/calibration.md`` ("T14 Figs. 3-4 and Table 3: the misses chased").

    python studies/bench_cyclic_figs.py fig3 --reps 60
    python studies/bench_cyclic_figs.py fig4 --reps 60
    python studies/bench_cyclic_figs.py table3 --reps 60
    python studies/bench_cyclic_figs.py alts --reps 40      # where a CSS job's alternatives lie
"""
from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schedsweep.workloads import cyclic  # noqa: E402
from schedsweep.workloads._contract import defaults  # noqa: E402

SEED0 = 7_000_000
#: Fig. 3's three load levels per model, as each model's spec chose them (cyclic-subbatches.toml now
#: and before): (local_load_min, local_load_max, price_margin_min or None for the model's own).
LOADS = {"calibrated": {"high": (0.2, 0.6, None), "medium": (0.1, 0.5, None), "low": (0.0, 0.1, None)},
         "disjoint": {"high": (0.2, 0.6, -0.25), "medium": (0.0, 0.3, -0.2), "low": (0.1, 0.5, 0.0)}}
#: Fig. 4's medium load per model (cyclic-css-bf-split.toml now and before).
FIG4_LOAD = {"calibrated": (0.1, 0.5), "disjoint": (0.0, 0.3)}


def model_params(model: str, over: dict) -> dict:
    base = defaults(cyclic.PARAMS)
    if model == "disjoint":
        base.update(cyclic.DISJOINT_MODEL)
    return {**base, "nodes": 24, "jobs": 20, **over}


def run(params: dict, reps: int, metrics: list[str]) -> dict[str, np.ndarray]:
    seeds = np.arange(SEED0, SEED0 + reps, dtype=np.uint64)
    out = cyclic.run_batch(params, seeds)
    return {m: np.asarray(out[m], float) for m in metrics}


def ci(x: np.ndarray) -> tuple[float, float]:
    """Mean and 95% CI half-width (normal) over the finite entries."""
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return float(np.mean(x)) if len(x) else float("nan"), float("nan")
    return float(x.mean()), float(1.96 * x.std(ddof=1) / np.sqrt(len(x)))


def fmt(x: np.ndarray) -> str:
    m, h = ci(x)
    return f"{m:8.2f} ± {h:5.2f}"


def fig3(args, fixed: dict) -> None:
    metrics = ["alternatives", "cost", "proc_time", "actual_proc_time", "failure", "scheduled"]
    for model in args.models:
        for level, (lo, hi, margin) in LOADS[model].items():
            over = {"method": "frsm", "strategy": "min_time", "local_load_min": lo, "local_load_max": hi, **fixed}
            if margin is not None:
                over["price_margin_min"] = margin
            base = None
            for k in args.k:
                t = time.process_time()
                res = run(model_params(model, {**over, "frsm_k": k}), args.reps, metrics)
                cpu = time.process_time() - t
                base = base or res
                line = "  ".join(f"{m} {fmt(res[m])}" for m in metrics)
                diff = "  ".join(f"d{m} {fmt(res[m] - base[m])}" for m in ("alternatives", "cost", "proc_time"))
                print(f"{model:10} {level:6} k={k:<2} {line}  | vs k=1: {diff}  ({cpu:.0f} CPU-s)", flush=True)


def fig4(args, fixed: dict) -> None:
    metrics = ["proc_time", "actual_proc_time", "start", "actual_start", "cost", "failure"]
    for model in args.models:
        lo, hi = FIG4_LOAD[model]
        for n_css in args.n_css:
            over = {"method": "css_bf", "css_part": "css", "priority": "first", "bf_variant": "conservative",
                    "n_css": n_css, "local_load_min": lo, "local_load_max": hi, **fixed}
            t = time.process_time()
            res = run(model_params(model, over), args.reps, metrics)
            line = "  ".join(f"{m} {fmt(res[m])}" for m in metrics)
            print(f"{model:10} n_css={n_css:<2} {line}  ({time.process_time() - t:.0f} CPU-s)", flush=True)


def table3(args, fixed: dict) -> None:
    metrics = ["start", "actual_start", "proc_time", "actual_proc_time", "runtime", "actual_runtime",
               "finish", "actual_finish", "failure"]
    for model in args.models:
        for method in ("bf", "css", "frsm"):
            over = {"method": method, "frsm_k": 1, "bf_variant": "conservative", **fixed}
            res = run(model_params(model, over), args.reps, metrics)
            line = "  ".join(f"{m} {fmt(res[m])}" for m in metrics)
            print(f"{model:10} {method:5} {line}", flush=True)


def alts(args, fixed: dict) -> None:
    """Where a CSS job's alternatives lie: disjoint (cap 10) against shared (cap 13), batch before."""
    from schedsweep.workloads._contract import substreams
    from schedsweep.workloads.cyclic import cycle
    from schedsweep.workloads.cyclic.alternatives import find_alternatives
    from schedsweep.workloads.cyclic.batch import job_matrices, priority_order
    from schedsweep.workloads.cyclic.search import FIRST_FIT

    for shared, cap in ((False, 10), (True, 13)):
        p = {**model_params("disjoint", {"method": "css", **fixed}), "shared_alternatives": shared,
             "max_alternatives": cap}
        rows = []
        for r in range(args.reps):
            env_rng, batch_rng, criteria_rng, runtime_rng = substreams(SEED0 + r, cycle.STREAMS)
            env = cycle.environment_of(p, env_rng)
            batch = cycle.batch_of(p, batch_rng, criteria_rng, runtime_rng)
            node_len, node_cost = job_matrices(batch, env.perf, env.price, float(p["perf_min"]))
            order = priority_order(batch, p["priority"])
            found, _ = find_alternatives(env.slot_node, env.slot_start, env.slot_end, order, node_len, node_cost,
                                         batch.budget, batch.slots, np.full(batch.size, FIRST_FIT, np.int64), cap,
                                         shared=shared)
            for q in range(len(order)):
                lo, hi = found.offsets[q], found.offsets[q + 1]
                if hi - lo < 2:
                    continue
                perf = np.array([env.perf[w[w >= 0]].mean() for w in found.nodes[lo:hi]])
                proc = found.proc_time[lo:hi]
                rows.append((hi - lo, proc.min() / proc.mean(), perf.max(), found.start[lo:hi].mean(),
                             found.start[lo]))
        m = np.array(rows).mean(axis=0)
        print(f"{'shared' if shared else 'disjoint':8} cap {cap}: alternatives per job {m[0]:.1f}, least/mean "
              f"proc_time {m[1]:.3f}, fastest alternative's mean node performance {m[2]:.2f}, mean "
              f"alternative start {m[3]:.0f}, first alternative start {m[4]:.0f} (jobs with 2 or more)")


def _fixed(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("fig3", "fig4", "table3", "alts"))
    ap.add_argument("--reps", type=int, default=60, help="cycles per cell (seeds 7,000,000 + r)")
    ap.add_argument("--models", nargs="+", default=["calibrated", "disjoint"], choices=("calibrated", "disjoint"))
    ap.add_argument("--k", type=int, nargs="+", default=[1, 2, 5, 20], help="fig3: sub-batch counts")
    ap.add_argument("--n-css", type=int, nargs="+", default=[0, 4, 10, 16, 20], help="fig4: CSS jobs of 20")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE in every cell (TOML value)")
    args = ap.parse_args(argv)
    {"fig3": fig3, "fig4": fig4, "table3": table3, "alts": alts}[args.what](args, _fixed(args.set))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
