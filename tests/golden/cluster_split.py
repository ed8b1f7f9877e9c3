"""Write ``cluster_split.json``: the ``cluster`` workload's metrics on small cells that
cover every queue policy, both ways a job's nodes are taken (by count, chosen), homogeneous
and heterogeneous speeds, without and with the packet network.

The stored file was written by the code before the event loops were split by queue
policy (commit adfe981): ``tests/test_cluster_compile_split.py`` checks that the
split code gives the same values, bit for bit. Run from the repository root:

    python -m tests.golden.cluster_split
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

QUEUES = ("fcfs", "mpfs_scan", "easy", "conservative")
SEEDS = (1, 2)
PART1 = dict(source="lublin", jobs=60, nodes=8, cores=4, load=0.9)
NO_MEMORY = dict(mem_low=0.0, mem_high=0.0, disk_low=0.0, disk_high=0.0)   # nodes taken by count
NETWORK = dict(network="packet", layout="torus:4x4", nodes=16, cores=2, jobs=24, load=0.9, iters_max=3,
               message_mean=4096.0, time_scale=1e-4, bsld_threshold=1e-3, mem_high=2_097_152.0,
               disk_high=16_777_216.0)


def cells() -> list[dict]:
    """The parameter sets, in a fixed order."""
    out = []
    for queue, alloc, speeds, memory in itertools.product(QUEUES, ("first_fit", "random_first"),
                                                          ("homogeneous", "heterogeneous"), (True, False)):
        out.append(dict(PART1, queue=queue, allocation=alloc, speeds=speeds, **({} if memory else NO_MEMORY)))
    for queue, alloc in itertools.product(QUEUES, ("first_fit", "best_fit")):
        out.append(dict(NETWORK, queue=queue, allocation=alloc))
    return out


def values(params: dict) -> dict[str, list]:
    """Every non-timing metric of ``params`` over ``SEEDS``, as lists (NaN kept)."""
    from schedsweep.workloads import cluster

    res = cluster.run_batch(params, np.array(SEEDS, np.uint64))
    timing = {m.name for m in cluster.METRICS if m.timing}
    return {k: np.asarray(v, np.float64).ravel().tolist() for k, v in res.items() if k not in timing}


def main() -> None:
    path = Path(__file__).with_suffix(".json")
    data = [{"params": p, "values": values(p)} for p in cells()]
    path.write_text("[\n" + ",\n".join(json.dumps(c, separators=(",", ":")) for c in data) + "\n]\n")  # a cell a line
    print(f"wrote {path} ({len(data)} cells)")


if __name__ == "__main__":
    main()
