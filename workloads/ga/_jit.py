"""The numba decorator of the ga kernels.

``no_cfunc_wrapper``: numba compiles, beside each kernel, a C-callable wrapper that only a
kernel passed as a first-class function value needs. No ga kernel is ever passed so (a
plug-in objective is a ``numba.cfunc`` of its own), and the wrappers cost about 2 CPU-s of
a spec's cold compilation (``python -m benchmarks.bench_compile``).
"""
from __future__ import annotations

import numba

kernel = numba.njit(cache=True, no_cfunc_wrapper=True)
