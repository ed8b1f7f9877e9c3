"""Plug-ins in the cluster kernel: speed against the built-ins, compile time, call cost.

    python -m benchmarks.bench_plugins                 # every part
    python -m benchmarks.bench_plugins --part trace    # EASY/FCFS as plug-ins on the full CTC-SP2 trace
    python -m benchmarks.bench_plugins --part compile  # cold compile: a new plug-in, the plug-in kernel
    python -m benchmarks.bench_plugins --part calls    # ns per plug-in call (micro-benchmark)
    python -m benchmarks.bench_plugins --part mechanisms   # dispatcher argument vs first-class function

Times are CPU seconds of this thread (``time.thread_time``), best of ``--repeats``;
compile times are the CPU of a fresh process (``getrusage``), so other processes on a
shared machine change them less than wall time. Results: ``benchmarks/plugins.md``.
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

from benchmarks import results
from benchmarks.outside import Missing, full_trace, skip_without

CTC = "CTC-SP2-1996-3.1-cln"   # a full log of the trace cache (benchmarks/outside.py)
BUILTIN = "schedsweep.workloads.cluster.plugin_builtins:"
ROOT = Path(__file__).resolve().parent.parent


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---------------------------------------------------------------- trace
def trace(path: str, repeats: int) -> list[tuple[str, float, str]]:
    """Built-in and plug-in queue policies on the same parsed trace, in this process; the
    figures to record: plug-in time over the built-in's, and start mismatches."""
    import numpy as np

    from schedsweep.workloads import cluster

    p = cluster._with_defaults({"source": "swf", "trace": path})
    f, seed = cluster.flow(p, 1)

    def run(queue: str):
        if ":" in queue:
            return cluster._schedule_plugins(dict(p, queue=queue), f, seed)[0]
        return cluster.simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores,
                                f.node_mem, f.node_disk, f.node_speed, queue, "first_fit", seed)

    def best(queue: str):
        times = []
        for _ in range(repeats + 1):          # the first call compiles or loads: not counted
            t0 = time.thread_time()
            out = run(queue)
            times.append(time.thread_time() - t0)
        return out, min(times[1:])

    print(f"{Path(path).name}: {f.submit.size} jobs, best of {repeats} (CPU s of the kernel call)")
    print("| policy | built-in s | built-in jobs/s | plug-in s | plug-in jobs/s | plug-in / built-in time | "
          "start mismatches |")
    print("|---|---|---|---|---|---|---|")
    figures = []
    for name in ("easy", "fcfs"):
        (r0, t0), (r1, t1) = _pair(best, name, BUILTIN + name)
        mism = int(np.sum(~((r0.start == r1.start) | (np.isnan(r0.start) & np.isnan(r1.start)))))
        n = f.submit.size
        print(f"| {name} | {t0:.4f} | {n / t0:,.0f} | {t1:.4f} | {n / t1:,.0f} | {t1 / t0:.2f} | {mism} |")
        what = f"{name.upper()} as a plug-in on {Path(path).name} ({n:,} jobs)"
        figures += [(f"{what}: time over the built-in's (best of {repeats})", round(t1 / t0, 3), "x"),
                    (f"{what}: start times differing from the built-in's", mism, "")]
    return figures


def _pair(best, a: str, b: str):
    """Time a and b interleaved (a, b, a, b): drifting load affects both alike."""
    ra, ta = best(a)
    rb, tb = best(b)
    ra2, ta2 = best(a)
    rb2, tb2 = best(b)
    return (ra, min(ta, ta2)), (rb, min(tb, tb2))


# ---------------------------------------------------------------- compile
COMPILE_CHILD = textwrap.dedent('''
    import json, resource, sys, time
    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
    t0 = cpu()
    from schedsweep.workloads import cluster
    from schedsweep.workloads.kernel_support import plugins as _plugins
    imports = cpu() - t0
    sys.path.insert(0, sys.argv[1])
    t0 = cpu()
    _plugins.resolve(sys.argv[2], _plugins.point_of(cluster, "queue"))
    plugin = cpu() - t0
    p = dict(jobs=200, nodes=16, queue=sys.argv[2])
    t0 = cpu(); cluster.schedule(p, 1); first = cpu() - t0
    t0 = cpu(); cluster.schedule(p, 1); second = cpu() - t0
    print(json.dumps(dict(imports=imports, plugin=plugin, first_run=first - second)))
''')

NEW_PLUGIN = textwrap.dedent('''
    from schedsweep.workloads.cluster.plugin_api import fits_now, shadow

    def policy(now, queue, running, run_end, jobs, nodes, memory):
        """Shortest estimate first, EASY backfilling (a plug-in never compiled before)."""
        first = 0
        for k in range(1, queue.size):
            if jobs.estimate[queue[k]] < jobs.estimate[queue[first]]:
                first = k
        head = queue[first]
        if fits_now(jobs, nodes, head):
            return first
        t_shadow, extra = shadow(running, run_end, jobs, nodes, head)
        for k in range(queue.size):
            j = queue[k]
            if k != first and fits_now(jobs, nodes, j) and (now + jobs.estimate[j] <= t_shadow
                                                            or jobs.cores[j] <= extra):
                return k
        return -1
''')


def compile_times() -> list[tuple[str, float, str]]:
    """A fresh process per row: with an empty numba cache (the plug-in kernel compiles once
    per machine or shared cache) and with a warm one (what every later plug-in costs)."""
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "fresh_plugins"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "mine.py").write_text(NEW_PLUGIN)
        cache = Path(tmp) / "numba-cache"
        env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
        print("| numba cache | imports CPU s | compile the plug-in alone CPU s | first run minus second CPU s "
              "(kernel compile or cache load) |")
        print("|---|---|---|---|")
        figures = []
        for label in ("empty (cold)", "warm (kernel cached; the plug-in is new to the process)"):
            out = subprocess.run([sys.executable, "-c", COMPILE_CHILD, tmp, "fresh_plugins.mine:policy"], env=env,
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {label} | {r['imports']:.2f} | {r['plugin']:.2f} | {r['first_run']:.2f} |")
            figures += [(f"numba cache {label.split(' (')[0]}: compile a new plug-in alone", round(r["plugin"], 2),
                         "CPU-s"),
                        (f"numba cache {label.split(' (')[0]}: first run minus second (kernel compile or cache "
                         "load)", round(r["first_run"], 2), "CPU-s")]
        return figures


# ---------------------------------------------------------------- calls
CALLS = textwrap.dedent('''
    from collections import namedtuple
    import numba
    from numba import types
    from schedsweep.workloads.kernel_support.plugins import readonly, ro_array
    from schedsweep.workloads.kernel_support.jit import kernel_without_refcount as kernel
    from schedsweep.workloads.cluster.plugin_api import Jobs, Nodes, fits_now

    @kernel
    def records(fn, a, f, mem, n):
        s = 0
        for r in range(n):
            jobs = Jobs(readonly(f), readonly(a), readonly(f), readonly(f), readonly(f))
            nodes = Nodes(readonly(a), readonly(f), readonly(a), readonly(f), readonly(f), r & 3, 8, r)
            s += fn(0.0, readonly(a), readonly(a), readonly(f), jobs, nodes, mem)
        return s

    @kernel
    def inline(a, f, mem, n):
        s = 0
        for r in range(n):
            jobs = Jobs(readonly(f), readonly(a), readonly(f), readonly(f), readonly(f))
            nodes = Nodes(readonly(a), readonly(f), readonly(a), readonly(f), readonly(f), r & 3, 8, r)
            s += 0 if fits_now(jobs, nodes, readonly(a)[0]) else -1
        return s

    Big = namedtuple("Big", ["queue", "running", "run_end", "submit", "cores", "mem", "disk", "estimate",
                             "node_cores", "speed", "free_cores", "free_mem", "free_disk", "free", "total"])
    I8, F8 = ro_array(types.int64), ro_array(types.float64)
    BIG = types.NamedTuple((I8, I8, F8, F8, I8, F8, F8, F8, I8, F8, I8, F8, F8, types.int64, types.int64), Big)
    BIG_SIG = types.int64(types.float64, BIG, types.Array(types.float64, 1, "C"))

    @numba.njit(inline="always")
    def fits_big(v, j):     # plugin_api.fits_now over the one record
        n = v.cores[j]
        if n > v.free:
            return False
        if v.mem[j] == 0.0 and v.disk[j] == 0.0:
            return True
        room = 0
        for i in range(v.free_cores.size):
            k = v.free_cores[i]
            if v.mem[j] > 0.0:
                k = min(k, int(v.free_mem[i] // v.mem[j]))
            if v.disk[j] > 0.0:
                k = min(k, int(v.free_disk[i] // v.disk[j]))
            room += k
            if room >= n:
                return True
        return False

    def big_fcfs(now, v, mem):
        return 0 if fits_big(v, v.queue[0]) else -1

    @kernel
    def one_record(fn, a, f, mem, n):
        s = 0
        for r in range(n):
            v = Big(readonly(a), readonly(a), readonly(f), readonly(f), readonly(a), readonly(f), readonly(f),
                    readonly(f), readonly(a), readonly(f), readonly(a), readonly(f), readonly(f), r & 3, 8)
            s += fn(0.0, v, mem)
        return s
''')


def calls(n: int) -> list[tuple[str, float, str]]:
    """ns per call of a queue plug-in that only tests the head (built-in FCFS's work), the
    same code over the state passed two ways."""
    import importlib.util

    import numba
    import numpy as np

    from schedsweep.workloads import cluster
    from schedsweep.workloads.kernel_support import plugins as _plugins

    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "bench_calls_kernels.py"
        file.write_text(CALLS)
        spec = importlib.util.spec_from_file_location("bench_calls_kernels", file)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fcfs = _plugins.function(cluster, "queue", "fcfs")

        big = numba.cfunc(mod.BIG_SIG, error_model="numpy")(mod.big_fcfs)
        a, f, mem = np.arange(8), np.zeros(8), np.zeros(8)    # cores-only jobs
        rows = [("plug-in: queue, running, run_end, Jobs (5 arrays), Nodes (5 arrays + 3 ints)",
                 lambda k: mod.records(fcfs, a, f, mem, k)),
                ("the same, inlined (no call)", lambda k: mod.inline(a, f, mem, k)),
                ("plug-in taking one record of 13 arrays + 2 ints (not used)", lambda k: mod.one_record(big, a, f,
                                                                                                     mem, k))]
        print("| call | ns per call |")
        print("|---|---|")
        figures = []
        for label, run in rows:
            run(10)
            best = min(_timed(run, n) for _ in range(3))
            print(f"| {label} | {best / n * 1e9:.1f} |")
            figures.append((f"{label}, per call (best of 3)", round(best / n * 1e9, 1), "ns"))
        return figures


def _timed(run, n: int) -> float:
    t0 = time.thread_time()
    run(n)
    return time.thread_time() - t0


# ---------------------------------------------------------------- mechanisms
MECH = textwrap.dedent('''
    import json, resource, sys, time
    import numba, numpy as np
    from numba import types
    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
    sys.path.insert(0, sys.argv[1])
    import mech_kernel, mech_user
    a = np.arange(1000.0)
    t0 = cpu()
    if sys.argv[2] == "dispatcher":
        f = mech_user.rule
    else:
        f = numba.cfunc(mech_kernel.SIG)(mech_user.rule.py_func)
    plugin = cpu() - t0
    t0 = cpu(); mech_kernel.loop(f, a, 1); first = cpu() - t0
    n = 20000
    t0 = time.thread_time(); mech_kernel.loop(f, a, n); per = (time.thread_time() - t0) / (n * a.size) * 1e9
    hits = sum(mech_kernel.loop.stats.cache_hits.values())
    print(json.dumps(dict(plugin=plugin, kernel=first, ns=per, cache_hits=hits)))
''')
MECH_KERNEL = textwrap.dedent('''
    import numba
    from numba import types
    SIG = types.float64(types.float64, types.Array(types.float64, 1, "C", readonly=True), types.int64)

    @numba.njit(cache=True)
    def loop(f, a, n):
        s = 0.0
        for r in range(n):
            for i in range(a.size):
                s = f(s, a, i)
        return s
''')
MECH_USER = textwrap.dedent('''
    import numba

    @numba.njit(cache=True)
    def rule(s, a, i):
        return s * 0.5 + a[i]
''')


def mechanisms() -> None:
    """A small kernel taking a user function two ways, each in two fresh processes
    sharing one numba cache: does the second process find the kernel in the cache?"""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "mech_kernel.py").write_text(MECH_KERNEL)
        (Path(tmp) / "mech_user.py").write_text(MECH_USER)
        print("| mechanism | process | user function compile CPU s | kernel first call CPU s | kernel cache hits | "
              "ns per call |")
        print("|---|---|---|---|---|---|")
        for how in ("dispatcher", "cfunc"):
            env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / f"cache-{how}"), PYTHONPATH=str(ROOT))
            for k in (1, 2):
                out = subprocess.run([sys.executable, "-c", MECH, tmp, how], env=env, capture_output=True,
                                     text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                label = ("@njit dispatcher as argument (kernel specialised per function)" if how == "dispatcher"
                         else "cfunc as FunctionType (kernel compiled once per signature)")
                print(f"| {label} | {k} | {r['plugin']:.3f} | {r['kernel']:.3f} | {r['cache_hits']} | "
                      f"{r['ns']:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("trace", "compile", "calls", "mechanisms", "all"), default="all")
    ap.add_argument("--trace", default=CTC, help="SWF file, or catalogued log of the trace cache, for --part "
                                                 "trace (default CTC-SP2-1996-3.1-cln)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2_000_000, help="calls per micro-benchmark run")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_plugins.json "
                                                          "(the parts trace, compile and calls)")
    args = ap.parse_args()
    load_before = results.load()
    figures = []
    parts = ("mechanisms", "calls", "compile", "trace") if args.part == "all" else (args.part,)
    for part in parts:
        print(f"\n## {part}\n")
        if part == "trace":
            try:
                path = args.trace if Path(args.trace).is_file() else full_trace(args.trace)
            except Missing as exc:   # the full log is not here: this part measures nothing
                skip_without(exc)
                continue
            figures += trace(path, args.repeats)
        elif part == "compile":
            figures += compile_times()
        elif part == "calls":
            figures += calls(args.calls)
        else:
            mechanisms()
    if args.record:
        print(results.record("bench_plugins", figures, load_before,
                             note="Kernel times are CPU of this thread, built-in and plug-in interleaved; compile "
                                  "times the CPU of a fresh process."))


if __name__ == "__main__":
    main()
