"""``kill_at_estimate``: a trace job is killed at start + requested time, with the
default (textbook) semantics; kills are counted in ``killed_jobs``."""
from __future__ import annotations

import numpy as np

from schedsweep.workloads.cluster import run_batch, schedule


def _trace(tmp_path):
    # id submit run procs(5) procs(8) request(9); machine of 4 processors
    rows = [(1, 0, 50, 2, 2, 30),    # runs past its request 30: killed at 0 + 30
            (2, 0, 20, 2, 2, 100),   # ends at 20
            (3, 0, 10, 4, 4, -1),    # no request: estimate max(run, 1) = 10, never killed
            (4, 5, 5, 1, 1, 5)]      # run = request: not killed
    lines = []
    for jid, sub, run, a, r, req in rows:
        f = [-1] * 18
        f[0], f[1], f[3], f[4], f[7], f[8] = jid, sub, run, a, r, req
        lines.append(" ".join(map(str, f)))
    p = tmp_path / "kill.swf"
    p.write_text("; MaxProcs: 4\n" + "\n".join(lines) + "\n")
    return str(p)


def test_kill_at_estimate_hand_built(tmp_path):
    params = {"source": "swf", "trace": _trace(tmp_path), "queue": "fcfs", "allocation": "first_fit"}
    # FCFS by hand, with kills: 1 and 2 start at 0 (4 procs); 2 ends at 20; 1 is killed at 30;
    # 3 (4 procs) starts at 30 and ends at 40; 4 waits behind 3 (FCFS) and starts at 40.
    f, r, _ = schedule({**params, "kill_at_estimate": True}, 1)
    assert list(f.job_id) == [1, 2, 3, 4]
    assert list(r.start) == [0.0, 0.0, 30.0, 40.0]
    assert list(r.end) == [30.0, 20.0, 40.0, 45.0]
    assert list(r.killed) == [1, 0, 0, 0]
    # without it (default): estimate = max(request, run), nobody killed; 1 ends at 50, so
    # 3 starts at 50 and 4 at 60
    f, r, _ = schedule(params, 1)
    assert list(r.start) == [0.0, 0.0, 50.0, 60.0]
    assert not r.killed.any()
    out = run_batch({**params, "kill_at_estimate": True}, np.array([1, 2], np.uint64))
    assert list(out["killed_jobs"]) == [1.0, 1.0]
    assert list(run_batch(params, np.array([1], np.uint64))["killed_jobs"]) == [0.0]
