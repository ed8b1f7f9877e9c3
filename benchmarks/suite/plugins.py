"""Plug-ins against the built-ins they re-implement (target: plug-in time <= 1.5x the built-in).

- cluster: EASY as a queue plug-in (``cluster.plugin_builtins:easy``) on the full CTC-SP2
  trace, the kernel call's CPU time, alternating with the built-in EASY;
- desktop grid: Gcµ as a dispatch plug-in (``desktop_grid.plugins:gcmu``), System A at the
  alpha2 arrivals with failures and partial CPUs, a 2000-unit horizon.
"""
from __future__ import annotations

import numpy as np

from ._common import ab_best, trace as full_trace


class ClusterPlugin:
    timeout = 300.0

    def setup(self) -> None:
        from schedsweep.workloads import cluster

        p = cluster._with_defaults({"source": "swf", "trace": full_trace("CTC-SP2-1996-3.1-cln")})
        f, seed = cluster.flow(p, 1)
        plugin = dict(p, queue="schedsweep.workloads.cluster.plugin_builtins:easy")
        self.builtin = lambda: cluster.simulate(f.submit, f.cores_req, f.mem_req, f.disk_req, f.estimate, f.tau,
                                                f.node_cores, f.node_mem, f.node_disk, f.node_speed, "easy",
                                                "first_fit", seed)
        self.plugin = lambda: cluster._schedule_plugins(plugin, f, seed)[0]
        a, b = self.builtin().start, self.plugin().start       # compile, or load the cache
        if not np.array_equal(a, b, equal_nan=True):
            raise RuntimeError("the EASY plug-in's start times differ from the built-in's")

    def track_easy_plugin_vs_builtin(self) -> float:
        builtin, plugin = ab_best(self.builtin, self.plugin, 3)
        return plugin / builtin

    track_easy_plugin_vs_builtin.unit = "plug-in/built-in time"


class DesktopGridPlugin:
    timeout = 300.0

    def setup(self) -> None:
        from schedsweep.workloads import desktop_grid as dg

        def params(policy: str) -> dict:
            return dg.default_params(system="A", case="alpha2:0.01/1+partial", horizon=2000.0, warmup=200.0,
                                     policy=policy)

        self.builtin = lambda: dg.simulate(params("gcmu"), 1)
        self.plugin = lambda: dg.simulate(params("schedsweep.workloads.desktop_grid.plugins:gcmu"), 1)
        a, b = self.builtin(), self.plugin()                    # compile, or load the cache
        if a["W"] != b["W"]:
            raise RuntimeError("the Gcmu plug-in's W differs from the built-in's")

    def track_gcmu_plugin_vs_builtin(self) -> float:
        builtin, plugin = ab_best(self.builtin, self.plugin, 3)
        return plugin / builtin

    track_gcmu_plugin_vs_builtin.unit = "plug-in/built-in time"
