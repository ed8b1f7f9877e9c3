"""pyss's trace conversion, as pyss's own source does it (``_job_input_to_job`` of
predictsim's ``simulation/pyss/src/base/prototype.py``; the rule is written out in
``swf.pyss_fields`` and ``benchmarks/pyss.md``).

- Hand-built records, one per branch of the rule, with values derived by hand: a job that
  ran past its request runs until the request but keeps its run time as its estimate; no
  requested time means a 1 s run with the run time as estimate; a malformed record is a
  1 s job, not dropped; processors are the requested count (field 8, else the allocated
  field 5: ``pyss_processors = "requested"``, as pyss runs) or the allocated count (field 5,
  ``"allocated"``, as predictsim's source reads it), clamped to the machine; equal submit
  times keep file order.
- ``swf.read(conversion="pyss")`` (and ``"pyss_allocated"``) equals the record-by-record
  transcription (``tests/naive_pyss.convert_pyss``) on random records (hypothesis), fields
  and order.
- What the estimate changes: a job cut at its request still holds its estimated slot, so
  a waiting job that needs the whole machine is planned after the real run time (pyss),
  not after the request (the reading this replaced).
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from naive_pyss import convert_pyss, simulate_pyss
from schedsweep.workloads.cluster import swf

MACHINE = 8


def _line(jid, submit, run, alloc, req_procs, req_time):
    f = [-1] * 18
    f[0], f[1], f[3], f[4], f[7], f[8] = jid, submit, run, alloc, req_procs, req_time
    return f


# id submit run alloc req_procs req_time         -> pyss (submit, run, procs, estimate)
LINES = [
    _line(1, 0, 50, 4, 8, 100),       # requested 8 procs, allocated 4: 8 (requested) or 4 (allocated)
    _line(2, 0, 150, 4, -1, 100),     # ran past its request: runs 100, estimate 150
    _line(3, 5, 0, 2, 2, 100),        # run time 0: a 1 s job (1 s estimate)
    _line(4, 5, 30, -1, -1, -1),      # no allocated procs: a 1 s job on 1 processor
    _line(5, 6, -1, 2, 2, 100),       # run time < 0: a 1 s job, kept
    _line(7, 8, 30, 3, 3, -1),        # no requested time: runs 1 s, estimate 30
    _line(8, 9, 40, 12, 12, 50),      # more processors than the machine: clamped to 8
    _line(9, -3, 10, 2, 2, 20),       # submit < 0: a 1 s job submitted at 1
    _line(11, 20, 5, 1, 1, 5),        # equal submit times: file order (11 before 10)
    _line(10, 20, 5, 1, 1, 5),
    _line(12, 30, 20, -1, 3, 40),     # no allocated count, 3 requested: a real job (requested), 1 s (allocated)
    _line(13, 31, 10, 4, 3, 20),      # KTH-like: requested 3 of the 4 allocated
]
EXPECTED = [  # queue order: (id, submit, run, procs, estimate), processors as requested (the default)
    (1, 0.0, 50.0, 8, 100.0), (2, 0.0, 100.0, 4, 150.0), (9, 1.0, 1.0, 2, 1.0), (3, 5.0, 1.0, 2, 1.0),
    (4, 5.0, 1.0, 1, 1.0), (5, 6.0, 1.0, 2, 1.0), (7, 8.0, 1.0, 3, 30.0), (8, 9.0, 40.0, 8, 50.0),
    (11, 20.0, 5.0, 1, 5.0), (10, 20.0, 5.0, 1, 5.0), (12, 30.0, 20.0, 3, 40.0), (13, 31.0, 10.0, 3, 20.0)]
CUT = {2, 4, 7, 9}      # run time shortened by the conversion
# processors as allocated (field 5): jobs 1 and 13 keep their 4, job 12 is malformed (a 1 s job, cut)
EXPECTED_ALLOCATED = [(1, 0.0, 50.0, 4, 100.0)] + EXPECTED[1:-2] + [(12, 30.0, 1.0, 1, 1.0), (13, 31.0, 10.0, 4, 20.0)]
CUT_ALLOCATED = CUT | {12}


def _write(path, lines, machine=MACHINE) -> str:
    path.write_text(f"; MaxProcs: {machine}\n" + "\n".join(" ".join(str(v) for v in f) for f in lines) + "\n")
    return str(path)


def _jobs(t: swf.Trace) -> list[tuple]:
    return [(int(i), float(s), float(r), int(p), float(e))
            for i, s, r, p, e in zip(t.job_id, t.submit, t.run, t.procs, t.estimate)]


def test_each_branch_of_the_rule_by_hand(tmp_path):
    path = _write(tmp_path / "t.swf", LINES)
    for conversion, processors, expected, cut in (("pyss", "requested", EXPECTED, CUT),
                                                  ("pyss_allocated", "allocated", EXPECTED_ALLOCATED, CUT_ALLOCATED)):
        t = swf.read(path, conversion=conversion)
        assert _jobs(t) == expected
        assert {int(i) for i, c in zip(t.job_id, t.cut) if c} == cut
        assert t.dropped_invalid == t.dropped_too_large == 0
        assert convert_pyss(LINES, MACHINE, processors) == expected


_record = st.tuples(
    st.integers(1, 10**6),                                  # id
    st.integers(-5, 40),                                    # submit (ties likely)
    st.integers(-2, 200),                                   # run time
    st.integers(-1, 12),                                    # allocated processors
    st.integers(-1, 12),                                    # requested processors
    st.one_of(st.just(-1), st.integers(0, 200)))            # requested time


@settings(max_examples=60, deadline=None)
@given(st.lists(_record, min_size=1, max_size=30), st.sampled_from(sorted(swf.PYSS_CONVERSIONS)))
def test_reader_equals_the_record_by_record_transcription(tmp_path_factory, records, conversion):
    lines = [_line(*r) for r in records]
    path = _write(tmp_path_factory.mktemp("swf") / "r.swf", lines)
    assert _jobs(swf.read(path, conversion=conversion)) == convert_pyss(lines, MACHINE,
                                                                        swf.PYSS_CONVERSIONS[conversion])


def test_a_cut_job_holds_its_estimate_not_its_request():
    # m = 5. A (4 procs) requested 10 s but ran 30 s: pyss runs it 10 s with estimate 30.
    # B (5 procs, run 5, est 5) arrives at 1 and must wait. D (1 proc, run 9, est 9)
    # arrives at 2. pyss: B is planned at A's estimated end (30), so D fits beside A now
    # and starts at 2 (EASY and conservative backfill); A ends at 10, D's slot [2, 11)
    # still holds one processor, so B starts at 11, when D ends.
    lines = [_line(1, 0, 30, 4, 4, 10), _line(2, 1, 5, 5, 5, 5), _line(4, 2, 9, 1, 1, 9)]
    jobs = convert_pyss(lines, 5)
    assert jobs[0] == (1, 0.0, 10.0, 4, 30.0)
    for q in ("easy", "conservative"):
        assert simulate_pyss(jobs, 5, q) == {1: 0.0, 2: 11.0, 4: 2.0}
    # the reading this replaced (estimate = the request, 10): B is planned at 10, D would
    # overlap it, so D waits until B ends at 15
    old_reading = [(1, 0.0, 10.0, 4, 10.0), (2, 1.0, 5.0, 5, 5.0), (4, 2.0, 9.0, 1, 9.0)]
    for q in ("easy", "conservative"):
        assert simulate_pyss(old_reading, 5, q) == {1: 0.0, 2: 10.0, 4: 15.0}


def test_every_trace_excerpt_converts_without_dropping(tmp_path):
    # the first 300 records of each log's excerpt: nothing dropped, every job fits the machine,
    # run <= estimate (the pyss kernel requires it), and the reader equals the transcription
    import gzip
    import itertools

    import excerpts

    for trace in map(excerpts.path, excerpts.NAMES):
        with gzip.open(trace, "rt") as fh:
            lines = list(itertools.islice(fh, 2000))
        machine = next(int(m.group(1)) for m in map(swf._MAXPROCS.match, lines) if m)
        head = [ln for ln in lines if ln.strip() and not ln.startswith(";")][:300]
        path = tmp_path / "head.swf"
        path.write_text(f"; MaxProcs: {machine}\n" + "".join(head))
        t = swf.read(str(path), conversion="pyss")
        assert t.n_jobs == len(head) and t.dropped_invalid == t.dropped_too_large == 0
        assert np.all(t.run <= t.estimate) and np.all((t.procs >= 1) & (t.procs <= machine))
        fields = [[float(x) for x in ln.split()] for ln in head]
        assert _jobs(t) == convert_pyss(fields, machine)


def test_kth_like_records_run_on_their_requested_processors(tmp_path):
    # KTH-SP2 has records that requested fewer processors than they were allocated (field 8
    # < field 5). m = 4: A was allocated 4 but requested 3 and runs 10 s; B (1 processor,
    # 5 s) arrives at 1. As pyss runs (requested), A holds 3 processors and B starts beside
    # it at 1; read as allocated (predictsim's source), A holds all 4 and B waits until 10.
    from schedsweep.workloads.cluster import schedule

    lines = [_line(1, 0, 10, 4, 3, 20), _line(2, 1, 5, 1, 1, 5)]
    path = _write(tmp_path / "kth-like.swf", lines, machine=4)
    expected = {"requested": ([3, 1], [0.0, 1.0]), "allocated": ([4, 1], [0.0, 10.0])}
    for processors, (procs, starts) in expected.items():
        for queue in ("fcfs", "easy", "conservative"):
            f, r, _ = schedule({"source": "swf", "trace": path, "semantics": "pyss", "queue": queue,
                                "pyss_processors": processors}, 1)
            assert f.cores_req.tolist() == procs and r.start.tolist() == starts
            jobs = convert_pyss(lines, 4, processors)
            assert [j[3] for j in jobs] == procs
            assert simulate_pyss(jobs, 4, queue) == dict(zip((1, 2), starts))
    # the default is the requested count
    f, _, _ = schedule({"source": "swf", "trace": path, "semantics": "pyss", "queue": "easy"}, 1)
    assert f.cores_req.tolist() == [3, 1]
