"""pyss mode (``semantics = "pyss"``) equals the plain reference ``tests/naive_pyss.py``
job for job (start times), on random flows and on the committed excerpts of the logs;
the default (textbook) semantics still equal ``tests/naive_cluster.py`` through the
workload's full path (parameters, trace conversion, kernel)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from bench_pyss import compare, head  # noqa: E402

import excerpts  # noqa: E402
from excerpts import CTC, HPC2N, KTH, KTH_RAW, SDSC_BLUE  # noqa: E402
from naive_cluster import simulate as naive_textbook  # noqa: E402
from naive_pyss import simulate_pyss as naive_pyss  # noqa: E402
from schedsweep.workloads.cluster import check_params, schedule, swf  # noqa: E402
from schedsweep.workloads.cluster.pyss_kernel import NAMES, simulate_pyss  # noqa: E402


@st.composite
def flows(draw):
    """Random flows on m processors with run <= estimate (pyss's conversion guarantees it);
    integer times make equal-time events (the case the event order decides) frequent."""
    m = draw(st.integers(1, 8))
    k = draw(st.integers(1, 25))
    t, jobs = 0, []
    for i in range(k):
        t += draw(st.integers(0, 5))
        est = draw(st.integers(1, 15))
        jobs.append((i + 1, float(t), float(draw(st.integers(1, est))), draw(st.integers(1, m)), float(est)))
    return jobs, m


@settings(max_examples=150, deadline=None)
@given(flows(), st.sampled_from(NAMES))
def test_pyss_kernel_equals_naive_random(fl, queue):
    jobs, m = fl
    a = np.array(jobs)
    got = simulate_pyss(a[:, 1].copy(), a[:, 2].copy(), a[:, 3].astype(np.int64), a[:, 4].copy(), m,
                        NAMES.index(queue))
    ref = naive_pyss(jobs, m, queue)
    assert [float(x) for x in got] == [ref[j[0]] for j in jobs]


OTHERS = (KTH_RAW, HPC2N, SDSC_BLUE)


# every excerpt with FCFS and EASY; conservative on KTH only: the naive reference needs
# ~60 s on 2,000 CTC jobs (all traces and policies were run once: benchmarks/pyss.md)
@pytest.mark.parametrize("trace,queue", [(KTH, "fcfs"), (KTH, "easy"), (KTH, "conservative"),
                                         (CTC, "fcfs"), (CTC, "easy")]
                         + [(t, q) for t in OTHERS for q in ("fcfs", "easy")])
def test_pyss_mode_equals_naive_on_trace_head(trace, queue):
    # the workload's full path (parameters, pyss conversion, kernel) against the naive
    # conversion and simulation of every job of the excerpt (pyss's conversion drops none)
    lines = len(excerpts.data_lines(trace))
    row = compare(excerpts.path(trace), lines, queue, textbook=False)
    assert row["jobs"] == lines
    assert row["pyss_vs_naive"] == 1.0


def test_textbook_default_unchanged_on_trace_head(tmp_path):
    # default semantics through schedule(): equal to the textbook oracle on the first 150
    # jobs of KTH (estimate = max(request, run, 1), allocated processors first)
    path = str(tmp_path / "h.swf")
    m = head(excerpts.path(KTH), 150, path)
    tr = swf.read(path)
    jobs = list(zip(tr.submit.tolist(), tr.procs.tolist(), tr.estimate.tolist(), tr.run.tolist()))
    for queue in ("fcfs", "easy"):
        f, r, _ = schedule({"source": "swf", "trace": path, "queue": queue, "allocation": "first_fit"}, 7)
        start, _end, _bound = naive_textbook(jobs, m, queue)
        assert list(r.start) == start


def test_check_params_names_unsupported_pyss_combinations():
    errs = check_params({"semantics": "pyss", "queue": "mpfs_scan", "allocation": "best_fit",
                         "speeds": "heterogeneous"})
    assert any("queue" in e and "mpfs_scan" in e for e in errs)
    assert any("allocation" in e and "best_fit" in e for e in errs)
    assert any("speeds" in e for e in errs)
    assert check_params({"semantics": "pyss", "queue": "easy", "mem_high": 1_000_000.0}) == []
