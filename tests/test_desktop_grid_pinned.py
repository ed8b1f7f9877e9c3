"""desktop_grid replications pinned bit for bit to the values of main at 0802d84: work on
the kernel's speed must not change a replication (a change of results on purpose updates
these figures and says why). Seed 7; Gcmu, LPAS_DG and FCFS; failures, a Markov CPU,
estimation errors, uniform work, resubmission order."""
from __future__ import annotations

import os

import pytest

from benchmarks.suite.desktop_grid import peer_params
from schedsweep.workloads import desktop_grid as dg


def peer(policy: str, tmp_path) -> dict:
    """The SimPy peer's system (benchmarks/suite/desktop_grid.py) at horizon 4,000."""
    return peer_params(5, 0.7, 0.002, 50.0, 4000.0, policy, os.path.join(tmp_path, "rates.csv"))


# W, W_quantiles (p50, p90, p99), utilisation as float.hex; events, resubmissions, queue_max
PINNED = {
    "peer_gcmu": (("0x1.8c00626029fd7p+3", "0x1.2a06454440580p+3", "0x1.6d089d3aea8bfp+4",
                "0x1.c5e9813b05908p+5", "0x1.cea877dc3ae4cp-1"), (34702, 216, 81)),
    "peer_lpas_dg": (("0x1.5c46e1e56870ep+2", "0x1.c287bf82e5d00p+1", "0x1.82f14e206cb80p+3",
                "0x1.e21c07ece2b8fp+4", "0x1.4d30831ba62d9p-1"), (34735, 155, 46)),
    "A_markov_gcmu": (("0x1.19cb9f7160d3bp-1", "0x1.3ac27a3dcb000p-2", "0x1.27617916aa803p+0",
                "0x1.1c2b430b7bf8ep+2", "0x1.e66718bdf0d13p-1"), (187183, 559, 162)),
    "A_lpas_dg_estimates": (("0x1.1f5cf2069a758p-3", "0x1.0f8e942382000p-4", "0x1.18f59c60015d0p-2",
                "0x1.7d419b5caa3c9p+0", "0x1.26029bbe1f7c5p-1"), (266671, 345, 29)),
    "A_fcfs_uniform": (("0x1.f4842a6f65295p-3", "0x1.12e6070858000p-3", "0x1.1492f566aa433p-1",
                "0x1.68eda02090dabp+0", "0x1.5d5a1d7d89a67p-1"), (94360, 513, 55)),
}


def _params(name: str, tmp_path) -> dict:
    return {
        "peer_gcmu": lambda: peer("gcmu", tmp_path),
        "peer_lpas_dg": lambda: peer("lpas_dg", tmp_path),
        "A_markov_gcmu": lambda: dg.default_params(system="A", case="alpha1:0.02/2+markov", horizon=1000.0,
                                                    warmup=100.0, arrival_scale=0.7),
        "A_lpas_dg_estimates": lambda: dg.default_params(system="A", case="alpha1:0.02/2+partial", policy="lpas_dg",
                                                          horizon=1000.0, estimation_error=0.3),
        "A_fcfs_uniform": lambda: dg.default_params(system="A", case="alpha1:0.05/4", policy="fcfs", horizon=500.0,
                                                     arrival_scale=0.7, work_dist="uniform",
                                                     resubmit_order="resubmission"),
    }[name]()


@pytest.mark.parametrize("name", sorted(PINNED))
def test_replication_equals_the_pinned_values(name, tmp_path):
    r = dg.simulate(_params(name, tmp_path), 7)
    floats, counts = PINNED[name]
    got = [r["W"], *r["W_quantiles"], r["utilisation"]]
    assert tuple(float(x).hex() for x in got) == floats
    assert (int(r["events"]), int(r["resubmissions"]), int(r["queue_max"])) == counts
