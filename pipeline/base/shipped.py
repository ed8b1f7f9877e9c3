"""The sweep specs and Slurm files that come with schedsweep, wherever it is installed.

In the source tree they are the folders ``jobs/`` and ``slurm/`` beside ``pipeline/``; an
installed wheel keeps the same layout under ``schedsweep/`` (pyproject.toml ships them as
package data). The lookup rule, documented in docs/getting-started.md: a spec path or profile name that
does not exist as given is looked up by its file name among the shipped ones.
"""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parents[2]  # beside pipeline/ (checkout) or in schedsweep/ (wheel)


def folder(name: str) -> Path:
    """The shipped folder ``name`` ("jobs" or "slurm")."""
    return _HERE / name


def spec(path: str | Path) -> Path | None:
    """The shipped spec a missing ``path`` names (``jobs/quickstart.toml``, ``quickstart.toml``
    or ``quickstart``), or None. Only a bare name or a name under ``jobs/`` is looked up, so
    a mistyped path elsewhere still fails as a missing file."""
    path = Path(path)
    if path.exists() or path.is_absolute() or path.parent not in (Path("."), Path("jobs")):
        return None
    name = path.name if path.suffix == ".toml" else path.name + ".toml"
    found = folder("jobs") / name
    return found if found.is_file() else None
