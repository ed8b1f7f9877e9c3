"""A test workload: mm1 whose Dask worker process is frozen (SIGSTOP) the first time a
batch holds a marked seed, and never continued: a node that hangs.

The replication process (a child of the worker) sends the signal to its parent and writes
the worker's pid into the marker file (param ``marker``), which also makes the freeze
happen once only, so the batch rerun on another worker succeeds. The test kills the pid
at its end. Only for the Dask routes: elsewhere the parent is the client itself.
"""
from __future__ import annotations

import os
import signal

import numpy as np

from schedsweep.workloads import mm1
from schedsweep.workloads._contract import Param

PARAMS = mm1.PARAMS + (Param("marker", "str", "", "file holding the frozen worker's pid, made at the freeze"),
                       Param("freeze_at_seed_mod", "int", 7, "freeze on the first seed divisible by this", low=1))
METRICS = mm1.METRICS
REASONS = mm1.REASONS


def run_batch(params, seeds):
    marker = params["marker"]
    if marker and any(int(s) % params["freeze_at_seed_mod"] == 0 for s in seeds):
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # once, whatever the worker
        except FileExistsError:
            pass
        else:
            os.write(fd, str(os.getppid()).encode())
            os.close(fd)
            os.kill(os.getppid(), signal.SIGSTOP)
    return mm1.run_batch({k: params[k] for k in ("arrival_rate", "service_rate", "customers", "warmup")},
                         np.asarray(seeds))
