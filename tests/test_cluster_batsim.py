"""Batsim JSON workloads as a trace: an SWF trace written as a Batsim workload reads to the
same arrays and runs to the same metrics bit for bit (every queue, textbook, walltime and
pyss rules); a malformed workload is refused at validation in one line naming the file,
the job (index and id) or profile, its line in the file and what is allowed."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.workloads import cluster
from schedsweep.workloads.cluster import batsim, swf

MACHINE = 64


def synthetic_swf(path: Path, n: int = 300, seed: int = 5) -> Path:
    """An SWF trace with fractional times, ties of submit time, jobs that ran past their
    request and jobs without one (-1), every record usable under every rule set."""
    rng = np.random.default_rng(seed)
    submit = np.round(np.cumsum(rng.exponential(40.0, n)), 3)
    submit[10:14] = submit[10]                      # ties, broken by id
    run = np.round(rng.lognormal(5.0, 1.5, n), 2) + 1.0
    procs = rng.integers(1, MACHINE + 1, n)
    req = np.round(run * rng.uniform(0.6, 3.0, n))  # about a fifth ran past their request
    req[::17] = -1
    ids = np.arange(1, n + 1)
    order = rng.permutation(n)                      # file order is not queue order
    lines = [f"{ids[k]} {submit[k]:.3f} -1 {run[k]:.2f} {procs[k]} -1 -1 {procs[k]} {req[k]:.0f} -1 1 1 1 -1 1 -1 -1 -1"
             for k in order]
    path.write_text(f"; synthetic\n; MaxProcs: {MACHINE}\n" + "\n".join(lines) + "\n")
    return path


def to_batsim(swf_path: Path, json_path: Path) -> Path:
    data, max_procs = swf.read_fields(str(swf_path))
    assert batsim.write_swf_records(str(json_path), data, max_procs) == 0
    return json_path


@pytest.fixture
def pair(tmp_path):
    s = synthetic_swf(tmp_path / "t.swf")
    return s, to_batsim(s, tmp_path / "t.json")


TRACE_FIELDS = ("job_id", "submit", "run", "procs", "estimate", "cut")


@pytest.mark.parametrize("conversion", ["textbook", "walltime", "pyss"])
def test_same_arrays_as_the_swf_file(pair, conversion):
    a, b = (swf.read(str(p), conversion=conversion) for p in pair)
    assert b.max_procs == a.max_procs == MACHINE
    assert (b.dropped_invalid, b.dropped_too_large) == (a.dropped_invalid, a.dropped_too_large) == (0, 0)
    for name in TRACE_FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.n_jobs == 300 and np.all(np.diff(a.submit) >= 0)
    if conversion == "walltime":       # the case kill_at_estimate exercises: runs past the request
        assert (a.run > a.estimate).sum() > 20


def test_gzipped_workload_reads_the_same(pair, tmp_path):
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(pair[1].read_bytes()))
    a, b = swf.read(str(pair[1])), swf.read(str(gz))
    assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in TRACE_FIELDS)


CASES_RUN = [
    {"queue": "fcfs"}, {"queue": "easy"}, {"queue": "conservative"}, {"queue": "mpfs_scan"},
    {"queue": "easy", "kill_at_estimate": True},
    {"queue": "easy", "semantics": "pyss"}, {"queue": "conservative", "semantics": "pyss"},
]


@pytest.mark.parametrize("extra", CASES_RUN, ids=lambda e: "-".join(map(str, e.values())))
def test_same_metrics_bit_for_bit(pair, extra):
    timing = {m.name for m in cluster.METRICS if m.timing}
    seeds = np.array([7, 8], np.uint64)
    out = [cluster.run_batch({"source": "swf", "trace": str(p), **extra}, seeds) for p in pair]
    assert set(out[0]) == set(out[1])
    for name in set(out[0]) - timing:
        assert np.array_equal(out[0][name], out[1][name], equal_nan=True), name
    assert np.isfinite(out[0]["mean_wait"]).all() and (out[0]["mean_wait"] > 0).all()
    if extra.get("kill_at_estimate"):
        assert (out[0]["killed_jobs"] > 0).all()


def test_a_sweep_over_both_files_gives_equal_cells(pair, write_spec, tmp_path):
    """source = 'swf' means 'a trace file': one trace dimension holds an SWF and a Batsim file."""
    spec = write_spec(f"""
        name = "both"
        workload = "cluster"
        replications = 2
        seed = 3
        [params]
        source = "swf"
        queue = "easy"
        [sweep]
        trace = ["{pair[0]}", "{pair[1]}"]
        """)
    ds = pipeline.open_store(pipeline.run(spec, tmp_path / "s.zarr", workers=0, progress=False)).load()
    assert np.isfinite(ds["mean_wait"].isel(replication=0).values).all()  # a whole trace: run once per cell
    for name in ("mean_wait", "mean_bsld", "utilization", "makespan"):
        if name in ds:
            assert np.array_equal(ds[name].isel(trace=0).values, ds[name].isel(trace=1).values,
                                  equal_nan=True), name


def test_profiles_and_ids_as_batsim_writes_them(tmp_path):
    """Composed profiles run their parts in sequence, repeat times; 'workload!N' and digit ids."""
    doc = {"nb_res": 8, "jobs": [
        {"id": "w0!3", "subtime": 4, "res": 2, "profile": "seq", "walltime": 100},
        {"id": "1", "subtime": 4, "res": 8, "profile": "d"},
        {"id": 2, "subtime": 0.5, "res": 0, "profile": "d", "walltime": -1},
        {"id": 9, "subtime": 1, "res": 3, "profile": "new", "extra_data": "{}"}],
        "profiles": {"d": {"type": "delay", "delay": 10}, "half": {"type": "DelayProfile", "delay": 2.5},
                     "seq": {"type": "composed", "repeat": 3, "seq": ["d", "half", "d"]},
                     "new": {"type": "SequentialCompositionProfile", "seq": ["half"]},
                     "unused": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    tr = swf.read(str(path))
    assert tr.max_procs == 8 and tr.dropped_invalid == 1          # res = 0: no processor count, as in SWF
    assert tr.job_id.tolist() == [9, 1, 3]                        # submit, then id
    assert tr.run.tolist() == [2.5, 10.0, 3 * 22.5]
    assert tr.procs.tolist() == [3, 8, 2]
    assert tr.estimate.tolist() == [2.5, 10.0, 100.0]             # max(walltime, run, 1)
    assert swf.read(str(path), 4).dropped_too_large == 1          # a smaller machine drops, as in SWF


def test_a_good_workload_never_looks_for_lines(pair, monkeypatch):
    """Finding a line scans the file: done for an error only (once per distinct profile was quadratic)."""
    calls = []
    real = batsim._top_members
    monkeypatch.setattr(batsim, "_top_members", lambda text: calls.append(1) or real(text))
    data, _ = batsim.read_fields(str(pair[1]))
    assert data.shape[0] == 300 and len(set(data[:, 3])) > 250 and calls == []   # many profiles, no scan


def test_writer_keeps_exact_values(tmp_path):
    x = np.array([0.1, 1e-7, 123456.789, 2.0 ** 40 + 0.5, 3.0])
    path = tmp_path / "x.json"
    batsim.write(str(path), np.arange(1, 6), x, x, np.ones(5, np.int64), x, 1)
    data, nb = batsim.read_fields(str(path))
    assert nb == 1 and np.array_equal(data[:, 1], x) and np.array_equal(data[:, 3], x)
    assert np.array_equal(data[:, 8], x)


# --- malformed workloads: one line, exit 2, naming file, job or profile, line, what is allowed

def text(jobs: list[str], profiles: str = '"d": {"type": "delay", "delay": 5}', nb_res: str = "16") -> str:
    """A workload with one job per line: the first job is on line 4."""
    return ('{\n  "nb_res": ' + nb_res + ',\n  "jobs": [\n    ' + ",\n    ".join(jobs) + '\n  ],\n'
            '  "profiles": {\n    ' + profiles + '\n  }\n}\n')


def j(i: int, **kw) -> str:
    d = {"id": i, "subtime": 10 * i, "res": 4, "walltime": 60, "profile": "d"}
    d.update(kw)
    return json.dumps({k: v for k, v in d.items() if v is not None})


GOOD = [j(i) for i in range(1, 6)]                                   # jobs 0-4 on lines 4-8
# with one job, profile "d" is on line 7 and "p" on line 8
PROFILE_P_ON_LINE_8 = '"d": {"type": "delay", "delay": 5},\n    "p": '

CASES = {
    "syntax": ("w.json", text(GOOD).replace('"res": 4, "walltime": 60, "profile": "d"}', '"res": 4 "profile": "d"}', 1),
               ["line 4, column", "not valid JSON", "Expecting ','"]),
    "trailing comma": ("w.json", text(GOOD[:2] + [j(3) + ","]), ["line 7", "not valid JSON"]),
    "no subtime": ("w.json", text(GOOD[:3] + [j(4, subtime=None)]), ["line 7: job 3 (id 4)", "no 'subtime'",
                                                                     "id, subtime, res and profile"]),
    "no res": ("w.json", text(GOOD + [j(6, res=None)]), ["line 9: job 5 (id 6)", "no 'res'"]),
    "no profile": ("w.json", text([j(1, profile=None)]), ["line 4: job 0 (id 1)", "no 'profile'"]),
    "no id": ("w.json", text(GOOD[:1] + ['{"subtime": 1, "res": 1, "profile": "d"}']), ["line 5: job 1", "no 'id'"]),
    "negative subtime": ("w.json", text(GOOD[:2] + [j(3, subtime=-5)]), ["line 6: job 2 (id 3)", "subtime = -5",
                                                                         "finite number >= 0"]),
    "string subtime": ("w.json", text([j(1, subtime="3")]), ["line 4: job 0 (id 1)", "subtime = '3'"]),
    "NaN subtime": ("w.json", text([j(1)]).replace('"subtime": 10', '"subtime": NaN'), ["line 4", "subtime = nan"]),
    "res above nb_res": ("w.json", text(GOOD[:4] + [j(5, res=17)]), ["line 8: job 4 (id 5)", "res = 17",
                                                                     "from 0 to nb_res = 16"]),
    "negative res": ("w.json", text([j(1, res=-2)]), ["line 4: job 0 (id 1)", "res = -2"]),
    "fractional res": ("w.json", text([j(1, res=2.5)]), ["line 4", "res = 2.5", "an integer"]),
    "walltime 0": ("w.json", text(GOOD[:1] + [j(2, walltime=0)]), ["line 5: job 1 (id 2)", "walltime = 0",
                                                                   "-1 (none) or a finite number > 0"]),
    "unknown profile": ("w.json", text(GOOD[:2] + [j(3, profile="big")]), ["line 6: job 2 (id 3)", "profile 'big'",
                                                                           "one of 'd'"]),
    "profile type": ("w.json", text([j(1, profile="p")], PROFILE_P_ON_LINE_8 + '{"type": "parallel_homogeneous", '
                                    '"cpu": 1e9, "com": 0}'), ["line 8: profile 'p' (job 0, id 1)",
                                                             "'parallel_homogeneous'", "allowed types: 'delay'"]),
    "no profile type": ("w.json", text([j(1, profile="p")], PROFILE_P_ON_LINE_8 + '{"delay": 3}'),
                        ["line 8: profile 'p'", "no 'type'"]),
    "negative delay": ("w.json", text([j(1)], '"d": {"type": "delay", "delay": -1}'),
                       ["line 7: profile 'd' (job 0, id 1)", "delay = -1"]),
    "cycle": ("w.json", text([j(1, profile="p")], PROFILE_P_ON_LINE_8 + '{"type": "composed", "seq": ["d", "p"]}'),
              ["line 8: profile 'p'", "leads back to 'p'"]),
    "duplicate id": ("w.json", text(GOOD + [j(3)]), ["line 9: job 5 (id 3)", "also job 2's"]),
    "id word": ("w.json", text(GOOD[:1] + [j(2, id="job-b")]), ["line 5: job 1", "id = 'job-b'", "an integer"]),
    "job not object": ("w.json", text(GOOD[:1] + ["[1, 2]"]), ["line 5: job 1", "a job is a JSON object"]),
    "no nb_res": ("w.json", text(GOOD).replace('"nb_res": 16,', '"size": 16,'), ["no 'nb_res'"]),
    "nb_res 0": ("w.json", text(GOOD, nb_res="0"), ["line 2", "nb_res = 0", "positive integer"]),
    "nb_res string": ("w.json", text(GOOD, nb_res='"16"'), ["line 2", "nb_res = '16'"]),
    "jobs object": ("w.json", '{"nb_res": 4,\n "profiles": {},\n "jobs": {}}', ["line 3", "jobs is a JSON dict",
                                                                              "an array"]),
    "array": ("w.json", "[]", ["a JSON object with nb_res, jobs and profiles"]),
    "empty": ("w.json", "", ["line 1, column 1", "not valid JSON"]),
    "no usable job": ("w.json", text([j(1, res=0), j(2, res=0)]), ["no usable job", "2 with run time < 0 or no "
                                                                   "processor count"]),
    "bad line in gzip": ("w.json.gz", gzip.compress(text(GOOD[:3] + [j(4, subtime=-1)]).encode()),
                         ["line 7: job 3 (id 4)", "subtime = -1"]),
    "not gzip": ("w.json.gz", text(GOOD), ["cannot be read as a Batsim workload", "BadGzipFile"]),
    "not UTF-8": ("w.json", b'{"nb_res": 1, "jobs": [], "profiles": {"\xff": 1}}',
                  ["cannot be read as a Batsim workload", "UnicodeDecodeError"]),
}


def cluster_spec(folder: Path, trace: str) -> Path:
    path = folder / "spec.toml"
    path.write_text(f'workload = "cluster"\nreplications = 2\nseed = 3\n[params]\nsource = "swf"\ntrace = "{trace}"\n')
    return path


def test_line_numbers_of_the_helper():
    lines = text(GOOD).splitlines()
    assert lines[3].strip().startswith('{"id": 1') and lines[7].strip().startswith('{"id": 5')


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_workload_one_line_exit_2(case, tmp_path, capsys):
    name, content, words = CASES[case]
    trace = tmp_path / name
    trace.write_bytes(content if isinstance(content, bytes) else content.encode())
    path = cluster_spec(tmp_path, name)
    code = cli.main(["run", str(path), "--workers", "0", "--store", str(tmp_path / "s.zarr"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("schedsweep: error: ") and str(path) in err and f"{trace}" in err, err
    for word in words:
        assert word in err, (word, err)
    assert not (tmp_path / "s.zarr").exists()


def test_the_good_workload_of_the_cases_is_good(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(text(GOOD))
    tr = swf.read(str(path))
    assert tr.n_jobs == 5 and tr.max_procs == 16 and tr.run.tolist() == [5.0] * 5
