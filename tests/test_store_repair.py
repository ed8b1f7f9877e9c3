"""Every damaged store is repaired by the same command, also when the damage is where a
run's journal still has batches to copy: a shard whose inner chunk is half compacted and
half in a pending journal, damaged in its data, its index, its status or its seeds
(a byte flipped, the file truncated or deleted), is resumed into a store equal bit for bit
to an undamaged run; damage met while a run writes ends that run with its own exit code
(5), and the same command then repairs it."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import damaged_store
from damaged_store import flip as _flip, plain as _plain, shard as _shard
from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import integrity, journal, zarrstore as store_mod
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.spec.sweep import load, workload_of

BATCH = 2  # 8 replications in batches of 2: one inner chunk of 8 per cell, one shard per array


def _run(spec: Path, store: Path) -> Path:
    return damaged_store.run(spec, store, BATCH)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return damaged_store.reference(tmp_path_factory.mktemp("ref"), "repair", 23, BATCH)


@pytest.fixture(scope="module")
def half_compacted(reference, tmp_path_factory) -> Path:
    """The store a killed run leaves (:func:`_half_compacted`), made once: each test damages
    its own copy."""
    store = tmp_path_factory.mktemp("half") / "s.zarr"
    _half_compacted(*reference, store)
    return store


def _copy(half_compacted: Path, tmp_path: Path) -> Path:
    store = tmp_path / "s.zarr"
    shutil.copytree(half_compacted, store)
    return store


def _batch(ref: xr.Dataset, module, writer, cell: int, start: int, stop: int) -> tuple:
    """The reference's results of one batch, as a run hands them to the Writer."""
    outputs = {m.name: ref[m.name].values[cell, start:stop] for m in module.METRICS}
    outputs["reason"] = ref["reason"].values[cell, start:stop]
    return ((cell,), start, writer.seeds((cell,), start, stop), outputs, {}, 0.0)


def _half_compacted(spec_path: Path, ref_path: Path, store: Path) -> None:
    """A store as a killed run leaves it: replications 0-3 of both cells compacted, 4-5 of
    cell 0 in the journal only: those batches fill half of an inner chunk that holds data."""
    spec = load(spec_path)
    module = workload_of(spec)
    store_mod.create(store, spec, module, BATCH, {**provenance(spec, module), "chunk": BATCH,
                                                  "batch_reps": [BATCH, BATCH]})
    writer = store_mod.Writer(store, spec, module)
    writer._compact_every = float("inf")  # compacted when this test says, not by the clock
    ref = pipeline.open_store(ref_path).load()
    writer.write_batches([_batch(ref, module, writer, c, a, a + BATCH) for c in (0, 1) for a in (0, 2)])
    writer.flush()
    writer.write_batches([_batch(ref, module, writer, 0, 4, 6)])
    entries, torn = journal.read(store / journal.NAME, writer._order)
    assert [(e.cell, e.start, e.n) for e in entries] == [((0,), 4, 2)] and torn == 0


HOW = {
    "data byte flipped": lambda f: _flip(f, 5),  # inside the first inner chunk (cell 0)
    "index byte flipped": lambda f: _flip(f, -6),
    "truncated": lambda f: f.write_bytes(f.read_bytes()[:-9]),
    "deleted": lambda f: f.unlink(),
}
CASES = [(name, how) for name in ("mean_wait", "status", "seed") for how in HOW]


@pytest.mark.parametrize("name,how", CASES, ids=[f"{n}-{h}" for n, h in CASES])
def test_a_damaged_shard_with_a_pending_journal_is_rerun_to_the_undamaged_store(reference, half_compacted, tmp_path,
                                                                                capsys, name, how):
    spec, ref = reference
    store = _copy(half_compacted, tmp_path)
    HOW[how](_shard(store, name))
    capsys.readouterr()
    _run(spec, store)  # the same command as the one that was stopped
    err = capsys.readouterr().err
    if name != "status" or how != "deleted":  # a lost status: those replications simply run again
        assert "damaged" in err, err
    xr.testing.assert_identical(_plain(ref), _plain(store))
    assert integrity.scan(store).clean
    assert not (store / journal.NAME).exists()


def test_damage_met_while_a_run_writes_ends_it_with_exit_5_and_the_same_command_repairs(reference, half_compacted,
                                                                                        tmp_path, capsys,
                                                                                        monkeypatch):
    spec, ref = reference
    store = _copy(half_compacted, tmp_path)
    _run(spec, store)
    store_mod.Writer(store, *_spec_module(spec)).compact(drop=[((0,), 0, 8), ((1,), 0, 8)])  # all not run again
    _half_compacted_again(spec, ref, store)
    monkeypatch.setattr(journal, "COMPACT_SECONDS", float("inf"))  # the run compacts once, at its end
    original, calls = store_mod.Writer.flush, []

    def flush(self) -> None:  # the disk damages the shard while the run's batches wait in its journal
        if sys._getframe(1).f_code.co_name == "run" and not calls:
            calls.append(1)
            _flip(_shard(store, "mean_wait"), 5)
        original(self)

    monkeypatch.setattr(store_mod.Writer, "flush", flush)
    argv = ["run", str(spec), "--store", str(store), "--workers", "0", "--batch-size", str(BATCH), "--no-progress"]
    capsys.readouterr()
    assert cli.main(argv) == cli.EXIT_DAMAGED
    err = capsys.readouterr().err.strip().splitlines()
    assert calls and any(line.startswith("damaged: mean_wait: inner chunk checksum mismatch: arrival_rate=0.3, "
                                         "replications 0-7") for line in err), err
    assert "marked not run; run the same command again" in err[-1], err
    status = store_mod.open_group(store)["status"][...]
    assert (status[0] == store_mod.NOT_RUN).all() and (status[1] == store_mod.OK).all()
    assert integrity.scan(store).clean  # nothing damaged is left in the store: it is marked not run
    monkeypatch.setattr(store_mod.Writer, "flush", original)
    assert cli.main(argv) == 0
    xr.testing.assert_identical(_plain(ref), _plain(store))


def _spec_module(spec_path: Path) -> tuple:
    spec = load(spec_path)
    return spec, workload_of(spec)


def _half_compacted_again(spec_path: Path, ref_path: Path, store: Path) -> None:
    """Replications 0-3 of both cells compacted again into the store made not run."""
    spec, module = _spec_module(spec_path)
    writer = store_mod.Writer(store, spec, module)
    ref = pipeline.open_store(ref_path).load()
    writer.write_batches([_batch(ref, module, writer, c, a, a + BATCH) for c in (0, 1) for a in (0, 2)])
    writer.flush()


def test_a_compaction_drops_the_damaged_chunk_it_would_have_half_overwritten(reference, half_compacted, tmp_path):
    """The Writer alone: its journal's batch lands in a damaged inner chunk; compacting marks
    that chunk's replications not run (and says where) instead of raising or writing NaN."""
    spec, ref = reference
    store = _copy(half_compacted, tmp_path)
    _flip(_shard(store, "reason"), 5)
    writer = store_mod.Writer(store, *_spec_module(spec))  # replays the journal
    assert [(p, r) for p, r in writer.damage] == [("reason: inner chunk checksum mismatch", [((0,), 0, 8)])]
    status = writer.status_array()
    assert (status[0] == store_mod.NOT_RUN).all() and (status[1, :4] == store_mod.OK).all()
    ds = pipeline.open_store(store)  # clean: what was damaged is now 'not run', without data
    assert np.isnan(ds["mean_wait"].values[0]).all()
    xr.testing.assert_identical(_plain(ref).isel(arrival_rate=[1], replication=slice(0, 4)),
                                _plain(store).isel(arrival_rate=[1], replication=slice(0, 4)))
    shutil.rmtree(store)


def test_check_names_unreadable_journal_bytes_and_what_the_next_run_redoes(reference, half_compacted, tmp_path,
                                                                           capsys):
    spec, ref = reference
    store = _copy(half_compacted, tmp_path)  # one whole batch in the journal: cell 0, replications 4-5
    spec_, module = _spec_module(spec)
    order = journal.layout([(m.name, m.shape) for m in module.METRICS])
    ds = pipeline.open_store(ref).load()
    seed = ds["seed"].isel(arrival_rate=1) if "arrival_rate" in ds["seed"].dims else ds["seed"]
    values = {m.name: ds[m.name].values[1, 4:6] for m in module.METRICS}
    values.update(reason=ds["reason"].values[1, 4:6], status=np.ones(2, np.int8), seed=seed.values[4:6])
    record = journal.encode([journal.Entry((1,), 4, values)], order)
    with open(store / journal.NAME, "ab") as f:  # a record cut short, as by a kill in the middle of its append
        f.write(record[:len(record) // 2])
    capsys.readouterr()
    assert cli.main(["check", str(store)]) == 0  # nothing in the store is damaged
    out = capsys.readouterr().out.splitlines()
    assert f"{store}: journal: 1 whole batches (2 replications) that the next run copies into the store" in out, out
    torn = [line for line in out if "unreadable bytes" in line]
    assert len(torn) == 1 and f"{store}: journal: {len(record) // 2} unreadable bytes after its last whole record" \
        in torn[0] and torn[0].endswith("they held arrival_rate=0.6, replications 4-5"), torn
    # 16 replications: 8 compacted, 2 in the whole batch; the torn batch's 2 are among the 6 left
    assert f"{store}: the next run runs 6 replications not run yet (the dropped batches' included)" in out
    _run(spec, store)
    xr.testing.assert_identical(_plain(ref), _plain(store))
