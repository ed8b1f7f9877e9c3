"""A test workload: mm1, except that the replication whose seed has ``hang_key`` as its
low 31 bits hangs, the one with ``exit_key`` calls ``os._exit(3)`` and the one with
``segv_key`` segfaults (-1: none); with ``hang_all`` every replication hangs. The one with ``kill_parent_key`` SIGKILLs the process
that started it (a Dask worker: as when a node fails) the first time, when the file
``marker`` does not exist yet; never use it with ``--workers 0``.

Used by tests/test_faults.py as ``workload = "tests.faulty_workload"``. The hang blocks
SIGINT and SIGTERM and sleeps, so only a SIGKILL ends it (like a numba kernel that holds
the GIL, without burning a core while the test waits).
"""
from __future__ import annotations

import os
import signal
import time

import numpy as np

from schedsweep.workloads import mm1
from schedsweep.workloads._contract import Param

KEY_BITS = 2 ** 31

FAULTS = ("hang", "exit", "segv")
PARAMS = mm1.PARAMS + tuple(Param(f"{fault}_key", "int", -1, f"seed % 2**31 of the replication that does {fault}",
                                  low=-1) for fault in FAULTS + ("kill_parent",)) + (
    Param("marker", "str", "", "file created when the parent has been killed once"),
    Param("hang_all", "bool", False, "every replication hangs"))
METRICS = mm1.METRICS
REASONS = mm1.REASONS


def key(seed: int) -> int:
    """The ``<fault>_key`` value that marks the replication with this seed."""
    return int(seed) % KEY_BITS


def run_batch(params, seeds):
    if params["hang_all"]:
        _misbehave("hang")
    keys = {key(s) for s in seeds}
    for fault in FAULTS:
        if params[f"{fault}_key"] in keys:
            _misbehave(fault)
    if params["kill_parent_key"] in keys and params["marker"] and not os.path.exists(params["marker"]):
        open(params["marker"], "w").close()
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)  # until this process follows its parent (pipeline.execution.child: PR_SET_PDEATHSIG)
    return mm1.run_batch({k: params[k] for k in ("arrival_rate", "service_rate", "customers", "warmup")},
                         np.asarray(seeds))


def _misbehave(fault: str) -> None:
    if fault == "hang":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        while True:
            time.sleep(3600)
    if fault == "exit":
        os._exit(3)
    if fault == "segv":
        import ctypes
        import faulthandler

        faulthandler.disable()  # the test output needs no C stack dump
        ctypes.string_at(0)  # reads address 0: SIGSEGV
