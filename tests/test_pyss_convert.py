"""The default (textbook) trace conversion on hand-built SWF lines, and the naive pyss
schedule on hand-derived cases (pyss's conversion: tests/test_cluster_pyss_conversion.py)."""
from __future__ import annotations

import numpy as np

from naive_pyss import simulate_pyss
from schedsweep.workloads.cluster import swf


def _line(jid, submit, run, alloc, req_procs, req_time):
    f = [-1] * 18
    f[0], f[1], f[3], f[4], f[7], f[8] = jid, submit, run, alloc, req_procs, req_time
    return f


# id submit run alloc req_procs req_time
LINES = [
    _line(1, 0, 50, 4, 8, 100),
    _line(2, 0, 150, 4, -1, 100),
    _line(3, 5, 0, 2, 2, 100),
    _line(4, 5, 30, -1, -1, -1),
    _line(5, 6, -1, 2, 2, 100),
    _line(6, 7, 20, -1, -1, 100),
]


def _write(tmp_path):
    p = tmp_path / "t.swf"
    p.write_text("; MaxProcs: 8\n" + "\n".join(" ".join(str(v) for v in f) for f in LINES) + "\n")
    return str(p)


def test_textbook_conversion_unchanged(tmp_path):
    t = swf.read(_write(tmp_path))
    got = {int(i): (float(r), int(p), float(e)) for i, r, p, e in zip(t.job_id, t.run, t.procs, t.estimate)}
    # textbook: allocated first, estimate = max(request, run, 1), never cut, no 1 s rule;
    # ids 4 and 6 have no processor count, id 5 a negative run time: 3 dropped
    assert got == {1: (50.0, 4, 100.0), 2: (150.0, 4, 150.0), 3: (0.0, 2, 100.0)}
    assert t.dropped_invalid == 3


def test_naive_pyss_estimated_end_is_free_before_termination():
    # m = 4. Job 1 (4 procs, run 10, est 10) starts at 0; its estimated end is 10.
    # Job 2 (4 procs, est 5) is submitted at 10: Submission is handled before job 1's
    # Termination at 10, and job 1's slice [0, 10) no longer covers 10, so job 2 fits
    # and starts at 10 in the submission's pass (in every queue policy).
    jobs = [(1, 0.0, 10.0, 4, 10.0), (2, 10.0, 5.0, 4, 5.0)]
    for q in ("fcfs", "easy", "conservative"):
        assert simulate_pyss(jobs, 4, q) == {1: 0.0, 2: 10.0}


def test_naive_pyss_easy_and_conservative_differ_as_derived():
    # m = 4. t=0: A (3 procs, run 10, est 10) starts. t=1: B (4 procs, est 10) waits,
    # reserved at 10. t=2: C (1 proc, est 20) fits now but would still hold its processor
    # at 10, where B needs all 4: C waits (EASY: B's reservation; conservative: C is
    # reserved after B, at 20). t=3: D (1 proc, est 5) ends by 8 <= 10: backfilled at 3.
    # B ends at 20; C starts at 20 (B's termination pass / C's reservation).
    jobs = [(1, 0.0, 10.0, 3, 10.0), (2, 1.0, 10.0, 4, 10.0), (3, 2.0, 20.0, 1, 20.0), (4, 3.0, 5.0, 1, 5.0)]
    for q in ("easy", "conservative"):
        assert simulate_pyss(jobs, 4, q) == {1: 0.0, 2: 10.0, 3: 20.0, 4: 3.0}
    # FCFS: C and D wait behind B
    assert simulate_pyss(jobs, 4, "fcfs") == {1: 0.0, 2: 10.0, 3: 20.0, 4: 20.0}
