"""The package installs anywhere: a wheel built from this tree, installed into a fresh venv
in a temporary folder, runs the shipped quick-start spec and finds the shipped Slurm
profiles from that folder, under import names that cannot collide (`schedsweep.*`)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_folder_is_listed():
    # packages are listed by hand (the folders are mapped under `schedsweep`): a new
    # subpackage that is not listed would be missing from the wheel
    tool = _pyproject()["tool"]["setuptools"]
    listed = set(tool["packages"])
    mapped = {v: k for k, v in tool["package-dir"].items()}
    found = set()
    for top in ("pipeline", "workloads"):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join((mapped[rel[0]], *rel[1:])))
    assert found <= listed, f"not in pyproject's packages: {sorted(found - listed)}"


def _top_level_imports(folder: Path) -> set[str]:
    names = set()
    for f in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
    return names


# import name -> distribution, where they differ
_DIST = {"yaml": "pyyaml", "dask_jobqueue": "dask-jobqueue", "netCDF4": "netcdf4", "google_crc32c": "google-crc32c"}
# imported only inside a guarded `try` with a message naming the package to install
_OPTIONAL = {"cryptography", "duckdb", "pyarrow"}  # TLS on Slurm; the 'query' and 'parquet' extras


def test_what_is_imported_is_declared():
    deps = _pyproject()["project"]["dependencies"]
    declared = {d.split(">")[0].split("<")[0].split("=")[0].strip().lower() for d in deps}
    imported = _top_level_imports(ROOT / "pipeline") | _top_level_imports(ROOT / "workloads")
    third_party = {n for n in imported if n not in sys.stdlib_module_names and n not in ("schedsweep", "__future__")}
    missing = {n for n in third_party - _OPTIONAL if _DIST.get(n, n).lower() not in declared}
    assert not missing, f"imported but not declared in pyproject dependencies: {sorted(missing)}"
    test_only = {"pulp", "pytest", "hypothesis"}
    assert not test_only & declared, "test-only packages belong in the test extra"


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NUMBA_CACHE_DIR")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)],
                   check=True, env=env, capture_output=True, text=True)
    (wheel,) = wheels.glob("schedsweep-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in ("schedsweep/jobs/quickstart.toml", "schedsweep/slurm/local.yaml",
                    "schedsweep/slurm/sweep.sbatch", "schedsweep/pipeline/cli.py",
                    "schedsweep/workloads/cluster/__init__.py", "schedsweep/pipeline/spec/traces.toml"):
        assert shipped in names
    assert not any(n.startswith(("pipeline/", "workloads/", "tests/")) for n in names)

    venv.create(tmp_path / "venv", with_pip=True)
    py = tmp_path / "venv" / "bin" / "python"
    # --no-compile: pip would byte-compile every file of every dependency (most of the install's
    # time); what the runs below import is compiled as it is imported
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-compile", str(wheel)], check=True, env=env,
                   capture_output=True, text=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    bin_dir = str(tmp_path / "venv" / "bin")
    env = {**env, "PATH": bin_dir + os.pathsep + env.get("PATH", "")}

    def run(*args: str) -> subprocess.CompletedProcess:
        out = subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-3000:]
        return out

    # the README's command, from a folder that has no jobs/ (the shipped spec is found)
    run("schedsweep", "run", "jobs/quickstart.toml", "--set", "replications=3", "--workers", "2", "--no-progress")
    table = run("schedsweep", "table", "results/quickstart.zarr", "--metric", "cost").stdout
    assert "min_cost" in table and "csa" in table
    probe = ("import importlib.util, json, schedsweep.pipeline.execution.slurm as s\n"
             "p = s.load_profile('local')\n"
             "print(json.dumps({'profile': sorted(p), 'collide': [n for n in ('pipeline', 'workloads') "
             "if importlib.util.find_spec(n) is not None], 'file': s.__file__}))\n")
    import json

    found = json.loads(run(str(py), "-c", probe).stdout)
    assert found["profile"], "the shipped local profile is empty"
    assert found["collide"] == [], "top-level `pipeline`/`workloads` must not be installed"
    assert str(tmp_path / "venv") in found["file"], "ran the checkout's code, not the installed wheel"
    listing = run("schedsweep", "jobs").stdout
    assert "quickstart.toml" in listing
