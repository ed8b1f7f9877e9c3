"""schedsweep: parallel simulation sweeps of scheduling algorithms with confidence intervals.

The code is two subpackages, ``schedsweep.pipeline`` (specs, execution, the store,
statistics, the CLI) and ``schedsweep.workloads`` (the simulation models). In the source
tree they are the top-level folders ``pipeline/`` and ``workloads/``; an installed wheel
holds them under ``schedsweep/`` (``pyproject.toml`` maps them). One namespace means the
import names cannot collide with other distributions (PyPI has a ``pipeline``).
"""
from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

# In a checkout (run with the checkout on sys.path, or after `pip install -e .`), the
# subpackages live beside this folder, not in it: let the import system find them there.
# The check on pyproject.toml keeps this from ever reaching into a site-packages folder.
_checkout = Path(__file__).resolve().parent.parent
#: The source tree this code runs from, or None for an installed wheel (provenance asks git
#: only here: a wheel's site-packages may sit inside some other project's repository).
SOURCE_TREE: Path | None = _checkout if (_checkout / "pyproject.toml").is_file() \
    and (_checkout / "pipeline" / "__init__.py").is_file() and (_checkout / "workloads" / "__init__.py").is_file() \
    else None
if SOURCE_TREE is not None and str(SOURCE_TREE) not in __path__:
    __path__.append(str(SOURCE_TREE))
