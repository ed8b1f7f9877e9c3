"""Start-up of the command line: ``--help`` and ``workloads`` (target < 0.5 s wall)."""
from __future__ import annotations

import subprocess
import sys


def _cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "schedsweep.pipeline.cli", *args], check=True,
                   stdout=subprocess.DEVNULL)


class CLIStartup:
    """Wall seconds of a fresh ``python -m schedsweep.pipeline.cli`` process."""
    repeat = (3, 7, 20.0)
    number = 1
    warmup_time = 0.0

    def time_help(self) -> None:
        _cli("--help")

    def time_workloads(self) -> None:
        _cli("workloads")
