"""The reproduction scorecard (pipeline/read/verify.py): verdicts of published values and claims on
constructed data (a tie, a clear hold, a clear fail, a value inside the CI but beyond the
tolerance), paired statistics against point means, references dropped by overrides, and the
quick scorecard of the shipped specs against its committed expectation."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings, strategies as st_
from scipy import stats as st

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.spec import reference, sweep as spec_mod
from schedsweep.pipeline.read import verify

REPO = Path(__file__).resolve().parent.parent


def _claim(**kw) -> reference.Claim:
    return reference.Claim(text="t", metric="m", along="x", **kw)


def _data(rows: list[np.ndarray], xs: list) -> xr.DataArray:
    return xr.DataArray(np.array(rows, float), dims=["x", "replication"], coords={"x": xs})


def _noise(n: int, sd: float, seed: int) -> np.ndarray:
    """n draws of exactly mean 0 and sample sd ``sd`` (so each expected CI is known in closed form)."""
    z = np.random.default_rng(seed).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return sd * z


# -- published values ------------------------------------------------------------------------------
def test_value_verdicts_inside_within_outside():
    assert verify.value_verdict(10.0, 10.2, 0.5, 100, 0.15) == ("inside CI", None)
    assert verify.value_verdict(10.0, 11.0, 0.5, 100, 0.15) == ("within tolerance", None)  # CI misses, 10% off
    assert verify.value_verdict(10.0, 12.0, 0.5, 100, 0.15) == ("outside", None)  # 20% off, CI misses
    assert verify.value_verdict(10.0, 12.0, 0.5, 100, 0.25) == ("within tolerance", None)  # its own tolerance
    assert verify.value_verdict(10.0, math.nan, math.nan, 0, 0.15) == ("no result", None)


def test_a_value_inside_the_ci_but_beyond_the_tolerance_is_unresolved_with_the_replications_it_needs():
    # ours 13 ± 4 (n = 40): the published 10 is inside the CI, but 30% away; the CI is wider than
    # the ±15% band (1.5), and shrinks as 1/sqrt(n): 40 * (4 / 1.5)^2 = 284.4 -> 285 replications.
    verdict, need = verify.value_verdict(10.0, 13.0, 4.0, 40, 0.15)
    assert verdict == "unresolved" and need == 285
    # a published 0 has no relative band: inside a non-zero CI it can never be resolved
    assert verify.value_verdict(0.0, 0.5, 1.0, 40, 0.15) == ("unresolved", None)
    assert verify.value_verdict(0.0, 0.0, 0.0, 40, 0.15) == ("inside CI", None)


def test_tolerance_per_value_and_per_spec_is_parsed_and_checked():
    doc = {"reference": {"tolerance": 0.1, "value": [
        {"metric": "m", "value": 1.0}, {"metric": "m", "value": 2.0, "tolerance": 0.02}]}}
    ref = reference.parse(doc, "s.toml")
    assert [ref.tolerance_of(v) for v in ref.values] == [0.1, 0.02]
    assert reference.parse({"reference": {"value": [{"metric": "m", "value": 1.0}]}}, "s").tolerance == 0.15
    with pytest.raises(reference.ReferenceError, match=r"s.toml: \[reference\] tolerance = -1"):
        reference.parse({"reference": {"tolerance": -1}}, "s.toml")


# -- claims ----------------------------------------------------------------------------------------
def test_a_clear_hold_and_a_clear_fail_of_max():
    env = np.random.default_rng(1).normal(100, 30, 50)  # the common random numbers of each replication
    rows = [env, env + 5 + _noise(50, 1, 2), env + 1 + _noise(50, 1, 3)]
    held = verify.judge_claim(_claim(kind="max", at="b"), _data(rows, ["a", "b", "c"]))
    failed = verify.judge_claim(_claim(kind="max", at="c"), _data(rows, ["a", "b", "c"]))
    assert held["verdict"] == "holds" and held["needed"] is None
    assert failed["verdict"] == "fails"  # c - b = -4 ± 0.4: resolved against the claim


def test_paired_differences_resolve_what_point_means_and_unpaired_cis_cannot():
    # b exceeds a by 1 in every replication, under an environment of sd 30: the paired CI is
    # exactly +1 ± 0, while the unpaired (Welch) CI of the same data is about ±17: a tie.
    env = np.random.default_rng(4).normal(100, 30, 40)
    data = _data([env, env + 1.0], ["a", "b"])
    assert verify.judge_claim(_claim(kind="max", at="b"), data)["verdict"] == "holds"
    assert verify.judge_claim(_claim(kind="max", at="b"), data, paired=False)["verdict"] == "tie"


def test_a_tie_is_not_judged_on_point_means_and_says_how_many_replications_resolve_it():
    # The TY experiment's case: "MinRuntime is the most expensive", 1464 against 1464.5: on point means
    # it "does not hold"; the paired difference -0.5 ± 0.64 is a tie.
    n, sd, diff = 40, 2.0, -0.5
    env = np.random.default_rng(5).normal(1464, 40, n)
    d = diff + _noise(n, sd, 6)
    rows = [env - 100, env + d, env]  # min_cost, min_runtime, min_finish
    xs = ["min_cost", "min_runtime", "min_finish"]
    claim = _claim(kind="max", at="min_runtime")
    assert reference.check_claim(claim, _data(rows, xs).mean("replication"))["holds"] is False
    judged = verify.judge_claim(claim, _data(rows, xs))
    assert judged["verdict"] == "tie"
    t = st.t.ppf(0.975, n - 1)
    assert judged["needed"] == math.ceil((t * sd / abs(diff)) ** 2)  # (t sd / |mean|)^2 = 246
    # the contrast it shows is the paired CI computed by hand
    shown = judged["slices"][0]["contrasts"][1]
    assert shown == f"min_runtime − min_finish: {diff:+.4g} ± {t * sd / math.sqrt(n):.2g}"


def test_equal_cells_are_a_tie_that_no_number_of_replications_resolves():
    env = np.random.default_rng(7).normal(10, 2, 30)
    judged = verify.judge_claim(_claim(kind="max", at="a"), _data([env, env], ["a", "b"]))
    assert judged["verdict"] == "tie" and judged["needed"] is None


@pytest.mark.parametrize("kind,means,verdict", [
    ("increasing", [1, 2, 3], "holds"),
    ("increasing", [1, 3, 2], "fails"),
    ("increasing", [1, 1.01, 3], "tie"),
    ("decreasing", [3, 2, 1], "holds"),
    ("interior_min", [3, 1, 2], "holds"),
    ("interior_min", [1, 2, 3], "fails"),       # the first value is below every interior one
    ("interior_min", [2, 1.99, 1.98], "tie"),
    ("min", [2, 3, 1], "fails"),                  # at = "a" is not the smallest
])
def test_each_claim_kind_on_paired_data(kind, means, verdict):
    env = np.random.default_rng(8).normal(0, 50, 30)  # large common noise, small paired noise
    rows = [env + m + _noise(30, 0.1, 10 + i) for i, m in enumerate(means)]
    kw = {"at": "a"} if kind == "min" else {}
    assert verify.judge_claim(_claim(kind=kind, **kw), _data(rows, ["a", "b", "c"]))["verdict"] == verdict


@settings(max_examples=60, deadline=None)
@given(kind=st_.sampled_from(["max", "min", "increasing", "decreasing"]), k=st_.integers(2, 4),
       n=st_.integers(3, 25), seed=st_.integers(0, 2 ** 32 - 1), spread=st_.floats(0.0, 3.0))
def test_a_resolved_verdict_agrees_with_the_point_means(kind, k, n, seed, spread):
    """Holds => the claim holds on the means; fails => it does not; a tie may go either way."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(0, 1, (1, n)) * 5 + rng.normal(0, spread, (k, 1)) + rng.normal(0, 1, (k, n))
    xs = list("abcd"[:k])
    claim = _claim(kind=kind, **({"at": "a"} if kind in ("max", "min") else {}))
    judged = verify.judge_claim(claim, _data(list(rows), xs))["verdict"]
    on_means = reference.check_claim(claim, _data(list(rows), xs).mean("replication"))["holds"]
    assert judged in ("holds", "fails", "tie")
    if judged != "tie":
        assert on_means is (judged == "holds")


def test_peak_near_and_ratio_at_least():
    env = np.random.default_rng(9).normal(0, 5, 30)
    rows = [env + m + _noise(30, 0.1, 20 + i) for i, m in enumerate([1, 4, 5, 2])]
    data = xr.DataArray(np.array(rows), dims=["x", "replication"], coords={"x": [2.0, 4.0, 6.0, 8.0]})
    assert verify.judge_claim(_claim(kind="peak_near", at=5.0, tolerance=1.0), data)["verdict"] == "holds"
    assert verify.judge_claim(_claim(kind="peak_near", at=8.0, tolerance=0.5), data)["verdict"] == "fails"
    b = 10 + np.abs(env)
    data = _data([2 * b + _noise(30, 0.1, 30), b], ["a", "b"])  # a / b = 2 in every replication, nearly
    assert verify.judge_claim(_claim(kind="ratio_at_least", a="a", b="b", factor=1.5), data)["verdict"] == "holds"
    assert verify.judge_claim(_claim(kind="ratio_at_least", a="a", b="b", factor=3.0), data)["verdict"] == "fails"


def test_a_claim_over_slices_fails_when_one_slice_fails():
    env = np.random.default_rng(11).normal(0, 5, 20)
    good = [env, env + 1]
    bad = [env + 1, env]
    data = xr.DataArray(np.array([good, bad]), dims=["y", "x", "replication"],
                        coords={"y": [1, 2], "x": ["a", "b"]})
    judged = verify.judge_claim(_claim(kind="max", at="b"), data)
    assert judged["verdict"] == "fails" and [s["verdict"] for s in judged["slices"]] == ["holds", "fails"]


def test_overall_verdicts():
    assert verify.overall(["inside CI", "within tolerance"], ["holds"]) == "reproduced"
    assert verify.overall(["inside CI", "unresolved"], ["holds"]) == "unresolved"
    assert verify.overall(["inside CI"], ["tie"]) == "unresolved"
    assert verify.overall(["outside", "inside CI"], ["holds"]) == "partly reproduced"
    assert verify.overall(["outside"], ["fails"]) == "not reproduced"
    assert verify.paper_of("TY Fig. 1 a,b", "x") == "TY" and verify.paper_of("T14 Table 1", "x") == "T14"
    assert verify.paper_of("AD10 Table 1", "x") == "AD10" and verify.paper_of("pipeline check", "mm1") == "mm1"


# -- overrides and references ------------------------------------------------------------------------
MM1 = """
name = "ref"
workload = "mm1"
replications = 20
seed = 3
reproduces = "M/M/1 closed form"
[params]
customers = 3000
warmup = 300
[sweep]
arrival_rate = [0.3, 0.6]
[[reference.value]]
metric = "mean_time_in_system"
where = { arrival_rate = 0.3 }
value = 1.4285714285714286
[[reference.value]]
metric = "mean_time_in_system"
where = { arrival_rate = 0.6 }
value = 2.5
[[reference.claim]]
text = "grows with load"
kind = "increasing"
metric = "mean_time_in_system"
along = "arrival_rate"
"""


def test_an_override_that_removes_a_referenced_coordinate_drops_that_reference(write_spec, tmp_path, capsys):
    path = write_spec(MM1)
    spec = spec_mod.load(path, ["sweep.arrival_rate=[0.6, 0.7]"])
    assert spec.reference_dropped == ("value mean_time_in_system at arrival_rate=0.3",)
    # a reference the file itself gets wrong is still refused, overrides or not
    bad = write_spec(MM1.replace("where = { arrival_rate = 0.6 }", "where = { arrival_rate = 0.65 }"), "bad.toml")
    with pytest.raises(spec_mod.SpecError, match="arrival_rate = 0.65 is not a value"):
        spec_mod.load(bad, ["sweep.arrival_rate=[0.6, 0.7]"])
    store = pipeline.run(path, tmp_path / "r.zarr", workers=0, progress=False,
                         overrides=["sweep.arrival_rate=[0.6, 0.7]"])
    assert "1 published reference point(s) dropped" in capsys.readouterr().err
    ds = pipeline.open_store(store)
    assert ds.attrs["reference_dropped"] == ["value mean_time_in_system at arrival_rate=0.3"]
    card = verify.scorecard(ds, label=str(store))
    assert [v["where"] for v in card["values"]] == ["arrival_rate=0.6"] and card["dropped"]
    assert [c["verdict"] for c in card["claims"]] == ["holds"]
    assert cli.main(["table", str(store)]) == 0 and "dropped by overrides" in capsys.readouterr().out
    assert cli.main(["verify", str(store), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## Reproduction scorecard") and "| ref | ref | 20 | " in out
    assert cli.main(["verify", str(store), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["specs"][0]["claims"][0]["verdict"] == "holds" and doc["papers"][0]["paper"] == "ref"
    assert cli.main(["verify", str(store), "--replications", "5"]) == 2
    assert "a store is read as it is" in capsys.readouterr().err


def test_verify_refuses_contradictory_options_in_one_line(capsys):
    assert cli.main(["verify", "--quick", "--replications", "5"]) == 2
    assert "give --quick or --replications N, not both" in capsys.readouterr().err
    assert cli.main(["verify", "--update-expected"]) == 2
    assert cli.main(["verify", "jobs/quickstart.toml", "--replications", "1"]) == 2  # N >= 2


# -- the quick scorecard guards itself -------------------------------------------------------------
def test_every_shipped_spec_with_references_is_in_the_quick_set_or_listed_with_its_cost():
    shipped = {p.stem for p in verify.shipped_with_reference()}
    assert shipped == set(verify.QUICK) | set(verify.NOT_QUICK)
    assert not set(verify.QUICK) & set(verify.NOT_QUICK)


def test_verify_quick_keeps_every_committed_verdict(tmp_path, capsys):
    """`schedsweep verify --quick` over the quick set (pipeline/read/verify.py QUICK) gives exactly the
    verdicts of benchmarks/verify-expected.json; a verdict that moves fails here. After a change
    made on purpose: schedsweep verify --quick --update-expected (and say why in the commit)."""
    expected = REPO / "benchmarks" / "verify-expected.json"
    code = cli.main(["verify", "--quick", "--format", "json", "--check-expected", str(expected),
                     "--results", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert {c["spec"] for c in result["specs"]} == set(verify.QUICK)
    assert set(json.loads(expected.read_text())["verdicts"]) == set(verify.QUICK)
    # the check itself: one verdict changed in a copy of the expectation is reported, exit 1
    doc = json.loads(expected.read_text())
    spec, items = next(iter(doc["verdicts"].items()))
    item = next(iter(items))
    items[item] = "holds" if items[item] != "holds" else "fails"
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(doc))
    stores = [str(p) for p in sorted((tmp_path / "verify").glob("*.zarr"))]  # read back, not run again
    assert cli.main(["verify", *stores, "--check-expected", str(changed)]) == 1
    assert f"verdict moved: {spec}: {item}: expected" in capsys.readouterr().err
