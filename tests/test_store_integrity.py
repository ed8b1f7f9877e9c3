"""A store you can stake a paper on: damage injected into data, status,
seed and shard index (bytes flipped, files truncated or deleted) is found by ``check`` and
refused by every reader in one line; a run on the damaged store reruns what it covers and
ends equal to the undamaged store; an ok replication whose metrics are all NaN is not
damage; a chunk-1 sweep of 10 cells x 10,000 replications writes a bounded number of
files; a store written before checksums (format 1) still opens, is never called clean by
``check``, and is upgraded by a run that grows it (tests/test_store_upgrade.py: the rest)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import damaged_store
from damaged_store import KEEP, flip as _flip, plain as _plain, shard as _shard
from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import integrity, zarrstore as store_mod
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.spec.sweep import parse, workload_of

GOLDEN = Path(__file__).parent / "golden"
BATCH = 8
SPEC = damaged_store.SPEC.format(name="integrity", seed=11)


def _run(spec: Path, store: Path) -> Path:
    return damaged_store.run(spec, store, BATCH)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return damaged_store.reference(tmp_path_factory.mktemp("ref"), "integrity", 11, BATCH)


# (what is done to the store, the variable the damage is reported in, the words of the problem)
DAMAGES = {
    "data byte flipped": (lambda s: _flip(_shard(s, "mean_wait"), 5), "mean_wait", "checksum mismatch"),
    "status byte flipped": (lambda s: _flip(_shard(s, "status"), 5), "status", "checksum mismatch"),
    "seed byte flipped": (lambda s: _flip(_shard(s, "seed"), 5), "seed", "checksum mismatch"),
    "shard index flipped": (lambda s: _flip(_shard(s, "reason"), -6), "reason", "index checksum mismatch"),
    "shard truncated": (lambda s: _shard(s, "time_in_system_quantiles").write_bytes(
        _shard(s, "time_in_system_quantiles").read_bytes()[:-9]), "time_in_system_quantiles", "unreadable"),
    "data shard deleted": (lambda s: _shard(s, "mean_time_in_system").unlink(), "mean_time_in_system",
                           "missing where status says the replications ran"),
    "status shard deleted": (lambda s: _shard(s, "status").unlink(), "status", "status lost"),
}


@pytest.mark.parametrize("kind", DAMAGES)
def test_damage_is_found_refused_and_repaired_by_a_run(reference, tmp_path, capsys, kind):
    spec, ref = reference
    store = tmp_path / "s.zarr"
    shutil.copytree(ref, store)
    damage, variable, words = DAMAGES[kind]
    damage(store)
    capsys.readouterr()
    assert cli.main(["check", str(store)]) == 1
    out = capsys.readouterr().out
    where = "every cell using these seeds" if variable == "seed" else "arrival_rate="
    assert f"DAMAGED {variable}: " in out and words in out and where in out, out
    if variable != "seed":  # a seed is damage to report, but the next run rewrites it from the spec
        with pytest.raises(store_mod.StoreError, match=f"is damaged: {variable}, arrival_rate="):
            pipeline.open_store(store)
    xr.testing.assert_identical(_plain(ref), _plain(_run(spec, store)))
    assert integrity.scan(store).clean


def test_every_reader_refuses_a_damaged_store_in_one_line(reference, tmp_path, capsys):
    spec, ref = reference
    store = tmp_path / "s.zarr"
    shutil.copytree(ref, store)
    _flip(_shard(store, "mean_wait"), 5)
    commands = [["table", str(store), "--metric", "mean_wait"], ["plot", str(store), "--metric", "mean_wait", "--x", "arrival_rate",
                                                                 "-o", str(tmp_path / "p.png")],
                ["report", str(store), "-o", str(tmp_path / "r.html")],
                ["export", str(store), "--to", "csv", "-o", str(tmp_path / "e.csv")],
                ["merge", str(store), str(ref), "-o", str(tmp_path / "m.zarr")]]
    for argv in commands:
        capsys.readouterr()
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{store} is damaged: mean_wait, arrival_rate=0.3, replications 0-7" in err[0], err
    assert not (tmp_path / "e.csv").exists() and not (tmp_path / "m.zarr").exists()
    capsys.readouterr()
    assert cli.main(["show", str(store)]) == 0
    assert "DAMAGED:     mean_wait: checksum mismatch: arrival_rate=0.3, replications 0-7" in capsys.readouterr().out


def _writer(path: Path, replications: int, cells: int, chunk: int):
    rates = ", ".join(str(0.1 + 0.05 * k) for k in range(cells))
    spec = parse(SPEC.replace("replications = 8", f"replications = {replications}")
                 .replace("[0.3, 0.6]", f"[{rates}]"))
    module = workload_of(spec)
    store_mod.create(path, spec, module, chunk, provenance(spec, module))
    return store_mod.Writer(path, spec, module), spec


def _outputs(n: int, value: float, reason: int = 0) -> dict[str, np.ndarray]:
    return {"mean_wait": np.full(n, value), "mean_time_in_system": np.full(n, value),
            "time_in_system_quantiles": np.full((n, 3), value), "reason": np.full(n, reason, np.int8)}


def test_an_ok_replication_of_only_nan_is_not_damage_and_a_lost_chunk_is(tmp_path):
    writer, spec = _writer(tmp_path / "s.zarr", 600, 2, 1)  # inner chunks of 256 replications
    seeds = writer.seeds((0,), 0, 300)
    writer.write_batch((0,), 0, seeds[:256], _outputs(256, np.nan), {}, 0.0)  # ok, every metric NaN
    writer.write_batch((0,), 256, seeds[256:300], _outputs(44, 1.5), {}, 0.0)
    writer.flush()
    report = integrity.scan(tmp_path / "s.zarr")
    assert report.clean, report.lines()
    assert (pipeline.open_store(tmp_path / "s.zarr")["status"].values[0, :300] == store_mod.OK).all()
    # the second inner chunk of mean_wait rewritten without it: absent where status says ok
    files = store_mod._file_handlers(tmp_path / "s.zarr", [writer.arrays["mean_wait"]])["mean_wait"]
    block, present, _ = files.load((0, 0))
    present[1] = False
    files.write((0, 0), block, present)
    report = integrity.scan(tmp_path / "s.zarr")
    assert [(d.variable, d.blocks) for d in report.damages] == [("mean_wait", (((0,), 256, 512),))]


def test_a_chunk_1_sweep_of_10_cells_and_10000_replications_writes_few_files(tmp_path):
    """A store made for batches of one replication (chunk 1), written in groups of batches."""
    path = tmp_path / "big.zarr"
    writer, spec = _writer(path, 10_000, 10, 1)
    for start in range(0, 10_000, 1000):
        group = [((cell,), r, writer.seeds((cell,), r, r + 50), _outputs(50, r + cell / 16), {}, 0.0)
                 for cell in range(10) for r in range(start, start + 1000, 50)]
        writer.write_batches(group)
    writer.flush()
    files = [p for p in path.rglob("*") if p.is_file()]
    arrays = [p.parent for p in path.rglob("zarr.json") if p.parent != path]
    shards = [p for p in files if p.name != "zarr.json"]
    per_array = {a.name: sum(1 for p in shards if a in p.parents) for a in arrays}
    # 10 cells x 10,000 replications: two shard files per result array, one per coordinate
    assert max(per_array[n] for n in ("mean_wait", "status", "reason", "time_in_system_quantiles")) == 2
    assert max(per_array.values()) <= 2 and len(files) <= 3 * len(arrays) + 1, per_array
    ds = pipeline.open_store(path)
    assert (ds["status"].values == store_mod.OK).all()
    first = np.arange(0, 10_000, 50)[None, :] + np.arange(10)[:, None] / 16  # each batch's value
    assert (ds["mean_wait"].values == np.repeat(first, 50, axis=1)).all()


def test_a_store_written_before_checksums_opens_is_not_called_clean_and_is_upgraded_by_a_grow(tmp_path, capsys):
    store = tmp_path / "old.zarr"
    shutil.copytree(GOLDEN / "store-format1", store)  # made by the code before checksums (aeae770)
    before = pipeline.open_store(store)[KEEP].load()
    assert (before["status"].values == store_mod.OK).all()
    capsys.readouterr()
    assert cli.main(["check", str(store)]) == 1  # nothing damaged that can be seen, but nothing verified
    out = capsys.readouterr().out
    assert "store format 1" in out and f"cannot be verified; run `schedsweep upgrade {store}`" in out, out
    spec = tmp_path / "old.toml"
    spec.write_text((GOLDEN / "store-format1.toml").read_text().replace("replications = 6", "replications = 9"))
    pipeline.run(spec, store, workers=0, batch_size=3, progress=False, allow_changed_code=True)  # grows it
    assert "upgrading" in capsys.readouterr().err
    after = pipeline.open_store(store)[KEEP].load()
    xr.testing.assert_equal(before, after.isel(replication=slice(0, 6)))  # the old results kept as they were
    assert (after["status"].values == store_mod.OK).all()
    assert integrity.scan(store).store_format == store_mod.STORE_FORMAT and integrity.scan(store).clean
