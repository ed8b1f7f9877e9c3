"""Why LPAS_DG's allocation does not depend on the failure rate (the System B finding).

The spec's LP runs over the machines available now with mu = mu_nom * a_j. A
"failure-adjusted" LP that also multiplied every machine's rate by its long-run up fraction
u = (1/f) / (1/f + d) would give the same allocation whenever all machines share one failure
process (Systems A-E): the LP in (delta, lambda / u) is the original one. So the loss of
LPAS_DG against Gcmu on System B at alpha2 with failures 0.02/2 cannot come from leaving the
failure rate out of the LP (benchmarks/calibration.md, desktop grid).
"""
from __future__ import annotations

import numpy as np

from schedsweep.workloads import desktop_grid as dg
from schedsweep.workloads.desktop_grid.lp import max_support, max_throughput, solve_states


def _system_b():
    p = dg.with_case(dg.default_params(system="B", case="alpha2:0.02/2"))
    return dg.system_of(p)


def test_common_up_fraction_scales_lambda_and_keeps_the_maximal_support():
    sysm, alpha = _system_b()
    u = 50.0 / 52.0                       # up fraction of failures 0.02/2
    rng = np.random.default_rng(3)
    for _ in range(4):                    # the full set and three random available sets
        avail = rng.random(sysm.n_machines) > 0.15
        lam = max_throughput(sysm.mu_nom, alpha, avail)
        lam_u = max_throughput(sysm.mu_nom * u, alpha, avail)
        assert abs(lam_u - u * lam) <= 1e-9 * lam
        assert np.array_equal(max_support(sysm.mu_nom, alpha, avail),
                              max_support(sysm.mu_nom * u, alpha, avail))


def test_common_estimate_gives_the_same_vertex_eligibility():
    # a = 0.5 for every available machine scales mu exactly (a power of two), so the simplex
    # takes the same pivots and the degenerate search the same draws: same elig, lambda / 2
    sysm, alpha = _system_b()
    m = sysm.n_machines
    states = np.ones((3, m))
    states[1, [0, 5, 9]] = -1.0
    states[2, [3, 17]] = -1.0
    half = np.where(states >= 0, 0.5, -1.0)
    full, _ = solve_states(sysm.mu_nom, alpha, states, np.random.default_rng(7))
    scaled, _ = solve_states(sysm.mu_nom, alpha, half, np.random.default_rng(7))
    assert np.array_equal(full.elig, scaled.elig)
    np.testing.assert_allclose(scaled.lambda_star, full.lambda_star / 2, rtol=1e-12)
