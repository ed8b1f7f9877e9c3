"""Deterministic cells (a workload's ``deterministic`` hook): run once, shown without a CI.

The cluster on a whole SWF trace draws nothing from its seed: its replications would be
copies. Such a cell runs replication 0 only; the others stay 'not run' and count as 'not
needed (deterministic)'; table, plot, report and verify show its value with the word, never
a '± 0' under a CI. ``table --paired A=B --over DIM`` pools paired differences over a
dimension, checked against ``scipy.stats.ttest_rel``. Small SWF files are written here.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st

from schedsweep import pipeline
from schedsweep.pipeline.read import plot, report
from schedsweep.pipeline.base import stats
from schedsweep.pipeline.read import tables, verify
from schedsweep.pipeline.store.zarrstore import DETERMINISTIC_LABEL, NOT_RUN, OK
from schedsweep.workloads import cluster, mm1

REPLICATIONS = 5
TRACES = 3
TIMING = {m.name for m in cluster.METRICS if m.timing}


def swf_line(*fields: int) -> str:
    return " ".join(str(x) for x in list(fields) + [-1] * (18 - len(fields))) + "\n"


def write_traces(folder: Path) -> list[str]:
    """TRACES small traces of 40 jobs on 8 processors, each a different (fixed) job mix."""
    names = []
    for k in range(TRACES):
        rng = np.random.default_rng(100 + k)
        text, t = "; MaxProcs: 8\n", 0
        for j in range(1, 41):
            t += int(rng.integers(0, 30))
            run, procs = int(rng.integers(1, 200)), int(rng.integers(1, 9))
            text += swf_line(j, t, -1, run, procs, -1, -1, procs, 2 * run)
        (folder / f"w{k}.swf").write_text(text)
        names.append(f"w{k}.swf")
    return names


def cluster_spec(folder: Path, replications: int = REPLICATIONS, traces: int = TRACES, extra: str = "") -> Path:
    names = write_traces(folder)[:traces]
    spec = folder / "trace.toml"
    spec.write_text(f'name = "trace-det"\nworkload = "cluster"\ndescription = "whole traces"\n'
                    f"replications = {replications}\nseed = 11\n[params]\nsource = \"swf\"\n{extra}[sweep]\n"
                    f"trace = {names!r}\nqueue = [\"fcfs\", \"easy\"]\n".replace("'", '"'))
    return spec


def run(spec: Path, store: Path) -> Path:
    return pipeline.run(spec, store, workers=0, batch_size=2, progress=False)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, Path, str]:
    """(spec, store, what the run said) of the all-deterministic cluster sweep."""
    folder = tmp_path_factory.mktemp("det")
    spec = cluster_spec(folder)
    import io
    import sys

    err, old = io.StringIO(), sys.stderr
    sys.stderr = err
    try:
        store = run(spec, folder / "trace.zarr")
    finally:
        sys.stderr = old
    return spec, store, err.getvalue()


@pytest.fixture(scope="module")
def ds(made):
    return pipeline.open_store(made[1])


def values(ds, metric: str) -> np.ndarray:
    """Replication 0 of every cell: the one run of a deterministic cell."""
    return ds[metric].isel(replication=0).values


# -- the hook --------------------------------------------------------------------------------------
def test_hook_is_honest_the_cell_does_not_depend_on_the_seed(tmp_path):
    """What the hook calls deterministic gives the same non-timing metrics under two seeds;
    what it does not (heterogeneous speeds, Random First, a window, Lublin flows) differs or is random."""
    trace = str(tmp_path / write_traces(tmp_path)[0])
    params = {"source": "swf", "trace": trace, "queue": "easy"}
    assert cluster.deterministic(params) == "whole trace"
    a, b = (cluster.run_batch(params, np.array([s], np.uint64)) for s in (1, 987654321))
    for m in cluster.METRICS:
        if m.name not in TIMING:
            np.testing.assert_array_equal(a[m.name], b[m.name], err_msg=m.name)
    hetero = {**params, "speeds": "heterogeneous"}
    assert not cluster.deterministic(hetero)
    x, y = (cluster.run_batch(hetero, np.array([s], np.uint64)) for s in (1, 987654321))
    assert not np.array_equal(x["mean_wait"], y["mean_wait"])
    assert not cluster.deterministic({**params, "allocation": "random_first"})
    assert not cluster.deterministic({**params, "trace_window_jobs": 10})  # a window per replication
    assert not cluster.deterministic({"source": "lublin"})
    assert not hasattr(mm1, "deterministic")  # its replications draw their customers


# -- run once ---------------------------------------------------------------------------------------
def test_deterministic_cells_run_once_and_the_run_says_so(made, ds):
    _, _, said = made
    assert "cluster: 6 of 6 cells are deterministic (whole trace): run once each, shown without a CI" in said
    status = ds["status"].values
    assert (status[..., 0] == OK).all() and (status[..., 1:] == NOT_RUN).all()
    assert np.asarray(ds.attrs["deterministic"]).all()
    assert f"{ds['status'].size - 6} {DETERMINISTIC_LABEL}" in said
    counts = tables.completeness(ds)
    assert counts["ok"] == 6 and counts[DETERMINISTIC_LABEL] == 6 * (REPLICATIONS - 1) and counts["not run"] == 0
    # replication 0 is the workload's own result for that cell and seed
    label = str(ds["trace"].values[1])  # the store knows a trace by its file name; the file lies beside the spec
    cell = cluster.run_batch({"source": "swf", "trace": str(made[0].parent / label), "queue": "easy"},
                             ds["seed"].values[:1])
    assert ds["mean_wait"].sel(trace=ds["trace"].values[1], queue="easy").values[0] == cell["mean_wait"][0]


def test_resume_of_a_deterministic_store_does_nothing(made, capfd):
    spec, store, _ = made
    before = pipeline.open_store(store).load()
    run(spec, store)
    said = capfd.readouterr().err
    assert f"resuming {store}: 6 of 6 replications done" in said
    assert "task time limit" not in said  # printed only when there are batches to run
    after = pipeline.open_store(store).load()
    for name in ["status", "mean_wait", "utilization", "reason"]:
        np.testing.assert_array_equal(before[name].values, after[name].values)


def test_growing_replications_of_deterministic_cells_runs_nothing_more(tmp_path, capfd):
    spec = cluster_spec(tmp_path, traces=2)
    store = run(spec, tmp_path / "grow.zarr")
    first = pipeline.open_store(store).load()
    cluster_spec(tmp_path, replications=2 * REPLICATIONS, traces=3)  # more replications and a third trace
    capfd.readouterr()
    run(spec, store)
    said = capfd.readouterr().err
    assert "growing" in said
    grown = pipeline.open_store(store)
    status = grown["status"].values
    assert status.shape == (3, 2, 2 * REPLICATIONS)
    assert (status[..., 0] == OK).all() and (status[..., 1:] == NOT_RUN).all()  # only the new cells' replication 0 ran
    np.testing.assert_array_equal(grown["mean_wait"].values[:2, :, 0], first["mean_wait"].values[:, :, 0])
    assert tables.completeness(grown)[DETERMINISTIC_LABEL] == 6 * (2 * REPLICATIONS - 1)
    assert "cluster: 6 of 6 cells are deterministic (whole trace)" in said


# -- shown without a CI -------------------------------------------------------------------------------
def test_table_shows_the_value_and_the_word(ds):
    result = tables.compute(ds, ["mean_wait"])
    text = tables.render(result, "text", columns=200)
    assert "±" not in text and "CI half-width" not in text and "[n=" not in text
    assert text.splitlines()[0] == "value of each cell (deterministic: run once, no CI)"
    for v in values(ds, "mean_wait").ravel():
        assert f"{v:.4g} (deterministic)" in text
    da = result["mean_wait"]
    np.testing.assert_array_equal(da.sel(stat="mean").values, values(ds, "mean_wait"))
    assert (da.sel(stat="deterministic").values == 1).all() and (da.sel(stat="n").values == 1).all()
    assert np.isnan(da.sel(stat="half_width").values).all() and np.isnan(da.sel(stat="ci_low").values).all()


def test_paired_difference_of_two_deterministic_cells_is_exact(ds):
    result = tables.compute(ds, ["mean_wait"], paired="queue=fcfs")
    da = result["mean_wait"]
    x = ds["mean_wait"].isel(replication=0)
    want = (x.sel(queue="easy") - x.sel(queue="fcfs")).values
    np.testing.assert_array_equal(da.sel(queue="easy", stat="mean").values, want)
    np.testing.assert_array_equal(da.sel(queue="easy", stat="relative_change").values,
                                  want / x.sel(queue="fcfs").values)
    assert np.isnan(da.sel(stat="half_width").values).all() and (da.sel(stat="deterministic").values == 1).all()
    text = tables.render(result, "text", columns=200)
    assert "±" not in text
    assert f"{want[0]:.4g} ({want[0] / x.sel(queue='fcfs').values[0]:+.1%}; deterministic)" in text


def test_plot_title_says_deterministic_not_a_ci(ds):
    fig, _ = plot.figure(ds, "mean_wait", "trace", "queue")
    ax = fig.axes[0]
    title = ax.get_title()
    assert "value (deterministic: run once, no CI)" in title
    assert "95% CI" not in title and "n =" not in title
    assert not ax.containers  # no error bars that would read as a CI
    drawn = np.array([line.get_ydata() for line in ax.lines if len(line.get_ydata()) == TRACES])
    np.testing.assert_array_equal(drawn, values(ds, "mean_wait").T)


def test_report_shows_values_without_ci(made, ds, tmp_path):
    html = report.build(ds, str(made[1]))
    assert "± 0" not in html and "±0 " not in html
    assert "the value of each point (deterministic: run once, no CI)" in html
    assert "95% CI over n" not in html
    assert f"<td class='key'>{DETERMINISTIC_LABEL}</td><td>{6 * (REPLICATIONS - 1)}</td>" in html
    assert "Every cell has all its replications." in html
    cells = re.findall(r"<td class='pm[^']*'>([^<]*)</td>", html)
    # every value says it is one; the paired section's baseline row says that instead of "0 ± 0"
    assert cells and all(("deterministic" in c or c == "(baseline)") and "±" not in c for c in cells)
    assert any("deterministic" in c for c in cells)
    assert "<th>value</th>" in html


def test_verify_judges_a_deterministic_value_by_tolerance_alone(ds):
    """A value run once has no CI: within the tolerance or outside, never 'inside CI' or
    'unresolved'; a claim on two deterministic cells is decided by their exact difference."""
    trace = str(ds["trace"].values[0])
    ours = float(ds["mean_wait"].sel(trace=trace, queue="easy").values[0])
    ref = (f'\n[[reference.value]]\nmetric = "mean_wait"\nwhere = {{ trace = "{trace}", queue = "easy" }}\n'
           f"value = {ours * 1.05!r}\n"
           f'\n[[reference.value]]\nmetric = "mean_wait"\nwhere = {{ trace = "{trace}", queue = "fcfs" }}\n'
           f"value = {ours * 10!r}\n"
           '\n[[reference.claim]]\ntext = "EASY waits least"\nkind = "min"\nmetric = "mean_wait"\n'
           'along = "queue"\nat = "easy"\n')
    copy = ds.copy()
    copy.attrs = {**ds.attrs, "spec_text": ds.attrs["spec_text"] + ref}
    card = verify.scorecard(copy)
    assert [v["verdict"] for v in card["values"]] == ["within tolerance", "outside"]
    assert card["claims"][0]["verdict"] == "holds"
    text = verify.block_text(card)
    assert f"ours {ours:.4g} (deterministic)" in text and "ours " + f"{ours:.4g} ±" not in text
    for s in card["claims"][0]["slices"]:
        assert all(c.endswith("(deterministic)") for c in s["contrasts"])
    # equal deterministic values: a tie no replication count resolves
    same = verify.contrast(np.array([3.0, np.nan]), np.array([3.0, np.nan]), exact=True)
    assert same.sign == 0 and same.needed() is None


# -- mixed and non-deterministic sweeps --------------------------------------------------------------
def test_a_deterministic_baseline_pairs_with_every_replication_of_a_varying_cell(tmp_path):
    """speeds = homogeneous is deterministic, heterogeneous is not: the paired difference is
    each heterogeneous replication minus the one homogeneous value, a one-sample t-interval."""
    names = write_traces(tmp_path)[:1]
    spec = tmp_path / "mixed.toml"
    spec.write_text(f'name = "mixed"\nworkload = "cluster"\ndescription = "m"\nreplications = 5\nseed = 2\n'
                    f'[params]\nsource = "swf"\ntrace = "{names[0]}"\n[sweep]\n'
                    'speeds = ["homogeneous", "heterogeneous"]\n')
    ds = pipeline.open_store(pipeline.run(spec, tmp_path / "mixed.zarr", workers=0, batch_size=5, progress=False))
    status = ds["status"].values
    assert (status[0, 1:] == NOT_RUN).all() and (status[1] == OK).all()
    result = tables.compute(ds, ["mean_wait"], paired="speeds=homogeneous")["mean_wait"]
    het = ds["mean_wait"].sel(speeds="heterogeneous").values
    base = float(ds["mean_wait"].sel(speeds="homogeneous").values[0])
    low, high = st.ttest_1samp(het - base, 0.0).confidence_interval()
    row = result.sel(speeds="heterogeneous")
    np.testing.assert_allclose([row.sel(stat="ci_low"), row.sel(stat="ci_high")], [low, high], rtol=1e-12)
    assert row.sel(stat="n") == 5 and row.sel(stat="deterministic") == 0
    text = tables.render(tables.compute(ds, ["mean_wait"]), "text", columns=200)
    assert "'deterministic': the value of a cell run once, no CI" in text.splitlines()[0]
    assert "(deterministic)" in text and "±" in text


@pytest.fixture(scope="module")
def mm1_store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mm1")
    spec = folder / "mm1.toml"
    spec.write_text('name = "mm1-over"\nworkload = "mm1"\ndescription = "o"\nreplications = 6\nseed = 9\n'
                    "[params]\ncustomers = 300\nwarmup = 20\n[sweep]\nservice_rate = [1.0, 1.25]\n"
                    "arrival_rate = [0.3, 0.5, 0.7]\n")
    return pipeline.run(spec, folder / "mm1.zarr", workers=0, batch_size=6, progress=False)


def test_a_non_deterministic_store_is_unchanged(mm1_store):
    ds = pipeline.open_store(mm1_store)
    assert "deterministic" not in ds.attrs and stats.deterministic_mask(ds) is None
    result = stats.describe(ds)
    assert tuple(result["mean_wait"]["stat"].values) == stats.STATS
    for m in ("mean_wait", "mean_time_in_system"):
        plain = stats.describe_array(ds[m].values, 0.95, axis=ds[m].dims.index("replication"))
        for s in stats.STATS:
            np.testing.assert_array_equal(result[m].sel(stat=s).values, plain[s])
    assert DETERMINISTIC_LABEL not in tables.completeness(ds)
    text = tables.render(tables.compute(ds, ["mean_wait"]), "text", columns=200)
    assert text.splitlines()[0] == "mean ± 95% CI half-width" and "deterministic" not in text
    fig, _ = plot.figure(ds, "mean_wait", "arrival_rate")
    assert "mean and 95% CI, n = 6" in fig.axes[0].get_title()


# -- pooled over a dimension ---------------------------------------------------------------------------
def test_paired_over_a_dimension_equals_scipy_ttest_rel(mm1_store):
    ds = pipeline.open_store(mm1_store)
    result = tables.compute(ds, ["mean_wait"], paired="service_rate=1.0", over="arrival_rate")["mean_wait"]
    assert set(result.dims) == {"service_rate", "stat"}
    a = ds["mean_wait"].sel(service_rate=1.25).values.ravel()  # every arrival rate and replication
    b = ds["mean_wait"].sel(service_rate=1.0).values.ravel()
    ci = st.ttest_rel(a, b).confidence_interval()
    row = result.sel(service_rate=1.25)
    np.testing.assert_allclose([float(row.sel(stat="ci_low")), float(row.sel(stat="ci_high"))],
                               [ci.low, ci.high], rtol=1e-12, atol=0)
    assert row.sel(stat="n") == a.size
    np.testing.assert_allclose(float(row.sel(stat="relative_change")), np.mean(a - b) / np.mean(b), rtol=1e-12)
    level = tables.compute(ds, ["mean_wait"], paired="service_rate=1.0", over="arrival_rate", level=0.9)
    ci90 = st.ttest_rel(a, b).confidence_interval(confidence_level=0.9)
    np.testing.assert_allclose(level["mean_wait"].sel(service_rate=1.25, stat="ci_low"), ci90.low, rtol=1e-12)
    text = tables.render(tables.compute(ds, ["mean_wait"], paired="service_rate=1.0", over="arrival_rate"), "text")
    assert "pooled over arrival_rate" in text


def test_paired_over_deterministic_values_pairs_one_run_per_value(ds):
    """13 traces run once each give 13 pairs: here 3 traces, 3 pairs (not 3 x replications)."""
    result = tables.compute(ds, ["mean_wait"], paired="queue=fcfs", over="trace")["mean_wait"]
    a, b = (ds["mean_wait"].sel(queue=q).isel(replication=0).values for q in ("easy", "fcfs"))
    ci = st.ttest_rel(a, b).confidence_interval()
    row = result.sel(queue="easy")
    assert row.sel(stat="n") == TRACES and stats.DETERMINISTIC not in row["stat"].values  # pooled: a t-interval
    np.testing.assert_allclose([float(row.sel(stat="ci_low")), float(row.sel(stat="ci_high"))],
                               [ci.low, ci.high], rtol=1e-12, atol=0)
    np.testing.assert_allclose(float(row.sel(stat="relative_change")), np.mean(a - b) / np.mean(b), rtol=1e-12)


def test_over_needs_paired_and_a_dimension(mm1_store):
    ds = pipeline.open_store(mm1_store)
    with pytest.raises(stats.QueryError, match="--paired"):
        tables.compute(ds, ["mean_wait"], over="arrival_rate")
    with pytest.raises(stats.QueryError, match="not a sweep dimension"):
        tables.compute(ds, ["mean_wait"], paired="service_rate=1.0", over="nodes")
    with pytest.raises(stats.QueryError, match="the --paired dimension"):
        tables.compute(ds, ["mean_wait"], paired="service_rate=1.0", over="service_rate")


def test_merged_stores_keep_their_deterministic_cells(tmp_path):
    from schedsweep.pipeline.store.export import merge

    halves = []
    for k, names in enumerate((["w0.swf", "w1.swf"], ["w2.swf"])):
        folder = tmp_path / f"half{k}"
        folder.mkdir()
        write_traces(folder)
        spec = folder / "t.toml"
        spec.write_text(f'name = "trace-det"\nworkload = "cluster"\ndescription = "d"\nreplications = 3\nseed = 11\n'
                        f'[params]\nsource = "swf"\n[sweep]\ntrace = {names!r}\n'.replace("'", '"'))
        halves.append(run(spec, folder / "t.zarr"))
    ds = pipeline.open_store(merge(halves, tmp_path / "merged.zarr"))
    assert np.asarray(ds.attrs["deterministic"]).shape == (3,) and np.asarray(ds.attrs["deterministic"]).all()
    assert tables.completeness(ds)[DETERMINISTIC_LABEL] == 3 * 2
    text = tables.render(tables.compute(ds, ["mean_wait"]), "text", columns=200)
    assert text.count("(deterministic)") == 3 and "±" not in text


def test_cli_table_over(made, capsys):
    from schedsweep.pipeline import cli

    assert cli.main(["table", str(made[1]), "--metric", "mean_wait", "--paired", "queue=fcfs", "--over", "trace"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the header wraps to the terminal's width
    assert "pooled over trace" in out and "(deterministic)" not in out
    assert cli.main(["table", str(made[1]), "--metric", "mean_wait"]) == 0
    assert "(deterministic)" in capsys.readouterr().out


def test_auto_replications_stop_a_deterministic_cell_after_one_run(tmp_path):
    """replications = "auto" with deterministic and varying cells: the deterministic ones run
    once and count as done; the varying ones run waves as before."""
    names = write_traces(tmp_path)[:1]
    spec = tmp_path / "auto.toml"
    spec.write_text(f'name = "auto-det"\nworkload = "cluster"\ndescription = "a"\nreplications = "auto"\n'
                    'precision = 0.5\nprecision_metric = "mean_wait"\nmax_replications = 12\nmin_replications = 3\n'
                    f'seed = 2\n[params]\nsource = "swf"\ntrace = "{names[0]}"\n[sweep]\n'
                    'speeds = ["homogeneous", "heterogeneous"]\n')
    ds = pipeline.open_store(pipeline.run(spec, tmp_path / "auto.zarr", workers=0, progress=False))
    status = ds["status"].values
    assert status[0, 0] == OK and (status[0, 1:] == NOT_RUN).all()
    assert (status[1, :3] == OK).all()  # the first wave of the varying cell
    assert ds.attrs["auto"]["done"][0] is True and ds.attrs["auto"]["replications_run"][0] == 1
    counts = tables.completeness(ds)
    assert counts[DETERMINISTIC_LABEL] == 11 and counts["not run"] == 0


def test_dry_run_says_which_cells_run_once(made):
    from schedsweep.pipeline.execution.execute import size_lines
    from schedsweep.pipeline.spec.sweep import load

    lines = size_lines(load(made[0]))
    assert lines[-1] == ("deterministic: 6 of 6 cells (whole trace) run once (replication 0); the store holds "
                         f"{REPLICATIONS} replications per cell, the others 'not needed'")


def test_a_store_made_before_the_attribute_is_read_by_the_workload_hook(made, tmp_path):
    """Stores made before runs recorded ``deterministic`` (their whole-trace cells hold copies)
    open with the cells the workload declares; a store whose workload has no hook reads as before."""
    import shutil

    from schedsweep.pipeline.store import zarrstore as store_mod

    old = tmp_path / "old.zarr"
    shutil.copytree(made[1], old)
    group = store_mod.open_group(old, "r+")
    del group.attrs["deterministic"]
    store_mod.consolidate(old)
    ds = pipeline.open_store(old)
    assert "deterministic" not in ds.attrs
    assert stats.deterministic_mask(ds).values.all()
    assert tables.completeness(ds)[DETERMINISTIC_LABEL] == 6 * (REPLICATIONS - 1)
    text = tables.render(tables.compute(ds, ["mean_wait"]), "text", columns=200)
    assert text.count("(deterministic)") == 6 and "±" not in text
