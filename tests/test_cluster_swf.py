"""SWF reading (PWA field rules, line-numbered errors), writing (round trip) and the
per-job equality with the peer baseline on the shared traces."""
from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from schedsweep.workloads.cluster import schedule, swf, write_swf

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
PEER = Path(__file__).resolve().parents[2] / "shared" / "peers" / "easy_backfill_python.py"


def line(*f):
    fields = list(f) + [-1] * (18 - len(f))
    return " ".join(str(x) for x in fields) + "\n"


def write(tmp_path, text, name="t.swf"):
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt") as fh:
            fh.write(text)
    else:
        p.write_text(text)
    return str(p)


def test_field_rules_and_drops(tmp_path):
    text = ("; Version: 2.2\n; MaxProcs: 8\n"
            + line(3, 5, -1, 10, 2, -1, -1, 2, 30)      # estimate = requested 30
            + line(1, 5, -1, 40, -1, -1, -1, 4, 30)     # allocated -1 -> requested 4; run > requested -> 40
            + line(2, 0, -1, 0, 1, -1, -1, 1, -1)       # requested -1, run 0 -> estimate 1
            + line(4, 7, -1, -1, 2, -1, -1, 2, 10)      # run -1: dropped
            + line(5, 7, -1, 5, -1, -1, -1, -1, 10)     # no processors: dropped
            + line(6, 8, -1, 5, 9, -1, -1, 9, 10)       # larger than the machine: dropped
            + "\n")
    tr = swf.read(write(tmp_path, text, "t.swf.gz"))
    assert tr.max_procs == 8
    assert list(tr.job_id) == [2, 1, 3]                  # submit order, ties by id
    assert list(tr.procs) == [1, 4, 2]
    assert list(tr.run) == [0, 40, 10]
    assert list(tr.estimate) == [1, 40, 30]
    assert tr.dropped_invalid == 2 and tr.dropped_too_large == 1


@pytest.mark.parametrize("bad, msg", [
    (line(1, 0, -1, 5, 1)[:-5] + "\n", "line 4: expected 18 fields"),
    (line(1, 0, -1, "x5", 1), "line 4: field 4"),
    (line(1, 0, -1, "nan", 1), "line 4: field 4"),
])
def test_malformed_line_named(tmp_path, bad, msg):
    text = "; MaxProcs: 4\n" + line(1, 0, -1, 5, 1) + ";\n" + bad + line(3, 0, -1, 5, 1)
    path = write(tmp_path, text)
    with pytest.raises(swf.SWFError) as e:
        swf.read(path)
    assert path in str(e.value) and msg in str(e.value)


def test_missing_maxprocs(tmp_path):
    path = write(tmp_path, line(1, 0, -1, 5, 1))
    with pytest.raises(swf.SWFError, match="MaxProcs"):
        swf.read(path)
    assert swf.read(path, max_procs=3).max_procs == 3


def test_schedule_round_trip(tmp_path):
    path = str(TRACES / "KTH-SP2-1996-2.1-cln.filtered.swf.gz")
    f, r, _ = schedule({"source": "swf", "trace": path, "queue": "easy"}, 1)
    out = str(tmp_path / "sched.swf.gz")
    swf.write(out, f.job_id, f.submit, r.start, r.end, f.cores_req, f.estimate, r.killed, int(f.node_cores.sum()))
    data, m = swf.read_fields(out)
    assert m == 100
    np.testing.assert_array_equal(data[:, 0], f.job_id)
    np.testing.assert_array_equal(data[:, 1], f.submit)
    np.testing.assert_array_equal(data[:, 1] + data[:, 2], r.start)
    np.testing.assert_array_equal(data[:, 1] + data[:, 2] + data[:, 3], r.end)
    np.testing.assert_array_equal(data[:, 4], f.cores_req)
    back = swf.read(out)   # a schedule read back is a valid trace of the same jobs
    np.testing.assert_array_equal(back.run, r.end - r.start)


def _peer():
    spec = importlib.util.spec_from_file_location("easy_backfill_python", PEER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("trace, limit", [("KTH-SP2-1996-2.1-cln.filtered.swf.gz", 6000),
                                          ("CTC-SP2-1996-3.1-cln.swf.gz", 2500),
                                          ("SDSC-BLUE-2000-4.2-cln.swf.gz", 2000),
                                          ("KTH-SP2-1996-2.swf.gz", 3000)])
@pytest.mark.parametrize("queue", ["easy", "conservative"])
def test_start_times_equal_peer(tmp_path, trace, limit, queue):
    """Job for job on a prefix of each trace (the full traces: benchmarks/bench_cluster.py)."""
    peer = _peer()
    path = str(TRACES / trace)
    pjobs, m, _ = peer.read_swf(path, limit=limit)
    peer.simulate(pjobs, m, queue)
    tr = swf.read(path)
    # the same first `limit` valid jobs, as a trace of their own
    keep = np.isin(tr.job_id, [j.id for j in pjobs])
    lines = "".join(line(i, s, -1, r, p, -1, -1, p, e) for i, s, r, p, e in
                    zip(tr.job_id[keep], tr.submit[keep], tr.run[keep], tr.procs[keep], tr.estimate[keep]))
    sub = write(tmp_path, f"; MaxProcs: {m}\n" + lines)
    f, r, _ = schedule({"source": "swf", "trace": sub, "queue": queue}, 1)
    by_id = {j.id: j.start for j in pjobs}
    np.testing.assert_array_equal(r.start, [by_id[i] for i in f.job_id])


@pytest.mark.parametrize("trace, lines, invalid", [("SDSC-BLUE-2000-4.2-cln.swf.gz", 243_306, 10_744),
                                                   ("CTC-SP2-1996-3.1-cln.swf.gz", 77_222, 0),
                                                   ("KTH-SP2-1996-2.1-cln.filtered.swf.gz", 27_992, 0)])
def test_shared_trace_counts(trace, lines, invalid):
    """Record and drop counts equal those checked independently in shared/traces/README.md."""
    tr = swf.read(str(TRACES / trace))
    assert tr.n_jobs + tr.dropped_invalid + tr.dropped_too_large == lines
    assert tr.dropped_invalid == invalid and tr.dropped_too_large == 0
    assert np.all(np.diff(tr.submit) >= 0)


def test_trace_load_scaling_through_run_batch():
    import schedsweep.workloads.cluster as C
    path = str(TRACES / "KTH-SP2-1996-2.1-cln.filtered.swf.gz")
    out = C.run_batch({"source": "swf", "trace": path, "trace_load": 0.8, "queue": "easy"},
                      np.array([1], dtype=np.uint64))
    assert abs(out["offered_load"][0] - 80.0) < 1e-9
    assert out["jobs_simulated"][0] == 27_992 and out["dropped_jobs"][0] == 0 and out["reason"][0] == 0


def test_cli_writes_schedule(tmp_path):
    text = "; MaxProcs: 4\n" + line(1, 0, -1, 10, 3, -1, -1, 3, 20) + line(2, 1, -1, 5, 2, -1, -1, 2, 5)
    src = write(tmp_path, text)
    out = str(tmp_path / "out.swf")
    write_swf.main([out, "--trace", src, "--queue", "fcfs"])
    data, m = swf.read_fields(out)
    assert m == 4
    np.testing.assert_array_equal(data[:, 2], [0, 9])      # job 2 waits for job 1 (3 + 2 > 4 cores)
    np.testing.assert_array_equal(data[:, 3], [10, 5])
