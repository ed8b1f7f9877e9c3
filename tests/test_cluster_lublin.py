"""The Lublin–Feitelson generator against the model's own distributions (large samples,
chi-square goodness of fit on exact cell probabilities)."""
from __future__ import annotations

import numpy as np
from scipy import stats

from schedsweep.workloads.cluster import lublin

P = lublin.for_machine(256)      # UHi = 8, UMed = 5.5, typeless
N = 200_000
ALPHA = 1e-4                     # each test fails by chance once in 10,000 runs


def _mix_cdf(x, p):
    """CDF of the two-stage uniform of log2(size)."""
    a = np.clip((x - p.u_low) / (p.u_med - p.u_low), 0, 1)
    b = np.clip((x - p.u_med) / (p.u_hi - p.u_med), 0, 1)
    return p.u_prob * a + (1 - p.u_prob) * b


def _size_probs(p, kmax):
    k = np.arange(1, kmax + 1, dtype=float)
    pr = np.zeros(kmax)
    pr[0] = p.serial_prob
    other = 1 - p.serial_prob - p.pow2_prob
    lo, hi = np.log2(np.maximum(k - 0.5, 1e-300)), np.log2(k + 0.5)
    pr += other * (_mix_cdf(hi, p) - _mix_cdf(lo, p)) * (k >= 2)
    e = np.log2(k)
    pow2 = np.isclose(e, np.round(e)) & (k >= 2)
    pr[pow2] += p.pow2_prob * (_mix_cdf(e[pow2] + 0.5, p) - _mix_cdf(e[pow2] - 0.5, p))
    return pr


def _chisq(observed, expected):
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def test_sizes_match_model():
    rng = np.random.default_rng(11)
    s = lublin.sizes(rng, N, P)
    assert s.min() >= 1 and s.max() <= 256
    pr = _size_probs(P, 256)
    assert abs(pr.sum() - 1) < 1e-12
    counts = np.bincount(s, minlength=257)[1:]
    assert _chisq(counts, pr * N) > ALPHA
    serial = (s == 1).mean()
    assert abs(serial - P.serial_prob) < 4 * np.sqrt(P.serial_prob * (1 - P.serial_prob) / N)


def _runtime_cdf(x, nodes, p):
    """P(runtime <= x) with runtime = floor(exp(g)), g the hyper-gamma truncated at 12."""
    mix = np.clip(p.pa * nodes + p.pb, 0, 1)

    def f(y):
        return mix * stats.gamma.cdf(y, p.a1, scale=p.b1) + (1 - mix) * stats.gamma.cdf(y, p.a2, scale=p.b2)

    y = np.minimum(np.log(np.asarray(x, float) + 1), lublin.RUNTIME_LN_MAX)
    return f(y) / f(lublin.RUNTIME_LN_MAX)


def test_runtimes_match_hyper_gamma_with_size_dependent_mixing():
    rng = np.random.default_rng(12)
    for nodes in (1, 64, 200):
        rt = lublin.runtimes(rng, np.full(N, nodes), P)
        assert np.all(rt == np.floor(rt)) and rt.min() >= 1 and rt.max() <= np.exp(12)
        edges = np.unique(np.floor(np.exp(np.linspace(0.5, 12, 40))))
        cdf = _runtime_cdf(edges, nodes, P)
        expected = np.diff(np.concatenate([[0.0], cdf, [1.0]])) * N
        observed = np.bincount(np.searchsorted(edges, rt, side="left"), minlength=edges.size + 1)
        assert _chisq(observed, expected) > ALPHA


def test_daily_cycle_follows_bucket_weights():
    # The reference truncates every gap when adding it (about 0.5 s lost per arrival), so a
    # long stream drifts against the cycle; many short streams (drift < 100 s) do not.
    a = []
    for seed in range(800):
        x = lublin.daily_arrivals(np.random.default_rng([13, seed]), 400, lublin.TYPELESS)
        assert np.all(np.diff(x) >= 0) and np.all(x == np.floor(x))
        assert x[-1] >= 2 * 86400
        a.append(x[(x >= 86400) & (x < 2 * 86400)])   # the whole second day: every hour once, start-up over
    a = np.concatenate(a)
    w = lublin.bucket_weights(lublin.TYPELESS)
    assert abs(w.mean() - 1) < 1e-12
    share = np.bincount(((a % 86400) // 1800).astype(int), minlength=48) / a.size
    expected = w / w.sum()
    assert np.corrcoef(share, expected)[0, 1] > 0.99
    assert np.max(np.abs(share - expected) / expected) < 0.15
    # the cycle really varies (a flat cycle would pass trivially)
    assert expected.max() / expected.min() > 3


def test_bucket_weights_are_the_reference_gamma_cells():
    p = lublin.TYPELESS
    w = lublin.bucket_weights(p)
    k = np.arange(11, 59)
    raw = stats.gamma.cdf(k + 0.5, p.anum, scale=p.bnum) - stats.gamma.cdf(k - 0.5, p.anum, scale=p.bnum)
    ref = np.zeros(48)
    ref[(k - 1) % 48] = raw
    np.testing.assert_allclose(w, ref / ref.mean(), rtol=1e-10)


def _copy(rng: np.random.Generator) -> np.random.Generator:
    bg = type(rng.bit_generator)(0)
    bg.state = rng.bit_generator.state
    return np.random.Generator(bg)


def test_two_type_flow_keeps_the_first_arrivals_of_the_merged_streams():
    rng = np.random.default_rng(17)
    mirror = _copy(rng)
    n, machine = 400, 128
    arrival, nodes, runtime, kind = lublin.two_type_jobs(rng, n, machine)
    # the two streams drawn as the docstring says, merged by a plain two-list walk
    streams = []
    for base in (lublin.INTERACTIVE, lublin.BATCH):
        p = lublin.for_machine(machine, base)
        a = lublin.daily_arrivals(mirror, n, p)
        s = lublin.sizes(mirror, n, p)
        streams.append((a, s, lublin.runtimes(mirror, s, p)))
    i = b = 0
    expected = []
    while len(expected) < n:
        if streams[0][0][i] <= streams[1][0][b]:          # interactive first at a tie
            expected.append((streams[0][0][i], streams[0][1][i], streams[0][2][i], 0))
            i += 1
        else:
            expected.append((streams[1][0][b], streams[1][1][b], streams[1][2][b], 1))
            b += 1
    got = list(zip(arrival, nodes, runtime, kind))
    assert got == expected
    assert 0 < kind.sum() < n                               # both types present


def test_two_type_sizes_follow_each_type_and_interactive_stays_small():
    arrival, nodes, runtime, kind = lublin.two_type_jobs(np.random.default_rng(5), 20_000, 1024)
    assert nodes[kind == 0].max() <= round(2 ** lublin.INTERACTIVE.u_hi)   # 45 nodes
    assert nodes[kind == 1].max() > 45                                       # batch jobs reach the machine
    for k, base in ((0, lublin.INTERACTIVE), (1, lublin.BATCH)):
        serial = nodes[kind == k] == 1
        sd = np.sqrt(base.serial_prob * (1 - base.serial_prob) / serial.size)
        assert abs(serial.mean() - base.serial_prob) < 4 * sd


def test_a_generated_flow_written_as_swf_reads_back(tmp_path):
    import schedsweep.workloads.cluster as cluster
    from schedsweep.workloads.cluster import swf

    p = cluster._with_defaults({"arrivals": "lublin_two_type", "jobs": 300, "nodes": 16, "cores": 2})
    f, _ = cluster.flow(p, 9)
    path = str(tmp_path / "flow.swf")
    swf.write_flow(path, f.job_id, f.submit, f.tau, f.cores_req, f.estimate, int(f.node_cores.sum()), f.job_type)
    tr = swf.read(path)
    assert tr.max_procs == 32 and tr.n_jobs == 300
    assert np.array_equal(tr.procs, f.cores_req) and np.array_equal(tr.run, f.tau)
    assert np.allclose(tr.submit, f.submit, rtol=0, atol=1e-6) and np.allclose(tr.estimate, f.estimate, atol=1e-6)
    queue = swf.read_fields(path)[0][:, 14]
    assert np.array_equal(queue, f.job_type)
