"""No kernel is compiled for a literal argument (compile time).

A kernel called from another kernel with a constant (``f(0)``, ``r = -1`` before a loop, a
module-level event code) is typed with ``Literal[int](0)`` and compiled for it as well as
for int64: one more compilation of the callee per literal value. Measured, that was 2-4
CPU-s of the slot-selection and desktop-grid specs' cold compile (benchmarks/README.md,
"cold compile"). Each case runs in a fresh process (the numba cache makes that cheap) so
that it sees exactly the kernels its own calls compiled or loaded; every signature of
every workload kernel is then checked for literal argument types.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCAN = """
import sys
from numba import types
from numba.core.registry import CPUDispatcher
found = []
for name, module in list(sys.modules.items()):
    if name.startswith("schedsweep.workloads") and module is not None:
        for attr, value in list(vars(module).items()):
            if isinstance(value, CPUDispatcher) and value.__module__ == name:
                for sig in value.signatures:
                    if any(isinstance(a, types.Literal) for a in sig):
                        found.append(name + "." + attr + str(tuple(str(a) for a in sig)))
print("\\n".join(found))
"""

SPEC_CELLS = """
import numpy as np
from schedsweep.pipeline.spec.sweep import load, workload_of
spec = load({path!r}, {overrides!r})
module = workload_of(spec)
for k, (_, params) in enumerate(spec.cells()):
    if {cells!r} is not None and k >= {cells!r}:
        break
    module.run_batch(params, np.array([12345], np.uint64))
"""

MESSAGES = """
from schedsweep.workloads.cluster import network as N, topology as T
N.simulate_messages(T.torus((4,)), [0, 1], [2, 2], [3, 3], [0.0, 0.0], t_routing=1e-7)
"""

CASES = {
    # every algorithm: the exact searches and CSA call kernels with constants
    "slot-selection": SPEC_CELLS.format(path=str(ROOT / "jobs/slot-selection.toml"), overrides=[], cells=None),
    "desktop-grid": SPEC_CELLS.format(path=str(ROOT / "jobs/desktop-grid-estimation-error.toml"),
                                      overrides=["params.horizon=300.0", "params.warmup=30.0"], cells=None),
    # packet network and SPMD: heap_push with event codes
    "cluster-network": SPEC_CELLS.format(path=str(ROOT / "jobs/cluster-network-queues.toml"),
                                         overrides=["params.jobs=30"], cells=2),
    # bare messages: room() and inject() with constants
    "network-messages": MESSAGES,
    # cyclic's alternatives call slot selection's scans
    "cyclic": SPEC_CELLS.format(path=str(ROOT / "jobs/cyclic-frsm-vs-css.toml"), overrides=["params.jobs=10"],
                                cells=None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_kernel_is_compiled_for_a_literal_argument(case):
    out = subprocess.run([sys.executable, "-c", CASES[case] + SCAN], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert [line for line in out.stdout.splitlines() if line] == []
