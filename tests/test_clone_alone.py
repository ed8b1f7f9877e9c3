"""The repository stands alone: a clone of the committed tree with nothing beside it imports
every module and passes the trace tests on its own (the committed excerpts, an empty trace
cache, no peers). That no tracked file names a folder outside the repository:
tests/test_docs.py."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The trace tests whose inputs are committed files, as a clone runs them: the excerpts and the
# script that declares their windows, the catalogue and the fetch path, the pyss reading, and
# the full validation of every shipped spec with an empty trace cache. The simulators' runs on
# the same excerpts against the naive oracles are left to the main suite: in a clone they add
# only the kernels' cold compile (minutes), and every module they import is imported in the
# clone by the test below.
CLONE_TESTS = ["tests/test_traces.py",
               "tests/test_cluster_swf.py::test_excerpt_counts",
               "tests/test_cluster_swf.py::test_excerpts_hold_the_records_a_reader_must_decide_on",
               "tests/test_cluster_pyss_conversion.py::test_reader_equals_the_record_by_record_transcription",
               "tests/test_cluster_pyss_conversion.py::test_every_trace_excerpt_converts_without_dropping",
               "tests/test_catalogue.py::test_every_job_in_the_catalogue_validates"]
IMPORT_ALL = ("import importlib, pkgutil, schedsweep.pipeline as p, schedsweep.workloads as w\n"
              "names = [m.name for pkg in (p, w) for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.')]\n"
              "for name in names:\n    importlib.import_module(name)\n"
              "print(len(names))\n")


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A clone of HEAD with nothing beside it, and an environment with an empty trace cache and
    no peers' folder (made once for this module's tests)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()
    tmp = tmp_path_factory.mktemp("clone")
    alone = tmp / "alone"
    alone.mkdir()
    clone = alone / "schedsweep"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", head], cwd=clone, check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SCHEDSWEEP_PEERS",
                                                             "SCHEDSWEEP_TRACE_CATALOGUE")}
    env["SCHEDSWEEP_DATA"] = str(tmp / "empty-cache")
    env["SCHEDSWEEP_PEERS"] = str(alone / "no-peers")
    yield clone, env
    shutil.rmtree(alone)


def _python(clone: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=clone, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def test_the_clone_has_nothing_beside_it_and_runs_its_own_code(clone):
    path, env = clone
    assert sorted(p.name for p in path.parent.iterdir()) == ["schedsweep"]      # nothing beside it
    out = _python(path, env, "-c", "import schedsweep; print(schedsweep.__file__)")
    assert out.returncode == 0, out.stderr[-3000:]
    assert Path(out.stdout.strip()).is_relative_to(path), out.stdout            # the clone's code, not this tree's


def test_every_module_imports_in_the_clone(clone):
    path, env = clone
    out = _python(path, env, "-c", IMPORT_ALL)
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout.strip()) > 50, out.stdout                             # the walk found the tree


@pytest.mark.slow
def test_a_clone_with_nothing_beside_it_passes_the_trace_tests(clone):
    path, env = clone
    out = _python(path, env, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-x", *CLONE_TESTS)
    tail = "\n".join((out.stdout + out.stderr).splitlines()[-15:])
    assert out.returncode == 0, tail
    assert re.search(r"\d+ passed", tail) and "skipped" not in tail and "error" not in tail.lower(), tail
