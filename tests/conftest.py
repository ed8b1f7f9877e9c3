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
