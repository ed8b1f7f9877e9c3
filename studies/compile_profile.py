"""Where one spec's cold numba compilation goes, kernel by kernel.

Runs one replication of every cell of a spec in this process, with numba's compile events
(``numba:compile``, ``numba:run_pass``) and LLVM's steps timed, and prints: the CPU of the
first calls, the kernels and compiles, each kernel's own compile CPU (its compile minus the
kernels compiled while typing it) beside its inclusive CPU, the top compiler passes, and
the LLVM IR each kernel's final module holds before its module-level optimisation (the
kernel with every kernel it calls linked in: what LLVM optimises and codegens again per
kernel). The IR total does not depend on the machine's load, so it compares two versions
of the code better than CPU-s on a shared machine. Use an empty cache directory:

    NUMBA_CACHE_DIR=$(mktemp -d) python -m studies.compile_profile jobs/ga-time-to-solution.toml \
        sweep.density=[1] params.max_generations=20
"""
from __future__ import annotations

import sys
import time
from collections import defaultdict

from numba.core import codegen, event

_stack: list = []   # [name, start CPU, CPU of nested compiles]
_own: dict = defaultdict(float)
_incl: dict = defaultdict(float)
_count: dict = defaultdict(int)
_passes: dict = defaultdict(float)
_pstack: list = []
_ir: dict = {}
_kinds: dict = defaultdict(int)


class _Compiles(event.Listener):
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        _stack.append([f.__module__.rsplit(".", 1)[-1] + "." + f.__qualname__, time.process_time(), 0.0])

    def on_end(self, ev):
        name, t0, nested = _stack.pop()
        dt = time.process_time() - t0
        _own[name] += dt - nested
        _incl[name] += dt
        _count[name] += 1
        if _stack:
            _stack[-1][2] += dt


class _Passes(event.Listener):
    def on_start(self, ev):
        _pstack.append([ev.data["name"].split(" [")[0], time.process_time(), 0.0])

    def on_end(self, ev):
        name, t0, nested = _pstack.pop()
        dt = time.process_time() - t0
        _passes[name] += dt - nested
        if _pstack:
            _pstack[-1][2] += dt


_optimize_final_module = codegen.CPUCodeLibrary._optimize_final_module


def _record_ir(self):
    _ir[self.name] = len(str(self._final_module))
    for f in self._final_module.functions:
        if not f.is_declaration:
            kind = "CPython wrappers" if f.name.startswith("_ZN7cpython") else "other"
            _kinds[kind] += len(str(f))
    _optimize_final_module(self)


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    event.register("numba:compile", _Compiles())
    event.register("numba:run_pass", _Passes())
    codegen.CPUCodeLibrary._optimize_final_module = _record_ir
    import numpy as np

    from schedsweep.pipeline.spec.sweep import load, workload_of

    spec = load(argv[0], argv[1:])
    module = workload_of(spec)
    t0 = time.process_time()
    for _, params in spec.cells():
        module.run_batch(params, np.array([12345], np.uint64))
    total = time.process_time() - t0
    print(f"first calls: {total:.1f} CPU-s; {len(_own)} kernels, {sum(_count.values())} compiles; "
          f"LLVM IR before module optimisation: {sum(_ir.values()) / 1e3:.0f} kB "
          f"({', '.join(f'{k} {v / 1e3:.0f} kB' for k, v in _kinds.items())})")
    print("\n| own CPU s | with nested | compiles | kernel |\n|---|---|---|---|")
    for name, t in sorted(_own.items(), key=lambda x: -x[1])[:30]:
        print(f"| {t:.2f} | {_incl[name]:.2f} | {_count[name]} | {name} |")
    print("\n| CPU s | pass |\n|---|---|")
    for name, t in sorted(_passes.items(), key=lambda x: -x[1])[:6]:
        print(f"| {t:.2f} | {name} |")
    print("\n| IR kB | final module (kernel and what it calls) |\n|---|---|")
    for name, size in sorted(_ir.items(), key=lambda x: -x[1])[:20]:
        print(f"| {size / 1e3:.0f} | {name[:80]} |")


if __name__ == "__main__":
    main(sys.argv[1:])
