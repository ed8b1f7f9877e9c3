"""The numba decorator of the hot helpers.

``kernel`` functions never allocate, so they are compiled without numba's reference
counting (``_nrt=False``). With it, a small helper that takes arrays and branches keeps
an atomic incref/decref per array per call that numba's pruning pass does not remove;
on this machine that cost 30–130 ns per call and made the simulator 30× slower.
Functions that allocate (``heap_new``, the wrappers) are ``allocating``: with reference
counting. All three leave out the C-callable wrapper (see :mod:`workloads._jit`).
"""
from __future__ import annotations

import numba

from .._jit import kernel as allocating  # noqa: F401 - the decorator of the kernels that allocate

kernel = numba.njit(cache=True, _nrt=False, no_cfunc_wrapper=True)
kernel_inline = numba.njit(cache=True, _nrt=False, no_cfunc_wrapper=True, inline="always")
