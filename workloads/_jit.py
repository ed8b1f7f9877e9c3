"""The numba decorators of the workloads' kernels.

``no_cfunc_wrapper``: beside each kernel numba compiles, optimises, codegens and caches a
C-callable wrapper that only a kernel passed as a first-class function value needs. No
kernel of ours is ever passed so (a plug-in is a ``numba.cfunc`` of its own, see
:mod:`._plugins`), and the wrappers cost about 2 CPU-s of a spec's cold compilation (measured with
``python -m benchmarks.bench_compile``, three alternating pairs: cluster-network-queues
27.4 -> 25.2 CPU-s, medians; ga had left them out before, for the same reason).
"""
from __future__ import annotations

import numba

kernel = numba.njit(cache=True, no_cfunc_wrapper=True)
inline_kernel = numba.njit(cache=True, no_cfunc_wrapper=True, inline="always")
"""Inlined by numba into each caller (on its IR, before typing): for a small helper with few
call sites, where a call would cost more than its copies cost to compile."""
