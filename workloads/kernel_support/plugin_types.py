"""The numba types of plug-in signatures, and :func:`readonly` (handed on by :mod:`workloads.kernel_support.plugins`,
kept apart so that declaring a plug-in point does not import numba)."""
from __future__ import annotations

from typing import Any

from numba import types
from numba.extending import intrinsic


@intrinsic
def readonly(typingctx, arr):
    """The array ``arr`` typed read-only (no copy: the two types share one data model). A
    plug-in compiled for read-only arrays cannot write them: numba refuses at compile time."""
    if not isinstance(arr, types.Array):
        return None
    ro = arr.copy(readonly=True)

    def codegen(context, builder, sig, args):
        return args[0]

    return ro(arr), codegen


def ro_array(dtype: Any, ndim: int = 1) -> types.Array:
    """The numba type of a read-only C-contiguous array (for plug-in signatures)."""
    return types.Array(dtype, ndim, "C", readonly=True)


def rw_array(dtype: Any, ndim: int = 1) -> types.Array:
    """The numba type of a writable C-contiguous array (a plug-in's output or memory)."""
    return types.Array(dtype, ndim, "C")

