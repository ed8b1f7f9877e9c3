"""An example VO criterion for the cyclic scheme's combination step (``schedsweep workloads
cyclic`` lists the plug-in point): swept against the built-ins by jobs/cyclic-plugin-example.toml.

The combination step chooses one alternative per job minimising the sum of this value, with
the total of ``vo_limit`` (cost by default: sum cost <= B*) limited.
"""
from __future__ import annotations


def earliest_finish(a, time, cost, start, runtime, proc_time, budget):
    """The alternative's finish ``start + runtime``: the VO finishes the batch as early as the
    budget limit allows (``min_time`` minimises processor time instead). Time units."""
    return start[a] + runtime[a]
