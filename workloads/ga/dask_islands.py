"""Islands as separate Dask tasks exchanging migrants.

Each island's epoch is one task; the island state stays on the workers, migrants travel
from task to task as small arrays, and the client only gathers each epoch's best-per-
generation history for the stop rule. The schedule of calls is :func:`islands.drive`, the
same as in one process, so a seed gives identical results either way.
"""
from __future__ import annotations

from .islands import GASettings, IslandResult, drive
from .model import Problem


def run_islands_dask(client, problem: Problem, settings: GASettings, rngs: list) -> IslandResult:
    """The island GA of :func:`islands.run_islands`, one Dask task per island and epoch.

    ``client`` is a ``distributed.Client``. The problem is scattered once to every worker.
    """
    shared = client.scatter(problem, broadcast=True)

    def submit(fn, *args):
        args = tuple(shared if a is problem else a for a in args)
        return client.submit(fn, *args, pure=False)

    return drive(problem, settings, rngs, submit=submit, gather=client.gather)
