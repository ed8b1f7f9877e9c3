"""Test systems of the desktop-grid workload (``docs/models/desktop_grid.md``, "The test systems").

The source's rate matrices were printed as images, so systems A–E and the test beds are
*generated* reproducibly (coefficient-of-variation method of Ali et al., HCW 2000) from
``system_seed``; System G follows the spec's BaseTime/power rule. All rates are *nominal*
(``mu_nom[i, j]``, tasks per time unit on a fully available machine).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._contract import kernel_array

from .choices import HETEROGENEITY, SYSTEMS, V_HIGH, V_LOW  # handed on from here too
from .lp import max_throughput

TARGET_LOAD = 0.95  # the heavier arrival vector uses 95% of the LP capacity

#: (heterogeneity, groups, machines per group, alpha1, alpha2) of the generated systems.
GENERATED = {
    "B": ("HiHi", 7, 4, [50, 48, 50, 48], [62.5, 60, 62.5, 60]),
    "C": ("LoHi", 7, 4, [30, 30, 24, 24], [40, 40, 32, 32]),
    "D": ("HiLo", 7, 4, [14, 28, 35, 35], [17, 34, 42.5, 42.5]),
    "E": ("LoLo", 7, 4, [24, 27, 21, 30], [32, 36, 28, 40]),
}
SYSTEM_A_ALPHA = ([11.25, 22.5, 36, 63], [17.5, 35, 56, 98])
TESTBEDS = {"testbed_hihi": ("B", [37.5, 36, 37.5, 36]), "testbed_lolo": ("E", [18, 20.25, 15.75, 22.5])}

# Partial CPU availability, 1-based machine numbers (our rule for 30 machines; source for 21).
PARTIAL_30 = {0.5: (4, 11, 15, 19, 26, 30), 0.75: (7, 14, 18, 22, 29)}
PARTIAL_21 = {0.5: (4, 11, 15), 0.75: (7, 14, 18)}

G_BASETIME = np.array([8750.0, 17500.0, 35000.0, 50000.0])
G_POWER = np.array([1.0, 1.125, 1.4375])
G_GROUPS, G_PER_GROUP = 15, 20
G_ALPHA = {"G1": ([0.00457, 0.00229, 0.00114, 0.00080], None),
           "G2": ([0.00457, 0.00229, 0.00114, 0.00080], [0.00495, 0.00110, 0.00214, 0.00135])}

SYSTEM_INDEX = {name: k for k, name in enumerate(SYSTEMS)}


@dataclass
class System:
    """A desktop grid: nominal rates, arrival vectors and machine groups."""

    name: str
    mu_nom: np.ndarray                      # (N, M) tasks per time unit at full CPU
    alphas: dict[str, np.ndarray]           # "alpha1", "alpha2" -> (N,) tasks per time unit
    group: np.ndarray                       # (M,) group index of each machine
    meta: dict = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return self.mu_nom.shape[0]

    @property
    def n_machines(self) -> int:
        return self.mu_nom.shape[1]


def _rng(system_seed: int, name: str) -> np.random.Generator:
    """One generator per (seed, system): systems do not shift each other's draws."""
    return np.random.default_rng(np.random.SeedSequence([int(system_seed), SYSTEM_INDEX[name]]))


def cvb_group_times(rng: np.random.Generator, n_classes: int, n_groups: int, v_task: float,
                    v_mach: float, mu_task: float = 1.0) -> np.ndarray:
    """Mean execution times ``e[i, g]`` by the coefficient-of-variation method (time units)."""
    q = rng.gamma(1.0 / v_task**2, mu_task * v_task**2, size=n_classes)
    return rng.gamma(1.0 / v_mach**2, (q * v_mach**2)[:, None], size=(n_classes, n_groups))


def machine_factor_group_times(rng: np.random.Generator, n_classes: int, n_groups: int, v_task: float,
                               v_mach: float, v_noise: float = V_LOW, mu_task: float = 1.0) -> np.ndarray:
    """``e[i, g] = q_i * m_g * eps_ig`` (time units): class means ``q`` with CV ``v_task``, a machine
    factor ``m`` (mean 1) with CV ``v_mach``, and a small independent noise (CV ``v_noise``).

    CVB cannot make low task with high machine heterogeneity: its draw ``e_ig ~ Gamma(CV
    v_mach)`` around ``q_i`` varies a column (one machine, across classes) as much as a row, so
    its "LoHi" measures about 0.9 both ways (:func:`heterogeneity`). Here the machines' spread
    is shared by all classes, so a column varies only by ``v_task`` and the noise."""
    q = rng.gamma(1.0 / v_task**2, mu_task * v_task**2, size=n_classes)
    m = rng.gamma(1.0 / v_mach**2, v_mach**2, size=n_groups)
    eps = rng.gamma(1.0 / v_noise**2, v_noise**2, size=(n_classes, n_groups))
    return q[:, None] * m[None, :] * eps


def heterogeneity(group_times: np.ndarray) -> tuple[float, float]:
    """(task, machine) heterogeneity of execution times ``e[i, g]`` (classes x machine groups),
    the measure of Ali et al. (HCW 2000): task heterogeneity = the coefficient of variation
    down a column (one machine group, across classes), averaged over groups; machine
    heterogeneity = the CV along a row (one class, across groups), averaged over classes.
    Groups, not machines, so that a group's identical machines do not weigh in more."""
    e = np.asarray(group_times, float)
    return (float(np.mean(e.std(axis=0) / e.mean(axis=0))), float(np.mean(e.std(axis=1) / e.mean(axis=1))))


def _expand(group_rates: np.ndarray, per_group) -> tuple[np.ndarray, np.ndarray]:
    """Give every machine its group's column; ``per_group`` an int or a list per group."""
    sizes = np.broadcast_to(np.asarray(per_group), (group_rates.shape[1],))
    group = np.repeat(np.arange(group_rates.shape[1]), sizes)
    return group_rates[:, group], group


def scale_to_load(mu: np.ndarray, alpha_heavy: np.ndarray, load: float = TARGET_LOAD) -> np.ndarray:
    """Scale ``mu`` (N x M, every machine) so that ``alpha_heavy`` uses ``load`` of the LP
    capacity with all machines dedicated and available (lambda* = 1/load)."""
    lam = max_throughput(mu, alpha_heavy)
    return mu * (1.0 / load) / lam


def generated_system(name: str, heterogeneity: str, n_groups: int, per_group: int,
                     alpha1, alpha2, system_seed: int, lohi_generator: str = "machine_factor") -> System:
    """A CVB system with groups of identical machines, scaled to 95% load under ``alpha2``.
    Low task with high machine heterogeneity (LoHi) is drawn by ``lohi_generator``:
    ``machine_factor`` (default; :func:`machine_factor_group_times`) or ``cvb`` (as before,
    which is not LoHi by :func:`heterogeneity`)."""
    v_task, v_mach = HETEROGENEITY[heterogeneity]
    alpha1 = np.asarray(alpha1, float)
    alpha2 = np.asarray(alpha2 if alpha2 is not None else alpha1, float)
    draw = (machine_factor_group_times if v_task < v_mach and lohi_generator == "machine_factor"
            else cvb_group_times)
    rates = 1.0 / draw(_rng(system_seed, name), len(alpha1), n_groups, v_task, v_mach)
    mu, group = _expand(rates, per_group)
    factor = scale_to_load(mu, alpha2)[0, 0] / mu[0, 0]   # scaling uses all machines
    mu, rates = mu * factor, rates * factor
    return System(name, mu, {"alpha1": alpha1, "alpha2": alpha2}, group,
                  {"heterogeneity": heterogeneity, "group_rates": rates})


def system_a(system_seed: int, slow_factor: float = 0.2, scaling: str = "partial") -> System:
    """System A: groups T, U (3 machines), V, W, X, Y (6 machines); class 1 equally slow everywhere.

    ``scaling``: the 95% load of ``alpha2`` is set with every machine dedicated
    (``dedicated``, the spec's general rule) or with the partial CPU availability of the
    systems page (``partial``, default, our rule): A's alpha2 cases include partial
    availability, and scaled on dedicated machines it then has lambda* = 0.89 < 1, a system
    no policy can keep stable (benchmarks/calibration.md)."""
    rates_vy = 1.0 / cvb_group_times(_rng(system_seed, "A"), 3, 4, V_HIGH, V_HIGH)  # classes 2-4
    class_mean = rates_vy.mean(axis=1)
    rates = np.empty((4, 6))
    rates[1:, 0] = 0.1 * class_mean          # T: too slow for most of the work
    rates[1:, 1] = 3.0 * class_mean          # U: fast for most of it
    rates[1:, 2:] = rates_vy
    rates[0, :] = slow_factor * rates_vy.mean()
    alpha1, alpha2 = (np.asarray(a, float) for a in SYSTEM_A_ALPHA)
    mu, group = _expand(rates, [3, 3, 6, 6, 6, 6])
    if scaling not in ("partial", "dedicated"):
        raise ValueError(f"scaling {scaling!r} must be 'partial' or 'dedicated'")
    a = partial_availability(mu.shape[1]) if scaling == "partial" else np.ones(mu.shape[1])
    factor = scale_to_load(mu * a, alpha2)[0, 0] / (mu[0, 0] * a[0])
    mu, rates = mu * factor, rates * factor
    return System("A", mu, {"alpha1": alpha1, "alpha2": alpha2}, group,
                  {"group_names": "TUVWXY", "group_rates": rates, "scaling": scaling})


def testbed(name: str, system_seed: int) -> System:
    """A test bed: the group rates of B (or E) unchanged, 3 machines per group."""
    parent, alpha = TESTBEDS[name]
    src = build_system(parent, system_seed)
    mu, group = _expand(src.meta["group_rates"], 3)
    a = np.asarray(alpha, float)
    return System(name, mu, {"alpha1": a, "alpha2": a}, group, {"parent": parent})


def system_g(name: str, system_seed: int) -> System:
    """System G1/G2: 300 machines in 15 groups of 20; mean nominal time BaseTime_i / P_ij."""
    m = G_GROUPS * G_PER_GROUP
    group = np.repeat(np.arange(G_GROUPS), G_PER_GROUP)
    if name == "G1":
        power = np.broadcast_to(G_POWER[group % 3], (4, m))          # group g gets value g mod 3
    else:
        power = _rng(system_seed, name).choice(G_POWER, size=(4, m))  # per machine and class
    mu = power / G_BASETIME[:, None]
    a1, a2 = G_ALPHA[name]
    alphas = {"alpha1": np.asarray(a1, float), "alpha2": np.asarray(a2 if a2 is not None else a1, float)}
    return System(name, np.ascontiguousarray(mu, float), alphas, group, {})


def build_system(name: str, system_seed: int = 1, heterogeneity: str = "HiHi", groups: int = 7,
                 per_group: int = 4, alpha=None, rates=None, lohi_generator: str = "machine_factor",
                 a_scaling: str = "partial") -> System:
    """The named system. ``generated`` needs ``alpha`` (its heavier vector); ``custom`` needs
    ``rates`` (N x M nominal rates) and ``alpha``."""
    if name == "A":
        return system_a(system_seed, scaling=a_scaling)
    if name in GENERATED:
        het, ng, pg, a1, a2 = GENERATED[name]
        return generated_system(name, het, ng, pg, a1, a2, system_seed, lohi_generator)
    if name in TESTBEDS:
        return testbed(name, system_seed)
    if name in G_ALPHA:
        return system_g(name, system_seed)
    if name == "generated":
        return generated_system(name, heterogeneity, groups, per_group, alpha, alpha, system_seed, lohi_generator)
    if name == "custom":
        mu = np.atleast_2d(np.asarray(rates, float))
        a = np.asarray(alpha, float)
        return System(name, mu, {"alpha1": a, "alpha2": a}, np.arange(mu.shape[1]), {})
    raise ValueError(f"system {name!r} unknown; allowed: {', '.join(SYSTEMS)}")


def partial_availability(n_machines: int) -> np.ndarray:
    """The partial CPU availability vector ``a`` (our rule for 30 machines, source for 21)."""
    pattern = PARTIAL_21 if n_machines <= 21 else PARTIAL_30
    a = np.ones(n_machines)
    for value, machines in pattern.items():
        for k in machines:
            if k <= n_machines:
                a[k - 1] = value
    return a


def g_chain_weights(group: np.ndarray, n_levels: int, low_weight: float = 6.0) -> np.ndarray:
    """Jump weights of the CPU chain per machine: (1 + low_weight, 1, ..., 1, 1 + g/2) for
    group g (our rule). ``low_weight`` = 6 puts System G's heaviest case (G2 at alpha2) at 92%
    of the allocation LP's capacity under the chain's mean availability (G1 82%, G2 at alpha1
    72%); with 0 (the rule before) they were 64%, 57% and 50%, too light for queues to form
    (benchmarks/calibration.md, "Desktop grid")."""
    w = np.ones((len(group), n_levels))
    w[:, 0] += low_weight
    w[:, -1] += group / 2.0
    return w / w.sum(axis=1, keepdims=True)


def g_weibull_scales(group: np.ndarray, scale_min: float, scale_max: float) -> np.ndarray:
    """Weibull up-period scale per machine, log-spaced from group 0 to the last group."""
    n_groups = int(group.max()) + 1
    scales = np.geomspace(scale_min, scale_max, n_groups) if n_groups > 1 else np.array([scale_min])
    return scales[group]


def load_rates(path: str) -> np.ndarray:
    """A rate matrix from a ``.npy`` file or a CSV/whitespace text file (rows = classes)."""
    if str(path).endswith(".npy"):
        return kernel_array(np.load(path), np.float64)  # a Fortran-ordered file loads strided
    with open(path) as f:
        text = f.read().replace(",", " ")
    rows = [list(map(float, line.split())) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return np.array(rows, float)
