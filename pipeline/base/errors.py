"""The errors the CLI turns into one line for the user.

They live apart from the modules that raise them so that ``schedsweep --help`` and other
quick commands can catch them without importing xarray, zarr or numba first."""
from __future__ import annotations


class SpecError(ValueError):
    """A sweep spec that cannot run; the message is meant for the user as it is."""


class QueryError(ValueError):
    """A selection, metric or baseline that the store does not have; meant for the user."""


class StoreError(RuntimeError):
    """The store cannot be used as asked (other spec, locked, not a store)."""
