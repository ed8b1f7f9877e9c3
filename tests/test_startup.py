"""Quick commands answer without the heavy imports (issue 20 item 7).

Speed itself is measured in benchmarks/; here we check the cause: which modules a command
loads before it answers."""
from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("xarray", "zarr", "pandas", "dask", "distributed", "scipy.special", "matplotlib")


def loaded_after(argv: list[str]) -> set[str]:
    code = (
        "import sys, contextlib, io\n"
        "from pipeline.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "assert code == 0, code\n"
        "print('\\n'.join(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_help_loads_neither_numba_nor_the_data_stack():
    mods = loaded_after(["--help"])
    assert "numba" not in mods
    assert not [m for m in HEAVY if m in mods]


@pytest.mark.parametrize("argv", [["workloads"], ["workloads", "cluster"]])
def test_workloads_lists_without_the_data_stack(argv):
    mods = loaded_after(argv)
    assert not [m for m in HEAVY if m in mods], [m for m in HEAVY if m in mods]
