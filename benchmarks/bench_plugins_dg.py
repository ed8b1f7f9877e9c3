"""Plug-ins in the desktop_grid, slot_selection, ga and cyclic kernels: speed and compile cost.

Three measurements, each in one run (results and commands in ``benchmarks/plugins_other.md``):

``speed`` (default): the built-in Gcµ against Gcµ written as a plug-in rule
(``schedsweep.workloads.desktop_grid.plugins:gcmu``, called through a numba first-class function) and
against the same rule passed as an ``@njit`` dispatcher (numba then specialises, and inlines
into, the whole kernel), on the same replications, interleaved; each replication is timed
``--repeat`` times and the fastest kept (the machine is shared). tasks/s = tasks that arrived
/ wall seconds of the whole replication. ``--others`` adds the other three workloads' built-in
against its own plug-in re-writing (min_cost window criterion, gmean objective, min_time VO
criterion), same seeds, wall time per replication.

``compile``: fresh processes with an empty numba cache. Process 1 runs a built-in-only spec
cold, then the same with the plug-in re-writing of the built-in (the plug-in variant of the
kernel: compiled once, then cached on disk). Process 2, same cache: a plug-in never seen
before (a new module file), i.e. what a user pays for a new rule; then the dispatcher variant
(not cacheable: numba does not cache a kernel specialised on a dispatcher). CPU seconds of
the first call minus a second call.

``calls``: the cost of one call, by signature: a loop calling the plug-in ``--calls`` times
through the first-class function against the same function compiled into the loop.

    python benchmarks/bench_plugins_dg.py --seeds 1 2 3 --horizon 4000 --repeat 3 --others
    python benchmarks/bench_plugins_dg.py compile --workloads desktop_grid slot_selection cyclic ga
    python benchmarks/bench_plugins_dg.py calls
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import results  # noqa: E402

GCMU = "schedsweep.workloads.desktop_grid.plugins:gcmu"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ------------------------------------------------------------------ speed

def _dg_params(horizon: float, policy: str) -> dict:
    from schedsweep.workloads import desktop_grid as dg

    # System A at the alpha2 arrivals (95% of the LP capacity), failures and partial CPUs
    return dg.default_params(system="A", case="alpha2:0.01/1+partial", horizon=horizon, warmup=0.1 * horizon,
                             policy=policy)


_DISPATCHER: list = []


def _with_dispatcher(fn):
    """Run ``fn()`` with the plug-in resolver returning the rule as an @njit dispatcher
    (one dispatcher for the whole run: each new one would compile the kernel again)."""
    import numba

    from schedsweep.workloads import desktop_grid as dg
    from schedsweep.workloads.desktop_grid import plugins

    if not _DISPATCHER:
        class _Disp:
            cfunc = numba.njit(plugins.gcmu)
        _DISPATCHER.append(_Disp)
    real = dg.resolve
    dg.resolve = lambda path, point: _DISPATCHER[0]
    try:
        return fn()
    finally:
        dg.resolve = real


def speed(seeds: list[int], horizon: float, repeat: int) -> list[dict]:
    from schedsweep.workloads import desktop_grid as dg

    modes = {"built-in gcmu": ("gcmu", False), "plug-in gcmu (FunctionType)": (GCMU, False),
             "plug-in gcmu (@njit dispatcher, inlined)": (GCMU, True)}
    for policy, disp in modes.values():   # compile (or load) everything first
        run = lambda: dg.simulate(_dg_params(50.0, policy), 0)  # noqa: E731
        _with_dispatcher(run) if disp else run()
    best = {name: {} for name in modes}
    out = {}
    for _ in range(repeat):
        for seed in seeds:
            for name, (policy, disp) in modes.items():
                run = lambda: dg.simulate(_dg_params(horizon, policy), seed)  # noqa: E731
                t0 = time.perf_counter()
                res = _with_dispatcher(run) if disp else run()
                wall = time.perf_counter() - t0
                best[name][seed] = min(wall, best[name].get(seed, np.inf))
                out.setdefault(name, {})[seed] = res
    ref = out["built-in gcmu"]
    rows = []
    for name in modes:
        tasks = sum(out[name][s]["tasks_arrived"] for s in seeds)
        same = all(out[name][s]["W"] == ref[s]["W"] and out[name][s]["events"] == ref[s]["events"] for s in seeds)
        wall = sum(best[name].values())
        rows.append({"mode": name, "tasks": tasks, "wall_s": wall, "tasks_per_s": tasks / wall, "same_W": same})
    base = rows[0]["wall_s"]
    for r in rows:
        r["time_ratio"] = r["wall_s"] / base
    return rows


def others(seeds: list[int], repeat: int) -> list[dict]:
    from schedsweep.workloads import cyclic, ga, slot_selection as ss

    p_ss = {p.name: p.default for p in ss.PARAMS}
    p_ga = {p.name: p.default for p in ga.PARAMS}
    p_ga.update(density=2.0, periods=2, max_generations=300)
    p_cy = {p.name: p.default for p in cyclic.PARAMS}
    cases = [("slot_selection", ss, p_ss, "algorithm", "min_cost", "schedsweep.workloads.slot_selection.plugins:min_cost", "cost"),
             ("ga", ga, p_ga, "objective", "gmean", "schedsweep.workloads.ga.plugins:gmean", "gmean_length"),
             ("cyclic", cyclic, p_cy, "strategy", "min_time", "schedsweep.workloads.cyclic.plugins:min_time", "cost")]
    rows = []
    arr = np.array(seeds, np.uint64)
    for name, mod, params, key, builtin, plugin, check in cases:
        walls, outs = {}, {}
        for value in (builtin, plugin):
            mod.run_batch({**params, key: value}, arr[:1])   # load / compile
        for _ in range(repeat):
            for value in (builtin, plugin):
                t0 = time.perf_counter()
                outs[value] = mod.run_batch({**params, key: value}, arr)
                walls[value] = min(walls.get(value, np.inf), time.perf_counter() - t0)
        same = np.array_equal(outs[builtin][check], outs[plugin][check], equal_nan=True)
        rows.append({"workload": name, "built-in": builtin, "builtin_s_per_rep": walls[builtin] / len(seeds),
                     "plugin_s_per_rep": walls[plugin] / len(seeds), "time_ratio": walls[plugin] / walls[builtin],
                     "same": f"{check}: {bool(same)}"})
    return rows


# ------------------------------------------------------------------ compile

# per workload: (params of a small replication, choice parameter, built-in, its plug-in, a new plug-in's source)
NEW_PLUGIN = {
    "desktop_grid": ("policy", "gcmu", GCMU, '''
def rule(j, now, waiting, head_time, head_seq, mu, view, elig):
    best, best_key = -1, 0.0
    for i in range(waiting.shape[0]):
        if waiting[i] > 0 and elig[i, j] != 0:
            key = mu[i, j] * view[j] * (now - head_time[i]) * (1.0 + 0.01 * waiting[i])
            if best < 0 or key > best_key:
                best, best_key = i, key
    return best
'''),
    "slot_selection": ("algorithm", "min_cost", "schedsweep.workloads.slot_selection.plugins:min_cost", '''
def rule(t, window, node_len, node_cost, cand_end):
    longest, cost = 0.0, 0.0
    for q in range(window.shape[0]):
        longest = max(longest, node_len[window[q]])
        cost += node_cost[window[q]]
    return cost + 2.0 * (t + longest)
'''),
    "ga": ("objective", "gmean", "schedsweep.workloads.ga.plugins:gmean", '''
def rule(body, header, start, dur, prio, width, proc_job, speed, ready, period_end):
    num, den = 0.0, 0.0
    for j in range(start.shape[0]):
        num += prio[j] * (start[j] + dur[j] - period_end) ** 2
        den += prio[j]
    return num / den
'''),
    "cyclic": ("strategy", "min_time", "schedsweep.workloads.cyclic.plugins:min_time", '''
def rule(a, time, cost, start, runtime, proc_time, budget):
    return start[a] + runtime[a] + 0.1 * cost[a] / budget[a]
'''),
}


def _small_params(workload: str) -> dict:
    from schedsweep import workloads

    module = workloads.get(workload)
    p = {prm.name: prm.default for prm in module.PARAMS}
    if workload == "desktop_grid":
        p.update(horizon=200.0, warmup=20.0)
    elif workload == "ga":
        p.update(density=1.0, periods=1, max_generations=20)
    elif workload == "cyclic":
        p.update(jobs=10)
    return p


def _first_minus_second(module, params: dict) -> float:
    seed = np.array([12345], np.uint64)
    a = _cpu()
    module.run_batch(params, seed)
    b = _cpu()
    module.run_batch(params, seed)
    c = _cpu()
    return (b - a) - (c - b)


def compile_child(step: str, workload: str, folder: str) -> None:
    """In a fresh process: the compile CPU of ``step`` (see :func:`compile_costs`)."""
    from schedsweep import workloads
    from schedsweep.workloads.kernel_support.plugins import point_of, resolve

    module = workloads.get(workload)
    key, builtin, plugin, _ = NEW_PLUGIN[workload]
    params = _small_params(workload)
    out = {}
    if step == "known":
        out["builtin_cold"] = _first_minus_second(module, {**params, key: builtin})
        out["plugin_kernel_cold"] = _first_minus_second(module, {**params, key: plugin})
    else:
        sys.path.insert(0, folder)
        path = "newrule:rule"
        a = _cpu()
        resolve(path, point_of(module, key))
        out["new_plugin_compile"] = _cpu() - a
        out["new_plugin_first_run_extra"] = _first_minus_second(module, {**params, key: path})
        if workload == "desktop_grid":
            out["dispatcher_kernel_cold"] = _with_dispatcher(lambda: _first_minus_second(module, {**params,
                                                                                                   key: path}))
    print(json.dumps(out))


def compile_costs(workload: str) -> dict:
    """Process 1 (empty cache): built-in cold, then its plug-in variant; process 2 (that cache): a new plug-in."""
    out = {"workload": workload}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "newrule.py").write_text(textwrap.dedent(NEW_PLUGIN[workload][3]))
        env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp) / "cache"), "PYTHONPATH": str(ROOT)}
        for step in ("known", "new"):
            res = subprocess.run([sys.executable, __file__, "--child", step, workload, tmp], env=env,
                                 capture_output=True, text=True, cwd=ROOT)
            if res.returncode:
                raise SystemExit(f"{workload} {step}: {res.stderr.strip().splitlines()[-1]}")
            out.update(json.loads(res.stdout.strip().splitlines()[-1]))
    return out


# ------------------------------------------------------------------ calls

def calls(n: int) -> list[dict]:
    """ns per call through the first-class function vs the same function inlined, per signature."""
    import numba

    from schedsweep.workloads.kernel_support.plugins import PluginPoint, resolve
    from schedsweep.workloads.cyclic import plugins as cy
    from schedsweep.workloads.desktop_grid import plugins as dgp
    from schedsweep.workloads.ga import plugins as gap
    from schedsweep.workloads.slot_selection import plugins as ssp

    N, M = 4, 28
    rng = np.random.default_rng(0)
    waiting = rng.integers(0, 3, N)
    head = rng.random(N)
    seq = np.arange(N)
    mu = rng.random((N, M))
    view = rng.random(M)
    elig = np.ones((N, M), np.uint8)
    window = np.arange(5)
    node = rng.random(100)
    J = 40
    body = rng.permutation(J)
    header = np.full(8, J // 8)
    start, dur = rng.random(J), rng.random(J) + 0.5
    prio = rng.integers(1, 4, J)
    width = np.ones(J, np.int64)
    speed, ready = rng.random(8) + 1, rng.random(8)
    alt = rng.random(30) + 0.1

    # the state is passed in, as in the kernels (globals would be frozen into the loop)
    @numba.njit
    def loop_dg(f, n, waiting, head, seq, mu, view, elig):
        s = 0
        for k in range(n):
            s += f(k % M, 10.0 + k, waiting, head, seq, mu, view, elig)
        return s

    @numba.njit
    def loop_ss(f, n, window, node):
        s = 0.0
        for k in range(n):
            s += f(float(k), window, node, node, node)
        return s

    @numba.njit
    def loop_ga(f, n, body, header, start, dur, prio, width, speed, ready):
        s = 0.0
        for k in range(n):
            s += f(body, header, start, dur, prio, width, body, speed, ready, float(k))
        return s

    @numba.njit
    def loop_cy(f, n, alt):
        s = 0.0
        for k in range(n):
            s += f(k % 30, alt, alt, alt, alt, alt, alt)
        return s

    cases = [("desktop_grid dispatch (Gcmu)", loop_dg, dgp.DISPATCH, dgp.gcmu, n,
              (waiting, head, seq, mu, view, elig)),
             ("slot_selection criterion (min_cost)", loop_ss, ssp.CRITERION, ssp.min_cost, n, (window, node)),
             ("ga objective (gmean, 40 jobs on 8 units)", loop_ga, gap.OBJECTIVE, gap.gmean, n // 20,
              (body, header, start, dur, prio, width, speed, ready)),
             ("cyclic VO criterion (min_time)", loop_cy, cy.VO_CRITERION, cy.min_time, n, (alt,))]
    rows = []
    for name, loop, point, fn, count, state in cases:
        point: PluginPoint
        path = f"{fn.__module__}:{fn.__name__}"
        first_class = resolve(path, point).cfunc
        inlined = numba.njit(error_model="numpy")(fn)   # as the cfunc is compiled
        times = {}
        for label, f in (("first-class", first_class), ("inlined", inlined)):
            loop(f, 10, *state)
            best = np.inf
            for _ in range(5):
                t0 = time.perf_counter()
                loop(f, count, *state)
                best = min(best, time.perf_counter() - t0)
            times[label] = best / count * 1e9
        rows.append({"signature": name, "ns_first_class": times["first-class"], "ns_inlined": times["inlined"],
                     "ns_overhead": times["first-class"] - times["inlined"]})
    return rows


# ------------------------------------------------------------------ main

def _table(rows: list[dict]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    print(" | ".join(keys))
    for r in rows:
        print(" | ".join(f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "-")) for k in keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="speed", choices=("speed", "compile", "calls"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--horizon", type=float, default=4000.0, help="desktop_grid time units per replication")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--others", action="store_true", help="speed: also slot_selection, ga, cyclic")
    parser.add_argument("--workloads", nargs="+", default=["desktop_grid"], choices=tuple(NEW_PLUGIN))
    parser.add_argument("--calls", type=int, default=20_000_000)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--record", action="store_true", help="speed: write benchmarks/results/bench_plugins_dg.json")
    args = parser.parse_args()
    load_before = results.load()
    if args.child:
        compile_child(*args.child)
        return
    if args.what == "speed":
        rows = speed(args.seeds, args.horizon, args.repeat)
        _table(rows)
        figures = [(f"{r['mode']}: time over the built-in's (seeds {args.seeds}, horizon {args.horizon:g})",
                    round(r["time_ratio"], 3), "x") for r in rows[1:]]
        if args.others:
            print()
            more = others(args.seeds, args.repeat)
            _table(more)
            figures += [(f"{r['workload']} {r['built-in']} as a plug-in: time over the built-in's",
                         round(r["time_ratio"], 3), "x") for r in more]
        if args.record:
            print(results.record("bench_plugins_dg", figures, load_before,
                                 note=f"Wall per replication, the fewest of {args.repeat}, built-in and plug-in "
                                      "interleaved on the same seeds; results checked equal."))
    elif args.what == "compile":
        _table([compile_costs(w) for w in args.workloads])
    else:
        _table(calls(args.calls))


if __name__ == "__main__":
    main()
