"""A test workload: mm1 whose every replication first sleeps ``sleep`` seconds, after
writing its process id into a file of the folder ``marker_dir`` (so a test knows which
replication processes are in the middle of a replication, and can check they are gone).

Used by tests/test_interrupt.py: a run stopped with Ctrl-C in the middle of replications
that would take ten minutes.
"""
from __future__ import annotations

import os
import time

import numpy as np

from schedsweep.workloads import mm1
from schedsweep.workloads._contract import Param

PARAMS = mm1.PARAMS + (Param("marker_dir", "str", "", "folder that gets a file named by the pid of each "
                                                        "replication process when it starts a batch"),
                       Param("sleep", "float", 0.0, "seconds each batch sleeps first", low=0.0))
METRICS = mm1.METRICS
REASONS = mm1.REASONS


def run_batch(params, seeds):
    if params["marker_dir"]:
        open(os.path.join(params["marker_dir"], str(os.getpid())), "w").close()
    time.sleep(params["sleep"])
    return mm1.run_batch({k: params[k] for k in ("arrival_rate", "service_rate", "customers", "warmup")},
                         np.asarray(seeds))
