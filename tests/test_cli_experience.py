"""The command line as people expect it: --version, python -m schedsweep, -q/-v, run STORE,
the next command after a run, output that fits 100 columns, a workload package found in the
current directory, the auto store's stopped cells, the report's figure, the parquet extra."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from schedsweep import __version__, pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import integrity
from schedsweep.pipeline.read import report, tables
from schedsweep.pipeline.store.zarrstore import NOT_RUN, OK

REPO = Path(__file__).resolve().parents[1]

SPEC = """
name = "cli"
workload = "mm1"
description = "M/M/1 (Kleinrock)"
replications = 4
seed = 5
[params]
customers = 300
warmup = 20
[sweep]
arrival_rate = [0.3, 0.6, 0.9]
"""
DATA = ["mean_wait", "mean_time_in_system", "status", "reason", "seed"]


def _data(path: Path) -> xr.Dataset:
    ds = pipeline.open_store(path)[DATA].load()
    ds.attrs = {}
    return ds


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_version_and_python_dash_m():
    out = subprocess.run([sys.executable, "-m", "schedsweep", "--version"], capture_output=True, text=True,
                         cwd=REPO)
    assert out.returncode == 0 and out.stdout.strip() == f"schedsweep {__version__}"
    usage = subprocess.run([sys.executable, "-m", "schedsweep", "nonsense"], capture_output=True, text=True, cwd=REPO)
    assert usage.returncode == 2 and "invalid choice" in usage.stderr


def test_run_store_resumes_from_its_own_spec_and_grows(write_spec, tmp_path, capsys):
    """``run STORE`` takes the spec the store holds: with --set replications=8 the store grows,
    and equals a store made by the 8-replication spec from scratch."""
    spec = write_spec(SPEC)
    store = tmp_path / "s.zarr"
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0"]) == 0
    err = capsys.readouterr().err
    assert f"next: schedsweep table {store}" in err  # the line after a run says what to do next
    assert cli.main(["run", str(store), "--workers", "0", "--set", "replications=8"]) == 0
    fresh = pipeline.run(write_spec(SPEC.replace("replications = 4", "replications = 8"), "eight.toml"),
                         tmp_path / "fresh.zarr", workers=0, progress=False)
    xr.testing.assert_identical(_data(store), _data(fresh))
    capsys.readouterr()
    assert cli.main(["run", str(store), "--store", str(tmp_path / "other.zarr")]) == 2
    assert "resumes that store" in capsys.readouterr().err


def test_quiet_and_verbose(write_spec, tmp_path, capsys):
    spec = write_spec(SPEC)
    assert cli.main(["run", "-q", str(spec), "--store", str(tmp_path / "q.zarr"), "--workers", "0"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.strip() == str(tmp_path / "q.zarr")
    assert cli.main(["-v", "show", str(tmp_path / "missing.zarr")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("schedsweep: error:")
    assert cli.main(["show", str(tmp_path / "missing.zarr")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_the_spec_can_name_the_next_command(write_spec, tmp_path, capsys):
    spec = write_spec(SPEC + '[run]\nnext = "schedsweep table {store} --paired arrival_rate=0.3"\n')
    store = tmp_path / "n.zarr"
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0"]) == 0
    assert f"next: schedsweep table {store} --paired arrival_rate=0.3" in capsys.readouterr().err
    with pytest.raises(pipeline.SpecError, match=r"\[run\] next"):
        pipeline.load(write_spec(SPEC + '[run]\nnext = ""\n', "bad.toml"))


def test_workloads_lists_one_sentence_each_and_details_by_name(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    from schedsweep import workloads
    assert cli.main(["workloads"]) == 0
    short = capsys.readouterr().out
    assert _widest(short) <= 100
    assert "parameters:" not in short and "schedsweep workloads NAME" in short
    entries = [line for line in short.splitlines() if line and not line.startswith(" ")][:-1]
    assert [line.split()[0] for line in entries] == list(workloads.names())  # a line each, in order
    for name in workloads.names():
        assert cli.main(["workloads", name]) == 0
        out = capsys.readouterr().out
        assert _widest(out) <= 100
        assert "``" not in out and ":func:" not in out and ":mod:" not in out
        # the header is the docstring's first paragraph, whole: it ends a sentence
        first = out[len(name) + 2:].split("\n  parameters:", 1)[0]
        assert first.rstrip().endswith((".", ")", ":")), f"{name}: header cut: {first!r}"
        assert all(f"    {p.name} ({p.kind}" in out for p in workloads.get(name).PARAMS)


def test_jobs_lists_one_line_per_spec_and_descriptions_with_v(capsys):
    specs = sorted((REPO / "jobs").glob("*.toml"))
    assert cli.main(["jobs", "--results", str(REPO / "no-results-here")]) == 0
    short = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in short[:len(specs)]] == [p.name for p in specs]
    assert short[len(specs)] == "" and short[-1].endswith("-v for descriptions")
    assert cli.main(["jobs", "-v", "--results", str(REPO / "no-results-here")]) == 0
    long = capsys.readouterr().out
    assert all(f"{p.name}: " in long for p in specs) and long.count("    run time: ") == len(specs)


def _many_metrics(tmp_path: Path) -> Path:
    """A store-shaped zarr with twelve metrics over a 5-value dimension: too wide for 100 columns."""
    rng = np.random.default_rng(0)
    x = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    data = {f"metric_{k:02d}": (("load", "replication"), rng.normal(100 * k, 5, (5, 8))) for k in range(12)}
    ds = xr.Dataset(data, coords={"load": x, "replication": np.arange(8)})
    ds["status"] = (("load", "replication"), np.full((5, 8), OK, np.int8))
    ds.attrs.update(metrics=list(data), dims=["load"], replications=8)
    return ds


def test_table_fits_100_columns_and_wide_keeps_every_value(tmp_path):
    """A table too wide for 100 columns is laid out with metrics as rows (in blocks of columns
    that fit); every mean ± CI of the wide form is still there; --wide gives the wide form."""
    ds = _many_metrics(tmp_path)
    for paired in (None, "load=0.1"):
        result = tables.compute(ds, None, (), paired)
        fitted = tables.render(result, "text", None, columns=100)
        wide = tables.render(result, "text", None, columns=None)
        assert _widest(fitted) <= 100 < _widest(wide)
        values = lambda t: sorted(re.findall(r"-?\d[\d.e+-]* ± \S+(?: \([+-][\d.]+%\))?", t))  # noqa: E731
        # paired: the baseline's 12 metrics say "(baseline)", not a difference of 0 ± 0 with itself
        baseline = 12 if paired else 0
        assert values(fitted) == values(wide) and len(values(wide)) == 60 - baseline
        assert fitted.count("(baseline)") == wide.count("(baseline)") == baseline
        assert tables.render(result, "text", None, columns=1000) == wide  # fits: the wide form as it was


def test_table_command_fits_by_default_and_wide_on_request(write_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(integrity, "open_store", lambda path: _many_metrics(tmp_path))
    assert cli.main(["table", "any.zarr"]) == 0
    assert _widest(capsys.readouterr().out) <= 100
    assert cli.main(["table", "any.zarr", "--wide"]) == 0
    assert _widest(capsys.readouterr().out) > 100


def test_console_script_finds_a_workload_package_in_the_current_directory(tmp_path):
    """The console script (not ``python -m``, which has the current directory on its path
    anyway) imports ``mylab.queue`` from the folder it runs in, in its workers too."""
    script = Path(sys.executable).parent / "schedsweep"
    if not script.exists():
        pytest.fail(f"no console script beside {sys.executable}: install the project (pip install -e .)")
    package = tmp_path / "mylab"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "queue.py").write_text("from schedsweep.workloads.mm1 import *  # noqa: F401,F403\n"
                                      "from schedsweep.workloads.mm1 import PARAMS, METRICS, REASONS, run_batch\n")
    (tmp_path / "spec.toml").write_text(textwrap.dedent(SPEC).replace('workload = "mm1"',
                                                                      'workload = "mylab.queue"'))
    out = subprocess.run([str(script), "run", "spec.toml", "--store", "mine.zarr", "--workers", "1", "-q"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert (pipeline.open_store(tmp_path / "mine.zarr")["status"] == OK).all()


def test_auto_store_counts_stopped_cells_as_not_needed():
    """A finished replications = "auto" store: replications a stopped cell never needed are not
    "not run"; those of a cell that has not stopped still are."""
    status = np.full((2, 10), NOT_RUN, np.int8)
    status[0, :4] = OK          # stopped after 4 (precision met)
    status[1, :6] = OK          # still running when the store was read
    ds = xr.Dataset({"status": (("x", "replication"), status)})
    ds.attrs["auto"] = {"done": [True, False], "met": [True, False]}
    counts = tables.completeness(ds)
    assert counts["ok"] == 10 and counts[tables.NOT_NEEDED] == 6 and counts["not run"] == 4


def test_report_draws_each_defined_metric_once(write_spec, tmp_path):
    """One figure, one panel per metric with a defined value; a metric undefined in the whole
    store is named once and neither drawn nor tabulated."""
    text = SPEC.replace("warmup = 20\n", "") + "[[zip]]\nservice_rate = [1.0, 2.0]\nwarmup = [10, 30]\n"
    store = pipeline.run(write_spec(text), tmp_path / "r.zarr", workers=0, progress=False)
    ds = pipeline.open_store(store).load()
    ds["mean_wait"][:] = np.nan  # as a metric the model never defines in this sweep
    html = report.build(ds, "r.zarr")
    assert html.count("<figure") == 1
    assert report.defined_metrics(ds) == [m for m in ds.attrs["metrics"] if m != "mean_wait"]
    assert "undefined (NaN) in every replication of this store: mean_wait" in html
    assert "id='metric-mean_wait'" not in html and "id='metric-mean_time_in_system'" in html
    fig, _ = report.dimension_figure(ds, report.main_dimension(ds))
    assert len(fig.axes) == len(report.defined_metrics(ds))


def test_parquet_without_pyarrow_names_the_extra(write_spec, tmp_path, monkeypatch, capsys):
    store = pipeline.run(write_spec(SPEC), tmp_path / "p.zarr", workers=0, progress=False)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # None in sys.modules: importing it raises ImportError
    capsys.readouterr()
    assert cli.main(["export", str(store), "--to", "parquet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "schedsweep[parquet]" in err


def test_the_bar_counts_the_whole_sweep_pilot_included(write_spec, tmp_path, capsys, monkeypatch):
    """6 cells x 50: the pilot times some cells with real replications, which the store keeps;
    the bar still counts all 300 replications and all 6 cells, and a resume starts where it is."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # as on a terminal: the progress bar shows
    spec = write_spec(SPEC.replace("replications = 4", "replications = 50") + "service_rate = [1.0, 2.0]\n")
    store = tmp_path / "bar.zarr"
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0"]) == 0
    err = capsys.readouterr().err
    assert "pilot: timing" in err and "300/300" in err and "cells 6/6" in err
    # one time limit, said once in words; durations in a unit that fits, never 1.5e+03 ms
    assert err.count("time limit") == 1 and "time limit: a task still running after 15 min (20 times" in err
    (pilot,) = [line for line in err.splitlines() if " per replication in the slowest cell" in line]
    assert re.fullmatch(r"pilot: [\d.]+ (µs|ms|s) per replication in the slowest cell; \d+ replications per "
                        r"chunk, tasks of about [\d.]+ (µs|ms|s)", pilot.strip()), pilot
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--set", "replications=60"]) == 0
    err = capsys.readouterr().err
    assert "360/360" in err and "cells 6/6" in err


def test_failures_say_their_first_reason_and_each_traceback_is_printed_once(write_spec, tmp_path, capsys):
    from schedsweep.pipeline.base import seeding

    # replication 1's seed (common to every cell) is the one divisible by fail_every
    marked = int(seeding.replication_seeds(5, 0, 4)[1])
    spec = write_spec(SPEC.replace('workload = "mm1"', 'workload = "tests.flaky_workload"')
                      .replace("[sweep]", f"fail_every = {marked}\n[sweep]"))
    store = tmp_path / "f.zarr"
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--batch-size", "4",
                     "--no-progress"]) == cli.EXIT_SOME_FAILED
    err = capsys.readouterr().err
    failures = pipeline.store.zarrstore.read_failures(store)
    assert [f["replication"] for f in failures] == [1, 1, 1]
    first = next(line for line in err.splitlines() if line.startswith("first failure: "))
    assert first == f"first failure: RuntimeError: deliberate failure for seed {marked}"
    assert f"schedsweep show {store} --failures" in err
    assert cli.main(["show", str(store), "--failures"]) == 0
    out = capsys.readouterr().out
    # one traceback per failed replication: run alone, not chained to its batch's failure
    assert out.count("Traceback (most recent call last)") == len(failures)
    assert "During handling of the above exception" not in out
