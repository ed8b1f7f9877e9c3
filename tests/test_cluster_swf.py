"""SWF reading (PWA field rules, line-numbered errors), writing (round trip) and the
per-job equality with the plain oracle ``tests/naive_cluster.py`` on the committed excerpts
of the archive's logs (``tests/excerpts.py``)."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

import excerpts
from excerpts import CTC, HPC2N, KTH, KTH_RAW, SDSC_BLUE
from naive_cluster import simulate as naive_simulate
from schedsweep.workloads.cluster import schedule, swf, write_swf


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
    path = excerpts.path(KTH)
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


def _after_head(trace: str) -> set[int]:
    """The job ids of an excerpt's windows after its head: those chosen for the records the
    readers and simulators must decide on (tests/data/make_excerpts.py)."""
    head = excerpts.windows(trace)[0][1]
    return {int(r[0]) for r in excerpts.data_lines(trace)[head:]}


@pytest.mark.parametrize("trace", (KTH, KTH_RAW, CTC, SDSC_BLUE, HPC2N))
@pytest.mark.parametrize("queue", ["easy", "conservative"])
def test_start_times_equal_naive(tmp_path, trace, queue):
    """Job for job against the plain oracle, the trace read by the workload's reader (the
    full logs against the peer: benchmarks/bench_cluster.py). EASY on every excerpt whole;
    conservative on each excerpt's windows after its head, as a trace of their own: the
    oracle's conservative pass recomputes the machine's future from scratch, so its time
    grows with the square of the queue (~50 s on CTC's 1,100 jobs), and the head of a log is
    EASY's here (random workloads against the same oracle under conservative:
    tests/test_cluster_schedules.py)."""
    path = excerpts.path(trace)
    tr = swf.read(path)
    keep = np.ones(tr.n_jobs, bool) if queue == "easy" else np.isin(tr.job_id, list(_after_head(trace)))
    job_id, submit, run, procs, estimate = (a[keep] for a in (tr.job_id, tr.submit, tr.run, tr.procs, tr.estimate))
    if queue != "easy":   # the jobs kept, as the reader decided them, as a trace of their own
        assert len(job_id) >= 100, len(job_id)   # a window of make_excerpts.py at the least
        lines = "".join(line(i, s, -1, r, p, -1, -1, p, e) for i, s, r, p, e in zip(job_id, submit, run, procs, estimate))
        path = write(tmp_path, f"; MaxProcs: {tr.max_procs}\n" + lines)
    f, r, _ = schedule({"source": "swf", "trace": path, "queue": queue}, 1)
    jobs = list(zip(submit.tolist(), procs.tolist(), estimate.tolist(), run.tolist()))
    start, _end, _bound = naive_simulate(jobs, tr.max_procs, queue)
    np.testing.assert_array_equal(f.job_id, job_id)
    np.testing.assert_array_equal(r.start, start)


@pytest.mark.parametrize("trace", excerpts.NAMES)
def test_excerpt_counts(trace):
    """Record and drop counts against a plain count of the excerpt's lines: as many data lines
    as the windows of tests/data/make_excerpts.py hold; the records dropped are exactly those
    with run time -1 (in these logs every job has a processor count), and only SDSC-BLUE has
    any; none is larger than the machine."""
    rows = excerpts.data_lines(trace)
    assert len(rows) == sum(n for _, n in excerpts.windows(trace))
    assert all(len(r) == 18 for r in rows)
    assert all(r[4] != "-1" or r[7] != "-1" for r in rows)   # a processor count everywhere
    unknown_run = sum(r[3] == "-1" for r in rows)
    assert (unknown_run > 0) == (trace == SDSC_BLUE)
    tr = swf.read(excerpts.path(trace))
    assert tr.n_jobs + tr.dropped_invalid + tr.dropped_too_large == len(rows)
    assert tr.dropped_invalid == unknown_run and tr.dropped_too_large == 0
    assert np.all(np.diff(tr.submit) >= 0)


def test_trace_load_scaling_through_run_batch():
    import schedsweep.workloads.cluster as C
    out = C.run_batch({"source": "swf", "trace": excerpts.path(KTH), "trace_load": 0.8, "queue": "easy"},
                      np.array([1], dtype=np.uint64))
    assert abs(out["offered_load"][0] - 80.0) < 1e-9
    assert out["jobs_simulated"][0] == len(excerpts.data_lines(KTH))
    assert out["dropped_jobs"][0] == 0 and out["reason"][0] == 0


def test_cli_writes_schedule(tmp_path):
    text = "; MaxProcs: 4\n" + line(1, 0, -1, 10, 3, -1, -1, 3, 20) + line(2, 1, -1, 5, 2, -1, -1, 2, 5)
    src = write(tmp_path, text)
    out = str(tmp_path / "out.swf")
    write_swf.main([out, "--trace", src, "--queue", "fcfs"])
    data, m = swf.read_fields(out)
    assert m == 4
    np.testing.assert_array_equal(data[:, 2], [0, 9])      # job 2 waits for job 1 (3 + 2 > 4 cores)
    np.testing.assert_array_equal(data[:, 3], [10, 5])


def test_excerpts_hold_the_records_a_reader_must_decide_on():
    """What the windows of tests/data/make_excerpts.py were chosen for is in the committed
    files (a plain reading of the fields: 4 run time, 5 allocated, 8 requested processors,
    9 requested time), and each keeps its log's acknowledgement and says it is an excerpt."""
    from schedsweep.pipeline.spec import traces

    def count(name, rule):
        return sum(rule(*(int(r[k]) for k in (3, 4, 7, 8))) for r in excerpts.data_lines(name))

    fewer_than_allocated = lambda run, alloc, req, req_t: 0 < req < alloc   # noqa: E731
    assert count(KTH, fewer_than_allocated) >= 40 and count(KTH_RAW, fewer_than_allocated) >= 40
    assert count(HPC2N, fewer_than_allocated) >= 1 and count(SDSC_BLUE, fewer_than_allocated) >= 1
    assert count(KTH, lambda run, alloc, req, req_t: run == 0 or run > req_t) == 0   # the filtered copy
    assert count(KTH_RAW, lambda run, alloc, req, req_t: run == 0) >= 1
    assert count(KTH_RAW, lambda run, alloc, req, req_t: run > req_t) >= 10
    assert count(CTC, lambda run, alloc, req, req_t: req == -1) == len(excerpts.data_lines(CTC))
    assert count(CTC, lambda run, alloc, req, req_t: req_t == -1) >= 1
    assert count(CTC, lambda run, alloc, req, req_t: run == 0) >= 1
    assert count(SDSC_BLUE, lambda run, alloc, req, req_t: run == -1) >= 50
    assert count(SDSC_BLUE, lambda run, alloc, req, req_t: run == 0) >= 1
    for name in excerpts.NAMES:
        with gzip.open(excerpts.path(name), "rt") as fh:
            header = [ln.strip() for ln in fh if ln.startswith(";")]
        trace = traces.entry(name)
        assert f"; Acknowledge: {trace.acknowledge}" in header
        assert any(ln.startswith("; Note: EXCERPT") and trace.sha256 in ln for ln in header)
