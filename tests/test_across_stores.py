"""Questions across stores: several stores of one workload along a ``store`` dimension, paired
by replication when they share their seeds, Welch's interval otherwise, each against a
hand-computed reference; other model code or units refused unless --allow-mixed."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats as st

from schedsweep import workloads
from schedsweep.pipeline import cli
from schedsweep.pipeline.read import across
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.base.errors import QueryError
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.spec.sweep import parse

N = 12


def _store(path: Path, seed: int, values: np.ndarray, params: str = "") -> Path:
    """An mm1 store of 2 cells whose mean_wait in cell k, replication r is ``values[k, r]``
    (``params``: lines of its [params] table)."""
    spec = parse(f'name = "{path.stem}"\nworkload = "mm1"\nreplications = {N}\nseed = {seed}\n'
                 f"[params]\n{params}\n[sweep]\narrival_rate = [0.3, 0.5]\n")
    module = workloads.get("mm1")
    store_mod.create(path, spec, module, 4, provenance(spec, module))
    writer = store_mod.Writer(path, spec, module)
    for k in range(2):
        out = {"mean_wait": values[k], "mean_time_in_system": values[k] + 1.0,
               "time_in_system_quantiles": np.ones((N, 3)), "reason": np.zeros(N, np.int8)}
        writer.write_batch((k,), 0, writer.seeds((k,), 0, N), out, {}, 0.0)
    writer.flush()
    return path


@pytest.fixture
def values():
    rng = np.random.default_rng(7)
    a = rng.gamma(3.0, 1.0, (2, N))
    return a, a + 0.5 + rng.normal(0, 0.2, (2, N))  # b: a shifted, with little extra noise


# table --format json writes 10 significant digits: the references are compared at 1e-9
def _json_table(capsys, *argv: str) -> tuple[list[dict], str]:
    capsys.readouterr()
    assert cli.main(["table", *argv, "--metric", "mean_wait", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_open_tree_keeps_each_store_and_align_puts_them_along_store(tmp_path, values):
    a, b = values
    (tmp_path / "sub").mkdir()
    _store(tmp_path / "a.zarr", 1, a)
    _store(tmp_path / "sub" / "b.zarr", 1, b)
    tree = across.open_tree([tmp_path])
    assert sorted(tree.children) == ["a.zarr", "sub|b.zarr"]
    assert tree["a.zarr"].attrs["name"] == "a" and tree["sub|b.zarr"].attrs["seed"] == 1
    ds, diffs = across.align(tree)
    assert diffs == [] and list(ds["store"].values) == ["a.zarr", "sub|b.zarr"]
    np.testing.assert_array_equal(ds["mean_wait"].sel(store="a.zarr").values, a)
    np.testing.assert_array_equal(ds["mean_wait"].sel(store="sub|b.zarr").values, b)
    assert across.shares_seeds(ds)


def test_a_paired_difference_across_stores_that_share_their_seeds(tmp_path, values, capsys):
    a, b = values
    rows, err = _json_table(capsys, str(_store(tmp_path / "a.zarr", 1, a)), str(_store(tmp_path / "b.zarr", 1, b)),
                            "--paired", "store=a.zarr")
    assert "paired by replication across stores" in err
    for k, rate in enumerate((0.3, 0.5)):
        d = b[k] - a[k]
        half = st.t.ppf(0.975, N - 1) * d.std(ddof=1) / math.sqrt(N)
        row = next(r for r in rows if r["store"] == "b.zarr" and r["arrival_rate"] == rate)
        assert row["mean"] == pytest.approx(d.mean(), rel=1e-9) and row["half_width"] == pytest.approx(half, rel=1e-9)


def test_stores_of_other_seeds_get_welchs_interval(tmp_path, values, capsys):
    a, b = values
    rows, err = _json_table(capsys, str(_store(tmp_path / "a.zarr", 1, a)), str(_store(tmp_path / "b.zarr", 2, b)),
                            "--paired", "store=a.zarr")
    assert "Welch's unpaired interval" in err
    for k, rate in enumerate((0.3, 0.5)):
        vx, vy = b[k].var(ddof=1) / N, a[k].var(ddof=1) / N
        dof = (vx + vy) ** 2 / (vx ** 2 / (N - 1) + vy ** 2 / (N - 1))
        half = st.t.ppf(0.975, dof) * math.sqrt(vx + vy)
        row = next(r for r in rows if r["store"] == "b.zarr" and r["arrival_rate"] == rate)
        assert row["mean"] == pytest.approx(b[k].mean() - a[k].mean(), rel=1e-9)
        assert row["half_width"] == pytest.approx(half, rel=1e-9)
        paired = st.t.ppf(0.975, N - 1) * (b[k] - a[k]).std(ddof=1) / math.sqrt(N)
        assert row["half_width"] > 2 * paired  # what pairing would have claimed, wrongly, is much narrower


def test_a_plain_table_over_a_folder_shows_each_store(tmp_path, values, capsys):
    a, b = values
    _store(tmp_path / "a.zarr", 1, a)
    _store(tmp_path / "b.zarr", 1, b)
    rows, _ = _json_table(capsys, str(tmp_path))
    got = {(r["store"], r["arrival_rate"]): r["mean"] for r in rows}
    assert got == pytest.approx({("a.zarr", 0.3): a[0].mean(), ("a.zarr", 0.5): a[1].mean(),
                                 ("b.zarr", 0.3): b[0].mean(), ("b.zarr", 0.5): b[1].mean()})


def _edit_root(path: Path, edit) -> None:
    meta = json.loads((path / "zarr.json").read_text())
    edit(meta)
    (path / "zarr.json").write_text(json.dumps(meta))


def recode(path: Path, digit: str) -> None:
    """Mark a store as made by other model code: its code hash all ``digit``."""

    def edit(meta):
        code = json.loads(meta["attributes"]["code"][len("json:"):])
        code["hash"] = digit * 64
        meta["attributes"]["code"] = "json:" + json.dumps(code)

    _edit_root(path, edit)


def test_other_code_or_units_are_refused_in_one_line_unless_allowed(tmp_path, values, capsys):
    a, b = values
    first = _store(tmp_path / "a.zarr", 1, a)
    other = _store(tmp_path / "b.zarr", 1, b)

    recode(other, "0")
    capsys.readouterr()
    assert cli.main(["table", str(first), str(other)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "b.zarr was made by other model code than a.zarr" in err[0] and "--allow-mixed" in err[0]
    assert cli.main(["table", str(first), str(other), "--allow-mixed", "--metric", "mean_wait"]) == 0
    assert "mixed: b.zarr was made by other model code" in capsys.readouterr().err
    units = tmp_path / "u.zarr"
    shutil.copytree(first, units)
    meta = json.loads((units / "mean_wait" / "zarr.json").read_text())
    meta["attributes"]["units"] = "s"
    (units / "mean_wait" / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(QueryError, match=r"mean_wait is in 's' in u.zarr, in 'model_time_unit' in a.zarr"):
        across.align(across.open_tree([first, units]))
    assert isinstance(across.align(across.open_tree([first, units]), allow_mixed=True)[0], xr.Dataset)
