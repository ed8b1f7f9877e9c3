"""CPU seconds of the other workload kernels on fixed inputs (targets in benchmarks/README.md).

- packet network: all-to-all on a 2-D torus, bare messages and one SPMD job (target >= 5M
  packet events per CPU second; ``track_*_events_per_cpu_us`` would invert asv's direction, so
  the time of a fixed run is what is tracked);
- slot selection: one search at 100 nodes x interval 600, per algorithm;
- cyclic: CSS cycles at 24 nodes, the calibrated default and the spec's disjoint model.
"""
from __future__ import annotations

import time

import numpy as np


class Network:
    """2-D torus of 8 x 8 nodes, every ordered pair one message of 4 packets / one SPMD all-to-all."""
    timer = time.process_time

    def setup(self) -> None:
        from schedsweep.workloads.cluster import network, spmd, topology

        self.network, self.spmd = network, spmd
        self.topo = topology.torus((8, 8))
        p = self.topo.n_nodes
        src, dst = np.divmod(np.arange(p * p), p)
        keep = src != dst
        self.src, self.dst = src[keep], dst[keep]
        self.time_messages()
        self.time_spmd()                                        # compile, or load the cache

    def time_messages(self) -> None:
        self.network.simulate_messages(self.topo, self.src, self.dst, np.full(self.src.size, 4),
                                       np.zeros(self.src.size))

    def time_spmd(self) -> None:
        p = self.topo.n_nodes
        self.spmd.simulate_jobs(self.topo, [0.0], [np.arange(p)], [p], [2], [self.spmd.ALL_TO_ALL], [1e-3],
                                np.ones(p), seed=1, mean_bytes=4096.0)


class SlotSelection:
    """One search (wrapper and kernel) on the default environment at 100 nodes x interval 600."""
    params = ["amp", "min_cost", "min_runtime_exact", "min_finish_exact", "csa"]
    param_names = ["algorithm"]
    timer = time.process_time

    def setup(self, algorithm: str) -> None:
        from schedsweep.workloads import slot_selection as ss
        from schedsweep.workloads._contract import defaults, substreams

        self.ss, self.substreams = ss, substreams
        self.params = {**defaults(ss.PARAMS), "nodes": 100, "interval": 600.0, "algorithm": algorithm}
        self.seed = np.random.SeedSequence(1).generate_state(1, np.uint64)[0]
        env_rng, _ = substreams(self.seed, 2)
        self.env = ss.environment_of(self.params, env_rng)
        self.time_search(algorithm)                             # compile, or load the cache

    def time_search(self, algorithm: str) -> None:
        _, algo_rng = self.substreams(self.seed, 2)
        self.ss.search(self.params, self.env, algo_rng)


class Cyclic:
    """CSS cycles at 24 nodes (target: a 5000-cycle point <= 200 s calibrated, < 10 s disjoint)."""
    params = ["calibrated", "disjoint"]
    param_names = ["model"]
    timer = time.process_time
    number, repeat, warmup_time = 1, (1, 3, 20.0), 0.0
    CYCLES = {"calibrated": 10, "disjoint": 100}

    def setup(self, model: str) -> None:
        from schedsweep.workloads._contract import defaults
        from schedsweep.workloads.cyclic import DISJOINT_MODEL, PARAMS, run_batch

        self.run_batch = run_batch
        base = {**defaults(PARAMS), "nodes": 24, "jobs": 20, "method": "css"}
        self.params = {**base, **DISJOINT_MODEL} if model == "disjoint" else base
        self.seeds = np.arange(self.CYCLES[model], dtype=np.uint64)
        run_batch(self.params, np.array([10**9], np.uint64))   # compile, or load the cache

    def time_cycles(self, model: str) -> None:
        self.run_batch(self.params, self.seeds)
