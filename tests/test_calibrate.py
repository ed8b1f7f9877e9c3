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
