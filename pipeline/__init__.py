"""schedsweep's experiment pipeline: specs → Dask → resumable zarr store → statistics.

Python entry points: :func:`run`, :func:`open_store`, :func:`summary`.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .execute import run  # noqa: E402
from .spec import Spec, SpecError, load  # noqa: E402
from .stats import describe, paired, ratio, summary  # noqa: E402
from .store import StoreError, open_store  # noqa: E402

__all__ = ["run", "open_store", "summary", "describe", "paired", "ratio", "load", "Spec", "SpecError",
           "StoreError", "__version__"]
