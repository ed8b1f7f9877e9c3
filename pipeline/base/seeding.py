"""Seeds with common random numbers (docs/contracts.md, "Seeds and common random numbers").

Replication ``r`` gets ``SeedSequence(root, spawn_key=(r,))``; a dimension named in
``independent`` adds its index to the spawn key, so its cells get their own streams.
The seed handed to a workload is that sequence's first 64-bit word.
"""
from __future__ import annotations

import numpy as np


def replication_seed(root: int, replication: int, independent_index: tuple[int, ...] = ()) -> np.uint64:
    seq = np.random.SeedSequence(root, spawn_key=(replication, *independent_index))
    return seq.generate_state(1, np.uint64)[0]


def replication_seeds(root: int, start: int, stop: int, independent_index: tuple[int, ...] = ()) -> np.ndarray:
    """Seeds of replications ``start … stop-1`` for a cell with the given independent indices."""
    return np.array([replication_seed(root, r, independent_index) for r in range(start, stop)], dtype=np.uint64)


def independent_index(dim_names: list[str], independent: tuple[str, ...], cell_index: tuple[int, ...]) -> tuple[int, ...]:
    """The part of a cell's index that joins the spawn key, in the spec's dimension order."""
    return tuple(i for name, i in zip(dim_names, cell_index) if name in independent)
