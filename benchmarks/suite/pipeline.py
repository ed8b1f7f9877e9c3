"""What the pipeline adds per task, and the cold compile of each workload's largest spec.

Per-task overhead (target <= 5 ms end to end per tiny task, 2 workers): the slope of wall time
between sweeps of ``SMALL`` and ``LARGE`` one-replication tasks of the M/M/1 model with 10
customers (its kernel costs microseconds), run with ``pipeline.run(workers=2, batch_size=1)``,
so that a sweep's fixed cost (store creation, worker start, pilot) cancels.

Cold compile (target <= 30 CPU-s per spec): a fresh interpreter with an empty
``NUMBA_CACHE_DIR`` runs one replication of every cell of the spec twice (sizes reduced); the
CPU of the first pass minus the second is what compiling cost (``benchmarks/bench_compile.py``
measures the same for every workload).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL, LARGE = 60, 300
SPEC = """name = "tiny"
workload = "mm1"
replications = 10
seed = 1
[params]
customers = 10
warmup = 0
[sweep]
arrival_rate = [{rates}]
"""


def _sweep(folder: Path, tasks: int) -> float:
    """Wall seconds of a sweep of ``tasks`` one-replication tasks (cells of 10 replications)."""
    from schedsweep import pipeline

    cells = tasks // 10
    spec = folder / f"t{tasks}.toml"
    spec.write_text(SPEC.format(rates=", ".join(f"{0.1 + 0.8 * k / cells:.4f}" for k in range(cells))))
    t0 = time.perf_counter()
    pipeline.run(spec, folder / f"t{tasks}.zarr", workers=2, batch_size=1, progress=False)
    return time.perf_counter() - t0


class PerTask:
    timeout = 300.0
    number = 1

    def setup(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        warm = Path(self.tmp.name) / "warm"
        warm.mkdir()
        _sweep(warm, 20)                                        # the kernel compiled (or its cache loaded)

    def teardown(self) -> None:
        self.tmp.cleanup()

    def track_ms_per_task(self) -> float:
        """Milliseconds of wall time per task: (large sweep - small sweep) / (LARGE - SMALL)."""
        small, large = (Path(tempfile.mkdtemp(dir=self.tmp.name)) for _ in range(2))
        return 1e3 * (_sweep(large, LARGE) - _sweep(small, SMALL)) / (LARGE - SMALL)

    track_ms_per_task.unit = "ms"


CHILD = """
import json, resource, sys
import numpy as np
from pathlib import Path
import schedsweep
from schedsweep.pipeline.spec.sweep import load, workload_of
try:
    from schedsweep.pipeline.base.shipped import folder
    jobs = folder("jobs")
except ImportError:  # older commits: the specs shipped beside the code of the wheel
    jobs = Path(schedsweep.__file__).parent / "jobs"

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

spec = load(jobs / sys.argv[1], sys.argv[2:])
module = workload_of(spec)
seed = np.array([12345], np.uint64)
first = second = 0.0
for _, params in spec.cells():
    a = cpu(); module.run_batch(params, seed); b = cpu(); module.run_batch(params, seed); c = cpu()
    first += b - a
    second += c - b
print(json.dumps({"compile": first - second}))
"""

# Per workload the spec whose cells select the most kernels, made small (as bench_compile.WORST).
WORST = {
    "cluster-network-queues.toml": ["params.jobs=30"],
    "cluster-lublin-load.toml": ["params.jobs=30"],
    "desktop-grid-estimation-error.toml": ["params.horizon=300.0", "params.warmup=30.0"],
    "ga-time-to-solution.toml": ["sweep.density=[1]", "params.max_generations=20"],
    "cyclic-frsm-vs-css.toml": ["params.jobs=10"],
    "slot-selection.toml": [],
}


def cold_compile_cpu(spec: str, overrides: list[str]) -> float:
    """CPU seconds that compiling cost in a fresh interpreter with an empty numba cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        out = subprocess.run([sys.executable, "-c", CHILD, spec, *overrides], env=env, capture_output=True,
                             text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["compile"]


class ColdCompile:
    """CPU seconds of compiling what one spec needs (one fresh process per measurement). Two of
    the six specs (20-25 CPU-s each): the packet network's, the largest, and cyclic's, the
    slowest in the last full measurement; ``bench_compile.py`` measures all six."""
    params = ["cluster-network-queues.toml", "cyclic-frsm-vs-css.toml"]
    param_names = ["spec"]
    timeout = 600.0

    def track_cpu_seconds(self, spec: str) -> float:
        return cold_compile_cpu(spec, WORST[spec])

    track_cpu_seconds.unit = "CPU-s"
