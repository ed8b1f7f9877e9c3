"""Sphinx configuration of schedsweep's documentation (MyST Markdown pages, built with -W in CI).

Sphinx with MyST, as the scientific-Python projects schedsweep builds on document themselves
(xarray, dask, dask-jobqueue and numpy use Sphinx): autodoc reads the same docstrings the code
keeps, the CLI reference comes from the argument parser (``_ext/cli_reference.py``), and the
pages stay plain Markdown that GitHub renders too. The default theme (alabaster) keeps the
``docs`` extra to sphinx and myst-parser.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # `schedsweep` from this checkout when it is not installed

from schedsweep import __version__  # noqa: E402

project = "schedsweep"
author = "schedsweep developers"
copyright = "schedsweep developers"
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "cli_reference",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Docstrings name types in prose (`np.ndarray`, `xr.Dataset`); they are not link targets here.
nitpicky = False

html_theme = "alabaster"
html_title = f"schedsweep {release}"
