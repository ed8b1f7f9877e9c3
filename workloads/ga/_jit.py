"""The numba decorator of the ga kernels.

``no_cfunc_wrapper``: numba compiles, beside each kernel, a C-callable wrapper that only a
kernel passed as a first-class function value needs. No ga kernel is ever passed so (a
plug-in objective is a ``numba.cfunc`` of its own), and the wrappers cost about 2 CPU-s of
a spec's cold compilation (``python -m benchmarks.bench_compile``).
"""
from __future__ import annotations

import numba

kernel = numba.njit(cache=True, no_cfunc_wrapper=True)
inline_kernel = numba.njit(cache=True, no_cfunc_wrapper=True, inline="always")
"""A helper with one call site in the GA's path, inlined there by numba (on its IR, before
typing) instead of compiled as a kernel of its own: numba optimises and codegens each
kernel again with every kernel it calls, so a helper compiled on its own costs its whole
call tree once more. Called from Python (tests) it is an ordinary kernel."""
