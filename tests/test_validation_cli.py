"""CLI options checked by argparse types (one line, exit 2), quiet exit
on a closed pipe, n per cell in tables, and run-time estimates of `schedsweep jobs` from a
cached pilot."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

from schedsweep.pipeline import cli
from schedsweep.pipeline.read import catalogue
from shipped_specs import load_shipped

REPO = Path(__file__).resolve().parents[1]
SPEC = """
name = "t"
workload = "mm1"
replications = 4
seed = 1
[params]
customers = 200
warmup = 10
[sweep]
arrival_rate = [0.3, 0.5]
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A finished 2-cell x 4-replication mm1 store, run in this process (with options in range:
    the checks refuse only what they should)."""
    folder = tmp_path_factory.mktemp("store")
    (folder / "t.toml").write_text(SPEC)
    assert cli.main(["run", str(folder / "t.toml"), "--store", str(folder / "t.zarr"), "--workers", "0",
                     "--batch-size", "3", "--batch-seconds", "0.5", "--no-progress"]) == 0
    assert (zarr.open_group(folder / "t.zarr", mode="r")["status"][...] != 0).all()
    return folder / "t.zarr"


BAD_OPTIONS = [
    (["run", "S", "--workers", "-1"], "--workers"),
    (["run", "S", "--workers", "1.5"], "--workers"),
    (["run", "S", "--workers", "99999999999999999999"], "--workers"),
    (["run", "S", "--batch-size", "-5"], "--batch-size"),
    (["run", "S", "--batch-size", "0"], "--batch-size"),
    (["run", "S", "--batch-seconds", "0"], "--batch-seconds"),
    (["run", "S", "--batch-seconds", "-2"], "--batch-seconds"),
    (["run", "S", "--batch-seconds", "nan"], "--batch-seconds"),
    (["run", "S", "--batch-seconds", "inf"], "--batch-seconds"),
    (["run", "S", "--batch-seconds", "soon"], "--batch-seconds"),
    (["run", "S", "--cluster", "slurm", "--jobs", "0"], "--jobs"),
    (["run", "S", "--cluster", "slurm", "--cores-per-job", "-2"], "--cores-per-job"),
    (["run", "S", "--cluster", "cloud"], "--cluster"),
    (["run", "S", "--jobs", "3"], "--jobs only apply with --cluster slurm"),
    (["run", "S", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "--workers applies to the local"),
    (["run", "S", "--cluster", "slurm", "--memory", "lots"], "memory = 'lots' (from --memory)"),
    (["run", "S", "--cluster", "slurm", "--walltime", "1:2:3:4"], "walltime"),
    (["table", "X", "--level", "1"], "--level"),
    (["table", "X", "--level", "0"], "--level"),
    (["table", "X", "--level", "nan"], "--level"),
    (["plot", "X", "--metric", "m", "--x", "d", "--level", "95"], "--level"),
    (["report", "X", "--level", "-0.5"], "--level"),
    (["jobs", "--pilot-seconds", "-1"], "--pilot-seconds"),
    (["run", "S", "--scheduler", "not an address"], "--scheduler"),
    (["run", "S", "--scheduler-file", "/no/such/scheduler.json"], "--scheduler-file"),
    (["workloads", "nolab_pkg.model"], "could not be imported: ModuleNotFoundError: No module named 'nolab_pkg'"),
    (["workloads", "nosuch"], "not a known workload"),
    (["run"], "spec"),
    (["frobnicate"], "frobnicate"),
]


@pytest.mark.parametrize("argv, words", BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS])
def test_bad_option_one_line_exit_2(argv, words, tmp_path, capsys):
    (tmp_path / "s.toml").write_text(SPEC)
    argv = [str(tmp_path / "s.toml") if a == "S" else a for a in argv]
    code = cli.main(argv + (["--store", str(tmp_path / "s.zarr")] if argv[0] == "run" and len(argv) > 1 else []))
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, err
    assert err.startswith("schedsweep: error: ") and "\n" not in err and "Traceback" not in err, err
    assert words in err, err
    assert captured.out == ""
    assert not (tmp_path / "s.zarr").exists()


def test_closed_pipe_in_process_is_quiet(store, monkeypatch, capsys):
    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert cli.main(["show", str(store)]) == cli.EXIT_CLOSED_PIPE
    assert capsys.readouterr().err == ""


def test_closed_pipe_subprocess_is_quiet(store):
    """`schedsweep show … | head`: the reader is gone before the first write."""
    proc = subprocess.Popen([sys.executable, "-m", "schedsweep.pipeline.cli", "show", str(store)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the child is still importing: every write it makes meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == cli.EXIT_CLOSED_PIPE
    assert err == ""


def test_table_shows_n_where_a_cell_has_fewer_values(store, tmp_path, capsys):
    import shutil

    copy = tmp_path / "t.zarr"
    shutil.copytree(store, copy)
    g = zarr.open_group(copy, mode="r+")
    g["mean_wait"][1, :3] = np.nan           # cell arrival_rate = 0.5 keeps 1 of 4 values
    g["mean_time_in_system"][0, 0] = np.nan  # cell 0.3 keeps 3 of 4 for this metric only
    # the two scalar metrics (the quantile metric's rows would share the first column)
    assert cli.main(["table", str(copy), "--metric", "mean_wait", "--metric", "mean_time_in_system"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("0.")}
    assert rows["0.5"].count("[n=") == 1 and "[n=1]" in rows["0.5"]
    assert rows["0.3"].count("[n=") == 1 and "[n=3]" in rows["0.3"]
    assert "of the spec's 4 replications" in out
    assert cli.main(["table", str(store)]) == 0       # a complete store shows no n
    assert "[n=" not in capsys.readouterr().out


def _jobs(folder: Path, results: Path, *extra: str) -> None:
    assert cli.main(["jobs", "--dir", str(folder), "--results", str(results), *extra]) == 0


def test_jobs_estimate_pilots_once_and_caches(tmp_path, capsys, monkeypatch):
    jobs, results = tmp_path / "jobs", tmp_path / "results"
    jobs.mkdir()
    (jobs / "a.toml").write_text(SPEC)
    (jobs / "b.toml").write_text(SPEC.replace("replications = 4", "replications = 1000").replace('"t"', '"b"'))
    _jobs(jobs, results)
    short = capsys.readouterr().out   # plain jobs runs nothing
    assert short.count("time unknown") == 2 and "2 without: schedsweep jobs --estimate runs a short pilot" in short
    _jobs(jobs, results, "-v")
    assert capsys.readouterr().out.count(catalogue.UNKNOWN) == 2

    _jobs(jobs, results, "--estimate", "--pilot-seconds", "0.05")
    captured = capsys.readouterr()
    assert captured.err.count("piloting") == 2
    cache = json.loads((results / catalogue.CACHE_NAME).read_text())
    assert len(cache) == 2 and all(e["cells"] == 2 and e["seconds_per_rep"] > 0 for e in cache.values())

    specs = {e.path.name: e for e in catalogue.entries(jobs, results)}
    for name, reps in (("a.toml", 4), ("b.toml", 1000)):
        entry = specs[name]
        rate = cache[catalogue.cache_key(entry.spec)]["seconds_per_rep"]
        assert entry.seconds == pytest.approx(rate * 2 * reps / catalogue.cores())
        assert "pilot of 2 cells" in entry.estimate

    _jobs(jobs, results, "--estimate")                      # cached: nothing piloted again
    assert "piloting" not in capsys.readouterr().err
    (jobs / "a.toml").write_text(SPEC.replace("customers = 200", "customers = 300"))  # changed spec
    monkeypatch.setattr(catalogue, "code_hash", lambda name: "changed model code")     # changed model
    assert all(e.seconds is None for e in catalogue.entries(jobs, results))


def test_pilot_cells_cover_every_value_that_fits(tmp_path):
    """Every shipped spec: at most PILOT_CELLS distinct cells, and every value of each dimension
    no longer than the number of piloted cells is piloted at least once."""
    for path in sorted((REPO / "jobs").glob("*.toml")):
        spec = load_shipped(path, tmp_path)
        cells = catalogue.pilot_cells(spec)
        assert 1 <= len(cells) <= catalogue.PILOT_CELLS and len(set(cells)) == len(cells), path
        for d, n in enumerate(spec.shape):
            if n <= len(cells):
                assert {c[d] for c in cells} == set(range(n)), (path, d)
