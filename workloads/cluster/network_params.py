"""Declarations of the cluster workload's network (part 2): parameters and metrics.

Kept apart from the engine (``netsched.py``) so the package ``__init__`` can declare
them without importing the engine, which itself imports the package (job flows), nor
numba (the names come from ``choices.py``).
With ``network = 'none'`` every parameter here except ``time_scale`` is ignored.
"""
from __future__ import annotations

from typing import Any, MutableMapping

from .._contract import Metric, Param
from . import topology
from .choices import PATTERNS, TOPO_METHODS

#: ``none``: part 1, no network; ``packet``: every job an SPMD program on the packet network.
NETWORKS = ("none", "packet")

NETWORK_PARAMS = (
    Param("network", "str", "none", "interconnect model: 'none' (part 1: computation only) or 'packet' (every "
          "job an SPMD program on the packet-switched network of `topology`)", choices=NETWORKS),
    Param("topology", "str", "fat_tree", "interconnect (network = 'packet')", choices=topology.KINDS),
    Param("topology_size", "floats", (), "sizes: star (p); fat_tree (leaves, per_leaf, spines); torus (k1, k2[, k3]); "
          "kary_ntree (k, n); empty = the spec's default for 64 nodes"),
    Param("layout", "str", "", "topology and sizes in one sweepable string, e.g. 'torus:4x4x4', 'fat_tree:8x8x4', "
          "'star:64', 'kary_ntree:4x3', 'torus' (default sizes); overrides topology and topology_size when set"),
    Param("ties", "str", "lowest_id", "tie rule among equal shortest next hops (trees; tori use dimension order)",
          choices=topology.TIES),
    Param("torus_routing", "str", "dimension_order", "routing on tori and cubes (trees and stars: shortest up/down)",
          choices=("dimension_order", "shortest")),
    Param("bandwidth", "float", 1.25e9, "link bandwidth per direction (bytes/s; inf = no transmission time)",
          low=1e-300, finite=False),
    Param("packet_size", "float", 1024.0, "packet size g (bytes)", low=1.0),
    Param("header", "float", 64.0, "packet header h (bytes), h < g", low=0.0),
    Param("t_routing", "float", 1e-6, "routing stage service time (s)", low=0.0),
    Param("iters_max", "int", 20, "iterations per job ~ U{1 ... iters_max}", low=1),
    Param("pattern", "str", "mixed", "communication pattern of every job; mixed = uniform per job",
          choices=("mixed",) + PATTERNS),
    Param("message_mean", "float", 65536.0, "mean message size per arc and iteration (bytes, exponential)",
          low=1e-9),
    Param("page_side", "int", 1, "paging: page side in nodes", low=1),
    Param("time_scale", "float", 1.0, "multiplies every job's tau, estimate and submit time, with or without the "
          "network (our rule: Lublin runtimes are seconds to hours, messages microseconds; scaling the flow lets "
          "the network matter; eq. (8) load is unchanged)", low=1e-12),
)

NETWORK_METRICS = (
    Metric("sd", "hops", "SD: mean over jobs of the sum over process pairs of the hop distance of their nodes "
           "(NaN when network = 'none')"),
    Metric("mb", "s", "MB: mean time from a blocking receive's call to the arrival of its message "
           "(NaN when network = 'none')"),
    Metric("contention", "1", "sum of measured message times / sum of their idle-network times "
           "(NaN when network = 'none')"),
    Metric("mean_job_time", "s", "mean real time T of the jobs that were not killed"),
    Metric("packet_events", "events", "link-end and routing-end events simulated (NaN when network = 'none')"),
    Metric("packet_events_per_second", "events/s", "packet events per second of simulation wall time",
           timing=True),
    Metric("late_starts", "jobs", "jobs started after their guarantee (EASY: first shadow as head; "
           "conservative: first reservation)"),
    Metric("shape_delays", "jobs", "jobs a topology-aware method could not place although backfilling's "
           "guaranteed idle-node count was there (conservative: at the reservation; EASY: as head); 0 otherwise"),
)


def resolve_layout(p: MutableMapping[str, Any]) -> None:
    """Set ``topology`` and ``topology_size`` from ``layout`` ('kind[:AxBxC]') if it is set.

    Raises ValueError for sizes that are not numbers."""
    if p.get("layout"):
        kind, _, size = p["layout"].partition(":")
        p["topology"] = kind
        p["topology_size"] = tuple(float(x) for x in size.split("x")) if size else ()
