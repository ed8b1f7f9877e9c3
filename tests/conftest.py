"""Shared fixtures (small specs written into a temporary folder, an empty trace cache) and
the order in which pytest-xdist's two processes take the tests."""
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


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config, items) -> None:
    """The multi-host Slurm tests first and in one process (``--dist loadgroup``): they spend
    about ten minutes waiting on one shared namespace cluster (a minute's time limit, a
    link cut for 60 s) while the other process runs everything else. The tests of the
    single-node Slurm share one group as well, so two of them never wait for each other's
    jobs on its few cores."""
    for item in items:
        if item.path.name == MULTIHOST_FILE:
            item.add_marker(pytest.mark.xdist_group("multihost"))
        elif item.get_closest_marker("slurm") is not None:
            item.add_marker(pytest.mark.xdist_group("slurm"))
    items.sort(key=lambda item: item.path.name != MULTIHOST_FILE)  # stable: otherwise in file order
