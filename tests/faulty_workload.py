"""A test workload: mm1, except that the replication whose seed has ``fault_key`` as its
low 31 bits hangs, kills its process or segfaults (``fault``).

Used by tests/test_faults.py as ``workload = "tests.faulty_workload"``. The hang blocks
SIGINT and SIGTERM and sleeps, so only a SIGKILL ends it (like a numba kernel that holds
the GIL, without burning a core while the test waits).
"""
from __future__ import annotations

import os
import signal
import time

import numpy as np

from workloads import mm1
from workloads._contract import Param

KEY_BITS = 2 ** 31

PARAMS = mm1.PARAMS + (
    Param("fault", "str", "none", "what the marked replication does", choices=("none", "hang", "exit", "segfault")),
    Param("fault_key", "int", 0, "seed % 2**31 of the marked replication", low=0),
)
METRICS = mm1.METRICS
REASONS = mm1.REASONS


def key(seed: int) -> int:
    """The ``fault_key`` that marks the replication with this seed."""
    return int(seed) % KEY_BITS


def run_batch(params, seeds):
    if params["fault"] != "none" and any(key(s) == params["fault_key"] for s in seeds):
        _misbehave(params["fault"])
    return mm1.run_batch({k: params[k] for k in ("arrival_rate", "service_rate", "customers", "warmup")},
                         np.asarray(seeds))


def _misbehave(fault: str) -> None:
    if fault == "hang":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        while True:
            time.sleep(3600)
    if fault == "exit":
        os._exit(3)
    if fault == "segfault":
        import ctypes
        import faulthandler

        faulthandler.disable()  # the test output needs no C stack dump
        ctypes.string_at(0)  # reads address 0: SIGSEGV
