"""Compilation of the ga kernels: every kernel a run selects is served
from numba's cache in a second process, and no kernel gets a second specialisation.

The compile time itself is measured by ``python -m benchmarks.bench_compile``, not here.
Each check runs in a child process so that the kernels this pytest process already holds in
memory (and the signatures other tests gave them) cannot hide a compile.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs code in a fresh interpreter and prints, as JSON, each ga kernel numba compiled
# there (module.name -> signatures compiled); a kernel loaded from the cache is not listed.
_LISTEN = r"""
import json
from collections import defaultdict
from numba.core import event

compiled = defaultdict(list)

class _Listener(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        f = ev.data["dispatcher"].py_func
        if f.__module__.startswith("schedsweep.workloads.ga"):
            compiled[f.__module__.rsplit(".", 1)[1] + "." + f.__qualname__].append(str(ev.data["args"]))

event.register("numba:compile", _Listener())
"""

_RUN_CELLS = r"""
import numpy as np
import schedsweep.workloads.ga as ga
from schedsweep.workloads._contract import defaults

for parallel in (False, True):
    for algorithm in ga.planning.METHODS:
        params = {**defaults(ga.PARAMS), "algorithm": algorithm, "parallel": parallel, "density": 1.0,
                  "units": 8, "groups": 2, "width_high": 3, "population": 6, "max_generations": 4,
                  "stall_generations": 4, "migration_interval": 2, "islands": 2, "pm": 0.05}
        out = ga.run_batch(params, np.array([11], np.uint64))
        assert out["reason"][0] == 0, (algorithm, parallel, out["reason"])
"""

_CROSSOVER = r"""
import numpy as np
from schedsweep.workloads.ga.crossover import _crossover_general
from schedsweep.workloads.ga.instance import InstanceSettings, make_instance, period_problem
from schedsweep.workloads.ga.baselines import fcfs
from schedsweep.workloads.ga.operators import make_scratch

inst = make_instance(InstanceSettings(units=6, groups=2, density=2.0, periods=1, parallel=True, width_high=3),
                     np.random.default_rng(3))
problem, _ = period_problem(inst, 0, np.full(6, np.nan))
a = fcfs(problem, np.random.default_rng(1))
b = fcfs(problem, np.random.default_rng(2))
body, header = np.empty_like(a[0]), np.empty_like(a[1])
_crossover_general(a[0], a[1], b[0], b[1], problem.arrays(), 1, 4, body, header,
                   make_scratch(problem.n_procs, problem.n_units, problem.n_jobs))
"""


def _child(code: str, cache_dir: str | None = None) -> dict[str, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run([sys.executable, "-c", _LISTEN + code + "\nprint(json.dumps(compiled))"],
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_compiles_no_ga_kernel():
    """GA (with islands, so migration and the one-island reference run too), Backfill and
    FCFS on non-parallel and parallel jobs: after one process has run them (compiling
    whatever the cache lacked), a second one loads every kernel from the cache."""
    _child(_RUN_CELLS)
    assert _child(_RUN_CELLS) == {}


def test_no_kernel_is_compiled_twice(tmp_path):
    """A cold compile (empty cache) of the general crossover and everything it calls gives
    each kernel one signature: a count starting at a literal 0 once made numba compile
    ``_append_missing``, ``_backfill_missing`` and FCFS's ``_pick`` (now inlined in
    ``fcfs_kernel``) a second time, for ``Literal[int](0)``."""
    compiled = _child(_CROSSOVER, str(tmp_path))
    assert {"crossover._crossover_general", "crossover._append_missing",
            "crossover._backfill_missing", "baselines.fcfs_kernel", "sorting.argsort"} <= compiled.keys()
    assert {name: sigs for name, sigs in compiled.items() if len(sigs) > 1} == {}
