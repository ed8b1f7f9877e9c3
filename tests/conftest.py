"""Shared fixtures (small specs written into a temporary folder, an empty trace cache) and
the order in which pytest-xdist's processes take the tests."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def write_spec(tmp_path: Path):
    """Write a TOML spec (dedented) into tmp_path and return its path."""

    def write(text: str, name: str = "spec.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture(scope="session")
def _trace_cache_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("trace-cache")


@pytest.fixture(autouse=True)
def _empty_trace_cache(_trace_cache_folder, monkeypatch):
    """Every test sees an empty trace cache (never the user's): a test runs the same in a fresh
    clone as on a machine that has fetched the full logs (tests/shipped_specs.py). The folder is
    emptied before each test rather than made anew, so that SCHEDSWEEP_DATA keeps one value: the
    replication process a run starts (pipeline/execution/child.py) is replaced when the environment
    changes, and one value lets it stay warm from test to test, as it does between a user's runs."""
    shutil.rmtree(_trace_cache_folder)
    _trace_cache_folder.mkdir()
    monkeypatch.setenv("SCHEDSWEEP_DATA", str(_trace_cache_folder))


MULTIHOST_FILE = "test_slurm_multihost.py"
SLURM_FILE = "test_slurm_cluster.py"


def xdist_unit(nodeid: str) -> str:
    """The unit of work pytest-xdist hands to one process: the multi-host Slurm tests together
    (they spend about ten minutes waiting on one shared namespace cluster: a minute's time limit,
    a link cut for 60 s, while the others run everything else); the tests of the
    single-node Slurm together (so two of them never wait for each other's jobs on its few
    cores); every other test on its own. Decided from the node id alone, because xdist's
    scheduler sees only ids: pytest 9.2 no longer lets ``xdist_group`` marks rename them
    (https://github.com/pytest-dev/pytest-xdist/issues/1386), so ``--dist loadgroup`` alone
    would group nothing."""
    path, _, name = nodeid.partition("::")
    file = path.rsplit("/", 1)[-1]
    if file == MULTIHOST_FILE:
        return "multihost"
    if file == SLURM_FILE or "slurm" in name:
        return "slurm"
    return nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` with the units of xdist_unit, in collection order (the multi-host
    tests first, to the first process)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

    config.option.loadscopereorder = False  # keep collection order: the longest wait starts first
    return Groups(config, log)


def pytest_collection_modifyitems(config, items) -> None:
    """The multi-host tests first; and every test that needs the single-node Slurm is in its
    group, so a new one named otherwise is caught here rather than by two jobs racing."""
    for item in items:
        needs_slurm = item.get_closest_marker("slurm") is not None
        if needs_slurm and xdist_unit(item.nodeid) not in ("slurm", "multihost"):
            raise pytest.UsageError(f"{item.nodeid}: a test marked slurm needs 'slurm' in its name "
                                    f"or a place in {SLURM_FILE} (tests/conftest.py xdist_unit)")
    items.sort(key=lambda item: item.path.name != MULTIHOST_FILE)  # stable: otherwise in file order
