"""The numba decorators of the ga kernels: the workloads' (:mod:`workloads._jit`).

``inline_kernel`` is used more here than elsewhere: a helper with one call site in the GA's
path is inlined there by numba (on its IR, before typing) instead of compiled as a kernel of
its own, because numba optimises and codegens each kernel again with every kernel it calls,
so a helper compiled on its own costs its whole call tree once more. Called from Python
(tests) it is an ordinary kernel.
"""
from __future__ import annotations

from .._jit import inline_kernel, kernel  # noqa: F401 - the ga modules' decorators
