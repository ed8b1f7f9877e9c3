"""Sweeps that grow: more replications and new sweep values run in place and give the
store a fresh run of the larger spec would give, bit for bit, also after a kill in the
middle of the growth; any other change is refused; --set overrides are checked like the
file and recorded."""
from __future__ import annotations

from pathlib import Path

import pytest
import xarray as xr

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import zarrstore as store_mod
from tests.faultinject import killed_at

SPEC = """
name = "grow"
workload = "mm1"
replications = {R}
seed = 9
independent = ["service_rate"]
[params]
customers = 300
[sweep]
arrival_rate = {RATES}
[[zip]]
service_rate = {MU}
warmup = {WARMUP}
"""
DATA = ["mean_wait", "mean_time_in_system", "status", "reason", "seed"]


def _spec(write_spec, r: int, rates: list, mu=(1.0, 2.0), warmup=(10, 30), name: str = "s.toml") -> Path:
    return write_spec(SPEC.replace("{R}", str(r)).replace("{RATES}", str(rates))
                      .replace("{MU}", str(list(mu))).replace("{WARMUP}", str(list(warmup))), name)


def _data(path: Path) -> xr.Dataset:
    ds = pipeline.open_store(path)[DATA].load()
    ds.attrs = {}
    return ds


def _run(spec: Path, store: Path, **kw) -> Path:
    return pipeline.run(spec, store, workers=0, progress=False, **kw)


def test_more_replications_and_new_values_equal_a_fresh_run(write_spec, tmp_path):
    big = _spec(write_spec, 100, [0.3, 0.5, 0.7], mu=(1.0, 2.0, 4.0), warmup=(10, 30, 50), name="big.toml")
    ref = _data(_run(big, tmp_path / "fresh.zarr"))
    store = tmp_path / "grown.zarr"
    _run(_spec(write_spec, 30, [0.3, 0.5], name="small.toml"), store)
    _run(_spec(write_spec, 100, [0.3, 0.5], name="more.toml"), store)         # replications 30 -> 100
    _run(_spec(write_spec, 100, [0.3, 0.5, 0.7], name="rate.toml"), store)    # a [sweep] value added
    grown = _data(_run(big, store))                                           # a [[zip]] group extended
    xr.testing.assert_identical(ref, grown)
    assert len(pipeline.open_store(store).attrs["grown"]) == 3


def test_a_kill_in_the_middle_of_the_growth_resumes_to_the_same_store(write_spec, tmp_path):
    big = _spec(write_spec, 100, [0.3, 0.5, 0.7], name="big.toml")
    ref = _data(_run(big, tmp_path / "fresh.zarr"))
    small = _spec(write_spec, 30, [0.3, 0.5], name="small.toml")
    # Growth's fault points: target recorded (1), after each of the store's arrays (2..), the
    # new identity; the first batch's follow. Kill at several of them, each on a fresh copy.
    for at in (1, 2, 5, 9, 13):
        store = tmp_path / f"k{at}.zarr"
        _run(small, store, batch_size=10)
        assert killed_at(at, lambda: _run(big, store, batch_size=10))
        # the smaller spec no longer fits a store half grown to the bigger one
        if at < 13:
            with pytest.raises(store_mod.StoreError, match="interrupted"):
                _run(small, store)
        xr.testing.assert_identical(ref, _data(_run(big, store, batch_size=10)))


def test_other_changes_and_fewer_replications_with_them_are_refused(write_spec, tmp_path, capsys):
    store = tmp_path / "s.zarr"
    _run(_spec(write_spec, 6, [0.3, 0.5]), store)
    cases = [(_spec(write_spec, 4, [0.3, 0.5, 0.7], name="fewer.toml"), "would drop some"),
             (_spec(write_spec, 6, [0.5, 0.3], name="order.toml"), "differs in: dims"),
             (_spec(write_spec, 6, [0.3, 0.6], name="value.toml"), "differs in: dims"),
             (_spec(write_spec, 6, [0.3, 0.5, 0.7], warmup=(10, 31), name="zip.toml"), "differs in: dims")]
    capsys.readouterr()
    for path, needle in cases:
        assert cli.main(["run", str(path), "--store", str(store), "--workers", "0"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (path.name, err)
    assert pipeline.open_store(store).sizes["replication"] == 6


def test_set_overrides_are_checked_applied_and_recorded(write_spec, tmp_path, capsys):
    spec = _spec(write_spec, 4, [0.3, 0.5])
    store = tmp_path / "o.zarr"
    assert cli.main(["run", str(spec), "--store", str(store), "--workers", "0", "--no-progress",
                     "--set", "replications=6", "--set", "sweep.arrival_rate=[0.2, 0.4, 0.6]",
                     "--set", "params.customers=200"]) == 0
    ds = pipeline.open_store(store)
    assert ds.sizes["replication"] == 6 and list(ds["arrival_rate"].values) == [0.2, 0.4, 0.6]
    assert ds.attrs["params"]["customers"] == 200
    assert ds.attrs["overrides"] == ["replications=6", "sweep.arrival_rate=[0.2, 0.4, 0.6]", "params.customers=200"]
    # the same as a file saying it
    same = _spec(write_spec, 6, [0.2, 0.4, 0.6], name="same.toml")
    same.write_text(same.read_text().replace("customers = 300", "customers = 200"))
    xr.testing.assert_identical(_data(store), _data(_run(same, tmp_path / "f.zarr")))
    bad = [("replications", "expected KEY=VALUE"), ("replications=lots", "not a TOML value"),
           ("params.customers=-5", "customers"), ("params.nope=1", "nope"), ("sweep.arrival_rate=[]", "empty"),
           ("colour=1", "not a key that can be set"), ("zip.warmup=[1]", "not a key that can be set"),
           ("replications=0", "positive"), ("params.arrival_rate=0.5", "arrival_rate"),
           ("name.x=1", "not a table")]
    capsys.readouterr()
    for item, needle in bad:
        assert cli.main(["run", str(spec), "--store", str(tmp_path / "bad.zarr"), "--workers", "0",
                         "--set", item]) == 2, item
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (item, err)
    assert not (tmp_path / "bad.zarr").exists()


def test_a_store_grown_by_set_resumes_from_its_own_path_after_a_kill(write_spec, tmp_path, capsys):
    """`run STORE --set replications=…` grows a store; the store then holds that spec, so
    `run STORE` resumes it, also after a kill in the middle of the growth's batches."""
    ref = _data(_run(_spec(write_spec, 12, [0.3, 0.5], name="twelve.toml"), tmp_path / "fresh.zarr", batch_size=2))
    store = tmp_path / "s.zarr"
    small = _spec(write_spec, 4, [0.3, 0.5])
    argv = ["--workers", "0", "--batch-size", "2", "--no-progress"]
    assert cli.main(["run", str(small), "--store", str(store), *argv]) == 0
    assert cli.main(["run", str(store), "--set", "replications=8", *argv]) == 0
    # grown again, killed after its first batches: the same `run STORE` resumes it
    assert killed_at(20, lambda: cli.main(["run", str(store), "--set", "replications=12", *argv]))
    capsys.readouterr()
    assert cli.main(["run", str(store), *argv]) == 0
    err = capsys.readouterr().err
    assert "resuming" in err and "would drop some" not in err, err
    xr.testing.assert_identical(ref, _data(store))
    capsys.readouterr()
    assert cli.main(["show", str(store)]) == 0
    out = capsys.readouterr().out
    assert "overrides:   --set replications=12" in out
    grown = [line for line in out.splitlines() if "replication " in line and " to " in line]
    assert grown[0].startswith("grown:       replication 4 to 8 (--set replications=8, ")
    assert grown[1].startswith("             replication 8 to 12 (--set replications=12, "), grown
    assert "spec: (as it is now: the text below with --set replications=12)" in out


def test_a_spec_asking_for_fewer_replications_than_its_store_holds_finds_it_complete(write_spec, tmp_path,
                                                                                    capsys):
    store = tmp_path / "s.zarr"
    big, small = _spec(write_spec, 10, [0.3, 0.5], name="big.toml"), _spec(write_spec, 4, [0.3, 0.5])
    _run(big, store, batch_size=2)
    ref = _data(store)
    argv = ["run", str(small), "--store", str(store), "--workers", "0", "--no-progress"]
    capsys.readouterr()
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "holds 10 replications per cell, more than the spec's 4" in err, err
    xr.testing.assert_identical(ref, _data(store))
    # the first cell's replications made not run (a damaged chunk): the small spec runs its 4 alone
    from schedsweep.pipeline.spec.sweep import load, workload_of

    spec = load(big)
    writer = store_mod.Writer(store, spec, workload_of(spec))
    writer.compact(drop=[((0, 0), 0, 10)])  # the whole inner chunk: replications 0-9 of the first cell
    assert cli.main(argv) == 0
    status = store_mod.open_group(store)["status"][...]
    assert (status[0, 0, :4] == store_mod.OK).all() and (status[0, 0, 4:] == store_mod.NOT_RUN).all()
    status[0, 0, 4:] = store_mod.OK
    assert (status == store_mod.OK).all()
    xr.testing.assert_identical(ref.isel(replication=slice(0, 4)), _data(store).isel(replication=slice(0, 4)))
