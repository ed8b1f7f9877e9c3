"""Calibration is the model's, not a spec's: each calibrated value is its workload's default, the
workload states where it comes from, ``benchmarks/calibration.md`` states the same value, and every
shipped spec of the paper runs it -- or varies it, or says in its description why it does not."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from schedsweep.workloads import cyclic, slot_selection
from schedsweep.workloads._contract import defaults

ROOT = Path(__file__).resolve().parents[1]
JOBS = ROOT / "jobs"
CALIBRATION = (ROOT / "benchmarks" / "calibration.md").read_text()

#: The calibrated values as benchmarks/calibration.md chose them, and the values before.
CALIBRATED = {
    "slot_selection": {"price_exponent": 1.1, "random_window_retries": 10},
    "cyclic": {"shared_alternatives": True, "max_alternatives": 13, "job_slots_min": 2, "job_slots_max": 8,
               "job_runtime_min": 60.0, "job_runtime_max": 160.0, "price_margin_min": 0.2,
               "price_exponent": 1.1},
}
BEFORE = {"slot_selection": {"price_exponent": 1.0, "random_window_retries": 0}}
MODULES = {"slot_selection": slot_selection, "cyclic": cyclic}


def test_slot_selection_defaults_are_the_calibrated_values_and_say_so():
    declared = defaults(slot_selection.PARAMS)
    described = {p.name: p.description for p in slot_selection.PARAMS}
    # calibration.md's choice, in its own words
    assert "**Chosen:** γ = 1.1 and 10 retries." in CALIBRATION
    for name, value in CALIBRATED["slot_selection"].items():
        assert declared[name] == value, name
        assert slot_selection.UNCALIBRATED[name] == BEFORE["slot_selection"][name]
        # provenance in the description `schedsweep workloads slot_selection` shows: values before, distance
        shown = re.search(r"before: ([\d.]+);", described[name]).group(1)
        assert float(shown) == BEFORE["slot_selection"][name], name
        assert "12.1% -> 6.1%" in described[name] and "calibration.md" in described[name]
    doc = " ".join(slot_selection.__doc__.split())
    assert "``price_exponent`` 1.0 -> 1.1" in doc and "``random_window_retries`` 0 -> 10" in doc
    # the distances the docstring quotes are the ones calibration.md reports
    assert "Before: γ = 1.0, 0 retries, distance 12.1% at 1000 replications." in CALIBRATION
    assert "After: 6.1% at 1000 replications" in CALIBRATION
    for command in slot_selection.CALIBRATION_COMMANDS:
        assert command.startswith("python benchmarks/calibrate.py jobs/slot-selection.toml")


def _specs() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(JOBS.glob("*.toml")):
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        if data.get("workload") in CALIBRATED:
            out.append((path.name, data))
    return out


@pytest.mark.parametrize("name,spec", _specs(), ids=[n for n, _ in _specs()])
def test_every_spec_of_the_paper_runs_the_calibrated_setting_or_says_why(name, spec):
    workload = spec["workload"]
    declared = defaults(MODULES[workload].PARAMS)
    params = {**declared, **spec.get("params", {})}
    varied = dict(spec.get("sweep", {}))
    for z in spec.get("zip", []):
        varied.update(z)
    words = " ".join(spec.get("description", "").split())
    for key, value in CALIBRATED[workload].items():
        assert declared[key] == value, f"{workload}.{key}: the calibrated value is not the default"
        if key in varied:
            # a sweep of it includes the calibrated value, and the description names what it varies
            assert value in varied[key] and key in words, f"{name}: {key} = {varied[key]}"
        elif params[key] != value:
            assert key in words and "calibrat" in words, f"{name}: {key} = {params[key]} without a reason"


def test_the_only_departures_are_the_declared_ones():
    """Guard for the test above: a spec departs from a calibrated value only where it says so."""
    departing = set()
    for name, spec in _specs():
        calibrated = CALIBRATED[spec["workload"]]
        values = {**spec.get("params", {}), **spec.get("sweep", {})}
        for z in spec.get("zip", []):
            values.update(z)
        for key, value in values.items():
            if key in calibrated and value not in (calibrated[key], [calibrated[key]]):
                departing.add((name, key))
    # slot-selection-price sweeps gamma (an extension); cyclic-nodes takes n_i up to 6 at its 6-node point
    assert departing == {("slot-selection-price.toml", "price_exponent"), ("cyclic-nodes.toml", "job_slots_max")}
