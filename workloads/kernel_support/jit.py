"""The numba decorators of the workloads' kernels.

``no_cfunc_wrapper``: beside each kernel numba compiles, optimises, codegens and caches a
C-callable wrapper that only a kernel passed as a first-class function value needs. No
kernel of ours is ever passed so (a plug-in is a ``numba.cfunc`` of its own, see
:mod:`workloads.kernel_support.plugins`), and the wrappers cost about 2 CPU-s of a spec's cold compilation (measured with
``python -m benchmarks.bench_compile``, three alternating pairs: cluster-network-queues
27.4 -> 25.2 CPU-s, medians; ga had left them out before, for the same reason).
"""
from __future__ import annotations

import numba

kernel = numba.njit(cache=True, no_cfunc_wrapper=True)
inline_kernel = numba.njit(cache=True, no_cfunc_wrapper=True, inline="always")
"""Inlined by numba into each caller (on its IR, before typing): for a small helper with few
call sites, where a call would cost more than its copies cost to compile."""

kernel_without_refcount = numba.njit(cache=True, _nrt=False, no_cfunc_wrapper=True)
"""For a kernel that never allocates (the cluster's hot helpers): compiled without numba's
reference counting (``_nrt=False``). With it, a small helper that takes arrays and branches
keeps an atomic incref/decref per array per call that numba's pruning pass does not remove,
30-130 ns per call, which made the cluster simulator 30x slower. A kernel that allocates
needs reference counting: ``kernel``."""
inline_without_refcount = numba.njit(cache=True, _nrt=False, no_cfunc_wrapper=True, inline="always")
"""``kernel_without_refcount``, inlined into each caller."""
