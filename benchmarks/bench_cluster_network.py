"""Packet events per second of the cluster network kernel.

Traffic: all-to-all on a 2-D torus (default 16 x 16 = 256 nodes, dimension-order
routing), one process per node. Two drivers of the same kernel are timed:

- ``messages``: every ordered pair sends one message at t = 0 (``network.simulate_messages``);
- ``spmd``: one SPMD job with the All-to-all pattern, ``iters`` iterations of
  communication and computation (``spmd.simulate_jobs``; includes the process events).

Events = link-end + routing-end events. Compilation is excluded (one warm-up run on a
small torus first). Wall and CPU (process) seconds of the driver calls, the fastest of
``--repeat`` runs: on a shared machine the CPU column is the per-core figure (``--record``
writes it to ``benchmarks/results/bench_cluster_network.json``).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks import results
from schedsweep.workloads.cluster import network, spmd, topology


def bench_messages(topo, packets: int, repeat: int) -> tuple[float, float]:
    p = topo.n_nodes
    src, dst = np.divmod(np.arange(p * p), p)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    best, cpu, events = np.inf, np.inf, 0
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        _, st = network.simulate_messages(topo, src, dst, np.full(src.size, packets), np.zeros(src.size))
        best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        events = int(st.ctr[network.C_EVENTS])
    return events, best, cpu


def bench_spmd(topo, mean_bytes: float, iters: int, repeat: int) -> tuple[float, float]:
    p = topo.n_nodes
    best, cpu, events = np.inf, np.inf, 0
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        sim = spmd.simulate_jobs(topo, [0.0], [np.arange(p)], [p], [iters], [spmd.ALL_TO_ALL], [1e-3], np.ones(p),
                                 seed=1, mean_bytes=mean_bytes)
        best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        events = int(sim.net.ctr[network.C_EVENTS])
    return events, best, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", type=int, default=16, help="torus side (nodes = side**2)")
    ap.add_argument("--packets", type=int, default=4, help="packets per message (messages driver)")
    ap.add_argument("--mean-bytes", type=float, default=4096.0, help="mean message size (spmd driver)")
    ap.add_argument("--iters", type=int, default=2, help="iterations (spmd driver)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per driver; the fastest is reported")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_cluster_network.json")
    a = ap.parse_args()
    load_before = results.load()
    warm = topology.torus((3, 3))
    bench_messages(warm, 2, 1)
    bench_spmd(warm, 2000.0, 1, 1)
    topo = topology.torus((a.side, a.side))
    print(f"2-D torus {a.side} x {a.side} ({topo.n_nodes} nodes, {topo.n_links} directed links), all-to-all")
    print(f"{'driver':<10}{'events':>14}{'wall s':>10}{'cpu s':>10}{'events/s wall':>16}{'events/s cpu':>16}")
    figures = []
    for name, (ev, sec, cpu) in (("messages", bench_messages(topo, a.packets, a.repeat)),
                                 ("spmd", bench_spmd(topo, a.mean_bytes, a.iters, a.repeat))):
        print(f"{name:<10}{ev:>14,}{sec:>10.3f}{cpu:>10.3f}{ev / sec:>16,.0f}{ev / cpu:>16,.0f}")
        label = "bare messages" if name == "messages" else "SPMD all-to-all job"
        figures.append((f"{label}, 2-D torus {a.side} x {a.side}: events per CPU-second",
                        round(ev / cpu / 1e6, 3), "M events/s"))
    if a.record:
        print(results.record("bench_cluster_network", figures, load_before,
                             note=f"CPU seconds of the driver calls, the fastest of {a.repeat} runs each."))


if __name__ == "__main__":
    main()
