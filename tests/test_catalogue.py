"""schedsweep jobs: every spec listed with its facts, invalid specs listed with their error,
run-time estimates from a store's measured rates; every job names its source."""
from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
import zarr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.read import catalogue
from shipped_specs import load_shipped

REPO = Path(__file__).resolve().parent.parent
GOOD = """
name = "good"
workload = "mm1"
description = "M/M/1 against load (Kleinrock, Table 3.1)"
replications = 6
seed = 3
[params]
customers = 400
warmup = 50
[sweep]
arrival_rate = [0.2, 0.4, 0.6]
service_rate = [1.0, 2.0]
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def jobs(tmp_path: Path) -> Path:
    folder = tmp_path / "jobs"
    write(folder, "good.toml", GOOD)
    write(folder, "bad_param.toml", GOOD.replace("customers = 400", "customers = -1"))
    write(folder, "bad_toml.toml", "name = [unclosed\n")
    write(folder, "notes.txt", "not a spec")
    return folder


def test_lists_every_spec_with_its_facts_and_errors(jobs, tmp_path, capsys):
    items = catalogue.entries(jobs, tmp_path / "results")
    assert [e.path.name for e in items] == ["bad_param.toml", "bad_toml.toml", "good.toml"]
    bad_param, bad_toml, good = items
    assert good.spec is not None and good.error is None
    assert (good.spec.workload, good.spec.replications, good.spec.n_cells) == ("mm1", 6, 6)
    assert good.seconds is None and good.estimate == catalogue.UNKNOWN
    assert bad_param.spec is None and "customers = -1" in bad_param.error
    assert bad_toml.spec is None and "not valid TOML" in bad_toml.error

    assert cli.main(["jobs", "--dir", str(jobs), "--results", str(tmp_path / "results")]) == 0
    short = capsys.readouterr().out.splitlines()
    assert short[0].startswith("bad_param.toml  INVALID: ") and "customers = -1" in short[0]
    assert short[1].startswith("bad_toml.toml   INVALID: ") and "not valid TOML" in short[1]
    assert short[2].split() == ["good.toml", "mm1", "6", "cells", "×", "6", "time", "unknown"]
    assert short[-1] == "3 specs, 2 invalid; 1 without: schedsweep jobs --estimate runs a short pilot; " \
                        "-v for descriptions"
    assert cli.main(["jobs", "-v", "--dir", str(jobs), "--results", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert "M/M/1 against load (Kleinrock, Table 3.1)" in out
    assert "workload mm1" in out
    assert "6 replications × 6 cells (arrival_rate[3] × service_rate[2]) = 36 runs" in out
    assert f"run time: {catalogue.UNKNOWN}" in out
    assert "bad_param.toml: INVALID" in out and bad_param.error in out
    assert "bad_toml.toml: INVALID" in out
    assert out.rstrip().endswith("3 specs, 2 invalid")


def test_estimate_from_the_pilot_rate_of_an_existing_store(jobs, tmp_path):
    results = tmp_path / "results"
    store = pipeline.run(jobs / "good.toml", results / "good.zarr", workers=0, progress=False)
    pilot = np.asarray(pipeline.open_store(store).attrs["pilot_seconds_per_rep"])
    assert pilot.shape == (3, 2) and np.all(pilot > 0)
    (good,) = [e for e in catalogue.entries(jobs, results) if e.spec]
    assert good.seconds == pytest.approx(pilot.sum() * 6 / catalogue.cores(), rel=1e-12)
    assert "pilot rate from" in good.estimate and f"on {catalogue.cores()} cores" in good.estimate

    # More replications, same cells: proportionally longer, with the same per-cell rates.
    write(jobs, "good.toml", GOOD.replace("replications = 6", "replications = 60"))
    spec = pipeline.load(jobs / "good.toml")
    seconds, _ = catalogue.estimate(spec, results)
    assert seconds == pytest.approx(10 * good.seconds, rel=1e-12)
    # Other cells than the store: the mean rate per cell.
    write(jobs, "good.toml", GOOD.replace("arrival_rate = [0.2, 0.4, 0.6]", "arrival_rate = [0.2]"))
    spec = pipeline.load(jobs / "good.toml")
    seconds, _ = catalogue.estimate(spec, results)
    assert seconds == pytest.approx(pilot.mean() * 2 * 6 / catalogue.cores(), rel=1e-12)


def test_estimate_without_a_pilot_uses_the_measured_task_time(jobs, tmp_path):
    results = tmp_path / "results"
    store = pipeline.run(jobs / "good.toml", results / "good.zarr", workers=0, batch_size=3, progress=False)
    group = zarr.open_group(store, mode="r")
    assert "pilot_seconds_per_rep" not in group.attrs
    rate = np.asarray(group["cell_seconds"][...]) / 6
    (good,) = [e for e in catalogue.entries(jobs, results) if e.spec]
    assert good.seconds == pytest.approx(rate.sum() * 6 / catalogue.cores(), rel=1e-12)
    assert "measured rate from" in good.estimate


def test_missing_directory_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["jobs", "--dir", str(tmp_path / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_format_duration():
    assert catalogue.format_duration(42) == "42 s"
    assert catalogue.format_duration(600) == "10 min"
    assert catalogue.format_duration(7200) == "2 h"
    assert catalogue.format_duration(3 * 86400) == "3 d"
    assert catalogue.format_duration(0.36) == "360 ms" and catalogue.format_duration(0.95) == "950 ms"
    assert catalogue.format_duration(1.51) == "1.5 s" and catalogue.format_duration(4.2e-5) == "42 µs"
    assert catalogue.format_duration(0.0015) == "1.5 ms" and catalogue.format_duration(1500 * 86400) == "1500 d"
    assert all("e" not in catalogue.format_duration(10.0 ** k) for k in range(-7, 9))


# The first author of each workload's source paper (docs/models/<workload>.md, "Source:").
SOURCE_AUTHOR = {"slot_selection": "Toporkov", "cyclic": "Toporkov", "cluster": "Polezhaev", "ga": "Shapovalov",
                 "desktop_grid": "Al-Azzoni", "mm1": "Kleinrock"}
JOB_FILES = sorted(p for p in (REPO / "jobs").glob("*.toml") if p.name != "quickstart.toml")


@pytest.mark.parametrize("path", JOB_FILES, ids=[p.name for p in JOB_FILES])
def test_every_job_names_its_source(path):
    """Each spec's description names its source paper and the model page whose experiment
    it reproduces (the paper's figure or table is its ``reproduces``, docs/reproduction.md)."""
    doc = tomllib.loads(path.read_text())
    description = doc.get("description", "")
    workload = doc["workload"].removeprefix("schedsweep.workloads.").split(".")[0]  # workloads.cluster.x → cluster
    author = SOURCE_AUTHOR.get(workload)
    assert author, f"{path.name}: no source paper known for workload {doc['workload']!r}; add it to SOURCE_AUTHOR"
    assert author in description, f"{path.name}: description {description!r} does not name its source ({author})"


def test_every_job_in_the_catalogue_validates(capsys, tmp_path):
    """The shipped catalogue lists without INVALID entries (with an empty trace cache: the
    listing knows catalogued logs by name), and every spec also passes the full validation of
    a run (the listing's is shallow: no per-cell checks, no plug-in compile); a spec on
    catalogued logs that are not in the cache is refused with the fetch command and validated
    on the logs' excerpts (tests/shipped_specs.py)."""
    invalid = [f"{e.path.name}: {e.error}" for e in catalogue.entries(REPO / "jobs", REPO / "results") if e.error]
    assert not invalid, "\n".join(invalid)
    for path in sorted((REPO / "jobs").glob("*.toml")):
        load_shipped(path, tmp_path)


def test_every_shipped_spec_has_a_current_estimate(tmp_path):
    """``schedsweep jobs`` shows an estimate for every shipped spec without piloting here: the
    measurement in jobs/estimates.json exists for the spec as it is now (a changed spec needs
    ``python -m benchmarks.estimate_jobs SPEC``)."""
    items = catalogue.entries(REPO / "jobs", tmp_path / "no-results")
    stale = [e.path.name for e in items if e.spec is not None and e.seconds is None]
    assert not stale, f"no current estimate in jobs/estimates.json for: {stale}; run python -m " \
                      f"benchmarks.estimate_jobs {' '.join('jobs/' + s for s in stale)}"
    for e in items:
        assert "jobs/estimates.json" in e.basis and f"on {catalogue.cores()} cores" in e.estimate


def test_listing_skips_the_per_cell_checks(jobs, tmp_path, monkeypatch):
    """The listing answers fast because it does not run each cell's check_params (which reads
    traces); a run still does: the same spec with a cell-level error is refused by load."""
    from schedsweep.workloads import mm1

    calls = []
    monkeypatch.setattr(mm1, "check_params", lambda params: calls.append(params) or [], raising=False)
    catalogue.entries(jobs, tmp_path / "results")
    assert calls == []
    pipeline.load(jobs / "good.toml")
    assert len(calls) == 6
