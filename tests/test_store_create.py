"""A store is created with zarr alone (no xarray in a sweep's client); its arrays, metadata
and chunk bytes are those ``xarray.Dataset.to_zarr`` writes for the same variables (with
the same shards and checksum codecs)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.base.conventions import dataset_attrs, encode_attrs
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.spec.sweep import parse, workload_of

SPECS = {
    "zip and independent, extra metric dims": """
name = "dg"
workload = "desktop_grid"
replications = 7
seed = 3
independent = ["policy"]
[sweep]
policy = ["gcmu", "pst"]
[[zip]]
arrival_scale = [0.5, 0.7]
horizon = [100.0, 200.0]
""",
    "one cell": """
name = "single"
workload = "mm1"
replications = 5
seed = 3
""",
    "many replications": """
name = "many"
workload = "mm1"
replications = 300000
seed = 3
[sweep]
arrival_rate = [0.5, 0.6]
""",
}


def _with_xarray(path: Path, spec, module, chunk: int, attrs: dict) -> None:
    """The reference: the same variables written by xarray."""
    data, coords = store_mod._variables(spec, module, chunk)

    def values(v):
        return np.broadcast_to(np.asarray(v.data, dtype=v.dtype), v.shape).copy()

    ds = xr.Dataset({k: (v.dims, values(v), v.attrs) for k, v in data.items()},
                    coords={k: (v.dims, values(v), v.attrs) for k, v in coords.items()},
                    attrs={**encode_attrs({**dataset_attrs(spec.workload), **attrs}),
                           "store_format": store_mod.STORE_FORMAT})
    encoding = {k: {"compressors": store_mod.compressors(),
                    **({"chunks": v.chunks, "shards": v.shards} if v.chunks else {})} for k, v in {**data, **coords}.items()}
    ds.to_zarr(path, mode="w-", zarr_format=3, consolidated=False, encoding=encoding)
    store_mod.consolidate(path)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _metadata(raw: bytes) -> dict:
    doc = json.loads(raw)
    doc.get("attributes", {}).pop("created", None)
    return doc


@pytest.mark.parametrize("name", SPECS)
def test_created_store_is_what_xarray_writes(tmp_path, name):
    spec = parse(SPECS[name])
    module = workload_of(spec)
    chunk = 3 if spec.replications < 100 else 50000  # seed, cell seconds and coordinates: zarr's own chunks
    attrs = {**provenance(spec, module), "chunk": chunk}
    store_mod.create(tmp_path / "ours.zarr", spec, module, chunk, attrs)
    _with_xarray(tmp_path / "xr.zarr", spec, module, chunk, attrs)
    ours, ref = _files(tmp_path / "ours.zarr"), _files(tmp_path / "xr.zarr")
    assert sorted(ours) == sorted(ref)
    for key in ref:
        if key.endswith("zarr.json"):
            assert _metadata(ours[key]) == _metadata(ref[key]), key
        else:
            assert ours[key] == ref[key], key
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "ours.zarr").load(), xr.open_zarr(tmp_path / "xr.zarr").load())
