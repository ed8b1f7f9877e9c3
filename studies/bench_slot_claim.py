"""Why MinRuntime is not "the most expensive" on the TY experiment (calibration.md).

MinRuntime and MinFinish run the same greedy at every scan step and differ only in which
step's window they keep. This script records, per environment, the greedy window of every
scan step (runtime and cost), then applies the spec's selection rule and some alternatives
to the same per-step windows, and prints per rule the mean start, runtime and cost of both,
their paired cost difference, and the paired differences of MinRuntime against AMP and
MinProcTime (from the workload's own search). The claim is judged on means, as
``schedsweep table`` does, over amp, min_cost, min_runtime, min_finish, min_proc_time, csa.

Rules (cross-step selection; the per-step greedy is the spec's unless ``--y-tie lower``):

* ``spec``        the first step reaching the best value (strict improvement, docs/models/slot_selection.md);
* ``later``       the last step reaching it (ties to the later window);
* ``lower_cost``  among the steps reaching it, the cheapest window;
* ``higher_cost`` among the steps reaching it, the costliest window;
* ``per_start``   one step per distinct start time (after all slots with that start are
  added) instead of one per slot, then ``spec``.

Only ``spec`` follows docs/models/slot_selection.md; the others are shown to measure how much each rule moves
the costs. Under ``spec`` the recorded per-step windows reproduce ``aep_search``'s
min_runtime and min_finish windows exactly (checked for every environment).

    python studies/bench_slot_claim.py --replications 2000
    python studies/bench_slot_claim.py --replications 2000 --y-tie lower
    python studies/bench_slot_claim.py --replications 5000 --gamma 1.0 1.05 1.1 1.15 1.2 --rules spec
"""
from __future__ import annotations

import argparse
import math

import numba
import numpy as np

from schedsweep.pipeline.base.seeding import replication_seeds
from schedsweep.workloads._contract import defaults, substreams
from schedsweep.workloads.slot_selection import PARAMS, environment_of, search
from schedsweep.workloads.slots.candidates import valid, window_values
from schedsweep.workloads.slots.environment import job_on_nodes
from schedsweep.workloads.slots.exactsum import fsum, sum_le
from schedsweep.workloads.slots.greedy import greedy_runtime

RULES = ("spec", "later", "lower_cost", "higher_cost", "per_start")
OTHERS = ("amp", "min_cost", "min_proc_time", "csa")


@numba.njit(cache=True)
def _greedy_low_tie(cost_order, cand_end, node_len, node_cost, t, n, budget, W, vals):
    """The spec's greedy (swap test) with the longest slot's length ties to LOWER cost."""
    c = 0
    for p in range(cost_order.shape[0]):
        j = cost_order[p]
        if not valid(j, cand_end, node_len, t):
            continue
        if c < n:
            W[c] = j
            c += 1
            if c == n and not sum_le(vals, n, window_values(W, n, node_cost, vals), budget):
                return np.inf
            continue
        y = 0
        for q in range(1, n):
            a, b = W[q], W[y]
            if node_len[a] > node_len[b] or (node_len[a] == node_len[b] and (
                    node_cost[a] < node_cost[b] or (node_cost[a] == node_cost[b] and a > b))):
                y = q
        if not node_len[j] < node_len[W[y]]:
            continue
        approx = window_values(W, n, node_cost, vals)
        vals[y] = node_cost[j]
        if sum_le(vals, n, approx - node_cost[W[y]] + node_cost[j], budget):
            W[y] = j
    if c < n:
        return np.inf
    runtime = 0.0
    for q in range(n):
        runtime = max(runtime, node_len[W[q]])
    return runtime


@numba.njit(cache=True)
def step_windows(slot_node, slot_start, slot_end, node_len, node_cost, budget, n, literal, low_tie):
    """Per scan step (one per slot): the greedy window's runtime (inf: none) and cost."""
    m = slot_node.shape[0]
    cand_end = np.full(node_len.shape[0], -np.inf)
    W = np.empty(n + 1, np.int64)
    vals = np.empty(n + 1)
    cost_order = np.argsort(node_cost, kind="mergesort")
    R = np.full(m, np.inf)
    C = np.full(m, np.nan)
    for i in range(m):
        cand_end[slot_node[i]] = slot_end[i]
        t = slot_start[i]
        if low_tie:
            r = _greedy_low_tie(cost_order, cand_end, node_len, node_cost, t, n, budget, W, vals)
        else:
            r = greedy_runtime(cost_order, cand_end, node_len, node_cost, t, n, budget, literal, W, vals)
        R[i] = r
        if r < np.inf:
            C[i] = _cost(W, n, node_cost, vals)
    return R, C


@numba.njit(cache=True)
def _cost(W, n, node_cost, vals):
    """The window's cost, a correctly rounded sum (as the kernels report it)."""
    window_values(W, n, node_cost, vals)
    return fsum(vals, n)


def pick(values: np.ndarray, cost: np.ndarray, rule: str, steps: np.ndarray) -> int | None:
    """Index of the step a rule keeps among ``steps`` (a boolean mask), or None."""
    v = np.where(steps, values, np.inf)
    best = v.min()
    if not math.isfinite(best):
        return None
    idx = np.flatnonzero(v == best)
    if rule in ("spec", "per_start"):
        return int(idx[0])
    if rule == "later":
        return int(idx[-1])
    return int(idx[np.argmin(cost[idx])] if rule == "lower_cost" else idx[np.argmax(cost[idx])])


def run(gamma: float, reps: int, first: int, rules: list[str], low_tie: bool, budget_test: str,
        retries: int) -> None:
    params = defaults(PARAMS)
    params.update(price_exponent=gamma, random_window_retries=retries, greedy_budget_test=budget_test)
    mr = {r: np.full((reps, 3), np.nan) for r in rules}
    mf = {r: np.full((reps, 3), np.nan) for r in rules}
    other = {a: np.full(reps, np.nan) for a in OTHERS}
    for row, seed in enumerate(replication_seeds(20140101, first, first + reps)):
        env = environment_of(params, substreams(seed, 2)[0])
        node_len, node_cost = job_on_nodes(env, params["job_runtime"], params["perf_min"])
        R, C = step_windows(env.slot_node, env.slot_start, env.slot_end, node_len, node_cost,
                            params["budget"], params["job_slots"], budget_test == "literal", low_tie)
        t = env.slot_start
        every = np.ones(len(t), bool)
        last_of_start = np.append(t[1:] != t[:-1], True)
        for rule in rules:
            steps = last_of_start if rule == "per_start" else every
            for out, values in ((mr, R), (mf, t + R)):
                i = pick(values, C, rule, steps)
                if i is not None:
                    out[rule][row] = (t[i], R[i], C[i])
        if not low_tie and "spec" in rules:   # the recorded steps reproduce the kernels' windows
            for out, algorithm in ((mr, "min_runtime"), (mf, "min_finish")):
                w, _ = search({**params, "algorithm": algorithm}, env, substreams(seed, 2)[1])
                got = out["spec"][row]
                assert (w.start, w.runtime, w.cost) == tuple(got) or not (w.found or np.isfinite(got).any()), \
                    (seed, algorithm, w, got)
        for a in OTHERS:
            w, _ = search({**params, "algorithm": a}, env, substreams(seed, 2)[1])
            other[a][row] = w.cost.min() if a == "csa" and w.count else (w.cost if a != "csa" else np.nan)
    print(f"\nprice_exponent {gamma}, retries {retries}, budget test {budget_test}, longest-slot tie to "
          f"{'lower' if low_tie else 'higher (spec)'} cost; replications {first}..{first + reps - 1}")
    print("  others (spec): " + ", ".join(f"{a} cost {np.nanmean(other[a]):.1f}" for a in OTHERS))
    print(f"  {'rule':<12} {'MR start':>8} {'MR rt':>6} {'MR cost':>8} | {'MF start':>8} {'MF rt':>6} "
          f"{'MF cost':>8} | {'MR-MF cost':>14} {'MR-AMP':>14} {'MR-MPT':>14} | claim")
    for rule in rules:
        a, b = mr[rule], mf[rule]
        diffs = []
        for d in (a[:, 2] - b[:, 2], a[:, 2] - other["amp"], a[:, 2] - other["min_proc_time"]):
            d = d[np.isfinite(d)]
            diffs.append(f"{d.mean():+6.2f} ± {1.96 * d.std(ddof=1) / math.sqrt(len(d)):4.2f}")
        costs = {"min_runtime": np.nanmean(a[:, 2]), "min_finish": np.nanmean(b[:, 2]),
                 **{k: np.nanmean(v) for k, v in other.items()}}
        holds = costs["min_runtime"] == max(costs.values())
        print(f"  {rule:<12} {np.nanmean(a[:, 0]):8.1f} {np.nanmean(a[:, 1]):6.2f} {costs['min_runtime']:8.1f} | "
              f"{np.nanmean(b[:, 0]):8.1f} {np.nanmean(b[:, 1]):6.2f} {costs['min_finish']:8.1f} | "
              + " ".join(f"{d:>14}" for d in diffs) + f" | {'holds' if holds else 'fails'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replications", type=int, default=2000)
    ap.add_argument("--first", type=int, default=0, help="first replication index (seed 20140101, as the spec)")
    ap.add_argument("--gamma", type=float, nargs="+", default=[1.1], help="price_exponent values")
    ap.add_argument("--retries", type=int, default=10, help="random_window_retries (min_proc_time)")
    ap.add_argument("--budget-test", choices=("swap", "literal"), default="swap")
    ap.add_argument("--y-tie", choices=("higher", "lower"), default="higher",
                    help="the greedy's longest-slot length tie: higher cost (spec) or lower cost")
    ap.add_argument("--rules", nargs="+", choices=RULES, default=list(RULES))
    args = ap.parse_args(argv)
    for gamma in args.gamma:
        run(gamma, args.replications, args.first, args.rules, args.y_tie == "lower", args.budget_test, args.retries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
