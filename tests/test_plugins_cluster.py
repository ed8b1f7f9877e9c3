"""Cluster plug-ins (workloads/cluster/plugin_kernel.py): the built-ins re-written as
plug-ins give the built-ins' schedules bit for bit; impossible choices fail the
replication with a message naming the plug-in, the time and the choice.

The bad plug-ins live in tests/plugins_bad.py (an importable module, as a user's
would be)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import excerpts
from schedsweep.workloads import cluster
from schedsweep.workloads.kernel_support import plugins as _plugins
from schedsweep.workloads.cluster import plugin_kernel, simulator, swf
from schedsweep.workloads.cluster.bookkeeping import CL_MASKS

BUILTIN = "schedsweep.workloads.cluster.plugin_builtins:"
CTC = excerpts.path(excerpts.CTC)
FIELDS = ("start", "end", "killed", "nodes_used", "min_speed", "alloc_ptr", "alloc_node", "alloc_k",
          "node_core_util", "node_mem_util", "node_disk_util")


def flow(jobs, node_cores, mem=None, node_mem=None, speed=None) -> cluster.Flow:
    sub = np.array([j[0] for j in jobs], float)
    n = np.array([j[1] for j in jobs], np.int64)
    est = np.array([j[2] for j in jobs], float)
    tau = np.array([j[3] for j in jobs], float)
    p = len(node_cores)
    z = np.zeros(len(jobs))
    return cluster.Flow(sub, n, z if mem is None else np.asarray(mem, float), z.copy(), est, tau,
                        np.asarray(node_cores, np.int64), np.full(p, 1e9) if node_mem is None else node_mem,
                        np.full(p, 1e9), np.ones(p) if speed is None else np.asarray(speed, float))


def builtin(f, queue, allocation="first_fit", seed=3):
    return simulator.simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau, f.node_cores,
                              f.node_mem, f.node_disk, f.node_speed, queue, allocation, seed)


def plugged(f, queue, allocation="first_fit", seed=3):
    """The plug-in kernel with ``queue`` (a built-in name runs as its plug-in form) and
    ``allocation`` (a plug-in path, or a built-in run as itself)."""
    q = _plugins.function(cluster, "queue", queue)
    if _plugins.is_path(allocation):
        a, code = _plugins.function(cluster, "allocation", allocation), -1
    else:
        a, code = _plugins.function(cluster, "allocation", "first_fit"), cluster.ALLOCATIONS.index(allocation)
    return plugin_kernel.simulate(f, q, a, code, CL_MASKS.index("queue_nonempty_and_not_all_idle"), seed,
                                  (queue, allocation))


def assert_same(r1, r2):
    for name in FIELDS:
        a, b = getattr(r1, name), getattr(r2, name)
        assert np.array_equal(a, b, equal_nan=True), name
    for name in ("masked_time", "sigma_time", "cl_integral"):
        assert getattr(r1, name) == getattr(r2, name), name


@st.composite
def instances(draw, memory=True, hetero=False):
    """Small random flows: ties in submit times, kills (estimate < run time), multi-core
    nodes, and memory per process that binds on some nodes."""
    p = draw(st.integers(1, 5))
    node_cores = [draw(st.integers(1, 4)) for _ in range(p)]
    total = sum(node_cores)
    k = draw(st.integers(1, 25))
    t, jobs, mem = 0, [], []
    for _ in range(k):
        t += draw(st.integers(0, 5))
        run = draw(st.integers(1, 12))
        jobs.append((float(t), draw(st.integers(1, total)), float(max(1, run + draw(st.integers(-3, 8)))), float(run)))
        mem.append(float(draw(st.sampled_from((0, 0, 100, 300)))) if memory else 0.0)
    node_mem = np.array([float(draw(st.sampled_from((1e9, 1e9, 400, 700)))) for _ in range(p)])
    if any(m > node_mem.max() for m in mem):   # every process fits some node
        mem = [min(m, float(node_mem.max())) for m in mem]
    speed = [draw(st.sampled_from((1.0, 1.5, 2.0))) for _ in range(p)] if hetero else None
    return flow(jobs, node_cores, mem, node_mem, speed)


@settings(max_examples=40, deadline=None)
@given(instances(memory=False), st.sampled_from(("fcfs", "easy", "mpfs_scan")),
       st.sampled_from(("first_fit", "best_fit", "fastest_first")))
def test_builtin_queues_as_plugins_equal_the_builtins(f, queue, allocation):
    assert_same(builtin(f, queue, allocation), plugged(f, BUILTIN + queue, allocation))


@settings(max_examples=25, deadline=None)
@given(instances(hetero=True), st.sampled_from(("fcfs", "mpfs_scan")),
       st.sampled_from(("first_fit", "best_fit", "fastest_first")))
def test_fcfs_and_mpfs_plugins_equal_the_builtins_on_heterogeneous_nodes(f, queue, allocation):
    """Their choices do not depend on speeds (EASY's do: see plugin_builtins)."""
    assert_same(builtin(f, queue, allocation), plugged(f, BUILTIN + queue, allocation))


@settings(max_examples=40, deadline=None)
@given(instances(), st.sampled_from(("fcfs", "mpfs_scan")))
def test_first_fit_as_plugin_equals_the_builtin(f, queue):
    """Memory that binds: the allocation decides by node, through the plug-in call."""
    assert_same(builtin(f, queue, "first_fit"), plugged(f, queue, BUILTIN + "first_fit"))


@settings(max_examples=25, deadline=None)
@given(instances(memory=False))
def test_first_fit_as_plugin_equals_the_builtin_under_easy(f):
    """EASY only where the built-in runs it: memory and disk never bind (check_params)."""
    assert_same(builtin(f, "easy", "first_fit"), plugged(f, "easy", BUILTIN + "first_fit"))


@pytest.fixture(scope="module")
def ctc_head():
    tr = swf.read_cached(CTC, 0, "textbook")
    k = tr.n_jobs    # the whole excerpt (1,100 jobs)
    m = tr.max_procs
    return cluster.Flow(tr.submit[:k], tr.procs[:k], np.zeros(k), np.zeros(k), tr.estimate[:k], tr.run[:k],
                        np.ones(m, np.int64), np.full(m, 1e9), np.full(m, 1e9), np.ones(m), job_id=tr.job_id[:k])


@pytest.mark.parametrize("queue", ["fcfs", "easy"])
def test_trace_head_equal(ctc_head, queue):
    assert_same(builtin(ctc_head, queue), plugged(ctc_head, BUILTIN + queue))
    assert_same(builtin(ctc_head, queue), plugged(ctc_head, BUILTIN + queue, BUILTIN + "first_fit"))


# 6 cores; at t = 5 four are free, job 4 (5 processes) waits and job 5 (1 process) fits
JOBS = [(0.0, 2, 10.0, 10.0), (0.0, 3, 5.0, 5.0), (1.0, 1, 4.0, 4.0), (2.0, 5, 3.0, 3.0), (3.0, 1, 30.0, 30.0)]


@pytest.mark.parametrize("queue, allocation, says", [
    ("tests.plugins_bad:out_of_range", "first_fit",
     "queue plug-in tests.plugins_bad:out_of_range returned 2 at t = 0.0 s: not a position in the queue (0..1) nor -1"),
    ("tests.plugins_bad:largest", "first_fit",
     "queue plug-in tests.plugins_bad:largest chose position 0, job 4 (5 processes), at t = 5.0 s: it does not fit now "
     "(the nodes can take 4 of its processes)"),
    ("fcfs", "tests.plugins_bad:busy_node",
     "allocation plug-in tests.plugins_bad:busy_node for job 2 (3 processes) at t = 0.0 s gave node 0 3 processes; "
     "it can take 0 now (busy)"),
    ("fcfs", "tests.plugins_bad:twice",
     "allocation plug-in tests.plugins_bad:twice for job 1 (2 processes) at t = 0.0 s listed node 0 twice"),
    ("fcfs", "tests.plugins_bad:no_node",
     "allocation plug-in tests.plugins_bad:no_node for job 1 (2 processes) at t = 0.0 s gave entry 0 the node 7: "
     "not a node index (0..2)"),
    ("fcfs", "tests.plugins_bad:short",
     "allocation plug-in tests.plugins_bad:short for job 1 (2 processes) at t = 0.0 s placed 1 processes; the job has 2"),
])
def test_impossible_choices_are_named(queue, allocation, says):
    f = flow(JOBS, [2, 2, 2])
    with pytest.raises(_plugins.PluginError) as exc:
        plugged(f, queue, allocation)
    assert str(exc.value).startswith(says)


def test_refusing_allocation_keeps_the_job_waiting():
    """-1 from an allocation plug-in is not an error: the job waits and starts later."""
    f = flow(JOBS, [2, 2, 2])
    r = plugged(f, "fcfs", "tests.plugins_bad:only_when_empty")
    assert not np.isnan(r.start).any()
    assert list(r.start) == [0.0, 10.0, 15.0, 19.0, 22.0]   # one job at a time, FCFS
    assert list(plugged(f, "fcfs").start) == [0.0, 0.0, 1.0, 10.0, 10.0]


def test_plugin_state_is_read_only():
    with pytest.raises(_plugins.PluginError, match="does not compile for the queue point"):
        _plugins.resolve("tests.plugins_bad:writes_state", _plugins.point_of(cluster, "queue"))


def test_where_plugins_run():
    bad = cluster.check_params({"queue": BUILTIN + "easy", "semantics": "pyss"})
    assert any("plug-ins run in semantics = 'textbook'" in e for e in bad)
    bad = cluster.check_params({"queue": "conservative", "allocation": BUILTIN + "first_fit"})
    assert any("not 'conservative'" in e for e in bad)
    assert cluster.check_params({"queue": BUILTIN + "easy", "allocation": "best_fit"}) == []


def test_pipeline_records_a_failing_plugin_and_goes_on(tmp_path, capsys):
    """Through the CLI: a misspelt plug-in is one line and exit 2; a plug-in's impossible
    choice fails its replications (status 3, the failure record names the plug-in, the
    time and the choice, with the replication's seed) while the other cell runs."""
    from schedsweep.pipeline import cli
    from schedsweep.pipeline.store.integrity import open_store
    from schedsweep.pipeline.store.zarrstore import read_failures

    spec = tmp_path / "c.toml"
    spec.write_text('workload = "cluster"\nreplications = 3\nseed = 5\n[params]\njobs = 40\nnodes = 4\n'
                    'load = 0.9\n[sweep]\nqueue = ["fcfs", "tests.plugins_bad:largest"]\n')
    store = tmp_path / "c.zarr"
    (tmp_path / "typo.toml").write_text(spec.read_text().replace("plugins_bad:largest", "plugins_bad:larget"))
    assert cli.main(["run", str(tmp_path / "typo.toml"), "--workers", "0", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "[sweep] queue[1] = 'tests.plugins_bad:larget': module 'tests.plugins_bad'" in err
    assert "has no function 'larget'" in err
    assert cli.main(["run", str(spec), "--workers", "0", "--store", str(store), "--no-progress"]) == cli.EXIT_SOME_FAILED
    ds = open_store(store)
    assert (ds["status"].values[0] == 1).all()
    failed = ds["status"].values[1] == 3
    assert failed.any()
    records = read_failures(store)
    assert len(records) == failed.sum()
    for rec in records:
        assert int(rec["seed"]) == int(ds["seed"].values[rec["replication"]])
        assert "PluginError: queue plug-in tests.plugins_bad:largest chose position" in rec["traceback"]
        assert "at t = " in rec["traceback"] and "it does not fit now" in rec["traceback"]


def test_listing_names_both_points(capsys):
    from schedsweep.pipeline import cli

    assert cli.main(["workloads", "cluster"]) == 0
    out = " ".join(capsys.readouterr().out.split())   # the text wraps at the terminal's width
    assert "queue: decide(now, queue, running, run_end, jobs, nodes, memory) -> int64" in out
    assert "allocation: allocate(now, job, jobs, nodes, chosen, procs, memory) -> int64" in out
    assert "nodes.free_cores" in out and "shadow(running, run_end, jobs, nodes, j)" in out
