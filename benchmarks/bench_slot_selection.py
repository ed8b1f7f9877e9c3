"""Search time of the AEP family (slot_selection workload), and the environment calibration.

Per environment, every algorithm runs on the same slot list (after one untimed warm-up
call per algorithm in the process); a search's time is the minimum over ``--repeat``
identical runs (default 3: on a shared machine a run is often preempted, and the minimum
drops those pauses), and the figure is the median over environments, of the wall time of
the public search call (``workloads.slot_selection.search``: wrapper and kernel), in
microseconds. Growth with the number of slots m is shown by the sweeps over
nodes and interval: ``us/slot`` = median time / mean m, and a least-squares line
``time = a + b * m`` over the points of a sweep.

    python -m benchmarks.bench_slot_selection [--record]         # 100 nodes x 600
    python benchmarks/bench_slot_selection.py --sweep nodes      # 50 ... 400 nodes
    python benchmarks/bench_slot_selection.py --sweep interval   # 600 ... 3600
    python benchmarks/bench_slot_selection.py --calibration      # slots per node
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks import results
from schedsweep.workloads import slot_selection as ss
from schedsweep.workloads._contract import defaults, substreams

TARGETS_US = {"amp": 10.0, "min_cost": 25.0, "min_runtime_exact": 40.0, "min_finish_exact": 40.0,
              "csa": 500.0}


def measure(params: dict, algorithms: list[str], reps: int, seed: int,
            repeat: int = 3) -> tuple[dict[str, np.ndarray], float]:
    """Per algorithm, the search times (us) over ``reps`` environments; and the mean slot count."""
    times = {a: np.empty(reps) for a in algorithms}
    slots = np.empty(reps)
    seeds = np.random.SeedSequence(seed).generate_state(reps, np.uint64)
    for r, s in enumerate(seeds):
        env_rng, _ = substreams(s, 2)
        env = ss.environment_of(params, env_rng)
        slots[r] = env.slots
        for a in algorithms:
            runs = []
            for _ in range(repeat):
                _, algo_rng = substreams(s, 2)
                runs.append(ss.search({**params, "algorithm": a}, env, algo_rng)[1])
            times[a][r] = min(runs) * 1e6
    return times, float(slots.mean())


def table_at(params: dict, algorithms: list[str], reps: int, seed: int, repeat: int,
             record: bool = False) -> None:
    load_before = results.load()
    times, m = measure(params, algorithms, reps, seed, repeat)
    print(f"{params['nodes']} nodes x interval {params['interval']:g}: mean m = {m:.0f} slots, "
          f"{reps} environments\n")
    print("| algorithm | median us/search | p90 us | target us |")
    print("|---|---:|---:|---:|")
    for a in algorithms:
        t = times[a]
        target = TARGETS_US.get(a)
        print(f"| {a} | {np.median(t):.1f} | {np.percentile(t, 90):.1f} | "
              f"{'' if target is None else f'{target:g}'} |")
    if record:
        where = f"{params['nodes']} nodes x {params['interval']:g}, median of {reps} environments"
        figures = [(f"`{a}` search ({where})", round(float(np.median(times[a])), 2), "µs") for a in algorithms]
        print(results.record("bench_slot_selection", figures, load_before,
                             note=f"Mean {m:.0f} slots per environment; each search the fewest of {repeat} runs."))


def sweep(params: dict, dim: str, values: list, algorithms: list[str], reps: int, seed: int,
          repeat: int) -> None:
    rows = []
    for v in values:
        p = {**params, dim: type(params[dim])(v)}
        times, m = measure(p, algorithms, reps, seed, repeat)
        rows.append((v, m, {a: float(np.median(times[a])) for a in algorithms}))
    print(f"median us per search against {dim} ({reps} environments per point)\n")
    print(f"| {dim} | m | " + " | ".join(algorithms) + " |")
    print("|---:|---:|" + "---:|" * len(algorithms))
    for v, m, med in rows:
        print(f"| {v} | {m:.0f} | " + " | ".join(f"{med[a]:.1f}" for a in algorithms) + " |")
    print("\nus per slot (median time / mean m), and the line time = a + b m fitted over the points "
          "(R^2)\n")
    print(f"| {dim} | " + " | ".join(algorithms) + " |")
    print("|---:|" + "---:|" * len(algorithms))
    for v, m, med in rows:
        print(f"| {v} | " + " | ".join(f"{med[a] / m:.3f}" for a in algorithms) + " |")
    ms = np.array([r[1] for r in rows])
    fits = []
    for a in algorithms:
        y = np.array([r[2][a] for r in rows])
        b, a0 = np.polyfit(ms, y, 1)
        r2 = 1 - ((y - (a0 + b * ms)) ** 2).sum() / max(((y - y.mean()) ** 2).sum(), 1e-300)
        fits.append(f"b={b:.3f}, R²={r2:.3f}")
    print("| fit | " + " | ".join(fits) + " |")


def calibration(reps: int, seed: int) -> None:
    params = defaults(ss.PARAMS)
    print(f"mean slots per node, 100 nodes, {reps} environments per interval\n")
    print("| interval | slots/node | s.e. |")
    print("|---:|---:|---:|")
    for interval in (600.0, 1200.0, 1800.0, 2400.0, 3000.0, 3600.0):
        rng = np.random.default_rng([seed, int(interval)])
        per_node = np.array([ss.environment_of({**params, "interval": interval}, rng).slots / 100
                             for _ in range(reps)])
        print(f"| {interval:g} | {per_node.mean():.2f} | {per_node.std(ddof=1) / np.sqrt(reps):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=300, help="environments per point (default 300)")
    ap.add_argument("--seed", type=int, default=2014)
    ap.add_argument("--repeat", type=int, default=3, help="runs per search, the minimum is kept (default 3)")
    ap.add_argument("--algorithms", nargs="+", default=list(ss.ALGORITHMS), choices=ss.ALGORITHMS)
    ap.add_argument("--sweep", choices=("nodes", "interval"), help="sweep nodes or interval")
    ap.add_argument("--calibration", action="store_true", help="slots per node at interval 600 ... 3600")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_slot_selection.json "
                    "(the 100 nodes x 600 table only)")
    args = ap.parse_args()
    if args.calibration:
        calibration(args.reps, args.seed)
        return
    params = defaults(ss.PARAMS)
    started = time.perf_counter()
    if args.sweep == "nodes":
        sweep(params, "nodes", [50, 100, 200, 300, 400], args.algorithms, args.reps, args.seed, args.repeat)
    elif args.sweep == "interval":
        sweep(params, "interval", [600, 1200, 1800, 2400, 3000, 3600], args.algorithms, args.reps, args.seed, args.repeat)
    else:
        table_at(params, args.algorithms, args.reps, args.seed, args.repeat, args.record)
    print(f"\n(wall {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
