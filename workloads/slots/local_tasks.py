"""The numba kernel of :mod:`.environment`: local tasks and free slots of every node (the
draws and formulas are documented there). Kept apart so that importing the environment's
parameters (the declarations of slot_selection and cyclic) does not import numba."""
from __future__ import annotations

import numpy as np

from ..kernel_support.jit import kernel


@kernel
def local_schedule(rng, load: np.ndarray, interval: float, task_min: float, task_max: float):
    """Slots of every node: local tasks placed between random gaps (see module docstring).

    Returns ``(slot_node, slot_start, slot_end)`` grouped by node, each node's slots in time order.
    """
    nodes = load.shape[0]
    cap = 16 * nodes + 16
    s_node = np.empty(cap, np.int64)
    s_start = np.empty(cap, np.float64)
    s_end = np.empty(cap, np.float64)
    m = 0
    tasks = np.empty(64, np.float64)
    for k in range(nodes):
        target = load[k] * interval
        j = 0
        busy = 0.0
        while busy < target:
            d = rng.uniform(task_min, task_max)
            remainder = target - busy
            if d >= remainder:
                d = max(remainder, task_min)
            if j == tasks.shape[0]:
                tasks = np.concatenate((tasks, np.empty(j, np.float64)))
            tasks[j] = d
            j += 1
            busy += d
        # random order of the tasks (Fisher-Yates, from the back)
        for a in range(j - 1, 0, -1):
            b = rng.integers(0, a + 1)
            tasks[a], tasks[b] = tasks[b], tasks[a]
        free = interval - busy
        cuts = np.sort(rng.uniform(0.0, 1.0, j) * free) if j > 0 else np.empty(0, np.float64)
        if m + j + 1 > s_node.shape[0]:
            grow = max(s_node.shape[0], j + 1)
            s_node = np.concatenate((s_node, np.empty(grow, np.int64)))
            s_start = np.concatenate((s_start, np.empty(grow, np.float64)))
            s_end = np.concatenate((s_end, np.empty(grow, np.float64)))
        t = 0.0          # current time on the node
        prev_cut = 0.0   # free time used so far
        for g in range(j + 1):
            cut = cuts[g] if g < j else free
            gap = cut - prev_cut
            prev_cut = cut
            s_node[m] = k
            s_start[m] = t
            s_end[m] = t + gap if g < j else interval   # last gap ends exactly at the interval end
            m += 1
            t += gap
            if g < j:
                t += tasks[g]
    return s_node[:m], s_start[:m], s_end[:m]
