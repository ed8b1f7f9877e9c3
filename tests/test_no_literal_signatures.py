"""No kernel is compiled for a literal argument (issue 20 item 1, compile time).

A kernel called from another kernel with a constant (``f(0)``, a module-level event code)
is typed with ``Literal[int](0)`` and compiled for it as well as for int64: one more
compilation of the callee per literal value. On 26 Nov that was 2-4 CPU-s of the
slot-selection and desktop-grid specs' cold compile (benchmarks/README.md, "cold compile").
Here the cells of three shipped specs run one replication each, and every compiled or
cache-loaded signature of every workload kernel is checked for literal argument types.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from numba import types
from numba.core.registry import CPUDispatcher

from schedsweep.pipeline.spec import load, workload_of

JOBS = Path(__file__).resolve().parents[1] / "jobs"

SPECS = [
    ("slot-selection.toml", [], None),  # every algorithm: the exact searches and CSA call kernels with constants
    ("desktop-grid-estimation-error.toml", ["params.horizon=300.0", "params.warmup=30.0"], None),
    ("cluster-network-queues.toml", ["params.jobs=30"], 2),  # packet network and SPMD: heap_push with event codes
]


def literal_signatures() -> list[str]:
    found = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("schedsweep.workloads") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, CPUDispatcher) and value.__module__ == name:
                for sig in value.signatures:
                    if any(isinstance(a, types.Literal) for a in sig):
                        found.append(f"{name}.{attr}{tuple(str(a) for a in sig)}")
    return found


@pytest.mark.parametrize("spec_name, overrides, cells", SPECS)
def test_no_kernel_is_compiled_for_a_literal_argument(spec_name, overrides, cells):
    spec = load(JOBS / spec_name, overrides)
    module = workload_of(spec)
    for k, (_, params) in enumerate(spec.cells()):
        if cells is not None and k >= cells:
            break
        module.run_batch(params, np.array([12345], np.uint64))
    assert literal_signatures() == []
