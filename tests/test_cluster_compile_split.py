"""The cluster kernels compiled per queue policy give the schedules of
the code before the split, compile only what a cell selects, and cache each policy's loop
on its own.

- Every non-timing metric of 40 small cells (every queue policy; nodes taken by count and
  chosen; homogeneous and heterogeneous speeds; without and with the packet network)
  equals, bit for bit, the values the code before the split wrote
  (``tests/golden/cluster_split.py`` made ``cluster_split.json`` at commit adfe981);
  except the time integrals of part 1's conservative cells, equal to 1e-12 relative:
  that loop no longer visits the times of stale reservation wake-ups (where nothing
  changes), and a masked clock summed over [t0, t1) + [t1, t2) rounds differently from
  one sum over [t0, t2) in the last bit. Their schedule metrics stay bit for bit.
- A fresh process that runs one part-1 cell per queue policy compiles (or loads) that
  policy's event loop alone, one signature each, and never imports the network engine;
  a network cell then leaves part 1's loops alone.
- A second fresh process loads every policy's loop from the cache (no miss), and the
  loops give the first process's results: were the cached closures of two policies
  confused, the schedules would differ.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

GOLDEN = Path(__file__).parent / "golden" / "cluster_split.json"


#: Metrics summed over masked time (see the module docstring).
_INTEGRALS = {"cluster_loss", "utilization", "mem_util", "disk_util", "var_core_util", "var_mem_util",
              "var_disk_util"}


def _same(a: list, b: list, rel: float = 0.0) -> bool:
    return len(a) == len(b) and all(x == y or abs(x - y) <= rel * abs(y) or (math.isnan(x) and math.isnan(y))
                                    for x, y in zip(a, b))


def test_golden_cells_cover_every_policy_and_both_engines():
    from tests.golden.cluster_split import QUEUES, cells

    data = json.loads(GOLDEN.read_text())
    assert [d["params"] for d in data] == cells()          # the stored file is for these cells
    for network in ("none", "packet"):
        assert {c["queue"] for c in cells() if c.get("network", "none") == network} == set(QUEUES)


@pytest.mark.parametrize("index", range(40))
def test_split_kernels_give_the_values_of_the_code_before(index):
    from tests.golden.cluster_split import values

    cell = json.loads(GOLDEN.read_text())[index]
    got = values(cell["params"])
    assert got.keys() == cell["values"].keys()
    p = cell["params"]
    loose = p["queue"] == "conservative" and p.get("network", "none") == "none"
    bad = [k for k, v in cell["values"].items() if not _same(got[k], v, 1e-12 if loose and k in _INTEGRALS else 0.0)]
    assert not bad, (cell["params"], {k: (got[k], cell["values"][k]) for k in bad})


_CHILD = """
import json, sys
import numpy as np
from schedsweep.workloads import cluster
from schedsweep.workloads.cluster import simulator
from schedsweep.workloads.cluster.bookkeeping import QUEUE_NAMES
out = {"results": {}, "loops": {}}
cell = dict(jobs=40, nodes=4, cores=2, load=0.9, speeds="heterogeneous")
for queue in QUEUE_NAMES:
    r = cluster.run_batch(dict(cell, queue=queue), np.array([7], np.uint64))
    out["results"][queue] = [float(r[k][0]) for k in ("mean_wait", "makespan", "utilization")]
    out["loops"][queue] = {q: len(simulator._RUN[i].signatures) for i, q in enumerate(QUEUE_NAMES)}
out["netsim_imported"] = "schedsweep.workloads.cluster.netsim" in sys.modules
out["cache"] = {q: [len(simulator._RUN[i].stats.cache_hits), len(simulator._RUN[i].stats.cache_misses)]
                for i, q in enumerate(QUEUE_NAMES)}
net = dict(network="packet", layout="star:4", nodes=4, cores=2, jobs=8, iters_max=2, message_mean=4096.0,
           time_scale=1e-4, queue="fcfs")
cluster.run_batch(net, np.array([7], np.uint64))
out["loops_after_network"] = {q: len(simulator._RUN[i].signatures) for i, q in enumerate(QUEUE_NAMES)}
print(json.dumps(out))
"""


def _child() -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_cell_compiles_its_policy_loop_alone_and_each_loop_is_cached_on_its_own():
    from schedsweep.workloads.cluster.bookkeeping import QUEUE_NAMES

    first = _child()
    assert first["netsim_imported"] is False              # part-1 cells never touch the network engine
    for k, queue in enumerate(QUEUE_NAMES):               # after the k-th cell: the first k + 1 loops, once each
        assert first["loops"][queue] == {q: int(i <= k) for i, q in enumerate(QUEUE_NAMES)}
    assert first["loops_after_network"] == {q: 1 for q in QUEUE_NAMES}
    second = _child()                                     # now every loop is in the cache
    assert second["cache"] == {q: [1, 0] for q in QUEUE_NAMES}
    assert second["results"] == first["results"]
    assert len({tuple(v) for v in first["results"].values()}) == len(QUEUE_NAMES)   # the policies differ here
