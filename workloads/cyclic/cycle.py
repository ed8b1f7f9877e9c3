"""One scheduling cycle: environment, batch, and the chosen method (``docs/models/cyclic.md``).

Random streams of a replication, in this order: environment; batch (``n_i``, ``T_i``,
``m_i``); user criteria; runtime factors ``rho_i``. All four are spawned and every job's
attributes drawn in every method, so all methods see the same batch in replication r.
"""
from __future__ import annotations

import time
from typing import Any, Mapping, NamedTuple

import numpy as np

from .._contract import substreams
from ..slots.environment import Environment, generate_environment
from .backfilling import backfill
from .batch import Batch, draw_batch, job_matrices, priority_order
from .choices import METHODS  # handed on from here too
from .frsm import Plan, empty_plan, schedule_cyclic
from .search import FIRST_FIT, USER_CRITERIA_EXACT, USER_CRITERIA_SOURCE
from .shift import shift_plan

STREAMS = 4


class Cycle(NamedTuple):
    """Everything a cycle produced (for metrics and tests)."""

    env: Environment
    batch: Batch
    node_len: np.ndarray      #: float64[N, nodes]
    node_cost: np.ndarray     #: float64[N, nodes]
    order: np.ndarray         #: job ids in priority order
    cyclic: np.ndarray        #: bool[N], job scheduled by the cyclic scheme (CSS/FRSM part)
    plan: Plan                #: planned windows (alternatives counts, DP flag)
    actual_start: np.ndarray  #: float64[N], actual starts (NaN: did not run)
    actual_nodes: np.ndarray  #: int64[N, nmax]
    seconds: float            #: wall time of the scheduling (alternatives, DP, shift, backfilling)


def environment_of(params: Mapping[str, Any], rng: np.random.Generator) -> Environment:
    """The cycle's environment, with the designated owner node 0 overridden if asked."""
    env = generate_environment(
        rng, nodes=params["nodes"], interval=params["interval"], perf_min=params["perf_min"],
        perf_max=params["perf_max"], perf_integer=params["perf_integer"], price_sigma=params["price_sigma"],
        price_exponent=params["price_exponent"], local_load_min=params["local_load_min"],
        local_load_max=params["local_load_max"], local_task_min=params["local_task_min"],
        local_task_max=params["local_task_max"])
    perf, price = env.perf.copy(), env.price.copy()
    p_ref, gamma = float(params["perf_min"]), float(params["price_exponent"])
    if params["owner_perf"] > 0:
        # keep node 0's drawn price deviation e_0, change its performance
        deviation = price[0] / (p_ref * (perf[0] / p_ref) ** gamma) - 1.0
        perf[0] = params["owner_perf"]
        price[0] = p_ref * (perf[0] / p_ref) ** gamma * (1.0 + deviation)
    if params["owner_price"] > 0:
        price[0] = params["owner_price"]
    return env._replace(perf=perf, price=price)


def batch_of(params: Mapping[str, Any], batch_rng, criteria_rng, runtime_rng) -> Batch:
    return draw_batch(batch_rng, criteria_rng, runtime_rng, params["jobs"], float(params["perf_min"]),
                      slots_min=params["job_slots_min"], slots_max=params["job_slots_max"],
                      runtime_min=params["job_runtime_min"], runtime_max=params["job_runtime_max"],
                      margin_min=params["price_margin_min"], margin_max=params["price_margin_max"],
                      rho_min=params["runtime_factor_min"], rho_max=params["runtime_factor_max"])


def _cyclic_part(params, slots, jobs, node_len, node_cost, batch, plan, use_frsm):
    if use_frsm:
        table = USER_CRITERIA_EXACT if params["frsm_search"] == "exact" else USER_CRITERIA_SOURCE
        criterion = (np.full(batch.size, FIRST_FIT, np.int64) if params["frsm_alternatives"] == "first_fit"
                     else table[batch.criterion])
        k = min(params["frsm_k"], max(1, len(jobs)))
    else:
        criterion = np.full(batch.size, FIRST_FIT, np.int64)
        k = 1
    return schedule_cyclic(slots, jobs, node_len, node_cost, batch.budget, batch.slots, criterion, k=k,
                           cap=params["max_alternatives"], strategy=params["strategy"],
                           dp_time=params["dp_time"], resolution=params["dp_resolution"], plan=plan,
                           shared=bool(params["shared_alternatives"]), vo_limit=params["vo_limit"],
                           retry=bool(params["shared_retry"]), combination=params["combination"],
                           spread=int(params["first_fit_spread"]))


def run_cycle(params: Mapping[str, Any], seed: int) -> Cycle:
    """One replication of ``params['method']`` from its seed."""
    env_rng, batch_rng, criteria_rng, runtime_rng = substreams(seed, STREAMS)
    env = environment_of(params, env_rng)
    batch = batch_of(params, batch_rng, criteria_rng, runtime_rng)
    node_len, node_cost = job_matrices(batch, env.perf, env.price, float(params["perf_min"]))
    order = priority_order(batch, params["priority"])
    slots = (env.slot_node, env.slot_start, env.slot_end)
    N = batch.size
    method = params["method"]
    t0 = time.perf_counter()
    plan = empty_plan(N, int(batch.slots.max()))
    cyclic = np.zeros(N, np.bool_)
    if method in ("css", "css_s", "frsm"):
        cyclic[:] = True
        plan = _cyclic_part(params, slots, order, node_len, node_cost, batch, plan, method == "frsm")
        if method == "css_s":
            plan = plan._replace(start=shift_plan(slots, plan.start, plan.nodes, node_len, order))
        actual_start, actual_nodes = plan.start, plan.nodes
    else:
        n_css = params["n_css"] if method == "css_bf" else 0
        head, rest = order[:n_css], order[n_css:]
        cyclic[head] = True
        if len(head):
            plan = _cyclic_part(params, slots, head, node_len, node_cost, batch, plan,
                                params["css_part"] == "frsm")
        common = dict(variant=params["bf_variant"], bf_budget=params["bf_budget"],
                      fixed_start=plan.start, fixed_nodes=plan.nodes)
        planned = backfill(slots, rest, node_len, node_cost, batch.budget, batch.slots, np.ones(N), **common)
        actual = backfill(slots, rest, node_len, node_cost, batch.budget, batch.slots, batch.rho, **common)
        plan = plan._replace(start=planned.start, nodes=planned.nodes)
        actual_start, actual_nodes = actual.start, actual.nodes
    seconds = time.perf_counter() - t0
    return Cycle(env, batch, node_len, node_cost, order, cyclic, plan, actual_start, actual_nodes, seconds)
