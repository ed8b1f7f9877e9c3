"""An example window criterion for slot selection (``schedsweep workloads slot_selection``
lists the plug-in point): swept against the built-ins by jobs/slot-selection-plugin-example.toml.

The AEP scan forms, at each step, the cheapest window containing the new slot and keeps the
one that minimises the criterion over the whole scan.
"""
from __future__ import annotations

#: money one time unit of earlier finish is worth
PRICE_OF_TIME = 2.0


def cheap_and_early(t, window, node_len, node_cost, cand_end):
    """Cost plus the price of the finish time: ``sum c_k len_k + PRICE_OF_TIME * (t + max len_k)``.

    Between ``min_cost`` (PRICE_OF_TIME = 0) and a pure earliest-finish search, a user who
    would pay PRICE_OF_TIME money per time unit saved gets the window of least total price.
    """
    cost = 0.0
    longest = 0.0
    for q in range(window.shape[0]):
        k = window[q]
        cost += node_cost[k]
        longest = max(longest, node_len[k])
    return cost + PRICE_OF_TIME * (t + longest)
