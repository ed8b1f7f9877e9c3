"""Trace windows against simulating their jobs otherwise (``benchmarks/bench_windows.py``).

On a generated 20,000-job flow written as SWF (stand-alone: no trace file needed), windows
of 2,000 jobs, 10% warm-up, one run of each in this process (CPU seconds):

- ``track_vs_excerpt``: every sequential window against the whole-trace run of a file
  holding exactly its jobs (target: 1, what choosing the window costs beyond its jobs);
- ``track_per_job``: CPU per job in the windows over CPU per job of one whole-trace run
  (above 1 by the fixed cost of a replication, paid once per window).
"""
from __future__ import annotations

import tempfile
from pathlib import Path


class TraceWindows:
    params = (["easy", "conservative"],)
    param_names = ["policy"]
    timeout = 300.0

    def setup(self, policy: str) -> None:
        from benchmarks.bench_windows import generated_trace

        self.tmp = tempfile.TemporaryDirectory()
        self.trace = generated_trace(str(Path(self.tmp.name) / "flow.swf"))

    def teardown(self, policy: str) -> None:
        self.tmp.cleanup()

    def track_vs_excerpt(self, policy: str) -> float:
        from benchmarks.bench_windows import measure

        return measure(self.trace, 2000, policy)["vs_excerpt"]

    track_vs_excerpt.unit = "windows/excerpts time"

    def track_per_job(self, policy: str) -> float:
        from benchmarks.bench_windows import measure

        return measure(self.trace, 2000, policy)["per_job"]

    track_per_job.unit = "window/whole-trace time per job"
