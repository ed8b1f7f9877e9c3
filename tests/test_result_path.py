"""Several finished batches written as one group equal the same batches written one by one
(issue 20 item 4): chunks shared by batches of one group, seeds shared between cells under
common random numbers, and cell seconds accumulated across groups."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from hypothesis import given, settings, strategies as st

from schedsweep import pipeline
from schedsweep.pipeline import store as store_mod
from schedsweep.pipeline.execute import provenance
from schedsweep.pipeline.spec import parse, workload_of

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
    return groups, draw(st.sampled_from([1, 3, 4, 12]))


@settings(max_examples=12, deadline=None)
@given(plans())
def test_grouped_writes_equal_one_by_one_writes(tmp_path_factory, plan):
    groups, chunk = plan
    tmp = tmp_path_factory.mktemp("g")
    one, spec = _fresh(tmp / "one.zarr", chunk)
    grouped, _ = _fresh(tmp / "grouped.zarr", chunk)
    for group in groups:
        items = [_batch(spec, *b) for b in group]
        for item in items:
            one.write_batch(*item)
        grouped.write_batches(items)
    a, b = _plain(pipeline.open_store(tmp / "one.zarr")), _plain(pipeline.open_store(tmp / "grouped.zarr"))
    xr.testing.assert_identical(a, b)
    assert (a["status"] != store_mod.NOT_RUN).all()  # every replication written, none lost to a shared chunk
    assert float(a["cell_seconds"].sum()) == 4 * 12 / 8
