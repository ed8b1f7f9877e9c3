"""schedsweep's experiment pipeline: specs → Dask → resumable zarr store → statistics.

Python entry points: :func:`run`, :func:`open_store`, :func:`summary`. They are loaded on
first use, so that workers importing ``pipeline.tasks`` and quick CLI calls do not pay
for xarray, zarr and scipy.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "run": "execute", "load": "spec", "Spec": "spec", "SpecError": "spec",
    "open_store": "store", "StoreError": "store",
    "summary": "stats", "describe": "stats", "paired": "stats", "ratio": "stats",
}
__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
