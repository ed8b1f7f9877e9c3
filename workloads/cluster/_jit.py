"""The numba decorator of the hot helpers.

``kernel`` functions never allocate, so they are compiled without numba's reference
counting (``_nrt=False``). With it, a small helper that takes arrays and branches keeps
an atomic incref/decref per array per call that numba's pruning pass does not remove;
on this machine that cost 30–130 ns per call and made the simulator 30× slower.
Functions that allocate (``heap_new``, the wrappers) stay plain ``numba.njit``.
"""
from __future__ import annotations

import numba

kernel = numba.njit(cache=True, _nrt=False)
kernel_inline = numba.njit(cache=True, _nrt=False, inline="always")
