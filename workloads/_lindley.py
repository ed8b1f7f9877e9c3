"""The numba kernel of :mod:`.mm1` (kept apart so that declaring the workload does not import numba)."""
from __future__ import annotations

import numpy as np

from .kernel_support.jit import kernel


@kernel
def lindley(interarrival: np.ndarray, service: np.ndarray, warmup: int,
            sojourn: np.ndarray) -> tuple[float, float]:
    """Waits by the Lindley recursion W[k+1] = max(0, W[k] + S[k] - A[k+1]); ``sojourn``
    (length n - warmup) receives each kept customer's wait plus service."""
    wait = 0.0
    sum_wait = 0.0
    sum_sojourn = 0.0
    n = service.shape[0]
    for k in range(n):
        if k > 0:
            wait = max(0.0, wait + service[k - 1] - interarrival[k])
        if k >= warmup:
            sum_wait += wait
            sojourn[k - warmup] = wait + service[k]
            sum_sojourn += wait + service[k]
    kept = n - warmup
    return sum_wait / kept, sum_sojourn / kept
