"""Cluster kernels against the plain-Python peer ``easy_backfill_python.py``, on the full logs
(both outside the repository, benchmarks/outside.py: skipped without them).

Targets: EASY >= 4M jobs/s (KTH-SP2), 2M (CTC-SP2); conservative >= 500k (KTH), 100k (CTC);
the measured ratios against the peer: EASY KTH 26x, CTC 43x; conservative KTH 25x, CTC 35x.
Both simulators run the same first ``JOBS[trace]`` jobs in this process, alternately; the
benchmarks report CPU seconds of our kernel call and our time as a fraction of the peer's
(``track_*_vs_peer``: 1/speed-up, so that, as for every asv figure, higher is worse).
"""
from __future__ import annotations

import numpy as np

from ._common import ab_best, best_of, load_peer, trace as full_trace

KTH = "KTH-SP2-1996-2.1-cln.filtered.swf.gz"
CTC = "CTC-SP2-1996-3.1-cln.swf.gz"
# The peer's conservative backfilling is the slow side (about 4k jobs/s on CTC-SP2): the CTC
# prefix keeps one peer run near a second.
JOBS = {KTH: 0, CTC: 8000}   # 0: the whole trace


class _Trace:
    """Our kernel and the peer on the same jobs, start times checked equal in setup."""
    params = ([KTH, CTC], ["easy", "conservative"])
    param_names = ["trace", "policy"]
    timeout = 300.0

    def setup(self, trace: str, policy: str) -> None:
        from schedsweep.workloads.cluster import simulator, swf

        path = full_trace(trace)
        self.peer = load_peer("easy_backfill_python")
        self.peer_jobs, m, _ = self.peer.read_swf(path, limit=JOBS[trace])
        tr = swf.read(path)
        k = len(self.peer_jobs)
        if not np.array_equal(tr.job_id[:k], [j.id for j in self.peer_jobs]):
            raise RuntimeError(f"{trace}: our first {k} jobs are not the peer's")
        z = np.zeros(k)
        one = np.ones(tr.max_procs)
        args = (tr.submit[:k], tr.procs[:k], z, z, tr.estimate[:k], tr.run[:k],
                np.ones(tr.max_procs, np.int64), one, one, one, policy, "first_fit", 1)
        self.m, self.policy = m, policy
        self.ours = lambda: simulator.simulate(*args)
        start = self.ours().start                              # compiles, or loads the cache
        self.run_peer()
        if not np.array_equal(start, [j.start for j in self.peer_jobs]):
            raise RuntimeError(f"{trace} {policy}: start times differ from the peer's")

    def fresh_peer_jobs(self) -> None:
        """New job objects for the peer: its simulate keeps state in them (not re-entrant)."""
        self.peer_jobs = [self.peer.Job(j.id, j.submit, j.run, j.procs, j.est) for j in self.peer_jobs]

    def run_peer(self) -> None:
        self.peer.simulate(self.peer_jobs, self.m, self.policy)


class ClusterKernel(_Trace):
    """CPU seconds of one kernel run (best of 3)."""

    def track_cpu_seconds(self, trace: str, policy: str) -> float:
        return best_of(self.ours, 3)

    track_cpu_seconds.unit = "CPU-s"


class ClusterVsPeer(_Trace):
    """Our CPU time over the peer's on the same jobs, alternating 2 rounds (target: <= 1/25)."""

    def track_vs_peer(self, trace: str, policy: str) -> float:
        ours, peer = ab_best(self.ours, self.run_peer, 2, untimed=self.fresh_peer_jobs)
        return ours / peer

    track_vs_peer.unit = "ours/peer time"
