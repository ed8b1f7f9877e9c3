"""Trace windows (``trace_window_jobs``, ``trace_window_draw``, ``trace_window_warmup``).

- A window is the whole-trace run of a file holding exactly its jobs: the test writes that
  excerpt (the window's records, submit times shifted to start at 0) and runs it with
  ``trace_window_jobs = 0``; every metric equal, for sequential and random windows, both
  semantics, with and without ``trace_load``.
- The warm-up: the per-job metrics of a window equal those of ``tests/naive_cluster.py``'s
  schedule of the window over its jobs after the warm-up (and differ from all its jobs').
- Random windows: a run of W consecutive trace jobs whose first job is the documented draw
  (stream 1 of the seed, one integer in [0, n - W]), within bounds, and depending on the
  seed alone (not on the replication index, the queue policy or trace_load).
- Through ``pipeline.run``: bit for bit the same store with 0 or 2 workers and batch sizes
  1, 2 and the pilot's; replication r is window r in every cell (paired).
- The refusals, one line each: more sequential replications than windows (saying how many
  there are), a window longer than the trace, windows of a generated flow.
"""
from __future__ import annotations

import numpy as np
import pytest

from naive_cluster import simulate as naive_simulate
from schedsweep import pipeline
from schedsweep.pipeline.spec.sweep import SpecError, load
from schedsweep.workloads import cluster
from schedsweep.workloads._contract import QUANTILE_LEVELS
from schedsweep.workloads.cluster import swf

MACHINE = 8
N_RECORDS = 57          # one of them invalid (run time < 0): 56 usable jobs, 5 windows of 10 (6 left over)
W = 10


def _records(n: int = N_RECORDS, invalid_at: int | None = 23, seed: int = 5) -> list[list[int]]:
    """SWF records (18 integer fields) of a busy little machine: ids in file order, submit
    gaps 0-40 s (ties happen), run times 1-300 s, 1-8 processors, requests above or below
    the run time."""
    rng = np.random.default_rng(seed)
    out, t = [], 0
    for k in range(n):
        t += int(rng.integers(0, 41))
        f = [-1] * 18
        run = int(rng.integers(1, 301))
        procs = int(rng.integers(1, MACHINE + 1))
        f[0], f[1], f[3], f[4], f[7], f[8] = k + 1, t, run, procs, procs, run + int(rng.integers(-20, 200))
        if k == invalid_at:
            f[3] = -1
        out.append(f)
    return out


def _write(path, records) -> str:
    path.write_text(f"; MaxProcs: {MACHINE}\n" + "".join(" ".join(map(str, f)) + "\n" for f in records))
    return str(path)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("windows")
    return {"dropping": (_write(d / "t.swf", _records()), _records()),
            "clean": (_write(d / "c.swf", _records(invalid_at=None)), _records(invalid_at=None))}


def _params(trace: str, **kw) -> dict:
    return {"source": "swf", "trace": trace, "queue": "easy", "allocation": "first_fit", **kw}


TIMING = {m.name for m in cluster.METRICS if m.timing}


def _same(a: dict, b: dict, skip=()) -> None:
    for name in a:
        if name in TIMING or name in skip:
            continue
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def _start_drawn(seed: int, n: int, w: int) -> int:
    """The documented draw: stream 1 of the replication's seed, one integer in [0, n - w]."""
    stream = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(4)[1]))
    return int(stream.integers(0, n - w + 1))


def _excerpt(tmp_path, records, trace: str, conversion: str, a: int, b: int) -> str:
    """A file holding exactly jobs [a, b) of the trace (queue order), submit times shifted so
    that its first job is submitted at 0."""
    tr = swf.read(trace, conversion=conversion)
    by_id = {f[0]: f for f in records}
    t0 = tr.submit[a]
    lines = []
    for jid in tr.job_id[a:b]:
        f = list(by_id[int(jid)])
        f[1] = int(f[1] - t0)
        lines.append(f)
    return _write(tmp_path / f"excerpt-{a}.swf", lines)


SEEDS = np.array([11, 12, 13, 14, 15], np.uint64)


@pytest.mark.parametrize("semantics,queue,load", [("textbook", "easy", 0.0), ("textbook", "fcfs", 0.9),
                                                  ("textbook", "conservative", 0.0), ("pyss", "easy", 0.7)])
def test_a_window_is_the_whole_trace_run_of_its_excerpt(traces, tmp_path, semantics, queue, load):
    trace, records = traces["dropping" if semantics == "textbook" else "clean"]
    conversion = cluster.trace_conversion({"semantics": semantics})
    n = swf.read(trace, conversion=conversion).n_jobs
    common = {"queue": queue, "semantics": semantics, "trace_load": load}
    seq = cluster.run_batch(_params(trace, trace_window_jobs=W, trace_window_warmup=0.0, **common), SEEDS,
                            np.arange(5, dtype=np.int64))
    rnd = cluster.run_batch(_params(trace, trace_window_jobs=W, trace_window_warmup=0.0,
                                    trace_window_draw="random", **common), SEEDS, np.arange(5, dtype=np.int64))
    for k, seed in enumerate(SEEDS):
        for got, a in ((seq, k * W), (rnd, _start_drawn(int(seed), n, W))):
            excerpt = _excerpt(tmp_path, records, trace, conversion, a, a + W)
            whole = cluster.run_batch(_params(excerpt, **common), SEEDS[k:k + 1])
            one = {name: v[k:k + 1] for name, v in got.items()}
            _same(one, whole, skip=("dropped_jobs",))
            assert one["jobs_simulated"][0] == W
            assert one["dropped_jobs"][0] == (1 if semantics == "textbook" else 0)  # the trace's, not the excerpt's


def _textbook_jobs(records) -> list[tuple]:
    """The textbook reading of the records, written out: processors = field 5, estimate =
    max(request, run, 1), run time < 0 dropped; queue order (submit, id)."""
    kept = sorted((f[1], f[0], f[4], max(f[8], f[3], 1), f[3]) for f in records if f[3] >= 0 and f[4] > 0)
    return [(float(s), c, float(e), float(r)) for s, _jid, c, e, r in kept]


@pytest.mark.parametrize("queue", ["fcfs", "easy", "conservative"])
def test_warmup_jobs_are_simulated_but_not_measured(traces, queue):
    trace, records = traces["dropping"]
    w, frac = 20, 0.25
    k = int(np.floor(frac * w))
    jobs = _textbook_jobs(records)
    out = cluster.run_batch(_params(trace, queue=queue, trace_window_jobs=w, trace_window_warmup=frac),
                            SEEDS[:2], np.arange(2, dtype=np.int64))
    for r in range(2):
        window = jobs[r * w:(r + 1) * w]
        t0 = window[0][0]
        window = [(s - t0, c, e, run) for s, c, e, run in window]
        start, end, _ = naive_simulate(window, MACHINE, queue)
        wait = np.array(start) - np.array([j[0] for j in window])
        real = np.array(end) - np.array(start)
        bsld = np.maximum(1.0, (wait + real) / np.maximum(real, 10.0))
        measured = slice(k, None)
        np.testing.assert_allclose(out["mean_wait"][r], wait[measured].mean(), rtol=1e-12)
        np.testing.assert_allclose(out["max_wait"][r], wait[measured].max(), rtol=1e-12)
        np.testing.assert_allclose(out["var_wait"][r], wait[measured].var(), rtol=1e-12)
        np.testing.assert_allclose(out["mean_bsld"][r], bsld[measured].mean(), rtol=1e-12)
        np.testing.assert_allclose(out["wait_quantiles"][r], np.percentile(wait[measured], QUANTILE_LEVELS),
                                   rtol=1e-12)
        np.testing.assert_allclose(out["mean_job_time"][r], real[measured].mean(), rtol=1e-12)
        assert out["makespan"][r] == max(end)           # the whole window's schedule, warm-up included
        assert out["jobs_simulated"][r] == w
        # the exclusion matters on this data: all the window's jobs would give another mean wait
        assert wait[measured].mean() != wait.mean()


def test_random_windows_lie_within_the_trace_and_depend_on_the_seed_alone(traces):
    trace, _ = traces["dropping"]
    tr = swf.read(trace)
    n = tr.n_jobs
    starts = set()
    for seed in range(40):
        p = _params(trace, trace_window_jobs=W, trace_window_draw="random")
        f, _ = cluster.flow(cluster.params.with_defaults(p), seed, replication=seed % 3)
        a = int(np.flatnonzero(tr.job_id == f.job_id[0])[0])
        assert 0 <= a <= n - W and a == _start_drawn(seed, n, W)
        np.testing.assert_array_equal(f.job_id, tr.job_id[a:a + W])
        np.testing.assert_array_equal(f.submit, tr.submit[a:a + W] - tr.submit[a])
        for other in ({"replication": 7}, {"params": {"queue": "fcfs", "trace_load": 0.5}}):
            q = cluster.params.with_defaults({**p, **other.get("params", {})})
            g, _ = cluster.flow(q, seed, other.get("replication"))
            np.testing.assert_array_equal(g.job_id, f.job_id)
        starts.add(a)
    assert len(starts) >= 20          # 40 draws over 47 possible starts


def test_sequential_windows_need_their_index(traces):
    trace, _ = traces["dropping"]
    p = _params(trace, trace_window_jobs=W)
    with pytest.raises(ValueError, match="needs the replication index"):
        cluster.run_batch(p, SEEDS[:1])
    with pytest.raises(ValueError, match="the trace has 5 windows of 10 jobs"):
        cluster.run_batch(p, SEEDS[:1], np.array([5], np.int64))


SPEC = """
name = "windows"
workload = "cluster"
replications = {reps}
seed = 3
[params]
source = "swf"
trace = "{trace}"
allocation = "first_fit"
trace_window_jobs = {w}
trace_window_warmup = 0.2
[sweep]
queue = ["fcfs", "easy"]
trace_window_draw = ["sequential", "random"]
"""


def test_too_many_sequential_replications_are_refused_in_one_line(traces, write_spec):
    trace, _ = traces["dropping"]
    with pytest.raises(SpecError) as info:
        load(write_spec(SPEC.format(reps=6, trace=trace, w=W)))
    text = str(info.value)
    assert "\n" not in text
    assert "has 5 windows of 10 jobs (56 usable jobs), fewer than replications = 6" in text
    load(write_spec(SPEC.format(reps=5, trace=trace, w=W)))          # 5 windows: 5 replications are fine
    with pytest.raises(SpecError, match="trace_window_jobs = 57 exceeds the 56 usable jobs"):
        load(write_spec(SPEC.format(reps=5, trace=trace, w=57)))
    same = cluster.check_params(_params(trace, trace_window_jobs=56, trace_window_draw="random"))
    assert len(same) == 1 and "every random window would be the same" in same[0]
    assert cluster.check_params(_params(trace, trace_window_jobs=56)) == []     # one sequential window: fine
    errors = cluster.check_params({"source": "lublin", "trace_window_jobs": 10})
    assert errors == ["trace_window_jobs = 10 needs source = 'swf' (windows of a trace), not 'lublin'; "
                      "generated flows set jobs"]


def test_windows_through_the_pipeline_bit_for_bit_whatever_workers_and_batches(traces, write_spec, tmp_path):
    trace, _ = traces["dropping"]
    spec = write_spec(SPEC.format(reps=5, trace=trace, w=W))
    runs = [pipeline.open_store(pipeline.run(spec, tmp_path / f"s{k}.zarr", workers=workers, batch_size=size,
                                             progress=False))
            for k, (workers, size) in enumerate([(0, 1), (2, 2), (0, None)])]
    names = [m.name for m in cluster.METRICS if not m.timing] + ["status", "seed"]
    ref = runs[0][names].load()
    assert (ref["status"].values == 1).all()
    for other in runs[1:]:
        for name in names:
            np.testing.assert_array_equal(other[name].values, ref[name].values, err_msg=name)
    # the store's values are run_batch's with the store's seeds and replication indices
    ds = runs[0]
    for cell_draw in ("sequential", "random"):
        cell = ds.sel(queue="easy", trace_window_draw=cell_draw)
        seeds = cell["seed"].values.astype(np.uint64)
        direct = cluster.run_batch(_params(trace, queue="easy", trace_window_jobs=W, trace_window_warmup=0.2,
                                           trace_window_draw=cell_draw), seeds, np.arange(5, dtype=np.int64))
        np.testing.assert_array_equal(cell["mean_wait"].values, direct["mean_wait"])
    # paired: replication r is the same window under both queue policies (its offered load,
    # a property of the window's jobs alone), and the windows differ from one another
    load_ = ds["offered_load"]
    for draw in ("sequential", "random"):
        fcfs = load_.sel(queue="fcfs", trace_window_draw=draw).values
        easy = load_.sel(queue="easy", trace_window_draw=draw).values
        np.testing.assert_array_equal(fcfs, easy)
    assert len(set(load_.sel(queue="fcfs", trace_window_draw="sequential").values.tolist())) == 5


def test_replication_indices_reach_every_path(traces, write_spec):
    """Per-seed reruns after a failed batch, the child process, the records of a replication
    and the catalogue's pilot all give the workload the replication's own index."""
    from schedsweep.pipeline.read import catalogue
    from schedsweep.pipeline.store import records
    from schedsweep.pipeline.execution import tasks

    trace, _ = traces["dropping"]
    p = _params(trace, trace_window_jobs=W)
    seeds = SEEDS[:3]
    direct = cluster.run_batch(p, seeds, np.array([0, 1, 2], np.int64))
    # index 9 has no window: the batch fails, each seed is rerun alone with its own index
    got = tasks.run_replications("cluster", p, seeds, np.array([0, 9, 2], np.int64))
    assert set(got["failed"]) == {1} and "the trace has 5 windows" in got["failed"][1][1]
    for k in (0, 2):
        assert got["outputs"]["mean_wait"][k] == direct["mean_wait"][k]
    isolated = tasks.run_isolated("cluster", p, seeds, 120.0, np.array([0, 1, 2], np.int64))
    assert not isolated["failed"]
    np.testing.assert_array_equal(isolated["outputs"]["mean_wait"], direct["mean_wait"])
    spec = load(write_spec(SPEC.format(reps=5, trace=trace, w=W)))
    cell = next(i for i, q in spec.cells() if q["trace_window_draw"] == "sequential")
    rec = records.compute(spec, cell, 3)
    window = swf.read(trace).job_id[3 * W:4 * W]
    assert list(dict.fromkeys(rec["job"].tolist())) == window.tolist()
    assert np.isfinite(catalogue.pilot(spec, seconds=0.05))   # its doubling batches pass the 5 windows
