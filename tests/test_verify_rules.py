"""The scorecard states its rules (pipeline/read/verify.py): "inside CI" only for a CI narrower than
the tolerance, "within tolerance" with what it rests on, the verdict rule with its counts under
each paper, and the values a default was calibrated on marked, with the verdict without them.
On constructed data whose CIs are known in closed form."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats as st

from schedsweep.pipeline.spec import reference
from schedsweep.pipeline.read import verify
from schedsweep.pipeline.spec.sweep import load

REPO = Path(__file__).resolve().parent.parent


def _noise(n: int, sd: float, seed: int) -> np.ndarray:
    """n draws of exactly mean 0 and sample sd ``sd``."""
    z = np.random.default_rng(seed).standard_normal(n)
    return sd * (z - z.mean()) / z.std(ddof=1)


def test_a_ci_wider_than_the_tolerance_is_unresolved_even_when_our_mean_is_near():
    # the case: a CI of ±55% against a 15% tolerance, our mean 5% from the published value
    verdict, need = verify.value_verdict(10.0, 10.5, 5.5, 60, 0.15)
    assert verdict == "unresolved" and need == math.ceil(60 * (5.5 / 1.5) ** 2)
    # the same mean with a CI narrower than the tolerance: inside CI
    assert verify.value_verdict(10.0, 10.5, 1.0, 60, 0.15) == ("inside CI", None)
    # a CI exactly as wide as the tolerance band still resolves it
    assert verify.value_verdict(10.0, 10.5, 1.5, 60, 0.15) == ("inside CI", None)


def test_within_tolerance_says_the_difference_is_resolved_and_whether_the_whole_ci_is_within():
    # ours 11 ± 0.3: the CI excludes 10 (resolved) and reaches 11.3 <= 11.5: within tolerance at this level
    assert verify.value_verdict(10.0, 11.0, 0.3, 100, 0.15) == ("within tolerance", None)
    assert verify.value_marks(10.0, 11.0, 0.3, 0.15) == {"difference_resolved": True, "ci_within_tolerance": True}
    # ours 11.2 ± 0.5: excludes 10, the mean is within 15%, but the CI reaches 11.7 > 11.5
    assert verify.value_verdict(10.0, 11.2, 0.5, 100, 0.15) == ("within tolerance", None)
    assert verify.value_marks(10.0, 11.2, 0.5, 0.15) == {"difference_resolved": True, "ci_within_tolerance": False}
    assert verify.value_marks(10.0, 10.1, 0.5, 0.15)["difference_resolved"] is False  # inside the CI
    assert verify.value_marks(10.0, math.nan, math.nan, 0.15)["difference_resolved"] is None


SPEC = """name = "cons"
workload = "mm1"
reproduces = "XY Fig. 1"
replications = {n}
seed = 1
[sweep]
arrival_rate = [0.1, 0.2, 0.3]

[reference]
calibrated = "the defaults a and b (calibration.md, X)"

[[reference.value]]
metric = "mean_wait"
where = {{ arrival_rate = 0.1 }}
value = 10.0

[[reference.value]]
metric = "mean_wait"
where = {{ arrival_rate = 0.2 }}
value = 20.0

[[reference.value]]
metric = "mean_wait"
where = {{ arrival_rate = 0.3 }}
value = 30.0
calibrated = false
"""


def _store(means: list[float], sd: float, n: int) -> xr.Dataset:
    """A store-like Dataset: cell k holds ``means[k]`` plus noise of exact sample sd ``sd``."""
    values = np.array([m + _noise(n, sd, k) for k, m in enumerate(means)])
    ds = xr.Dataset({"mean_wait": (("arrival_rate", "replication"), values)},
                    coords={"arrival_rate": [0.1, 0.2, 0.3], "replication": np.arange(n)})
    ds.attrs = {"spec_text": SPEC.format(n=n), "name": "cons", "replications": n, "seed": 1,
                "metrics": ["mean_wait"], "dims": ["arrival_rate"], "independent": []}
    return ds


def test_the_verdict_is_given_with_and_without_the_values_a_default_was_calibrated_on():
    n, sd = 100, 1.0
    half = st.t.ppf(0.975, n - 1) * sd / math.sqrt(n)  # 0.198: every CI narrower than its tolerance
    card = verify.scorecard(_store([10.05, 20.1, 40.0], sd, n), label="s.zarr")
    rows = {v["where"]: v for v in card["values"]}
    assert [rows[f"arrival_rate={x}"]["verdict"] for x in (0.1, 0.2, 0.3)] == ["inside CI", "inside CI", "outside"]
    assert rows["arrival_rate=0.1"]["half_width"] == pytest.approx(half)
    assert [bool(rows[f"arrival_rate={x}"]["calibrated"]) for x in (0.1, 0.2, 0.3)] == [True, True, False]
    # with the two fitted values the spec looks partly reproduced; the one independent check fails
    assert card["verdict"] == "partly reproduced" and card["calibrated"] == 2
    assert card["verdict_independent"] == "not reproduced"
    text = verify.block_text(card)
    marked = [line for line in text.splitlines() if "calibrated on" in line and "published" in line]
    assert len(marked) == 2 and all("arrival_rate=0.3" not in line for line in marked)
    assert "calibrated on: the defaults a and b (calibration.md, X)" in text
    assert "without the 2 value(s) marked 'calibrated on' (not independent checks): not reproduced" in text


def test_each_paper_prints_its_rule_and_the_counts_it_was_applied_to():
    result = {"level": 0.95, "quick": False, "skipped": {},
              "specs": [verify.scorecard(_store([10.05, 20.1, 40.0], 1.0, 100), label="s.zarr")]}
    result["papers"] = verify.papers(result["specs"])
    paper = result["papers"][0]
    assert paper["paper"] == "XY" and paper["rule"] == "2 of 3 agree, 1 outside or failing, 0 unresolved, tied or without result"
    assert paper["verdict_independent"] == "not reproduced" and paper["calibrated"] == 2
    lines = verify.render(result).splitlines()
    at = lines.index(f"Verdict rule: {verify.VERDICT_RULE}")
    assert lines[at + 1] == f"  XY: partly reproduced ({paper['rule']})"
    assert lines[at + 2] == ("  XY without the 2 value(s) the defaults were calibrated on: not reproduced "
                             "(0 of 1 agree, 1 outside or failing, 0 unresolved, tied or without result)")
    assert "- XY: partly reproduced" in verify.render(result, "markdown")


def test_an_unresolved_value_keeps_a_paper_unresolved_however_near_its_mean():
    # sd 20 over 10 replications: half-width 14.3, wider than 15% of 10 (1.5) and of 20 (3)
    card = verify.scorecard(_store([10.5, 20.5, 30.5], 20.0, 10), label="s.zarr")
    assert {v["verdict"] for v in card["values"]} == {"unresolved"}
    assert card["verdict"] == card["verdict_independent"] == "unresolved"
    need = {v["where"]: v["needed"] for v in card["values"]}
    assert need["arrival_rate=0.1"] == math.ceil(10 * (card["values"][0]["half_width"] / 1.5) ** 2)


def test_calibrated_is_checked_in_one_line():
    doc = {"reference": {"calibrated": 3, "value": [{"metric": "m", "value": 1.0}]}}
    with pytest.raises(reference.ReferenceError, match=r"s.toml: \[reference\] calibrated = 3 must name"):
        reference.parse(doc, "s.toml")
    doc = {"reference": {"value": [{"metric": "m", "value": 1.0, "calibrated": ["x"]}]}}
    with pytest.raises(reference.ReferenceError, match=r"#1: calibrated = \['x'\] must name"):
        reference.parse(doc, "s.toml")


def _calibrated_specs_of_calibration_md() -> set[str]:
    """The specs whose published values calibration.md says the defaults were fitted to (its
    sections headed '(PAPER; jobs/x.toml, ...): calibrated')."""
    text = (REPO / "benchmarks" / "calibration.md").read_text()
    out: set[str] = set()
    for head in re.findall(r"^## .*\((.*)\): calibrated$", text, flags=re.M):
        out |= set(re.findall(r"jobs/([\w-]+)\.toml", head))
    return out


def test_the_shipped_specs_mark_exactly_the_values_calibration_md_fitted_to():
    documented = _calibrated_specs_of_calibration_md()
    assert documented == {"slot-selection", "cyclic-frsm-vs-css", "cyclic-owner-price"}
    for path in sorted((REPO / "jobs").glob("*.toml")):
        ref = reference.from_spec_text(path.read_text(), str(path))
        marked = [v for v in ref.values if v.calibrated]
        if path.stem in documented:
            assert ref.values and len(marked) == len(ref.values), path.name
            assert "benchmarks/calibration.md" in marked[0].calibrated
        else:
            assert not marked, path.name
    assert len(load(REPO / "jobs" / "cyclic-frsm-vs-css.toml").text) > 0  # the specs still load and validate
