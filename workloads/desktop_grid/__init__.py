"""``desktop_grid``: pull dispatch of bag-of-tasks work on a volatile, heterogeneous
desktop grid (Al-Azzoni & Down, JPDC 2010): FCFS, PST, Gcµ, LPAS_DG and its robust variant.

Model: ``docs/models/desktop_grid.md`` (its test systems included).

Random streams of a replication (children of ``SeedSequence(seed)``, in this order):
0 arrivals (inter-arrival times and classes), 1 work (its two children: 0 the work ``w``
drawn at arrival, 1 the fresh ``w`` of a restarted task), 2 machine up/down periods,
3 CPU-availability chains (one uint64 key per machine), 4 estimation errors (one ``E`` per
machine and up period), 5 algorithm draws (random objectives of the degenerate-vertex
search). All six are spawned and the up/down periods, chain keys and estimation errors are
drawn in full for every policy, so arrivals, work, failures and CPU paths are common to
all policies of a replication (only the restart work of interrupted tasks depends on
which tasks a policy had running).

With a CPU chain (``cpu = markov``) every policy, and the LP, uses ``a_j`` = the stationary
mean of machine j's chain (source, for the LP); the true level only drives the work.
The LP is solved before the kernel runs, once per distinct (available set, estimates) key
of the precomputed availability timeline (see ``policies.py``, ``timeline.py``), by the
numba simplex (``lp_solver = simplex``, default) or HiGHS (``lp.py``). ``lpas_dg_robust``
(``robust_solver = face``, default) takes the vertex from the same numba
simplex and then computes the maximal support of the optimal face exactly on its warm
tableau (``face.py``), about 20x faster per replication than the former default
``robust_solver = ipm`` (HiGHS vertex + HiGHS interior point, thresholded), which stays
available; their supports differ on ~1% of the keys, nearly all on entries within a factor
30 of the zero threshold (benchmarks/lpas.md).
"""
from __future__ import annotations

import time
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from .._contract import QUANTILE_LEVELS, QUANTILES, Metric, Param, empty_outputs, quantiles
from ..kernel_support.lazy import handed_on
from ..kernel_support.plugins import PluginError, fails_loudly, is_path, resolve
from .choices import HETEROGENEITY, LP_POLICIES, POLICIES, POLICY_CODE, SYSTEMS, WORK_CODE, ZERO_TOL
from .plugins import DISPATCH, PLUGINS

# The declarations import neither numba nor HiGHS (``schedsweep workloads`` lists them
# quickly); the functions that build a system or run a replication import what they use,
# and the names this package used to import are handed on when asked for.
__getattr__ = handed_on(__name__, {
    "EligibilityTable": ".policies", "all_eligible": ".policies", "lp_eligibility": ".policies",
    "System": ".systems", "build_system": ".systems", "g_chain_weights": ".systems",
    "g_weibull_scales": ".systems", "load_rates": ".systems", "partial_availability": ".systems",
    "Timeline": ".timeline", "draw_timeline": ".timeline", "estimated_views": ".timeline", "lp_keys": ".timeline",
    **{name: ".simulator" for name in (
        "BAD_ELIG", "BAD_EMPTY", "BAD_RANGE", "N_STATS", "ST_ARRIVED", "ST_ERR_CHOICE", "ST_ERR_MACHINE",
        "ST_ERR_WHY", "ST_EVENTS", "ST_KEY", "ST_NTRACE", "ST_QEND", "ST_QMAX", "ST_RESUB", "ST_STOP",
        "STOP_PLUGIN", "STOP_UNSTABLE", "_simulate")}})

N_CLASSES_MAX = 8
CLASS_LABELS = tuple(str(i) for i in range(N_CLASSES_MAX))

PARAMS = (
    Param("system", "str", "A", "test system (docs/models/desktop_grid.md); 'generated' = CVB with "
          "heterogeneity/groups/per_group/alpha, 'custom' = rates_file + alpha", choices=SYSTEMS),
    Param("case", "str", "", "shorthand that sets arrivals, failures and cpu: "
          "'[alpha1:|alpha2:](none|RATE/MEAN|weibull/DOWN)[+partial|+markov]', e.g. "
          "'alpha2:0.01/1+partial' (exponential failures at rate 0.01, mean down time 1); "
          "empty = use those parameters as given"),
    Param("system_seed", "int", 1, "seed of the system generator (rates of A-E, test beds, G2)", low=0),
    Param("lohi_generator", "str", "machine_factor", "how a LoHi system (C, or generated LoHi) is drawn: "
          "class means times a machine factor shared by all classes (low task, high machine heterogeneity "
          "by the measure of systems.heterogeneity), or CVB as the other kinds (measures about 0.9 both ways)",
          choices=("machine_factor", "cvb")),
    Param("a_scaling", "str", "partial", "System A's 95% load of alpha2 is set under its partial CPU availability "
          "(stable in its alpha2 + partial cases) or with every machine dedicated (the general rule; then "
          "lambda* = 0.89 there and no policy is stable)", choices=("partial", "dedicated")),
    Param("heterogeneity", "str", "HiHi", "(task, machine) heterogeneity of system 'generated'",
          choices=tuple(HETEROGENEITY)),
    Param("groups", "int", 7, "machine groups of system 'generated'", low=1),
    Param("per_group", "int", 4, "machines per group of system 'generated'", low=1),
    Param("rates_file", "path", "", "system 'custom': nominal rate matrix mu_nom (rows = classes, "
          "tasks per time unit), CSV/whitespace text or .npy"),
    Param("arrivals", "str", "alpha1", "which arrival vector of the system", choices=("alpha1", "alpha2")),
    Param("alpha", "floats", (), "arrival rates per class (tasks per time unit); overrides the "
          "system's vector; required for 'generated' (its 95%-load vector) and 'custom'", low=0.0),
    Param("arrival_scale", "float", 1.0, "multiplies the arrival vector (e.g. 0.75)", low=1e-9),
    Param("policy", "str", "gcmu", "dispatch policy, or a plug-in dispatch rule 'package.module:function' "
          "(which class an idle machine pulls; `schedsweep workloads desktop_grid`)", choices=POLICIES, plugin=True),
    Param("failures", "str", "none", "machine up/down periods: none, exponential (rate fail_rate, "
          "mean down_mean) or weibull (shape/scales below, constant down time down_mean)",
          choices=("none", "exponential", "weibull")),
    Param("fail_rate", "float", 0.02, "failure rate of an up machine (1/time unit), exponential", low=1e-12),
    Param("down_mean", "float", 2.0, "mean down time (time units); the constant one for weibull", low=0.0),
    Param("weibull_shape", "float", 0.7, "shape of Weibull up periods", low=1e-3),
    Param("weibull_scale_min", "float", 5e5, "Weibull scale of group 0 (time units)", low=1e-9),
    Param("weibull_scale_max", "float", 5e6, "Weibull scale of the last group (log-spaced between)", low=1e-9),
    Param("cpu", "str", "dedicated", "CPU availability a_j: dedicated (1), partial (the systems "
          "page vector), markov (chain over cpu_levels), custom (cpu_avail)",
          choices=("dedicated", "partial", "markov", "custom")),
    Param("cpu_avail", "floats", (), "cpu=custom: a_j per machine, in (0, 1]", low=0.0, high=1.0),
    Param("cpu_levels", "floats", (0.25, 0.5, 0.75, 1.0), "levels of the CPU chain", low=1e-9, high=1.0),
    Param("cpu_stay", "float", 0.9, "probability the chain keeps its level at a step", low=0.0, high=1.0),
    Param("cpu_period", "float", 10.0, "time units between chain steps", low=1e-9),
    Param("cpu_low_weight", "float", 6.0, "System G's CPU chain: extra jump weight of the lowest level (our "
          "rule; 6 loads G2 at alpha2 to 92% of the LP capacity, 0 = the rule before, 64%)", low=0.0),
    Param("lp_cpu_info", "str", "true", "the a_j the LP policies use: 'true' (a_j, the chain's "
          "stationary mean for markov) or 'assume_full' (a_j = 1); other policies always use "
          "the true a_j", choices=("true", "assume_full")),
    Param("estimation_error", "float", 0.0, "I: every policy sees a'_j = clip(a_j (1 + E), 0, 1), "
          "E ~ U[-I, I] drawn each time machine j becomes available", low=0.0, high=1.0),
    Param("resubmit_order", "str", "original", "queue position of a resubmitted task: by its "
          "original arrival time (our rule) or as if it arrived at resubmission (W still counts "
          "from the original arrival)", choices=("original", "resubmission")),
    Param("degenerate", "str", "search", "degenerate LP vertex: search (random objectives for "
          "exactly NM+1-N-M zeros) or accept", choices=("search", "accept")),
    Param("degenerate_tries", "int", 20, "random objectives tried by the degenerate search", low=0),
    Param("lp_solver", "str", "simplex", "solver of lpas_dg's vertex LP: simplex (dense numba "
          "simplex, all states of a replication in one call) or highs (highspy, one re-solve per "
          "state); same LP and degenerate rule, but where the optimal vertex is not unique they "
          "may pick different optimal vertices; lpas_dg_robust: see robust_solver",
          choices=("simplex", "highs")),
    Param("robust_solver", "str", "face", "how lpas_dg_robust finds the maximal support: face "
          "(default: numba simplex vertex, then the exact maximal support of the "
          "optimal face on its warm tableau, = per-entry maximisation; ~0.1 ms per key) or ipm "
          "(the former default: HiGHS vertex, then HiGHS interior point without crossover, "
          "thresholded; 1.3-4 ms per key). Supports differ on ~1% of keys, nearly all on entries "
          "whose face maximum is within a factor 30 of zero_tol * max delta, where the IPM's "
          "support depends on where it stops; on ~0.2% the IPM misses entries well inside the "
          "face (benchmarks/lpas.md)", choices=("face", "ipm")),
    Param("zero_tol", "float", ZERO_TOL, "delta_ij counts as zero when <= zero_tol * max delta",
          low=0.0, high=0.1),
    Param("work_dist", "str", "exponential", "nominal work w of a task (mean 1): exponential, "
          "deterministic or uniform on [0, 2]", choices=tuple(WORK_CODE)),
    Param("horizon", "float", 20_000.0, "simulated time units", low=1e-9),
    Param("warmup", "float", 0.0, "completions before this time are not measured", low=0.0),
    Param("queue_bound", "int", 100_000, "unstable when more tasks than this wait (the run stops)", low=1),
    Param("unstable_fraction", "float", 0.01, "also unstable when the tasks still waiting at the "
          "horizon exceed this fraction of the tasks that arrived (and 1000): a queue that grew "
          "through the run; 0 = off", low=0.0, high=1.0),
)

_J = (("job_class", CLASS_LABELS),)
METRICS = (
    Metric("W", "time", "mean completion minus original arrival time of the tasks completed "
           "in [warmup, horizon] (includes time lost to resubmissions)"),
    Metric("W_class", "time", "W per task class (NaN beyond the system's classes)", dims=_J),
    Metric("W_quantiles", "time", "percentiles over the tasks completed in [warmup, horizon] of completion "
           "minus original arrival (NaN when W is)", dims=QUANTILES),
    Metric("completed_class", "tasks", "tasks completed in [warmup, horizon] per class", dims=_J),
    Metric("lambda_star", "1", "lambda* of the LP in force at the horizon (LP policies)"),
    Metric("n_zeros", "entries", "zero entries of that LP's delta on available machines"),
    Metric("lp_keys", "keys", "distinct (available set, CPU estimates) keys, one LP each"),
    Metric("lp_solves", "solves", "LP solves (search and robust runs included: robust_solver face "
           "counts its LPs over the optimal face, ipm its interior-point runs, those found in the "
           "process-wide cache too)"),
    Metric("lp_degenerate", "keys", "keys whose vertex kept more than NM+1-N-M zeros"),
    Metric("robust_fallbacks", "keys", "robust solutions of complete support replaced by the vertex"),
    Metric("resubmissions", "tasks", "tasks interrupted by a machine failure and resubmitted"),
    Metric("utilisation", "1", "busy machine-time / (M (end - warmup)), lost work included; end = "
           "horizon, or when an unstable run stopped"),
    Metric("events", "events", "arrivals, completions and availability changes simulated"),
    Metric("tasks_arrived", "tasks", "tasks that arrived by the horizon"),
    Metric("tasks_completed", "tasks", "tasks completed in [warmup, horizon]"),
    Metric("queue_max", "tasks", "largest number of waiting tasks"),
    Metric("wall_s", "s", "wall time of the replication", timing=True),
    Metric("lp_wall_s", "s", "wall time spent solving LPs", timing=True),
    Metric("robust_cache_hits", "keys", "robust supports taken from the process-wide cache of "
           "earlier replications (depends on the batch, like a timing)", timing=True),
)

REASONS = {
    0: ("none", "the replication produced every metric"),
    1: ("unstable", "the queue grows without bound: more than queue_bound tasks waited, or more "
        "than unstable_fraction of the arrivals (and 1000) still waited at the horizon"),
    2: ("no completions", "no task completed in [warmup, horizon]"),
}

_STREAMS = 6  # arrivals, work, machines, cpu chains, estimation errors, algorithm


def parse_case(case: str) -> dict[str, Any]:
    """The parameters a ``case`` label sets (see its Param); ValueError if malformed."""
    if not case:
        return {}
    out: dict[str, Any] = {}
    rest = case.strip()
    if ":" in rest:
        arrivals, rest = rest.split(":", 1)
        if arrivals not in ("alpha1", "alpha2"):
            raise ValueError(f"case {case!r}: arrival vector {arrivals!r} must be alpha1 or alpha2")
        out["arrivals"] = arrivals
    fail, _, cpu = rest.partition("+")
    if cpu:
        if cpu not in ("partial", "markov"):
            raise ValueError(f"case {case!r}: CPU part {cpu!r} must be partial or markov")
        out["cpu"] = cpu
    if fail == "none":
        out["failures"] = "none"
        return out
    try:
        first, second = fail.split("/")
        out["down_mean"] = float(second)
        if first == "weibull":
            out["failures"] = "weibull"
        else:
            out["failures"], out["fail_rate"] = "exponential", float(first)
    except ValueError:
        raise ValueError(f"case {case!r}: failures {fail!r} must be none, RATE/MEAN or weibull/DOWN") from None
    return out


def with_case(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the values its ``case`` label sets."""
    return {**params, **parse_case(params.get("case", ""))}


def check_params(params: Mapping[str, Any]) -> list[str]:
    errs = []
    try:
        params = with_case(params)
    except ValueError as exc:
        return [str(exc)]
    if params["warmup"] >= params["horizon"]:
        errs.append(f"warmup ({params['warmup']}) must be smaller than horizon ({params['horizon']})")
    if params["system"] in ("generated", "custom") and not params["alpha"]:
        errs.append(f"system {params['system']!r} needs alpha (arrival rates per class)")
    if params["system"] == "custom" and not params["rates_file"]:
        errs.append("system 'custom' needs rates_file (the nominal rate matrix)")
    if params["cpu"] == "custom" and not params["cpu_avail"]:
        errs.append("cpu 'custom' needs cpu_avail (a_j per machine)")
    if params["cpu"] == "custom" and any(a <= 0 for a in params["cpu_avail"]):
        errs.append("cpu_avail values must be in (0, 1]")
    if params["weibull_scale_max"] < params["weibull_scale_min"]:
        errs.append("weibull_scale_max must be >= weibull_scale_min")
    # values a case label sets are checked as their own parameters would be
    if not (np.isfinite(params["fail_rate"]) and params["fail_rate"] > 0):
        errs.append(f"case {params['case']!r}: failure rate {params['fail_rate']} must be a finite number > 0")
    if not (np.isfinite(params["down_mean"]) and params["down_mean"] >= 0):
        errs.append(f"case {params['case']!r}: mean down time {params['down_mean']} must be a finite number >= 0")
    if not errs:
        errs += _check_system(params)
    return errs


def _check_system(params: Mapping[str, Any]) -> list[str]:
    """Build the system once at validation: rates file, alpha and cpu_avail sizes (cached)."""
    from .systems import load_rates

    if params["system"] == "custom":
        try:
            mu = load_rates(params["rates_file"])
        except (OSError, ValueError, TypeError, EOFError) as exc:
            return [f"rates_file {params['rates_file']!r}: cannot be read as a rate matrix: "
                    f"{exc.__class__.__name__}: {' '.join(str(exc).split())}"]
        if mu.ndim != 2 or mu.size == 0 or not np.all(np.isfinite(mu)) or np.any(mu < 0):
            return [f"rates_file {params['rates_file']!r}: must hold a non-empty matrix (rows = classes) of "
                    f"finite rates >= 0, all rows of equal length"]
    if not (params["alpha"] or params["cpu"] == "custom" or params["system"] in ("generated", "custom")):
        return []  # a named system with its own vectors: nothing a user gave can mismatch it
    try:
        sysm, _ = system_of(params)
        cpu_model(params, sysm)
    except ValueError as exc:
        return [" ".join(str(exc).split())]
    return []


@lru_cache(maxsize=16)
def _system(name: str, system_seed: int, heterogeneity: str, groups: int, per_group: int,
            alpha: tuple, rates_file: str, lohi_generator: str = "machine_factor",
            a_scaling: str = "partial") -> System:
    from .systems import build_system, load_rates

    rates = load_rates(rates_file) if name == "custom" else None
    return build_system(name, system_seed, heterogeneity, groups, per_group, alpha or None, rates, lohi_generator,
                        a_scaling)


def system_of(params: Mapping[str, Any]) -> tuple[System, np.ndarray]:
    """The system and the arrival vector (tasks per time unit) of ``params``."""
    sysm = _system(params["system"], params["system_seed"], params["heterogeneity"],
                   params["groups"], params["per_group"], tuple(params["alpha"]), params["rates_file"],
                   params["lohi_generator"], params["a_scaling"])
    alpha = np.asarray(params["alpha"], float) if params["alpha"] else sysm.alphas[params["arrivals"]]
    if alpha.shape != (sysm.n_classes,):
        raise ValueError(f"alpha has {alpha.size} rates, system {sysm.name!r} has {sysm.n_classes} classes")
    if sysm.n_classes > N_CLASSES_MAX:
        raise ValueError(f"at most {N_CLASSES_MAX} classes (W_class dimension), got {sysm.n_classes}")
    return sysm, alpha * params["arrival_scale"]


def cpu_model(params: Mapping[str, Any], sysm: System) -> dict:
    """True CPU availability: constant ``a`` or a chain (levels, per-machine cdf, mean)."""
    from .systems import g_chain_weights, partial_availability

    m = sysm.n_machines
    levels = np.asarray(params["cpu_levels"], float)
    out = {"use_chain": False, "levels": levels, "cdf": np.ones((m, levels.size))}
    if params["cpu"] == "markov":
        weights = g_chain_weights(sysm.group, levels.size, params["cpu_low_weight"])
        out.update(use_chain=True, cdf=np.cumsum(weights, axis=1), a=weights @ levels)
    elif params["cpu"] == "partial":
        out["a"] = partial_availability(m)
    elif params["cpu"] == "custom":
        a = np.asarray(params["cpu_avail"], float)
        if a.shape != (m,):
            raise ValueError(f"cpu_avail has {a.size} values, the system has {m} machines")
        out["a"] = a
    else:
        out["a"] = np.ones(m)
    return out


def _timeline(params: Mapping[str, Any], sysm: System, rng: np.random.Generator) -> Timeline:
    from .systems import g_weibull_scales
    from .timeline import draw_timeline

    scales = (g_weibull_scales(sysm.group, params["weibull_scale_min"], params["weibull_scale_max"])
              if params["failures"] == "weibull" else None)      # only Weibull up periods use them
    return draw_timeline(rng, sysm.n_machines, params["horizon"], params["failures"],
                         params["fail_rate"], params["down_mean"], params["weibull_shape"], scales)


def simulate(params: Mapping[str, Any], seed: int, *, trace: int = 0, script=None,
             timeline: Timeline | None = None, keep_inputs: bool = False) -> dict:
    """One replication: a dict of the metrics (scalars / per-class arrays) plus ``reason``.

    ``trace > 0`` returns the first ``trace`` events as ``trace`` (time, kind, machine,
    task number); ``script = (times, classes, works, restart_works)`` replaces the random
    arrivals and work, ``timeline`` the drawn availability changes (tests);
    ``keep_inputs`` adds the kernel's inputs as ``inputs`` (naive-simulator tests).
    A ``policy`` given as a plug-in path runs that dispatch rule (:mod:`.plugins`); its
    impossible choice raises :class:`PluginError` (the replication fails).
    """
    from .policies import all_eligible, lp_eligibility
    from .timeline import estimated_views, lp_keys

    t_start = time.perf_counter()
    p = with_case(params)
    sysm, alpha = system_of(p)
    n, m = sysm.mu_nom.shape
    children = np.random.SeedSequence(int(seed)).spawn(_STREAMS)
    gen = lambda c: np.random.Generator(np.random.PCG64(c))  # noqa: E731
    arr_rng = gen(children[0])
    work_children = children[1].spawn(2)    # spawned once: spawn() advances the parent
    work_rng, rework_rng = (gen(c) for c in work_children)
    mach_rng, cpu_rng, est_rng, alg_rng = (gen(c) for c in children[2:])

    tl = _timeline(p, sysm, mach_rng) if timeline is None else timeline
    cpu = cpu_model(p, sysm)
    chain_keys = cpu_rng.integers(0, 2**64 - 1, size=m, dtype=np.uint64, endpoint=True)
    lp_policy = p["policy"] in LP_POLICIES
    a_base = np.ones(m) if (lp_policy and p["lp_cpu_info"] == "assume_full") else cpu["a"]
    view0, chg_view = estimated_views(est_rng, a_base, tl, p["estimation_error"])
    if lp_policy:
        chg_key, states = lp_keys(tl, view0, chg_view)
        table = lp_eligibility(p["policy"], sysm.mu_nom, alpha, states, alg_rng,
                               p["degenerate"], p["degenerate_tries"], p["zero_tol"],
                               p["lp_solver"], p["robust_solver"])
    else:
        chg_key = np.zeros(tl.time.size, np.int64)
        table = all_eligible(n, m)

    if keep_inputs:   # fresh generators in the same state, for an independent re-run
        inputs = dict(system=sysm, alpha=alpha, cpu=cpu, timeline=tl, view0=view0, chg_view=chg_view,
                      chg_key=chg_key, table=table, arr_rng=gen(children[0]),
                      work_rngs=[gen(c) for c in work_children])
    rule = resolve(p["policy"], DISPATCH).cfunc if is_path(p["policy"]) else None
    out = _run_kernel(p, sysm, alpha, cpu, tl, view0, chg_view, chg_key, table, chain_keys,
                      arr_rng, work_rng, rework_rng, trace, script, rule)
    if keep_inputs:
        out["inputs"] = inputs
    out["wall_s"] = time.perf_counter() - t_start
    return out


def _run_kernel(p, sysm, alpha, cpu, tl, view0, chg_view, chg_key, table: EligibilityTable,
                chain_keys, arr_rng, work_rng, rework_rng, trace, script, rule=None) -> dict:
    from .simulator import (BAD_ELIG, BAD_EMPTY, BAD_RANGE, N_STATS, ST_ARRIVED, ST_ERR_CHOICE, ST_ERR_MACHINE,
                            ST_ERR_WHY, ST_EVENTS, ST_KEY, ST_NTRACE, ST_QEND, ST_QMAX, ST_RESUB, ST_STOP,
                            STOP_PLUGIN, STOP_UNSTABLE, _simulate)

    n, m = sysm.mu_nom.shape
    if script is None:
        script = (np.zeros(0), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    s_t, s_c, s_w, s_rw = (np.asarray(script[0], float), np.asarray(script[1], np.int64),
                           np.asarray(script[2], float), np.asarray(script[3], float))
    sum_w = np.zeros(n)
    cnt_w = np.zeros(n, np.int64)
    busy = np.zeros(3)
    stats = np.zeros(N_STATS, np.int64)
    tr_t = np.zeros(trace)
    tr_k, tr_m, tr_task = (np.zeros(trace, np.int64) for _ in range(3))
    total = float(alpha.sum())
    # with a plug-in rule the policy code only places arriving tasks (fastest idle machine)
    code = POLICY_CODE["gcmu"] if rule is not None else POLICY_CODE[p["policy"]]
    # room for the expected completions (the kernel grows it if a run completes more)
    expected = total * max(0.0, float(p["horizon"]) - float(p["warmup"]))
    w_buf = np.empty(int(min(1.05 * expected, 1 << 22)) + 64)
    w_buf, n_w = _simulate(code, np.ascontiguousarray(sysm.mu_nom), np.asarray(cpu["a"], float), view0,
              np.cumsum(alpha) / total, total, WORK_CODE[p["work_dist"]],
              tl.time, tl.machine, tl.up, chg_key, chg_view, tl.next_same, tl.next_down0,
              table.elig, 0, arr_rng, work_rng, rework_rng, s_t, s_c, s_w, s_rw,
              cpu["use_chain"], cpu["levels"], float(p["cpu_stay"]), cpu["cdf"], chain_keys,
              float(p["cpu_period"]), float(p["horizon"]), float(p["warmup"]), int(p["queue_bound"]),
              p["resubmit_order"] == "resubmission",
              sum_w, cnt_w, busy, stats, tr_t, tr_k, tr_m, tr_task, w_buf, rule)
    if stats[ST_STOP] == STOP_PLUGIN:
        j, choice = int(stats[ST_ERR_MACHINE]), int(stats[ST_ERR_CHOICE])
        why = {BAD_RANGE: f"there is no class {choice}: classes are 0..{n - 1}",
               BAD_EMPTY: f"no task of class {choice} waits",
               BAD_ELIG: f"machine {j} may not take class {choice}"}[int(stats[ST_ERR_WHY])]
        raise PluginError(f"dispatch rule {p['policy']} at time {float(busy[2])!r}: machine {j} chose class {choice}, "
                          f"an impossible choice ({why})")
    key = int(stats[ST_KEY])
    done = int(cnt_w.sum())
    q_end = int(stats[ST_QEND])
    grew = p["unstable_fraction"] > 0 and q_end > max(1000, p["unstable_fraction"] * stats[ST_ARRIVED])
    reason = 1 if (stats[ST_STOP] == STOP_UNSTABLE or grew) else (2 if done == 0 else 0)
    w_class = np.full(N_CLASSES_MAX, np.nan)
    c_class = np.full(N_CLASSES_MAX, np.nan)
    c_class[:n] = cnt_w
    if reason == 0:
        with np.errstate(invalid="ignore", divide="ignore"):
            w_class[:n] = np.where(cnt_w > 0, sum_w / np.maximum(cnt_w, 1), np.nan)
    out = {
        "W": sum_w.sum() / done if reason == 0 else np.nan,
        "W_class": w_class,
        "W_quantiles": quantiles(w_buf[:n_w]) if reason == 0 else np.full(len(QUANTILE_LEVELS), np.nan),
        "completed_class": c_class,
        "lambda_star": float(table.lambda_star[key]),
        "n_zeros": float(table.n_zeros[key]) if table.n_zeros[key] >= 0 else np.nan,
        "lp_keys": float(table.elig.shape[0]) if not np.isnan(table.lambda_star[0]) else np.nan,
        "lp_solves": float(table.lp_solves),
        "lp_degenerate": float((table.n_zeros > table.z0).sum()) if table.z0[0] >= 0 else np.nan,
        "robust_fallbacks": float(table.robust_fallbacks),
        "resubmissions": float(stats[ST_RESUB]),
        "utilisation": busy[0] / (m * (busy[1] - p["warmup"])) if busy[1] > p["warmup"] else np.nan,
        "events": float(stats[ST_EVENTS]),
        "tasks_arrived": float(stats[ST_ARRIVED]),
        "tasks_completed": float(done),
        "queue_max": float(stats[ST_QMAX]),
        "lp_wall_s": table.wall_s,
        "robust_cache_hits": float(table.robust_cache_hits),
        "reason": reason,
    }
    if trace:
        k = int(stats[ST_NTRACE])
        out["trace"] = list(zip(tr_t[:k].tolist(), tr_k[:k].tolist(), tr_m[:k].tolist(), tr_task[:k].tolist()))
    return out


@fails_loudly
def run_batch(params: Mapping[str, Any], seeds: np.ndarray) -> dict[str, np.ndarray]:
    """One replication per seed (see :func:`simulate`)."""
    out = empty_outputs(METRICS, len(seeds))
    for r, seed in enumerate(seeds):
        res = simulate(params, int(seed))
        for metric in METRICS:
            out[metric.name][r] = res[metric.name]
        out["reason"][r] = res["reason"]
    return out


def default_params(**overrides: Any) -> dict[str, Any]:
    """The defaults of PARAMS with ``overrides`` (for tests and benchmarks)."""
    params = {prm.name: prm.default for prm in PARAMS}
    unknown = set(overrides) - set(params)
    if unknown:
        raise KeyError(f"unknown desktop_grid parameters: {sorted(unknown)}")
    params.update(overrides)
    return params


def job_records(params: Mapping[str, Any], seed: int) -> dict[str, np.ndarray]:
    """Per-task records of replication ``seed`` (``pipeline.store.records``), from the event trace:
    one row per time a task ran on a machine (``size`` 1), ``status`` 0 completed, 1
    interrupted by the machine's failure (the task was resubmitted and has a later row), 2
    never started, 3 still running at the end (``end`` = the end of the run)."""
    from .simulator import TR_ARRIVE, TR_COMPLETE, TR_FAIL, TR_START

    cap = 1 << 16
    res = simulate(params, seed, trace=cap)
    if len(res["trace"]) == cap:
        # cut: one more run holds every entry. Each event (arrival, availability change,
        # completion) writes one entry, and each arriving or resubmitted task (at most one
        # per arrival or failure) at most one queue and one start entry: 3 per event at most
        res = simulate(params, seed, trace=3 * int(res["events"]) + 1)
        assert len(res["trace"]) <= 3 * int(res["events"]), "desktop_grid trace bound"
    events = res["trace"]
    end_of_run = max((e[0] for e in events), default=0.0)
    arrival: dict[int, float] = {}
    running: dict[int, tuple[int, float]] = {}   # machine -> (task, start)
    rows: list[tuple] = []
    for t, kind, j, task in events:
        if kind == TR_ARRIVE:
            arrival[task] = t
        elif kind == TR_START:
            running[j] = (task, t)
        elif kind in (TR_COMPLETE, TR_FAIL) and j in running and running[j][0] == task:
            _, start = running.pop(j)
            rows.append((task, arrival[task], start, t, j, 0 if kind == TR_COMPLETE else 1))
    rows += [(task, arrival[task], start, end_of_run, j, 3) for j, (task, start) in running.items()]
    started = {r[0] for r in rows}
    rows += [(task, a, np.nan, np.nan, -1, 2) for task, a in arrival.items() if task not in started]
    rows.sort(key=lambda r: (r[0], np.inf if np.isnan(r[2]) else r[2]))
    cols = list(zip(*rows)) if rows else [()] * 6
    return {"job": np.array(cols[0], np.int64), "submit": np.array(cols[1], float),
            "start": np.array(cols[2], float), "end": np.array(cols[3], float),
            "resource": np.array(cols[4], np.int64), "size": np.ones(len(rows), np.int64),
            "status": np.array(cols[5], np.int64)}
