"""The repository stands alone: no tracked code or spec reaches outside it for files, and a
clone of the committed tree with nothing beside it passes the trace tests on its own
(the committed excerpts, an empty trace cache, no peers)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# a path built into a folder beside the repository: a string that starts with "..", then "shared", or
# "shared" joined as a path component (the / operator, os.path.join); prose is not matched
OUTSIDE = re.compile(r"""["']\.\./(?:\.\./)*shared\b|["']shared["']\s*/|/\s*["']shared["']|,\s*["']shared["']""")


def _tracked(*patterns: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_no_tracked_code_or_spec_value_builds_a_path_outside_the_repository():
    found = []
    for name in _tracked("*.py", "*.toml", "*.sh", "*.json", "*.yaml"):
        text = (REPO / name).read_text(errors="replace")
        found += [f"{name}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}" for m in OUTSIDE.finditer(text)]
    assert not found, "\n".join(found)
    # the pattern finds what it is for (written in pieces, so that this file does not hold it)
    assert OUTSIDE.search('PEERS = ROOT.parent / "sha' 'red" / "peers"') and OUTSIDE.search('"..' '/sha' 'red/traces"')


# The trace tests, as a clone runs them: the reader, writer and simulators on the excerpts against
# the naive oracles, the pyss conversion, the catalogue and fetch path, and the full validation of
# every shipped spec with an empty trace cache. (The conservative comparisons are left out to
# keep this under two minutes: their cold compile and the oracle's time add minutes; the main
# suite runs them.)
CLONE_TESTS = ["tests/test_traces.py", "tests/test_cluster_pyss_conversion.py", "tests/test_cluster_swf.py",
               "tests/test_catalogue.py::test_every_job_in_the_catalogue_validates", "-k", "not conservative"]


@pytest.mark.slow
def test_a_clone_with_nothing_beside_it_passes_the_trace_tests(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()
    alone = tmp_path / "alone"
    alone.mkdir()
    clone = alone / "schedsweep"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", head], cwd=clone, check=True)
    assert sorted(p.name for p in alone.iterdir()) == ["schedsweep"]       # nothing beside it
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SCHEDSWEEP_PEERS",
                                                             "SCHEDSWEEP_TRACE_CATALOGUE")}
    env["SCHEDSWEEP_DATA"] = str(tmp_path / "empty-cache")
    env["SCHEDSWEEP_PEERS"] = str(alone / "no-peers")
    where = subprocess.run([sys.executable, "-c", "import schedsweep; print(schedsweep.__file__)"], cwd=clone,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(clone), where                        # the clone's code, not this tree's
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *CLONE_TESTS],
                         cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    tail = "\n".join((out.stdout + out.stderr).splitlines()[-15:])
    assert out.returncode == 0, tail
    assert re.search(r"\d+ passed", tail) and "skipped" not in tail and "error" not in tail.lower(), tail
    shutil.rmtree(alone)
