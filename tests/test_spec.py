"""Spec validation: every bad spec gives a one-line error naming file and key, exit 2."""
from __future__ import annotations

import subprocess
import sys

import pytest

from schedsweep.pipeline import cli
from schedsweep.pipeline.spec import sweep as spec_mod

GOOD = """
name = "t"
workload = "mm1"
replications = 4
seed = 1
[params]
customers = 2000
warmup = 100
[sweep]
arrival_rate = [0.3, 0.5]
"""

BAD = {
    "unknown workload": (GOOD.replace('"mm1"', '"nosuch"'), ["workload", "nosuch", "available", "mm1"]),
    "unknown parameter": (GOOD.replace("warmup = 100", "wormup = 100"), ["wormup", "unknown parameter", "arrival_rate"]),
    "wrong type": (GOOD.replace("customers = 2000", 'customers = "many"'), ["customers", "'many'", "an integer"]),
    "out of range": (GOOD.replace("customers = 2000", "customers = 0"), ["customers", "0", ">= 1"]),
    "empty sweep list": (GOOD.replace("[0.3, 0.5]", "[]"), ["arrival_rate", "empty list"]),
    "duplicate key": (GOOD + "\n[[zip]]\ncustomers = [10, 20]\nservice_rate = [1.0, 2.0]\n", ["duplicate key", "customers"]),
    "toml duplicate": (GOOD.replace("warmup = 100", "warmup = 100\nwarmup = 200"), ["not valid TOML"]),
    "not toml": ("this is { not toml", ["not valid TOML"]),
    "missing replications": (GOOD.replace("replications = 4", ""), ["replications", "missing"]),
    "unknown top key": ("replicatoins = 3\n" + GOOD, ["replicatoins", "allowed keys"]),
    "zip unequal": (GOOD.replace("warmup = 100", "") + "\n[[zip]]\nservice_rate = [1.0, 2.0]\nwarmup = [1]\n",
                    ["equal lengths"]),
    "cross-parameter": (GOOD.replace("warmup = 100", "warmup = 5000"), ["warmup", "customers"]),
    "independent not a dim": (GOOD.replace('seed = 1', 'seed = 1\nindependent = ["nodes"]'), ["independent", "nodes"]),
    "bad run hint": (GOOD + "\n[run]\nbatch_seconds = -1\n", ["batch_seconds", "> 0"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_spec_one_line_exit_2(case, write_spec, capsys):
    text, words = BAD[case]
    path = write_spec(text)
    code = cli.main(["run", str(path), "--workers", "0", "--store", str(path.parent / "s.zarr")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("schedsweep: error: ") and str(path) in err
    for word in words:
        assert word in err, (word, err)
    assert not (path.parent / "s.zarr").exists()


def test_good_spec_expands_cells(write_spec):
    text = GOOD.replace("warmup = 100", "") + "\n[[zip]]\nservice_rate = [1.0, 2.0]\nwarmup = [10, 20]\n"
    spec = spec_mod.load(write_spec(text))
    assert spec.shape == (2, 2)
    cells = spec.cells()
    assert [c[0] for c in cells] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert cells[3][1]["arrival_rate"] == 0.5 and cells[3][1]["service_rate"] == 2.0 and cells[3][1]["warmup"] == 20
    assert cells[0][1]["customers"] == 2000


def test_missing_file_and_subprocess_has_no_traceback(tmp_path):
    out = subprocess.run([sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(tmp_path / "none.toml")],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "no such file" in out.stderr


def test_zip_members_other_than_the_first_may_repeat(write_spec):
    text = GOOD.replace("warmup = 100", "") + "\n[[zip]]\nservice_rate = [1.0, 2.0]\nwarmup = [10, 10]\n"
    assert spec_mod.load(write_spec(text)).shape == (2, 2)
    bad = GOOD.replace("warmup = 100", "") + "\n[[zip]]\nservice_rate = [1.0, 1.0]\nwarmup = [10, 20]\n"
    with pytest.raises(spec_mod.SpecError, match="repeated values"):
        spec_mod.load(write_spec(bad))
