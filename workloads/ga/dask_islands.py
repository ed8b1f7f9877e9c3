"""Islands as separate Dask tasks on the sweep's own cluster, exchanging migrants.

The replication (in its child process of a Dask worker) drives the run: each island's
initial population, each epoch and each selection of emigrants is one task
(:func:`pipeline.execution.subtasks.submit`: run in a worker's replication process, ahead of waiting
replication batches), the island states stay on the workers, migrants travel from task to
task as small arrays, and the driver only gathers each epoch's best-per-generation history
for the stop rule. The schedule of calls is :func:`islands.drive`, the same as in one
process, so a seed gives identical results either way.
"""
from __future__ import annotations

import operator

from schedsweep.pipeline.execution import subtasks

from .islands import GASettings, IslandResult, drive
from .model import Problem


def run_islands_dask(problem: Problem, settings: GASettings, rngs: list, client=None) -> IslandResult:
    """The island GA of :func:`islands.run_islands`, one Dask task per island and epoch, on the
    cluster of the sweep running this replication (or of ``client``, a ``distributed.Client``).
    The problem is scattered once to every worker."""
    import distributed

    client = client or subtasks.client()
    shared = client.scatter(problem, broadcast=True, hash=False)

    def submit(fn, *args):
        args = tuple(shared if a is problem else a for a in args)
        if fn is operator.getitem:  # picks a part of a result where it is: no replication process needed
            return client.submit(fn, *args, pure=False, priority=subtasks.PRIORITY)
        return subtasks.submit(fn, *args, client=client)

    def wait(futures):
        with client.as_current():   # this client is not the process's default (set_as_default=False)
            distributed.wait(futures)

    try:
        return drive(problem, settings, rngs, submit=submit, gather=client.gather, wait=wait)
    finally:
        shared.release()
