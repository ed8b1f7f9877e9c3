"""desktop_grid systems: the generator's scaling, structure and heterogeneity; timeline."""
from __future__ import annotations

import numpy as np
import pytest

from schedsweep.workloads import desktop_grid as dg
from schedsweep.workloads.desktop_grid.lp import max_throughput
from schedsweep.workloads.desktop_grid.systems import build_system, heterogeneity, partial_availability
from schedsweep.workloads.desktop_grid.timeline import draw_timeline, estimated_views, lp_keys


@pytest.mark.parametrize("name", ["A", "B", "C", "D", "E"])
def test_heavier_vector_uses_95_percent(name):
    s = build_system(name, 1)
    # A: under the partial CPU availability its alpha2 cases run with (a_scaling = "partial")
    a = partial_availability(s.n_machines) if name == "A" else np.ones(s.n_machines)
    assert max_throughput(s.mu_nom * a, s.alphas["alpha2"]) == pytest.approx(1 / 0.95, rel=1e-9)
    assert s.n_classes == 4 and s.n_machines == (30 if name == "A" else 28)
    for g in np.unique(s.group):          # machines of a group are identical
        cols = s.mu_nom[:, s.group == g]
        assert (cols == cols[:, :1]).all()


def test_system_a_at_alpha2_is_stable_in_every_case_it_runs():
    """alpha2 cases of A: none, 0.01/1, 0.01/1 + partial. Capacity scales with the CPU
    availability a_j and the up fraction of a machine (mean up 1/f, mean down d)."""
    up = (1 / 0.01) / (1 / 0.01 + 1)
    a = partial_availability(30)
    s = build_system("A", 1)
    for avail in (np.ones(30), up * np.ones(30), up * a):
        assert max_throughput(s.mu_nom * avail, s.alphas["alpha2"]) > 1.0
    # the finding behind it: scaled on dedicated machines, A cannot be stable with partial availability
    dedicated = build_system("A", 1, a_scaling="dedicated")
    assert max_throughput(dedicated.mu_nom * a, dedicated.alphas["alpha2"]) < 0.9


def test_system_a_structure():
    s = build_system("A", 4)
    mu = s.mu_nom
    assert np.allclose(mu[0], mu[0, 0])                           # class 1 equally slow everywhere
    vy = mu[1:, 6:]
    per_class = np.array([vy[i][::6].mean() for i in range(3)])   # one machine per group V..Y
    assert np.allclose(mu[1:, 0], 0.1 * per_class)                # T
    assert np.allclose(mu[1:, 3], 3.0 * per_class)                # U
    assert mu[0, 0] == pytest.approx(0.2 * vy[:, ::6].mean())


LABELS = {"A": "HiHi", "B": "HiHi", "C": "LoHi", "D": "HiLo", "E": "LoLo",
          "testbed_hihi": "HiHi", "testbed_lolo": "LoLo"}  # A: its 80% are highly heterogeneous both ways


def _group_times(system) -> np.ndarray:
    first = [int(np.flatnonzero(system.group == g)[0]) for g in np.unique(system.group)]
    return 1.0 / system.mu_nom[:, first]


@pytest.mark.parametrize("name", sorted(LABELS))
def test_every_system_is_what_its_name_says_by_the_measure(name):
    """Task heterogeneity (CV down a column) and machine heterogeneity (CV along a row) of the
    execution times: Hi at least 0.5, Lo at most 0.25 (the generator's V are 0.9 and 0.1)."""
    task, machine = heterogeneity(_group_times(build_system(name, 1)))
    for level, label in zip((task, machine), (LABELS[name][:2], LABELS[name][2:])):
        assert level >= 0.5 if label == "Hi" else level <= 0.25, (name, task, machine)


def test_lohi_by_cvb_is_not_lohi_and_the_machine_factor_is():
    """Over 40 seeds: CVB's LoHi varies a column about as much as a row; the machine factor's does not."""
    cvb = np.array([heterogeneity(_group_times(build_system("C", s, lohi_generator="cvb"))) for s in range(40)])
    factor = np.array([heterogeneity(_group_times(build_system("C", s))) for s in range(40)])
    assert cvb[:, 0].mean() > 0.5                                  # the finding: task heterogeneity is high
    assert factor[:, 0].mean() < 0.2 < 0.5 < factor[:, 1].mean()   # low task, high machine
    assert factor[:, 0].max() < 0.3


def test_testbeds_and_g():
    tb = build_system("testbed_hihi", 2)
    b = build_system("B", 2)
    assert tb.n_machines == 21 and np.allclose(tb.meta and tb.mu_nom[:, ::3], b.meta["group_rates"])
    g1, g2 = build_system("G1", 1), build_system("G2", 1)
    assert g1.n_machines == g2.n_machines == 300
    assert np.allclose(g1.mu_nom * np.array([8750, 17500, 35000, 50000])[:, None],
                       np.array([1, 1.125, 1.4375])[g1.group % 3])
    assert set(np.round(g2.mu_nom[0] * 8750, 6)) == {1.0, 1.125, 1.4375}
    a = partial_availability(30)
    assert a[[3, 10, 14, 18, 25, 29]].tolist() == [0.5] * 6 and (a == 0.75).sum() == 5


def test_timeline_and_keys():
    rng = np.random.default_rng(0)
    tl = draw_timeline(rng, 5, 500.0, "exponential", 0.05, 4.0)
    assert (np.diff(tl.time) >= 0).all() and (tl.time <= 500).all()
    for j in range(5):           # each machine alternates down, up, down, ... from up at 0
        ups = tl.up[tl.machine == j]
        assert (ups == (np.arange(ups.size) % 2 == 1)).all()
    view0, chg_view = estimated_views(np.random.default_rng(1), np.full(5, 0.8), tl, 0.3)
    assert ((view0 >= 0.8 * 0.7 - 1e-12) & (view0 <= 0.8 * 1.3)).all()
    key, states = lp_keys(tl, view0, chg_view)
    avail, view = np.ones(5, bool), view0.copy()     # replay: state after each change
    for c in range(tl.time.size):
        j = tl.machine[c]
        avail[j] = tl.up[c]
        if tl.up[c]:
            view[j] = chg_view[c]
        assert (states[key[c]] == np.where(avail, view, -1.0)).all()
    assert (states[0] == view0).all()


def test_check_params_messages():
    p = dg.default_params(system="custom", warmup=30000.0)
    msgs = " ".join(dg.check_params(p))
    assert "warmup" in msgs and "alpha" in msgs and "rates_file" in msgs


def test_case_labels_set_the_parameters():
    assert dg.parse_case("alpha2:0.01/1+partial") == {
        "arrivals": "alpha2", "failures": "exponential", "fail_rate": 0.01, "down_mean": 1.0, "cpu": "partial"}
    assert dg.parse_case("weibull/120+markov") == {"failures": "weibull", "down_mean": 120.0, "cpu": "markov"}
    assert dg.parse_case("none") == {"failures": "none"}
    for bad in ("alpha3:none", "0.1", "none+half", "x/2"):
        msgs = dg.check_params(dg.default_params(case=bad))
        assert len(msgs) == 1 and bad in msgs[0]


def test_weibull_timeline_periods():
    """Weibull up periods (mean scale * Gamma(1 + 1/k)) and constant down periods."""
    from math import gamma
    rng = np.random.default_rng(5)
    scales = np.array([100.0, 400.0])
    tl = draw_timeline(rng, 2, 2e6, "weibull", 0.0, 7.0, weibull_shape=0.7, weibull_scales=scales)
    for j in range(2):
        t = np.r_[0.0, tl.time[tl.machine == j]]
        ups, downs = np.diff(t)[0::2], np.diff(t)[1::2]
        assert np.allclose(downs, 7.0)
        assert ups.mean() == pytest.approx(scales[j] * gamma(1 + 1 / 0.7), rel=0.05)


def _keys_by_row_sort(states):
    _, first, inverse = np.unique(states, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse.ravel()], first[order]


def test_first_occurrence_keys_equal_the_row_sort(monkeypatch):
    from schedsweep.workloads.desktop_grid import timeline

    rng = np.random.default_rng(3)
    states = rng.choice([-1.0, 0.25, 0.5, 1.0], size=(40, 6))[rng.integers(0, 40, 2000)]
    key, first = timeline._first_occurrence_keys(states)
    ref_key, ref_first = _keys_by_row_sort(states)
    np.testing.assert_array_equal(key, ref_key)
    np.testing.assert_array_equal(first, ref_first)
    assert key[0] == 0 and (np.diff(np.maximum.accumulate(key)) <= 1).all()  # numbered by first occurrence
    # Every row colliding: the collision is detected and the row sort gives the same keys.
    monkeypatch.setattr(timeline, "_row_hashes", lambda bits: np.zeros(bits.shape[0], np.uint64))
    key2, first2 = timeline._first_occurrence_keys(states)
    np.testing.assert_array_equal(key2, ref_key)
    np.testing.assert_array_equal(first2, ref_first)


def test_the_cpu_info_vector_overloads_the_lp_that_ignores_it():
    """jobs/desktop-grid-cpu-info.toml: with a_j = 1 the LP gives some class machines whose real
    capacity (mu a_j times the up fraction) is below its arrival rate, so LPAS_DG, which keeps
    each class on the machines of its allocation, cannot serve it; with the true a_j the LP
    still has room (lambda* > 1): the value of the information, as in the source."""
    from pathlib import Path

    from schedsweep.workloads.desktop_grid.lp import AllocationLP
    from schedsweep.pipeline.spec.sweep import load

    spec = load(Path(__file__).resolve().parents[1] / "jobs" / "desktop-grid-cpu-info.toml")
    p = next(iter(dict(spec.cells()).values()))
    s = build_system(p["system"], p["system_seed"])
    alpha = p["arrival_scale"] * s.alphas["alpha1"]
    a = np.asarray(p["cpu_avail"], float)
    up = (1 / 0.05) / (1 / 0.05 + 4)                       # the spec's failures 0.05/4
    blind = AllocationLP(s.mu_nom, alpha).solve(np.ones(s.n_machines, bool))
    served = (blind.delta * s.mu_nom * a * up).sum(axis=1)
    assert (served < alpha).any()
    informed = AllocationLP(s.mu_nom, alpha).solve(np.ones(s.n_machines, bool), a)
    assert informed.lambda_star * up > 1.0


def test_system_g_is_loaded_enough_for_queues_to_form():
    """G2 at alpha2 under the CPU chain: about 92% of the LP capacity, and a short Gcmu run
    has tasks waiting; with the chain weights of before (cpu_low_weight = 0) nothing waits."""
    from schedsweep.workloads._contract import defaults
    from schedsweep.workloads.desktop_grid.systems import g_chain_weights

    s = build_system("G2", 1)
    levels = np.array([0.25, 0.5, 0.75, 1.0])
    load = 1 / max_throughput(s.mu_nom * (g_chain_weights(s.group, 4) @ levels), s.alphas["alpha2"])
    assert 0.85 < load < 0.97
    p = {**defaults(dg.PARAMS), "case": "weibull/120+markov", "system": "G2", "arrivals": "alpha2",
         "policy": "gcmu", "horizon": 1e6}
    seeds = np.arange(2, dtype=np.uint64)
    assert (dg.run_batch(p, seeds)["queue_max"] > 10).all()
    assert (dg.run_batch({**p, "cpu_low_weight": 0.0}, seeds)["queue_max"] == 0).all()
