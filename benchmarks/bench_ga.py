#!/usr/bin/env python3
"""Benchmark of the ``ga`` workload.

``speed``: generations per second of our island GA against the DEAP peer
(``ga_islands_deap.py``, outside the repository: benchmarks/outside.py) on the peer's
problem (independent tasks, work
``U[1, 100]``, machine speeds ``U[1, 4]``, makespan), same seed, same population, run
one after the other in this process. ``islands``: best-of-run of P islands
with migration against one island with the same evaluation budget (P x Z individuals,
or Z individuals for P x the generations), paired over seeds, on the workload's default
instances.

    python benchmarks/bench_ga.py speed --peer-python /tmp/venv-peers/bin/python
    python benchmarks/bench_ga.py islands --seeds 10
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schedsweep.workloads.ga.instance import InstanceSettings, make_instance, period_problem  # noqa: E402
from schedsweep.workloads.ga.islands import GASettings, run_islands  # noqa: E402
from schedsweep.workloads.ga.model import Problem  # noqa: E402

from benchmarks import results  # noqa: E402
from benchmarks.outside import Missing, peer as peer_script, skip_without  # noqa: E402
from benchmarks.suite.ga import peer_problem  # noqa: E402  (one drawing of the peer's instance, the asv suite's)



def ours(problem: Problem, settings: GASettings, seed: int) -> dict:
    rngs = [np.random.default_rng([seed, k]) for k in range(settings.islands)]
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_islands(problem, settings, rngs)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": wall, "generations": res.generations, "gens_per_s": res.generations / wall,
            "gens_per_cpu_s": res.generations / cpu, "best_makespan": res.fitness,
            "evaluations": int(res.counters[0])}


def _peer_run(python: str, tasks: int, machines: int, islands: int, pop: int, gens: int, seed: int):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([python, str(peer_script("ga_islands_deap.py")), "--tasks", str(tasks), "--machines", str(machines), "--islands",
                          str(islands), "--pop", str(pop), "--generations", str(gens), "--seed", str(seed)],
                         capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return json.loads(out.stdout.strip().splitlines()[-1]), cpu


def peer(python: str, tasks: int, machines: int, islands: int, pop: int, gens: int, seed: int) -> dict:
    """Run the DEAP peer: its own wall-clock rate, and a CPU-time rate of the child process
    less the CPU time of the same run with 0 generations (interpreter start, imports,
    instance, initial population), measured right before."""
    _, startup = _peer_run(python, tasks, machines, islands, pop, 0, seed)
    res, cpu = _peer_run(python, tasks, machines, islands, pop, gens, seed)
    res["gens_per_cpu_s"] = gens / max(cpu - startup, 1e-9)
    return res


def speed(args) -> list[tuple[str, float, str]]:
    problem = peer_problem(args.tasks, args.machines, args.seed)
    # per-gene mutation rate equal to the peer's 0.1 per individual x 1/n per gene
    settings = GASettings(population=args.pop, pc=0.3, pm=0.1 / args.tasks, elite=0.1, islands=args.islands,
                          migration_interval=args.interval, migrants=2, stall_generations=args.generations + 1,
                          max_generations=args.generations, objective="makespan", docking="idle_genes_only")
    ours(problem, GASettings(**{**settings.__dict__, "max_generations": 20}), args.seed)  # compile / load cache
    print(f"problem: {args.tasks} tasks, {args.machines} machines, {args.islands} island(s) of {args.pop}, "
          f"{args.generations} generations, seed {args.seed}")
    print("| run | ours gen/s (wall) | DEAP gen/s (wall) | ratio | ours gen/CPU-s | DEAP gen/CPU-s | ratio "
          "| ours best makespan | DEAP best makespan |")
    print("|---|---|---|---|---|---|---|---|---|")
    wall, cpu = [], []
    for rep in range(args.repeats):
        a = ours(problem, settings, args.seed)
        b = peer(args.peer_python, args.tasks, args.machines, args.islands, args.pop, args.generations, args.seed)
        wall.append(a["gens_per_s"] / b["generations_per_s"])
        cpu.append(a["gens_per_cpu_s"] / b["gens_per_cpu_s"])
        print(f"| {rep + 1} | {a['gens_per_s']:.0f} | {b['generations_per_s']:.0f} | {wall[-1]:.1f}x "
              f"| {a['gens_per_cpu_s']:.0f} | {b['gens_per_cpu_s']:.0f} | {cpu[-1]:.1f}x "
              f"| {a['best_makespan']:.2f} | {b['best_makespan']:.2f} |")
    print(f"median ratio: {np.median(wall):.1f}x (wall), {np.median(cpu):.1f}x (CPU)")
    what = f"generations per CPU-second over DEAP's ({args.tasks} tasks, {args.machines} machines, {args.islands} " \
           f"island(s) of {args.pop}, {args.generations} generations; median of {args.repeats})"
    return [(what, round(float(np.median(cpu)), 1), "x"),
            (what.replace("CPU-second", "second of wall", 1), round(float(np.median(wall)), 1), "x")]


def islands(args) -> None:
    s = InstanceSettings(density=args.density)
    many = GASettings(population=args.pop, islands=args.islands, migration_interval=args.interval,
                      stall_generations=args.generations + 1, max_generations=args.generations,
                      objective=args.objective, docking="idle_genes_only")
    if args.budget == "population":   # one island of P x Z for G generations
        one = GASettings(**{**many.__dict__, "islands": 1, "population": args.pop * args.islands})
    else:                             # one island of Z for P x G generations
        g = args.generations * args.islands
        one = GASettings(**{**many.__dict__, "islands": 1, "max_generations": g, "stall_generations": g + 1})
    diffs = []
    print(f"P = {args.islands} islands of {args.pop} for {args.generations} generations (I_m = {args.interval}) "
          f"against 1 island of {one.population} for {one.max_generations} generations, objective "
          f"{args.objective}, period 0 of the default instance at D = {args.density}")
    print("| seed | P islands best | one island best | relative difference |")
    print("|---|---|---|---|")
    for seed in range(1, args.seeds + 1):
        rng = np.random.default_rng(seed)
        inst = make_instance(s, rng)
        problem, _ = period_problem(inst, 0, np.full(s.units, np.nan))
        streams = [np.random.default_rng([seed, k]) for k in range(args.islands)]
        a = run_islands(problem, many, streams).fitness
        b = run_islands(problem, one, streams[:1]).fitness
        if args.objective == "gmean":
            a, b = np.exp(a), np.exp(b)
        diffs.append((a - b) / b)
        print(f"| {seed} | {a:.2f} | {b:.2f} | {100 * diffs[-1]:+.2f}% |")
    d = np.array(diffs)
    half = 1.96 * d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else np.nan
    print(f"mean relative difference (islands - one) / one: {100 * d.mean():+.2f}% +- {100 * half:.2f}% "
          f"(95% normal CI, {d.size} seeds; negative = islands better)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("speed", help="generations per second against the DEAP peer")
    sp.add_argument("--tasks", type=int, default=200)
    sp.add_argument("--machines", type=int, default=20)
    sp.add_argument("--pop", type=int, default=50)
    sp.add_argument("--islands", type=int, default=1)
    sp.add_argument("--interval", type=int, default=50, help="our I_m: migration and stop-check period")
    sp.add_argument("--generations", type=int, default=500)
    sp.add_argument("--repeats", type=int, default=3)
    sp.add_argument("--seed", type=int, default=1)
    sp.add_argument("--peer-python", default=sys.executable, help="a Python with deap installed")
    sp.add_argument("--record", action="store_true", help="write benchmarks/results/bench_ga.json")
    ip = sub.add_parser("islands", help="P islands with migration against one island, same budget")
    ip.add_argument("--islands", type=int, default=4)
    ip.add_argument("--pop", type=int, default=50)
    ip.add_argument("--interval", type=int, default=50)
    ip.add_argument("--generations", type=int, default=500)
    ip.add_argument("--density", type=float, default=4.0)
    ip.add_argument("--objective", default="gmean", choices=["gmean", "makespan", "weighted_completion"])
    ip.add_argument("--seeds", type=int, default=10)
    ip.add_argument("--budget", choices=["population", "generations"], default="population",
                    help="the one island gets P x Z individuals, or P x the generations")
    args = ap.parse_args()
    try:
        if args.cmd == "speed":
            peer_script("ga_islands_deap.py")   # before our part runs: the comparison needs it
        load_before = results.load()
        figures = {"speed": speed, "islands": islands}[args.cmd](args)
        if args.cmd == "speed" and args.record:
            print(results.record("bench_ga", figures, load_before,
                                 note="Ours in this process (compiled beforehand), DEAP in a child process less "
                                      "the CPU of the same run with 0 generations; one after the other, alternating."))
    except Missing as exc:   # speed compares with the DEAP peer: without it, nothing to measure
        return skip_without(exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
