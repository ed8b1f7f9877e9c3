"""Stores written before checksums (format 1) are upgraded, never trusted blindly:
``schedsweep upgrade`` rewrites one in the checksummed format with every value unchanged;
until then ``check`` checks status against the data and exits 1 (it cannot verify), and a
metric's chunk lost where status says ok is refused by every reader in one line, as in
format 2; upgrading such a store writes the lost replications as not run, and the next run
reruns them to the undamaged values."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import integrity, zarrstore as store_mod

GOLDEN = Path(__file__).parent / "golden"
KEEP = ["mean_wait", "mean_time_in_system", "time_in_system_quantiles", "status", "reason", "seed"]


def _old(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    store = folder / "old.zarr"
    shutil.copytree(GOLDEN / "store-format1", store)  # made by the code before checksums (aeae770)
    return store


def _values(store: Path) -> xr.Dataset:
    ds = pipeline.open_store(store)[KEEP + ["cell_seconds"]].load()
    ds.attrs = {}
    return ds


def test_upgrade_rewrites_a_format_1_store_checksummed_with_its_values_unchanged(tmp_path, capsys):
    store = _old(tmp_path)
    before = _values(store)
    attrs = pipeline.open_store(store).attrs
    capsys.readouterr()
    assert cli.main(["upgrade", str(store)]) == 0
    assert capsys.readouterr().out.strip() == f"{store}: upgraded to the checksummed store format, values unchanged"
    report = integrity.scan(store)
    assert report.store_format == store_mod.STORE_FORMAT and report.clean and report.chunks > 0
    xr.testing.assert_identical(before, _values(store))
    after = pipeline.open_store(store).attrs
    assert {k: v for k, v in after.items() if k != "store_format"} == \
        {k: v for k, v in attrs.items() if k != "store_format"}
    assert cli.main(["check", str(store)]) == 0
    assert not list(tmp_path.glob(".old.zarr*")) and not (tmp_path / "old.zarr.lock").exists()
    capsys.readouterr()
    assert cli.main(["upgrade", str(store)]) == 0
    assert "already in the checksummed store format" in capsys.readouterr().out


def test_a_format_1_store_missing_a_chunk_is_refused_then_upgraded_and_rerun(tmp_path, capsys):
    clean = _values(_old(tmp_path / "a"))
    store = _old(tmp_path / "b")
    (store / "mean_wait" / "c" / "1" / "0").unlink()  # cell arrival_rate=0.6, replications 0-2
    capsys.readouterr()
    assert cli.main(["check", str(store)]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED mean_wait: missing where status says the replications ran: arrival_rate=0.6, " \
           "replications 0-2" in out and "run `schedsweep upgrade" in out, out
    with pytest.raises(store_mod.StoreError, match="is damaged: mean_wait, arrival_rate=0.6, replications 0-2"):
        pipeline.open_store(store)
    assert cli.main(["table", str(store)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is damaged: mean_wait, arrival_rate=0.6, replications 0-2" in err[0], err
    assert cli.main(["upgrade", str(store)]) == 0
    assert "3 replications of damaged chunks written as not run" in capsys.readouterr().out
    status = store_mod.open_group(store)["status"][...]
    assert (status[1, :3] == store_mod.NOT_RUN).all() and (status[1, 3:] == store_mod.OK).all()
    assert integrity.scan(store).clean
    spec = tmp_path / "old.toml"
    spec.write_text((GOLDEN / "store-format1.toml").read_text())
    pipeline.run(spec, store, workers=0, batch_size=3, progress=False, allow_changed_code=True)
    xr.testing.assert_identical(clean[KEEP], _values(store)[KEEP])  # cell seconds count the rerun's time too
