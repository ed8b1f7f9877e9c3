"""The Lublin–Feitelson model of rigid parallel jobs (JPDC 63(11), 2003).

Parameter values and procedure are those of the authors' reference program
``m_lublin99.c`` as summarised in ``docs/models/lublin_feitelson.md``. All gamma
distributions are shape–scale (mean = shape × scale). Times are in seconds.

Every function takes a ``np.random.Generator`` and draws vectorised, so a flow of ``n``
jobs always consumes the same numbers in the same order (the draw order is documented in
each function); the distributions are exactly the model's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: ln(runtime) is redrawn while it exceeds this (runtime <= e^12 s).
RUNTIME_LN_MAX = 12.0
#: ln(inter-arrival points) is redrawn while it exceeds this.
ARRIVAL_LN_MAX = 13.0
BUCKETS = 48
SECONDS_IN_BUCKET = 1800.0
CYCLIC_DAY_START = 11


@dataclass(frozen=True)
class LublinParams:
    """One job type's parameters (see the table in the spec page)."""

    serial_prob: float
    pow2_prob: float
    u_low: float
    u_med: float
    u_hi: float
    u_prob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    arar: float
    anum: float
    bnum: float


BATCH = LublinParams(0.2927, 0.6686, 1.2, 5.0, 7.0, 0.875, 6.57, 0.823, 639.1, 0.0156,
                     -0.003, 0.6986, 6.0415, 0.8531, 1.0519, 6.1271, 5.2740)
INTERACTIVE = LublinParams(0.1541, 0.625, 1.0, 3.0, 5.5, 0.705, 3.8351, 0.6605, 7.073, 0.6856,
                           -0.0118, 0.9156, 6.5510, 0.6621, 0.9797, 8.9186, 3.6680)
TYPELESS = LublinParams(0.244, 0.576, 0.8, 4.5, 7.0, 0.86, 4.2, 0.94, 312.0, 0.03,
                        -0.0054, 0.78, 10.2303, 0.4871, 1.0225, 8.1737, 3.9631)


def for_machine(total_cores: int, base: LublinParams = TYPELESS) -> LublinParams:
    """``base`` fitted to a machine of ``total_cores``: UHi = log2(total cores) (interactive
    jobs keep their own largest size, 2^5.5 = 45 nodes, if the machine is larger), UMed
    below UHi by the table's distance (typeless 2.5, as the ``cluster`` workload always had;
    batch 2; interactive 2.5)."""
    if total_cores < 1:
        raise ValueError(f"total_cores must be >= 1, got {total_cores}")
    u_hi = float(np.log2(total_cores))
    if base is INTERACTIVE:
        u_hi = min(u_hi, base.u_hi)
    fields = dict(base.__dict__)
    fields.update(u_hi=u_hi, u_med=u_hi - (base.u_hi - base.u_med))
    return LublinParams(**fields)


#: SWF queue numbers of the two job types (the reference program's output).
INTERACTIVE_QUEUE, BATCH_QUEUE = 0, 1


def two_type_jobs(rng: np.random.Generator, n: int, total_cores: int) -> tuple[np.ndarray, ...]:
    """The reference program's default flow: an interactive and a batch stream, each with its
    own daily-cycle arrivals, merged by arrival time (a job's type is that of the stream whose
    next arrival comes first; interactive first at a tie), the first ``n`` jobs kept.

    Returns (arrival s, nodes, runtime s, type: 0 interactive, 1 batch). Draws, in order: per
    type (interactive, then batch) ``n`` arrivals, sizes and runtimes, so a type's jobs do not
    depend on how many of the other type were kept."""
    streams = []
    for base in (INTERACTIVE, BATCH):
        p = for_machine(total_cores, base)
        arrival = daily_arrivals(rng, n, p)
        nodes = sizes(rng, n, p)
        streams.append((arrival, nodes, runtimes(rng, nodes, p)))
    arrival = np.concatenate([s[0] for s in streams])
    kind = np.repeat([INTERACTIVE_QUEUE, BATCH_QUEUE], n)
    keep = np.lexsort((kind, arrival))[:n]
    return (arrival[keep], np.concatenate([s[1] for s in streams])[keep],
            np.concatenate([s[2] for s in streams])[keep], kind[keep])


def sizes(rng: np.random.Generator, n: int, p: LublinParams) -> np.ndarray:
    """Job sizes (processors, int64) by the two-stage uniform of log2(size).

    Draws, in this order: ``u`` (n uniforms: serial / power-of-two class), ``stage``
    (n uniforms: which uniform), ``v`` (n uniforms: the position inside it).
    """
    u = rng.random(n)
    stage = rng.random(n)
    v = rng.random(n)
    low = np.where(stage <= p.u_prob, p.u_low, p.u_med)
    high = np.where(stage <= p.u_prob, p.u_med, p.u_hi)
    par = low + v * (high - low)
    pow2 = u <= p.serial_prob + p.pow2_prob
    par = np.where(pow2, np.round(par), par)
    out = np.round(2.0 ** par).astype(np.int64)
    out[u <= p.serial_prob] = 1
    return out


def _gamma_rejected(rng: np.random.Generator, shape: np.ndarray, scale: np.ndarray, bound: float,
                    redraw_component=None) -> np.ndarray:
    """Gamma draws, each redrawn while > bound (vectorised: redraw only the rejected ones)."""
    g = rng.gamma(shape, scale)
    bad = np.flatnonzero(g > bound)
    while bad.size:
        if redraw_component is not None:
            shape[bad], scale[bad] = redraw_component(bad)
        g[bad] = rng.gamma(shape[bad], scale[bad])
        bad = bad[g[bad] > bound]
    return g


def runtimes(rng: np.random.Generator, nodes: np.ndarray, p: LublinParams) -> np.ndarray:
    """Runtimes (integer seconds, float64) from the hyper-gamma of ln(runtime).

    Mixing probability ``clip(pa·nodes + pb, 0, 1)`` for gamma 1. Draws: n uniforms
    (component), n gammas; then for every rejected draw (ln > 12), a uniform and a
    gamma again (component and value are both redrawn, as the reference code does).
    """
    nodes = np.asarray(nodes, dtype=np.float64)
    mix = np.clip(p.pa * nodes + p.pb, 0.0, 1.0)

    def component(idx):
        first = rng.random(idx.size) <= mix[idx]
        return np.where(first, p.a1, p.a2), np.where(first, p.b1, p.b2)

    shape = np.empty(nodes.size)
    scale = np.empty(nodes.size)
    shape[:], scale[:] = component(np.arange(nodes.size))
    g = _gamma_rejected(rng, shape, scale, RUNTIME_LN_MAX, component)
    return np.floor(np.exp(g))


def bucket_weights(p: LublinParams) -> np.ndarray:
    """The 48 half-hour bucket weights of the daily cycle, normalised to mean 1."""
    from scipy.special import gammainc  # here, not at import: scipy.special costs `schedsweep workloads` 0.13 s

    w = np.zeros(BUCKETS)
    for i in range(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START):
        hi = gammainc(p.anum, (i + 0.5) / p.bnum)
        lo = gammainc(p.anum, (i - 0.5) / p.bnum)
        w[(i - 1) % BUCKETS] = hi - lo
    return w / w.mean()


def daily_arrivals(rng: np.random.Generator, n: int, p: LublinParams, start_hour: int = 0) -> np.ndarray:
    """Arrival times (integer seconds, float64) of one job stream with the daily cycle.

    As ``calc_next_arrive`` of the reference code: the first arrival is the first gap,
    the running time is an integer (each gap is truncated when added). Draws: one gamma
    per gap (plus redraws while ln > 13), gap by gap.
    """
    w = bucket_weights(p)
    shape = p.aarr * p.arar
    bucket = start_hour * BUCKETS // 24
    points = 0.0
    reminder = 0.0
    now = 0
    out = np.empty(n)
    for k in range(n):
        g = rng.gamma(shape, p.barr)
        while g > ARRIVAL_LN_MAX:
            g = rng.gamma(shape, p.barr)
        points += np.exp(g) / SECONDS_IN_BUCKET
        gap = 0.0
        while points > w[bucket]:
            points -= w[bucket]
            bucket = (bucket + 1) % BUCKETS
            gap += SECONDS_IN_BUCKET
        new_rem = points / w[bucket]
        gap += SECONDS_IN_BUCKET * (new_rem - reminder)
        reminder = new_rem
        now += int(gap)  # C: unsigned long += double truncates the sum (gap >= 0 here)
        out[k] = now
    return out
