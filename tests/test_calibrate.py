"""The calibration script runs a spec per candidate value and prints, per candidate, the
distance to the spec's published values: the mean |relative difference| of our means,
recomputed here from the stores it kept."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

from schedsweep import pipeline

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks import calibrate  # noqa: E402


def test_calibration_prints_the_distance_of_each_candidate(tmp_path, capsys):
    spec = ROOT / "jobs" / "mm1.toml"  # carries the closed form W = 1/(mu - lambda) as published values
    keep = tmp_path / "stores"
    assert calibrate.main([str(spec), "--vary", "params.warmup=10,1000", "--replications", "6",
                           "--workers", "0", "--keep", str(keep)]) == 0
    out = capsys.readouterr().out
    printed = {m.group(1): float(m.group(2)) / 100
               for m in re.finditer(r"params.warmup = (\d+)\s+distance ([\d.]+)%", out)}
    assert set(printed) == {"10", "1000"}
    for value, shown in printed.items():
        (store,) = keep.glob(f"*warmup-{value}.zarr")
        ds = pipeline.open_store(store)
        mean = pipeline.summary(ds)["mean_time_in_system"].sel(stat="mean").values
        exact = 1.0 / (1.0 - ds["arrival_rate"].values)
        assert abs(np.mean(np.abs(mean / exact - 1)) - shown) < 0.0006  # printed to 0.1%
    assert out.count("<- nearest") == 1 and "claims holding 1/1" in out


def test_two_specs_fixed_overrides_and_absolute_errors(tmp_path, capsys):
    """Several specs give one distance over all their published values; ``--set`` applies to every
    run; ``--absolute METRIC=SCALE`` makes that metric's error |ours - published| / SCALE."""
    text = (ROOT / "jobs" / "mm1.toml").read_text()
    specs = []
    for name, rates in (("mm1a", "[0.1, 0.5]"), ("mm1b", "[0.3, 0.8]")):
        body = text.replace('name = "mm1"', f'name = "{name}"')
        body = body.replace("arrival_rate = [0.1, 0.3, 0.5, 0.7, 0.8, 0.9]", f"arrival_rate = {rates}")
        # keep only the published values of this spec's rates
        head, *values = body.split("[[reference.value]]")
        kept = [v for v in values if any(f"arrival_rate = {r} " in v for r in rates.strip("[]").split(", "))]
        (tmp_path / f"{name}.toml").write_text(head + "".join("[[reference.value]]" + v for v in kept))
        specs.append(str(tmp_path / f"{name}.toml"))
    keep = tmp_path / "stores"
    scale = 0.5
    assert calibrate.main(specs + ["--set", "params.customers=2000", "--set", "params.warmup=100",
                                   "--absolute", f"mean_time_in_system={scale}", "--replications", "5",
                                   "--workers", "0", "--keep", str(keep)]) == 0
    out = capsys.readouterr().out
    shown = float(re.search(r"as specified\s+distance ([\d.]+)%", out).group(1)) / 100
    errors = []
    for store in sorted(keep.glob("*.zarr")):
        ds = pipeline.open_store(store)
        assert "params.customers=2000" in list(ds.attrs.get("overrides", []))
        mean = pipeline.summary(ds)["mean_time_in_system"].sel(stat="mean").values
        exact = 1.0 / (1.0 - ds["arrival_rate"].values)
        errors += list(np.abs(mean - exact) / scale)
    assert len(errors) == 4 and len(list(keep.glob("*.zarr"))) == 2
    assert abs(np.mean(errors) - shown) < 0.0006
