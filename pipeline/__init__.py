"""schedsweep's experiment pipeline: specs → Dask → resumable zarr store → statistics.

Python entry points: :func:`run`, :func:`open_store`, :func:`summary`. They are loaded on
first use, so that workers importing ``pipeline.execution.tasks`` and quick CLI calls do not pay
for xarray, zarr and scipy.
"""
from __future__ import annotations

if __name__ != "schedsweep.pipeline":  # e.g. `import pipeline` with a checkout's root on sys.path
    # Under a second name, numba would cache kernels under that name too, and every later run
    # of the installed package would fail to load them (ModuleNotFoundError from numba's cache).
    raise ImportError(f"import schedsweep.pipeline, not {__name__}: the folders of a schedsweep checkout are "
                      "packages of schedsweep (pip install -e . or put the checkout's root on sys.path)")

import importlib
from typing import Any

from schedsweep import __version__  # one version: the package's

_EXPORTS = {
    "run": "execution.execute", "load": "spec.sweep", "Spec": "spec.sweep", "SpecError": "spec.sweep",
    "open_store": "store.export", "StoreError": "store.zarrstore", "open_stores": "read.across",
    "align": "read.across", "compare": "read.across", "summary": "base.stats", "describe": "base.stats", "paired": "base.stats",
    "ratio": "base.stats",
}
__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
