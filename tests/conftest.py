"""Shared fixtures: small specs written into a temporary folder."""
from __future__ import annotations

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


@pytest.fixture(autouse=True)
def _empty_trace_cache(tmp_path_factory, monkeypatch):
    """Every test sees an empty trace cache of its own (never the user's): a test runs the same
    in a fresh clone as on a machine that has fetched the full logs (tests/shipped_specs.py)."""
    monkeypatch.setenv("SCHEDSWEEP_DATA", str(tmp_path_factory.mktemp("trace-cache")))
