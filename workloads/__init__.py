"""Simulation workloads. A workload is a module ``schedsweep.workloads.<name>`` (or a subpackage)
whose name does not start with ``_`` and that defines ``PARAMS``, ``METRICS``, ``REASONS``
and ``run_batch``; it is found by its name, no registration list to edit.
"""
from __future__ import annotations

if __name__ != "schedsweep.workloads":  # e.g. `import workloads` with a checkout's root on sys.path
    # Under a second name, numba would cache kernels under that name too, and every later run
    # of the installed package would fail to load them (ModuleNotFoundError from numba's cache).
    raise ImportError(f"import schedsweep.workloads, not {__name__}: the folders of a schedsweep checkout are "
                      "packages of schedsweep (pip install -e . or put the checkout's root on sys.path)")

import importlib
import pkgutil
from types import ModuleType

from ._contract import Metric, Param, substream_seeds, substreams
from .kernel_support.numba_cache import drop_stale_caches

drop_stale_caches()  # before any kernel module is imported

__all__ = ["Metric", "Param", "get", "names", "substreams", "substream_seeds", "UnknownWorkload"]

_REQUIRED = ("PARAMS", "METRICS", "REASONS", "run_batch")


class UnknownWorkload(KeyError):
    pass


def _is_workload(module: ModuleType) -> bool:
    return all(hasattr(module, attr) for attr in _REQUIRED)


def names() -> list[str]:
    """Names of every workload in this package, sorted."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{__name__}.{info.name}")
        except ImportError:
            continue
        if _is_workload(module):
            found.append(info.name)
    return sorted(found)


def get(name: str) -> ModuleType:
    """The workload module called ``name``; :class:`UnknownWorkload` if there is none.

    A dotted name (``mylab.models.queue``) imports any module that meets the contract, so
    a researcher can sweep a model of their own without adding it to this package.
    """
    dotted = "." in name
    if not all(part.isidentifier() for part in name.split(".")) or (not dotted and name.startswith("_")):
        raise UnknownWorkload(name)
    module_name = name if dotted else f"{__name__}.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise UnknownWorkload(name) from None
        raise
    if not _is_workload(module):
        raise UnknownWorkload(name)
    return module
