"""An example GA objective (``schedsweep workloads ga`` lists the plug-in point): used by
jobs/ga-plugin-example.toml, which compares the GA, Backfill and FCFS under it.

The GA ranks every individual by this value of its timed schedule (smaller is better).
"""
from __future__ import annotations


def worst_weighted_completion(body, header, start, dur, prio, width, proc_job, speed, ready, period_end):
    """The largest priority-weighted completion time, ``max_j prio_j (start_j + dur_j - period_end)``.

    A min-max objective: where ``weighted_completion`` minimises the weighted mean, this
    one protects the worst-served job (high-priority jobs count more). Time units.
    """
    worst = 0.0
    for j in range(start.shape[0]):
        worst = max(worst, prio[j] * (start[j] + dur[j] - period_end))
    return worst
