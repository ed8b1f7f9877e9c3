"""``schedsweep verify``: the reproduction scorecard.

For each spec with a ``[reference]`` table (pipeline/spec/reference.py), run it or read its store,
and judge every published number and claim statistically:

* a published **value** is ``inside CI`` (inside our confidence interval, and that interval
  no wider than the tolerance band), ``unresolved`` (inside a CI wider than the tolerance,
  however near our mean: more replications are needed to tell; how many is estimated from
  the half-width, which shrinks as 1/sqrt(n)), ``within tolerance`` (outside the CI: the
  difference is statistically resolved, but our mean is within the relative tolerance of it:
  default 15%, ``tolerance`` per value or ``[reference] tolerance`` per spec; marked with
  whether the whole CI lies within the tolerance), or ``outside`` (neither). A value marked
  ``calibrated`` in the reference (a default was fitted to it) is shown "calibrated on", and
  each spec and paper gets its verdict without such values too (``verdict_independent``);
* a published **claim** ``holds``, ``fails`` or is a ``tie`` (not resolved at this n). It is
  judged on paired differences between cells: replication r of every cell shares its random
  numbers (common random numbers) unless the claim's dimension is ``independent``, so the
  difference of two cells is computed per replication and its Student-t CI decides its sign
  (for an independent dimension, Welch's unpaired CI). A claim is a set of such contrasts
  (``max``: the named value against each other one; ``increasing``: each neighbour against
  the previous one; ...); it holds when every contrast it needs is resolved in its favour,
  fails when one is resolved against it, and is a tie otherwise, with the replications a tie
  needs: n = (t sd / |mean|)^2 of its unresolved contrasts, from their paired sd.

A spec (and a paper, the first word of ``reproduces``: TY, T14, AD10, S11) is
``reproduced`` when every value is inside its CI or tolerance and every claim holds,
``unresolved`` when nothing fails but something is unresolved or a tie, ``partly reproduced``
when some items fail and others agree, ``not reproduced`` when every judged item fails.

``verify --quick`` runs the specs of :data:`QUICK` at the reduced sizes listed there, chosen
so that every claim has the same verdict under the seeds checked (one that cannot be resolved
at that size is expected as a tie); ``benchmarks/verify-expected.json`` holds their verdicts,
a published value whose verdict differed between seeds (near a CI's edge) with every verdict
seen, and a test fails on any verdict that moves (``--check-expected``). After a deliberate
change: ``schedsweep verify --quick --update-expected`` (it runs the quick set under the specs'
seeds and :data:`STABILITY_SEEDS`).
"""
from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..base.errors import QueryError
from ..spec.reference import Claim, Reference, _plain, _show_where, of_store

VALUE_VERDICTS = ("inside CI", "within tolerance", "unresolved", "outside", "no result")
CLAIM_VERDICTS = ("holds", "tie", "fails", "no result")
EXPECTED = "benchmarks/verify-expected.json"

#: The reduced sizes of ``verify --quick``: spec name -> (replications, why this size). Each
#: was run under seeds 1, 2, 3 and the spec's own; benchmarks/verify-expected.json lists as
#: alternatives the verdicts that differed between them (published values near a CI's edge).
QUICK: dict[str, tuple[int, str]] = {
    "mm1": (40, "the closed form: the claim holds under every seed checked, every value is inside its CI "
                "but one under seed 3 (a 95% CI misses 5% of the time), which is within tolerance; about 2 CPU-s"),
    "slot-selection": (200, "the paper's 19 values and its cost claim, ten algorithms on one environment per "
                            "replication; about 7 CPU-s"),
    "cyclic-frsm-vs-css": (100, "T14 Table 1: the four FRSM-against-CSS claims hold under every seed checked "
                                "(at 60 the start claim is about 3 standard errors from a tie); about 20 CPU-s"),
}
STABILITY_SEEDS = (1, 2, 3)  # --update-expected also runs the quick set under these root seeds
QUICK_DEFAULT = 20  # replications of a spec outside QUICK named explicitly with --quick
#: Specs with references left out of the quick set: why, and their cost measured here.
NOT_QUICK: dict[str, str] = {
    "cyclic-owner-price": "no stable quick size: both claims are a tie under some seeds and hold under others "
                          "at 10, 20 and 80 replications; the ties' paired sd asks for up to about 400 "
                          "replications (2,000 cycles, about a CPU-minute) for the peak claim",
    "desktop-grid-cpu-info": "both claims hold at 5 replications, but the spec's own estimate is 5 CPU-minutes "
                             "for 4 x 30 replications (2.5 CPU-s each; the pilot here: 7.7 s in the slowest cell "
                             "on a loaded machine): about 50 CPU-s even at 5",
    "desktop-grid-A": "32 cells of LP-based dispatch; the spec's estimate: 10 CPU-minutes for 30 replications",
    "desktop-grid-BE": "80 cells; the spec's estimate: 1-2 CPU-hours for 30 replications",
    "desktop-grid-G": "System G of 300 machines; the spec's estimate: 30-60 CPU-minutes for 30 replications",
    "desktop-grid-estimation-error": "33 cells; the spec's estimate: the robust LP's slowest replication 2-4 CPU-s",
    "ga-speedup": "the pilot here took 128 s per replication in its slowest cell (a loaded machine)",
    "ga-isolation": "the same GA model as ga-speedup (minutes per replication) over 12 cells; not piloted here",
    "ga-time-to-solution": "the same GA model as ga-speedup over 16 cells; not piloted here",
    "ga-vs-baselines": "the same GA model as ga-speedup over 24 cells; not piloted here",
}


# -- contrasts: a paired (or Welch) CI of a difference ---------------------------------------
@dataclass(frozen=True)
class Contrast:
    """The difference ``x - y`` of two cells over replications, with its CI."""

    label: str
    mean: float
    half: float  # CI half-width at the level
    sd: float  # sd of one replication's difference (paired), or sqrt(sx² + sy²) (unpaired)
    n: int
    t: float  # the t factor of the CI
    exact: bool = False  # both cells deterministic: the difference of their one runs, no CI

    @property
    def sign(self) -> int:
        """+1: x > y resolved; -1: x < y resolved; 0: not resolved at this n (or exactly equal)."""
        if self.exact:
            return 0 if not math.isfinite(self.mean) or self.mean == 0 else (1 if self.mean > 0 else -1)
        if not (math.isfinite(self.mean) and math.isfinite(self.half)):
            return 0
        return 1 if self.mean - self.half > 0 else -1 if self.mean + self.half < 0 else 0

    def needed(self) -> int | None:
        """Replications (per cell) for the CI to exclude 0, at this mean and sd; None when the
        means are equal (or undefined): no n resolves it."""
        if self.exact or not (math.isfinite(self.mean) and math.isfinite(self.sd)) or self.mean == 0 or self.n < 2:
            return None
        return max(self.n, math.ceil((self.t * self.sd / abs(self.mean)) ** 2))

    def text(self) -> str:
        if self.exact:
            return f"{self.label}: {self.mean:+.4g} (deterministic)"
        return f"{self.label}: {self.mean:+.4g} ± {self.half:.2g}"


def contrast(x: np.ndarray, y: np.ndarray, level: float = 0.95, paired: bool = True, label: str = "",
             exact: bool = False) -> Contrast:
    """The CI of ``mean(x - y)``: paired over the replications where both are defined, or
    Welch's for independent samples. ``exact``: both cells are deterministic, their difference
    is the difference of their one runs (the first replication both define), with no CI."""
    from ..base.stats import t_quantile

    x, y = np.asarray(x, float), np.asarray(y, float)
    if exact:
        d = (x - y)[~(np.isnan(x) | np.isnan(y))]
        return Contrast(label, float(d[0]) if d.size else math.nan, math.nan, math.nan, min(d.size, 1), math.nan,
                        exact=True)
    if paired:
        d = (x - y)[~(np.isnan(x) | np.isnan(y))]
        n = d.size
        mean = float(d.mean()) if n else math.nan
        sd = float(d.std(ddof=1)) if n >= 2 else math.nan
        t = float(t_quantile(level, np.array(n)))
        return Contrast(label, mean, t * sd / math.sqrt(n) if n >= 2 else math.nan, sd, n, t)
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    nx, ny = x.size, y.size
    if nx < 2 or ny < 2:
        mean = float(x.mean() - y.mean()) if nx and ny else math.nan
        return Contrast(label, mean, math.nan, math.nan, min(nx, ny), math.nan)
    vx, vy = x.var(ddof=1) / nx, y.var(ddof=1) / ny
    se = math.sqrt(vx + vy)
    dof = (vx + vy) ** 2 / (vx * vx / (nx - 1) + vy * vy / (ny - 1)) if vx + vy > 0 else nx + ny - 2
    from scipy import stats as _st

    t = float(_st.t.ppf(0.5 + level / 2, dof))
    sd = math.sqrt(x.var(ddof=1) + y.var(ddof=1))
    return Contrast(label, float(x.mean() - y.mean()), t * se, sd, min(nx, ny), t)


# -- published values --------------------------------------------------------------------------
def value_verdict(published: float, mean: float, half: float, n: float, tolerance: float) -> tuple[str, int | None]:
    """(verdict, replications needed to resolve an ``unresolved`` value, else None)."""
    if not math.isfinite(mean):
        return "no result", None
    half = half if math.isfinite(half) else math.inf
    band = tolerance * abs(published)
    close = abs(mean - published) <= band
    inside = abs(mean - published) <= half
    if inside and half <= band:  # a CI narrower than the tolerance, holding the published value
        return "inside CI", None
    if inside:  # the CI is wider than the tolerance: it cannot tell yet, however near our mean is
        need = math.ceil(n * (half / band) ** 2) if band > 0 and math.isfinite(half) and n >= 2 else None
        return "unresolved", need
    if close:  # the difference is resolved (the CI excludes the value) and smaller than the tolerance
        return "within tolerance", None
    return "outside", None


def exact_verdict(published: float, value: float, tolerance: float) -> str:
    """The verdict of a deterministic cell's value (run once, no CI): within the tolerance or
    outside it; more replications would change nothing, so never 'inside CI' nor 'unresolved'."""
    if not math.isfinite(value):
        return "no result"
    return "within tolerance" if abs(value - published) <= tolerance * abs(published) else "outside"


def value_marks(published: float, mean: float, half: float, tolerance: float) -> dict[str, bool | None]:
    """What a verdict rests on: ``difference_resolved`` (our CI excludes the published value)
    and ``ci_within_tolerance`` (the whole CI lies within the tolerance of it: at this level,
    the true mean is within tolerance). None where there is no result."""
    if not (math.isfinite(mean) and math.isfinite(half)):
        return {"difference_resolved": None, "ci_within_tolerance": None}
    gap = abs(mean - published)
    return {"difference_resolved": gap > half, "ci_within_tolerance": gap + half <= tolerance * abs(published)}


def judge_values(ref: Reference, ds: Any, level: float = 0.95) -> list[dict[str, Any]]:
    """One row per published value: ours (mean, half-width, n), relative difference, verdict."""
    from ..base.stats import DETERMINISTIC, describe

    metrics = sorted({v.metric for v in ref.values if v.metric in ds})
    stats = describe(ds, level, metrics) if metrics else {}
    rows = []
    for v in ref.values:
        mean = half = n = math.nan
        exact = False
        if v.metric in stats:
            da = stats[v.metric].sel(v.where)
            if not set(da.dims) - {"stat"}:  # one cell
                mean, half, n = (float(da.sel(stat=s)) for s in ("mean", "half_width", "n"))
                exact = DETERMINISTIC in da["stat"].values and float(da.sel(stat=DETERMINISTIC)) == 1.0
        tol = ref.tolerance_of(v)
        verdict, need = (exact_verdict(v.value, mean, tol), None) if exact else value_verdict(v.value, mean, half, n, tol)
        rows.append({"metric": v.metric, "where": _show_where(v.where), "source": v.source,
                     "published": v.value, "ours": mean, "half_width": half, "n": n, "deterministic": exact,
                     "relative": (mean - v.value) / abs(v.value) if v.value and math.isfinite(mean) else None,
                     "tolerance": tol, "verdict": verdict, "needed": need,
                     **value_marks(v.value, mean, half, tol), "calibrated": v.calibrated})
    return rows


# -- claims ------------------------------------------------------------------------------------
def _combine_all(cs: list[Contrast]) -> tuple[str, int | None]:
    """Every contrast must be positive."""
    if any(c.sign < 0 for c in cs):
        return "fails", None
    if all(c.sign > 0 for c in cs):
        return "holds", None
    return "tie", _needed(c for c in cs if c.sign == 0)


def _needed(cs: Iterable[Contrast]) -> int | None:
    needs = [c.needed() for c in cs]
    return None if not needs or any(n is None for n in needs) else max(needs)


def _some_candidate(groups: list[list[Contrast]], means: list[float]) -> tuple[str, int | None]:
    """Holds if some candidate wins every one of its contrasts; the tie's n comes from the
    best-placed candidate none of whose contrasts is lost."""
    if any(g and all(c.sign > 0 for c in g) for g in groups):
        return "holds", None
    alive = [(m, g) for m, g in zip(means, groups) if not any(c.sign < 0 for c in g)]
    if not alive:
        return "fails", None
    best = max(alive, key=lambda mg: mg[0])[1]
    return "tie", _needed(c for c in best if c.sign == 0)


def judge_slice(claim: Claim, xs: list, ys: np.ndarray, level: float = 0.95,
                paired: bool = True, exact: list[bool] | None = None) -> tuple[str, int | None, list[Contrast]]:
    """The verdict of ``claim`` on one slice: ``ys[k]`` holds the replications at ``xs[k]``;
    ``exact[k]``: the cell at ``xs[k]`` is deterministic (a contrast of two such is exact)."""
    exact = exact or [False] * len(xs)

    def c(i: int, j: int, scale: float = 1.0) -> Contrast:
        tag = f"{xs[i]} − {scale:g}×{xs[j]}" if scale != 1 else f"{xs[i]} − {xs[j]}"
        return contrast(ys[i], scale * ys[j], level, paired, tag, exact=exact[i] and exact[j])

    k = len(xs)
    if claim.kind == "ratio_at_least":  # only the two compared values need results
        i, j = xs.index(claim.a), xs.index(claim.b)
        if np.isnan(ys[i]).all() or np.isnan(ys[j]).all():
            return "no result", None, []
        cs = [c(i, j, claim.factor)]  # a >= factor · b  (for positive means)
        return (*_combine_all(cs), cs)
    if any(np.isnan(ys[i]).all() for i in range(k)):
        return "no result", None, []
    means = [float(np.nanmean(y)) for y in ys]
    if claim.kind in ("max", "min"):
        at = xs.index(claim.at)
        cs = [c(at, j) if claim.kind == "max" else c(j, at) for j in range(k) if j != at]
        return (*_combine_all(cs), cs)
    if claim.kind in ("increasing", "decreasing"):
        cs = [c(i + 1, i) if claim.kind == "increasing" else c(i, i + 1) for i in range(k - 1)]
        return (*_combine_all(cs), cs)
    if claim.kind == "interior_min":
        inner = range(1, k - 1)
        groups = [[c(0, i), c(k - 1, i)] for i in inner]  # an endpoint above the interior point
        if not groups:
            return "fails", None, []
        ends = [[c(i, e) for i in inner] for e in (0, k - 1)]  # an endpoint below every interior point
        if any(all(x.sign > 0 for x in g) for g in ends):
            return "fails", None, [x for g in groups for x in g]
        verdict, need = _some_candidate(groups, [-means[i] for i in inner])
        return verdict, need, [x for g in groups for x in g]
    if claim.kind == "peak_near":
        near = [i for i in range(k) if abs(float(xs[i]) - float(claim.at)) <= claim.tolerance]
        far = [i for i in range(k) if i not in near]
        if not near:
            return "fails", None, []
        if not far:
            return "holds", None, []
        groups = [[c(w, o) for o in far] for w in near]
        if any(all(c(o, w).sign > 0 for w in near) for o in far):  # a peak away from `at`
            return "fails", None, [x for g in groups for x in g]
        verdict, need = _some_candidate(groups, [means[w] for w in near])
        return verdict, need, [x for g in groups for x in g]
    raise AssertionError(f"claim kind {claim.kind!r} has no verdict")


def judge_claim(claim: Claim, data: Any, level: float = 0.95, paired: bool = True,
                deterministic: Any = None) -> dict[str, Any]:
    """The verdict of ``claim`` on the replications ``data`` (a DataArray with the claim's
    dimension and ``replication``); every slice over the other dimensions must agree.
    ``deterministic``: a boolean DataArray over ``data``'s cells (its deterministic cells, whose
    one value ``data`` holds in every replication), or None."""
    da = data.sel(claim.where)
    det = None if deterministic is None else deterministic.sel(claim.where)
    if claim.among:
        da = da.sel({claim.along: list(claim.among)})
        det = None if det is None else det.sel({claim.along: list(claim.among)})
    others = [d for d in da.dims if d not in (claim.along, "replication")]
    da = da.transpose(*others, claim.along, "replication")
    det = None if det is None else det.transpose(*others, claim.along)
    verdicts, needs, shown = [], [], []
    for idx in np.ndindex(*(da.sizes[d] for d in others)):
        s = da.isel(dict(zip(others, idx)))
        xs = [_plain(x) for x in s[claim.along].values]
        exact = None if det is None else [bool(v) for v in det.isel(dict(zip(others, idx))).values]
        verdict, need, cs = judge_slice(claim, xs, np.asarray(s.values, float), level, paired, exact)
        label = ", ".join(f"{d}={_plain(s[d].values)}" for d in others)
        verdicts.append(verdict)
        if verdict == "tie":
            needs.append(need)
        shown.append({"slice": label, "verdict": verdict, "needed": need,
                      "means": {str(x): float(np.nanmean(y)) if not np.isnan(y).all() else None
                                for x, y in zip(xs, s.values)},
                      "contrasts": [x.text() for x in cs]})
    if "no result" in verdicts:
        verdict = "no result"
    elif "fails" in verdicts:
        verdict = "fails"
    elif all(v == "holds" for v in verdicts):
        verdict = "holds"
    else:
        verdict = "tie"
    need = None if verdict != "tie" or any(n is None for n in needs) else max(needs)
    return {"text": claim.text, "source": claim.source, "kind": claim.kind, "verdict": verdict,
            "needed": need, "paired": paired, "slices": shown}


def judge_claims(ref: Reference, ds: Any, level: float = 0.95) -> list[dict[str, Any]]:
    from ..base.stats import cell_values

    independent = set(ds.attrs.get("independent", []))
    out = []
    for claim in ref.claims:
        if claim.metric not in ds:
            continue
        data, det = cell_values(ds, claim.metric)
        out.append(judge_claim(claim, data, level, paired=claim.along not in independent, deterministic=det))
    return out


# -- one spec, many specs ----------------------------------------------------------------------
def paper_of(reproduces: str, name: str) -> str:
    """The paper a spec reproduces: the first word of ``reproduces`` when it is a source key
    (TY, T14, AD10, S11), else the spec's name."""
    match = re.match(r"([A-Z][A-Z0-9]+)\s", reproduces or "")
    return match.group(1) if match else name


def overall(values: list[str], claims: list[str]) -> str:
    """reproduced / unresolved / partly reproduced / not reproduced (module docstring)."""
    items = list(values) + list(claims)
    bad = sum(v in ("outside", "fails") for v in items)
    good = sum(v in ("inside CI", "within tolerance", "holds") for v in items)
    if not items:
        return "nothing to judge"
    if bad:
        return "partly reproduced" if good else "not reproduced"
    return "reproduced" if good == len(items) else "unresolved"


def scorecard(ds: Any, level: float = 0.95, label: str = "") -> dict[str, Any] | None:
    """The scorecard of one store (None if its spec has no reference)."""
    ref = of_store(ds)
    if not (ref.values or ref.claims):
        return None
    values = judge_values(ref, ds, level)
    claims = judge_claims(ref, ds, level)
    name = ds.attrs.get("name", label)
    card = {"spec": name, "paper": paper_of(ref.reproduces, name), "reproduces": ref.reproduces,
            "store": label, "replications": ds.attrs.get("replications"), "seed": ds.attrs.get("seed"),
            "level": level, "dropped": list(ds.attrs.get("reference_dropped", [])),
            "values": values, "claims": claims,
            "verdict": overall([v["verdict"] for v in values], [c["verdict"] for c in claims])}
    card.update(without_calibration(values, claims))
    return card


def without_calibration(values: list[dict[str, Any]], claims: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict on the values no default was calibrated on (and every claim): a value fitted
    to is not an independent check. ``calibrated``: how many values were left out."""
    independent = [v["verdict"] for v in values if not v.get("calibrated")]
    return {"calibrated": len(values) - len(independent),
            "verdict_independent": overall(independent, [c["verdict"] for c in claims])}


#: The rule of :func:`overall`, printed under each paper's verdict.
VERDICT_RULE = ("reproduced: every value inside CI or within tolerance and every claim holds; unresolved: none "
                "outside or failing, some unresolved, tied or without result; partly reproduced: some outside or "
                "failing, some agreeing; not reproduced: every judged item outside or failing")


def rule_text(values: list[str], claims: list[str]) -> str:
    """Why ``overall(values, claims)`` is what it is: the counts the rule was applied to."""
    items = list(values) + list(claims)
    good = sum(v in ("inside CI", "within tolerance", "holds") for v in items)
    bad = [v for v in items if v in ("outside", "fails")]
    open_ = len(items) - good - len(bad)
    return (f"{good} of {len(items)} agree, {len(bad)} outside or failing, {open_} unresolved, tied or "
            f"without result")


def shipped_with_reference() -> list[Path]:
    """The shipped specs whose [reference] table has values or claims."""
    import tomllib

    from ..base.shipped import folder

    out = []
    for path in sorted(folder("jobs").glob("*.toml")):
        table = tomllib.loads(path.read_text()).get("reference", {})
        if table.get("value") or table.get("claim"):
            out.append(path)
    return out


def _is_store(target: str) -> bool:
    p = Path(target)
    return p.is_dir() and (p / "zarr.json").exists()


def run_target(target: str, replications: int | None, seed: int | None, results: Path,
               workers: int | None, fresh: bool) -> Path:
    """Run (or resume) ``target`` at the requested size; return its store."""
    from ..execution.execute import run
    from ..spec.sweep import load

    spec = load(target)
    size = "max_replications" if spec.auto else "replications"  # "auto" stops each cell by precision
    overrides = ([f"{size}={replications}"] if replications else []) + ([f"seed={seed}"] if seed is not None else [])
    if overrides or fresh:
        tag = f"-n{replications or spec.replications}" + (f"-s{seed}" if seed is not None else "")
        store = results / "verify" / f"{spec.name}{tag}.zarr"
    else:
        store = results / f"{spec.name}.zarr"
    return run(target, store, workers=workers, progress=False, overrides=overrides)


def verify(targets: Iterable[str] = (), *, quick: bool = False, replications: int | None = None,
           seed: int | None = None, results: str | Path | None = None, workers: int | None = None,
           level: float = 0.95) -> dict[str, Any]:
    """Scorecards of the given specs or stores (default: every shipped spec with a reference;
    with ``quick``: the :data:`QUICK` set at its sizes). Reduced runs go to a temporary folder
    unless ``results`` is given."""
    from ..store.integrity import open_store

    targets = list(targets)
    skipped = {}
    if not targets:
        if quick:
            shipped = {p.stem: p for p in shipped_with_reference()}
            targets = [str(shipped[name]) for name in QUICK if name in shipped]
            skipped = {name: NOT_QUICK.get(name, "not in the quick set") for name in shipped if name not in QUICK}
        else:
            targets = [str(p) for p in shipped_with_reference()]
    cards = []
    with tempfile.TemporaryDirectory(prefix="schedsweep-verify-") as scratch:
        for target in targets:
            if _is_store(target):
                if replications or seed is not None or quick:
                    raise QueryError(f"{target}: a store is read as it is; --quick, --replications and --seed "
                                     "apply to specs")
                path = Path(target)
            else:
                from ..spec.sweep import load

                name = load(target).name
                n = replications or (quick_size(name) if quick else None)
                base = Path(results) if results else (Path(scratch) if (n or seed is not None) else Path("results"))
                path = run_target(target, n, seed, base, workers, fresh=bool(n))
            card = scorecard(open_store(path), level, str(path))
            if card is None:
                raise QueryError(f"{target}: its spec has no [reference] table (nothing to verify)")
            cards.append(card)
    return {"level": level, "quick": quick, "specs": cards, "skipped": skipped, "papers": papers(cards)}


def quick_size(name: str) -> int:
    """Replications of ``name`` under ``--quick``: its :data:`QUICK` size, else QUICK_DEFAULT."""
    return QUICK[name][0] if name in QUICK else QUICK_DEFAULT


def papers(cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per paper: its specs and counts, and the overall verdict."""
    out: dict[str, dict[str, Any]] = {}
    for card in cards:
        p = out.setdefault(card["paper"], {"paper": card["paper"], "specs": [], "values": [], "claims": [],
                                           "independent": []})
        p["specs"].append(card["spec"])
        p["values"] += [v["verdict"] for v in card["values"]]
        p["independent"] += [v["verdict"] for v in card["values"] if not v.get("calibrated")]
        p["claims"] += [c["verdict"] for c in card["claims"]]
    return [{"paper": p["paper"], "specs": p["specs"], "counts": _counts(p["values"], p["claims"]),
             "verdict": overall(p["values"], p["claims"]), "rule": rule_text(p["values"], p["claims"]),
             "calibrated": len(p["values"]) - len(p["independent"]),
             "verdict_independent": overall(p["independent"], p["claims"]),
             "rule_independent": rule_text(p["independent"], p["claims"])} for p in out.values()]


def _counts(values: list[str], claims: list[str]) -> dict[str, int]:
    counts = {f"values {v}": values.count(v) for v in VALUE_VERDICTS if values.count(v)}
    counts.update({f"claims {v}": claims.count(v) for v in CLAIM_VERDICTS if claims.count(v)})
    return counts


# -- expectations ------------------------------------------------------------------------------
def verdicts_of(result: dict[str, Any]) -> dict[str, dict[str, str]]:
    """{spec: {item label: verdict}}: what the expectation file holds."""
    out = {}
    for card in result["specs"]:
        items: dict[str, str] = {}
        for v in card["values"]:
            items[_unique(items, f"value {v['metric']} at {v['where']}")] = v["verdict"]
        for c in card["claims"]:
            items[_unique(items, f"claim {c['text']}")] = c["verdict"]
        out[card["spec"]] = items
    return out


def _unique(items: dict, key: str) -> str:
    k, n = key, 2
    while k in items:
        k, n = f"{key} #{n}", n + 1
    return k


def write_expected(result: dict[str, Any], others: list[dict[str, Any]], path: str | Path) -> Path:
    """Write the verdicts of ``result`` (the specs' own seeds); an item whose verdict differs
    under the ``others`` (the same runs under STABILITY_SEEDS) is written as the list of every
    verdict seen, and any of them is accepted: it is not stable at this size."""
    verdicts = verdicts_of(result)
    for other in map(verdicts_of, others):
        for spec, items in verdicts.items():
            for item, verdict in items.items():
                seen = verdict if isinstance(verdict, list) else [verdict]
                extra = other.get(spec, {}).get(item)
                if extra is not None and extra not in seen:
                    items[item] = sorted(seen + [extra], key=_order)
    doc = {"about": "verdicts of `schedsweep verify --quick` (pipeline/read/verify.py QUICK sizes, the specs' own seeds); "
                    "a list: the verdicts seen under the seeds checked, none of them stable at this size. A test "
                    "fails on any verdict that moves. Regenerate on purpose: schedsweep verify --quick --update-expected",
           "seeds_checked": ["the spec's own", *STABILITY_SEEDS],
           "sizes": {c["spec"]: {"replications": c["replications"], "seed": c["seed"]} for c in result["specs"]},
           "verdicts": verdicts}
    path = Path(path)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return path


def _order(verdict: str) -> int:
    order = VALUE_VERDICTS + CLAIM_VERDICTS
    return order.index(verdict) if verdict in order else len(order)


def unstable(path: str | Path) -> dict[str, list[str]]:
    """The items of an expectation file whose verdict differed between the seeds checked."""
    doc = json.loads(Path(path).read_text())["verdicts"]
    return {spec: [i for i, v in items.items() if isinstance(v, list)] for spec, items in doc.items()}


def moved(result: dict[str, Any], path: str | Path) -> list[str]:
    """One line per verdict that differs from the expectation file (and per item added or gone)."""
    expected = json.loads(Path(path).read_text())["verdicts"]
    now = verdicts_of(result)
    lines = []
    for spec in sorted(set(expected) | set(now)):
        old, new = expected.get(spec), now.get(spec)
        if old is None or new is None:
            lines.append(f"{spec}: {'not expected' if old is None else 'expected but not verified'}")
            continue
        for item in list(old) + [i for i in new if i not in old]:
            accepted = old.get(item) if isinstance(old.get(item), list) else [old.get(item)]
            if new.get(item) not in accepted:
                lines.append(f"{spec}: {item}: expected {old.get(item, '(absent)')}, now {new.get(item, '(absent)')}")
    return lines


# -- output ------------------------------------------------------------------------------------
def ours_text(v: dict[str, Any]) -> str:
    """Our value of a published value's row: ``mean ± half-width``, or ``value (deterministic)``."""
    if v.get("deterministic"):
        return f"{_num(v['ours'])} (deterministic)"
    return f"{_num(v['ours'])} ± {_num(v['half_width'], '.2g')}"


def _num(x: Any, fmt: str = ".4g") -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _rel(x: Any) -> str:
    return "n/a" if x is None else f"{x:+.1%}"


def _need(n: Any) -> str:
    return "" if n is None else f" (needs ~{n} replications)"


def _claim_need(c: dict[str, Any]) -> str:
    if c["verdict"] != "tie":
        return ""
    return _need(c["needed"]) if c["needed"] is not None else " (equal means: no n resolves it)"


def block_text(card: dict[str, Any]) -> str:
    """One spec's scorecard as plain text."""
    level = f"{card['level']:.0%}"
    out = [f"== {card['spec']} [{card['paper']}]: {card['verdict']}  "
           f"({card['replications']} replications, seed {card['seed']})",
           f"   Reproduces: {card['reproduces']}"]
    out += _calibration_lines(card)
    if card["dropped"]:
        out.append(f"   dropped by overrides: {'; '.join(card['dropped'])}")
    if card["values"]:
        exact = " or a deterministic cell's one value" if any(v.get("deterministic") for v in card["values"]) else ""
        out.append(f"   published values (ours: mean ± {level} CI half-width{exact}; relative difference; tolerance)")
        for v in card["values"]:
            out.append(f"     {v['verdict']:<16} {v['metric']:<16} {v['where']:<28} published {v['published']:<9.6g} "
                       f"ours {ours_text(v)}  {_rel(v['relative'])} "
                       f"(±{v['tolerance']:.0%}){_need(v['needed'])}{_value_note(v)}"
                       + (f"  [{v['source']}]" if v["source"] else ""))
    if card["claims"]:
        pairing = "paired" if all(c["paired"] for c in card["claims"]) else "paired or (independent dims) Welch"
        out.append(f"   published claims ({level} CI of {pairing} differences across replications)")
        for c in card["claims"]:
            out.append(f"     {c['verdict']:<16} {c['text']}{_claim_need(c)}" + (f"  [{c['source']}]" if c["source"] else ""))
            for s in c["slices"]:
                head = f"[{s['slice']}] " if s["slice"] else ""
                shown = s["contrasts"][:6] + ([f"... {len(s['contrasts']) - 6} more"] if len(s["contrasts"]) > 6 else [])
                out.append(f"       {head}{'; '.join(shown)}")
    return "\n".join(out)


def _value_note(v: dict[str, Any]) -> str:
    """What a value's verdict rests on, and whether a default was fitted to it."""
    note = ""
    if v.get("deterministic"):  # one exact value: no interval to resolve anything with
        pass
    elif v["verdict"] == "within tolerance":
        note = (" (difference resolved; CI within tolerance)" if v.get("ci_within_tolerance")
                else " (difference resolved; CI reaches past the tolerance)")
    return note + ("  calibrated on" if v.get("calibrated") else "")


def _calibration_lines(card: dict[str, Any]) -> list[str]:
    """Which defaults were calibrated on this spec's values, and its verdict without them."""
    texts = sorted({v["calibrated"] for v in card["values"] if v.get("calibrated")})
    if not texts:
        return []
    k = card["calibrated"]
    return ([f"   calibrated on: {t}" for t in texts]
            + [f"   without the {k} value(s) marked 'calibrated on' (not independent checks): "
               f"{card['verdict_independent']}"])


def paper_lines(result: dict[str, Any]) -> list[str]:
    """Under each paper's verdict: the rule and the counts it was applied to, and the verdict
    without the values a default was calibrated on."""
    out = [f"Verdict rule: {VERDICT_RULE}"]
    for p in result["papers"]:
        out.append(f"  {p['paper']}: {p['verdict']} ({p['rule']})")
        if p.get("calibrated"):
            out.append(f"  {p['paper']} without the {p['calibrated']} value(s) the defaults were calibrated on: "
                       f"{p['verdict_independent']} ({p['rule_independent']})")
    return out


SUMMARY_COLUMNS = ("spec", "paper", "n", "inside CI", "within tol.", "unresolved", "outside",
                   "holds", "tie", "fails", "verdict")


def summary_rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for c in result["specs"]:
        v = [x["verdict"] for x in c["values"]]
        k = [x["verdict"] for x in c["claims"]]
        rows.append([c["spec"], c["paper"], str(c["replications"]), str(v.count("inside CI")),
                     str(v.count("within tolerance")), str(v.count("unresolved")),
                     str(v.count("outside") + v.count("no result")),
                     str(k.count("holds")), str(k.count("tie")), str(k.count("fails") + k.count("no result")),
                     c["verdict"]])
    return rows


def render(result: dict[str, Any], fmt: str = "text") -> str:
    """The scorecard as text, markdown or JSON."""
    if fmt == "json":
        return json.dumps(_finite(result), indent=1, default=_jsonable, ensure_ascii=False)
    rows = summary_rows(result)
    papers_ = [[p["paper"], ", ".join(p["specs"]), ", ".join(f"{v} {k}" for k, v in p["counts"].items()),
                p["verdict"]] for p in result["papers"]]
    if fmt == "markdown":
        out = ["## Reproduction scorecard", "",
               _md(SUMMARY_COLUMNS, rows), "", _md(("paper", "specs", "counts", "verdict"), papers_), ""]
        out += [f"- {line.strip()}" for line in paper_lines(result)]
        for card in result["specs"]:
            out += ["", f"### {card['spec']}", "", "```text", block_text(card), "```"]
        if result["skipped"]:
            out += ["", "Not in the quick set:", ""] + [f"- {k}: {v}" for k, v in result["skipped"].items()]
        return "\n".join(out)
    out = [block_text(card) + "\n" for card in result["specs"]]
    out.append("Summary (values: inside CI / within tolerance / unresolved / outside; claims: holds / tie / fails)")
    out.append(_aligned(SUMMARY_COLUMNS, rows))
    out.append("")
    out.append(_aligned(("paper", "specs", "counts", "verdict"), papers_))
    out += paper_lines(result)
    if result["skipped"]:
        out += ["", "Not in the quick set:"] + [f"  {k}: {v}" for k, v in result["skipped"].items()]
    return "\n".join(out)


def _finite(x: Any) -> Any:
    """NaN and inf as null: JSON has no such numbers."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def _jsonable(x: Any) -> Any:
    if isinstance(x, (np.integer, np.floating)):
        return x.item()
    return str(x)


def _md(cols: Iterable[str], rows: list[list[str]]) -> str:
    cols = list(cols)
    return "\n".join(["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
                     + ["| " + " | ".join(r) + " |" for r in rows])


def _aligned(cols: Iterable[str], rows: list[list[str]]) -> str:
    table = [list(cols)] + rows
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table)


def store_text(ds: Any, level: float = 0.95) -> str:
    """The scorecard block of one store ('' if its spec has no reference): ``table`` and ``report``."""
    card = scorecard(ds, level)
    return block_text(card) if card else ""
