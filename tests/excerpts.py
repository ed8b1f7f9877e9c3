"""The committed excerpts of the Parallel Workloads Archive logs (``tests/data/traces``, made
by ``tests/data/make_excerpts.py``; cite the archive and each log's acknowledgement), and a
plain reading of their lines that shares no code with the SWF reader under test."""
from __future__ import annotations

import gzip
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "data" / "traces"
KTH = "KTH-SP2-1996-2.1-cln-filtered"
KTH_RAW = "KTH-SP2-1996-2-raw"
CTC = "CTC-SP2-1996-3.1-cln"
SDSC_BLUE = "SDSC-BLUE-2000-4.2-cln"
HPC2N = "HPC2N-2002-2.2-cln"
NAMES = (KTH, KTH_RAW, CTC, SDSC_BLUE, HPC2N)


def path(name: str) -> str:
    """The excerpt of the catalogued log ``name``."""
    return str(FOLDER / f"{name}.excerpt.swf.gz")


def data_lines(name: str) -> list[list[str]]:
    """The data lines of an excerpt, each split into its fields (header lines left out)."""
    with gzip.open(path(name), "rt") as fh:
        return [ln.split() for ln in fh if ln.strip() and not ln.startswith(";")]


def windows(name: str) -> list[tuple[int, int]]:
    """The windows of the full log an excerpt holds (first data line, count), as the script
    that made it declares them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_excerpts", FOLDER.parent / "make_excerpts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WINDOWS[name]
