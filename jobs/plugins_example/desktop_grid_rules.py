"""An example dispatch rule for the desktop grid (``schedsweep workloads desktop_grid`` lists
the plug-in point): swept against the built-ins by jobs/desktop-grid-plugin-example.toml.

A rule is a plain function over read-only arrays; schedsweep compiles it with numba and
calls it inside the simulation kernel each time an idle machine pulls a task.
"""
from __future__ import annotations


def max_weight(j, now, waiting, head_time, head_seq, mu, view, elig):
    """MaxWeight: machine j pulls from the class maximising (tasks waiting) x (its rate on j).

    Unlike Gcµ, which weighs the rate by how long the oldest task has waited, MaxWeight
    weighs it by the queue length, the classic throughput-optimal rule of switched networks.
    Ties go to the class whose oldest task arrived first. Returns the class to pull.
    """
    best = -1
    best_key = 0.0
    for i in range(waiting.shape[0]):
        if waiting[i] == 0 or elig[i, j] == 0:
            continue
        key = waiting[i] * mu[i, j] * view[j]
        if best < 0 or key > best_key or (key == best_key and head_time[i] < head_time[best]):
            best = i
            best_key = key
    return best
