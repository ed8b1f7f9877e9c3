"""Shared fixtures: small specs written into a temporary folder."""
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
