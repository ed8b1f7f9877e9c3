"""Several finished batches written as one group equal the same batches written one by one
and the same batches written by zarr itself: chunks shared by batches of
one group, chunks filled in parts across groups, edge chunks, seeds shared between cells
under common random numbers, and cell seconds accumulated across groups. A run killed
between any two chunk files resumes to the uninterrupted result."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import xarray as xr
from hypothesis import given, settings, strategies as st

from schedsweep import pipeline
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.store import chunkfiles, journal
from schedsweep.pipeline.base import seeding
from schedsweep.pipeline.spec.sweep import parse, workload_of
from tests.faultinject import killed_at

SPEC = """
name = "groups"
workload = "mm1"
replications = 12
seed = 5
independent = ["service_rate"]
[params]
customers = 50
warmup = 10
[sweep]
arrival_rate = [0.4, 0.6]
service_rate = [1.0, 2.0]
"""


def _fresh(path: Path, chunk: int):
    spec = parse(SPEC)
    module = workload_of(spec)
    store_mod.create(path, spec, module, chunk, provenance(spec, module))
    return store_mod.Writer(path, spec, module), spec


def _batch(spec, cell: tuple[int, int], start: int, stop: int) -> tuple:
    n = stop - start
    rng = np.random.default_rng([start, stop, *cell])
    seeds = np.arange(start, stop, dtype=np.uint64) + np.uint64(1000 * cell[1])  # a function of the seed row
    outputs = {"mean_wait": rng.random(n), "mean_time_in_system": rng.random(n),
               "reason": (rng.random(n) < 0.3).astype(np.int8),
               "time_in_system_quantiles": rng.random((n, 3))}   # a metric with a dimension of its own
    failed = {k: ("error", "x") for k in range(n) if rng.random() < 0.2}
    return cell, start, seeds, outputs, failed, float(n) / 8  # seconds: exact in binary, any order sums alike


def _plain(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.load()
    ds.attrs = {}
    return ds


@st.composite
def plans(draw):
    """Every cell's replications cut into batches at random, the batches shuffled and grouped."""
    batches = []
    for cell in [(a, s) for a in range(2) for s in range(2)]:
        cuts = sorted(draw(st.sets(st.integers(1, 11), max_size=6)))
        edges = [0, *cuts, 12]
        batches += [(cell, a, b) for a, b in zip(edges, edges[1:])]
    order = draw(st.permutations(batches))
    sizes = draw(st.lists(st.integers(1, 6), min_size=len(order), max_size=len(order)))
    groups, i = [], 0
    for size in sizes:
        if i >= len(order):
            break
        groups.append(order[i:i + size])
        i += size
    return groups, draw(st.sampled_from([1, 3, 4, 5, 7, 12]))  # 5, 7: an edge chunk past replication 12


@settings(max_examples=12, deadline=None)
@given(plans())
def test_grouped_writes_equal_one_by_one_writes(tmp_path_factory, plan):
    groups, chunk = plan
    tmp = tmp_path_factory.mktemp("g")
    one, spec = _fresh(tmp / "one.zarr", chunk)
    grouped, _ = _fresh(tmp / "grouped.zarr", chunk)
    by_zarr, _ = _fresh(tmp / "zarr.zarr", chunk)
    assert set(grouped._files) == {"mean_wait", "mean_time_in_system", "time_in_system_quantiles", "status",
                                   "reason", "seed", "cell_seconds"}  # every array written directly
    by_zarr._files = {}  # every write through zarr's own setitem instead
    for group in groups:
        items = [_batch(spec, *b) for b in group]
        for item in items:
            one.write_batch(*item)
        grouped.write_batches(items)
        by_zarr.write_batches(items)
    for writer in (one, grouped, by_zarr):
        writer.flush()
    a, b = _plain(pipeline.open_store(tmp / "one.zarr")), _plain(pipeline.open_store(tmp / "grouped.zarr"))
    xr.testing.assert_identical(a, b)
    # zarr drops inner chunks that hold only NaN, which our check reads as missing data: the
    # values are compared, not the shards' layout
    xr.testing.assert_identical(a, _plain(pipeline.open_store(tmp / "zarr.zarr", verify=False)))
    assert (a["status"] != store_mod.NOT_RUN).all()  # every replication written, none lost to a shared chunk
    assert float(a["cell_seconds"].sum()) == 4 * 12 / 8


def test_a_new_store_holds_every_seed_and_a_run_rewrites_no_file(tmp_path, write_spec):
    """The seeds are the spec's from creation on, and a run only adds chunk files: it never
    replaces one (each replacement waits on the file system) except the cell seconds at the end."""
    spec = write_spec(SPEC)
    path = tmp_path / "s.zarr"
    writer, parsed = _fresh(path, 3)
    for cell in parsed.cells():
        indep = (cell[0][1],)
        assert (writer.seeds(cell[0], 0, 12) == seeding.replication_seeds(5, 0, 12, indep)).all()
    replaced = []
    real = chunkfiles._atomic_write

    def spy(file, data):
        if file.exists():
            replaced.append(file.relative_to(tmp_path))
        real(file, data)

    chunkfiles._atomic_write = spy
    compact_every = journal.COMPACT_SECONDS
    journal.COMPACT_SECONDS = 1e9  # one compaction, at the end (a loaded machine may take over 10 s)
    try:
        pipeline.run(spec, tmp_path / "run.zarr", workers=0, batch_size=3, progress=False)
    finally:
        chunkfiles._atomic_write = real
        journal.COMPACT_SECONDS = compact_every
    assert replaced == [Path("run.zarr/cell_seconds/c/0/0")]  # one chunk, written once at the end


def test_kills_between_chunk_files_resume_to_the_uninterrupted_result(tmp_path, write_spec):
    spec = write_spec(SPEC.replace("customers = 50", "customers = 30"))
    ref = _plain(pipeline.open_store(pipeline.run(spec, tmp_path / "ref.zarr", workers=0, batch_size=3,
                                                  progress=False)))
    keep = ["mean_wait", "mean_time_in_system", "time_in_system_quantiles", "status", "reason", "seed"]
    real = chunkfiles._atomic_write
    # The Nth file the run writes: the compaction of its journal writes the data shards
    # (three metrics, reason), then the status shard, then the cell seconds.
    for at in (1, 3, 4, 5, 6):
        store = tmp_path / f"k{at}.zarr"

        def run_killed_at_file(at=at, store=store):
            calls = iter(range(1, 10**6))

            def dying(file, data):
                if next(calls) == at:
                    os.kill(os.getpid(), signal.SIGKILL)
                real(file, data)

            chunkfiles._atomic_write = dying
            pipeline.run(spec, store, workers=0, batch_size=3, progress=False)

        assert killed_at(10**9, run_killed_at_file)  # fault points never fire; the file writes do
        got = _plain(pipeline.open_store(pipeline.run(spec, store, workers=0, batch_size=3, progress=False)))
        xr.testing.assert_identical(ref[keep], got[keep])
