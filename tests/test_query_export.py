"""Exports that keep their origin: store, spec, workload and unit columns on every row, the
provenance in parquet's key-value metadata, one hive-partitioned dataset over a folder of
stores, and duckdb's mean and CI per group over it against the stores' own summaries and a
pandas reference (the benchmark is the same at full size: benchmarks/bench_query.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from schedsweep import pipeline, workloads
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.base.errors import QueryError, StoreError
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.store.export import ORIGIN, export
from schedsweep.pipeline.read.query import export_folder, group_ci
from schedsweep.pipeline.spec.sweep import parse

import duckdb  # noqa: E402  (the optional "query" extra; in the test extra)


def written_store(path: Path, workload: str, text: str, seed: int) -> Path:
    """A store whose every replication holds random values (some NaN: undefined), written
    through the Writer: as a run would leave it, without running the model."""
    spec = parse(f'name = "{path.stem}"\nworkload = "{workload}"\n{text}')
    module = workloads.get(workload)
    store_mod.create(path, spec, module, 64, provenance(spec, module))
    writer = store_mod.Writer(path, spec, module)
    rng = np.random.default_rng(seed)
    n = spec.replications
    for cell in np.ndindex(*spec.shape):
        out = {m.name: rng.gamma(2.0, 3.0, (n, *m.shape)) for m in module.METRICS}
        for m in module.METRICS:  # an undefined value now and then, as a model leaves it
            out[m.name][rng.random(n) < 0.05] = np.nan
        out["reason"] = np.zeros(n, np.int8)
        writer.write_batch(cell, 0, writer.seeds(cell, 0, n), out, {}, 0.0)
    writer.flush()
    return path


MM1 = "replications = 40\nseed = {seed}\n[sweep]\narrival_rate = [0.3, 0.5]\n"
CLUSTER = "replications = 30\nseed = 2\n[sweep]\nload = [0.5, 0.9]\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("many")
    for k in range(4):
        written_store(root / f"mm1-{k}.zarr", "mm1", MM1.format(seed=k + 1), seed=k)
    (root / "cl").mkdir()
    written_store(root / "cl" / "cluster.zarr", "cluster", CLUSTER, seed=99)
    return root


@pytest.fixture(scope="module")
def dataset(folder, tmp_path_factory) -> Path:
    return export_folder([folder], tmp_path_factory.mktemp("out") / "all.parquet")


def test_every_exported_row_says_its_store_spec_workload_and_unit(folder, tmp_path):
    path = folder / "cl" / "cluster.zarr"
    for fmt in ("csv", "parquet"):
        out = export(path, fmt, tmp_path / f"c.{fmt}")
        table = pd.read_csv(out) if fmt == "csv" else pd.read_parquet(out)
        assert list(table.columns[:4]) == list(ORIGIN)
        assert set(table["store"]) == {"cluster.zarr"} and set(table["spec"]) == {"cluster"}
        assert set(table["workload"]) == {"cluster"}
        units = {m.name: m.unit for m in workloads.get("cluster").METRICS}
        ds = pipeline.open_store(path)
        for metric, unit in table.groupby("metric")["unit"].unique().items():
            assert list(unit) == [ds[metric].attrs["units"]], metric
        assert table.loc[table["metric"] == "mean_wait", "unit"].iat[0] == "s" == units["mean_wait"]


def test_parquet_metadata_holds_the_provenance(folder, tmp_path):
    path = folder / "mm1-0.zarr"
    out = export(path, "parquet", tmp_path / "m.parquet")
    meta = json.loads(pq.read_schema(out).metadata[b"schedsweep"])
    ds = pipeline.open_store(path)
    assert meta["store"] == "mm1-0.zarr"
    for key in ("spec_identity", "spec_text", "schedsweep_version", "git_commit", "created", "workload"):
        assert meta[key] == ds.attrs[key], key
    assert meta["code_hash"] == ds.attrs["code"]["hash"]
    assert meta["units"] == {m: ds[m].attrs["units"] for m in ds.attrs["metrics"]}
    assert b"pandas" in pq.read_schema(out).metadata  # pandas' own metadata kept beside ours


def test_a_folder_becomes_one_hive_dataset_with_every_row_of_every_store(folder, dataset):
    files = sorted(p.relative_to(dataset).as_posix() for p in dataset.rglob("*.parquet"))
    assert files == ["workload=cluster/store=cl%2Fcluster.zarr/part-0.parquet",
                     *[f"workload=mm1/store=mm1-{k}.zarr/part-0.parquet" for k in range(4)]]
    con = duckdb.connect()
    rows = dict(con.sql(f"SELECT store, count(*) FROM read_parquet('{dataset}/**/*.parquet', "
                        "hive_partitioning=true, union_by_name=true) GROUP BY store").fetchall())
    for store in [*(folder.glob("*.zarr")), folder / "cl" / "cluster.zarr"]:
        ds = pipeline.open_store(store)
        name = store.relative_to(folder).as_posix()
        assert rows[name] == sum(ds[m].size for m in ds.attrs["metrics"]), name
        meta = json.loads(pq.read_schema(next(dataset.rglob(f"store={name.replace('/', '%2F')}/*.parquet")))
                          .metadata[b"schedsweep"])
        assert meta["store"] == name and meta["spec_identity"] == ds.attrs["spec_identity"]


def test_duckdb_mean_and_ci_per_group_equal_each_stores_summary(folder, dataset):
    got = group_ci(dataset, where="workload = 'mm1' AND metric = 'mean_wait'")
    assert len(got) == 4 * 2
    for _, row in got.iterrows():
        summary = pipeline.summary(pipeline.open_store(folder / row["store"]))["mean_wait"]
        cell = summary.sel(arrival_rate=row["arrival_rate"])
        for stat in ("n", "mean", "sd", "half_width", "ci_low", "ci_high"):
            assert row[stat] == pytest.approx(float(cell.sel(stat=stat)), rel=1e-12, abs=1e-12), stat


def _pandas_reference(dataset: Path, keys: list[str], level: float) -> pd.DataFrame:
    from scipy import stats

    frames = []
    for path in dataset.rglob("*.parquet"):
        part = pq.read_table(path).to_pandas()
        for piece in path.relative_to(dataset).parts[:-1]:  # the hive keys from the folder names
            key, _, value = piece.partition("=")
            part[key] = pd.Series([value.replace("%2F", "/")] * len(part), dtype=object)
        frames.append(part)
    table = pd.concat(frames, ignore_index=True)
    table = table[table["value"].notna()]
    g = table.groupby(keys, dropna=False)["value"]
    ref = pd.DataFrame({"n": g.count(), "mean": g.mean(), "sd": g.std(ddof=1)}).reset_index()
    ref["half_width"] = stats.t.ppf(0.5 + level / 2, ref["n"] - 1) * ref["sd"] / np.sqrt(ref["n"])
    return ref


def test_duckdb_over_every_group_equals_a_pandas_reference(dataset):
    keys = ["store", "metric", "unit", "quantile"]
    got = group_ci(dataset, by=keys, level=0.9)
    ref = _pandas_reference(dataset, keys, 0.9)
    merged = got.merge(ref, on=keys, how="outer", suffixes=("", "_ref"), indicator=True)
    assert (merged["_merge"] == "both").all() and len(merged) == len(ref)
    for stat in ("n", "mean", "sd", "half_width"):
        np.testing.assert_allclose(merged[stat], merged[f"{stat}_ref"], rtol=1e-12, err_msg=stat)


def test_one_metric_name_in_two_units_is_two_groups(dataset):
    got = group_ci(dataset, by=["metric"], where="metric = 'mean_wait'")
    assert sorted(got["unit"]) == ["model_time_unit", "s"]  # mm1's model time apart from the cluster's seconds


def test_the_cli_exports_a_folder_and_refuses_to_overwrite(folder, tmp_path, capsys):
    out = tmp_path / "d.parquet"
    assert cli.main(["export", str(folder), "--to", "parquet", "-o", str(out)]) == 0
    assert len(list(out.rglob("*.parquet"))) == 5
    assert cli.main(["export", str(folder), "--to", "parquet", "-o", str(out)]) == cli.EXIT_USAGE
    assert "exists" in capsys.readouterr().err
    with pytest.raises(StoreError, match="parquet .* or csv"):
        export_folder([folder], tmp_path / "x.nc", "netcdf")
    with pytest.raises(QueryError, match="not a column"):
        group_ci(out, by=["nope"])


def test_a_folder_as_one_csv_keeps_store_and_workload(folder, tmp_path):
    out = export_folder([folder], tmp_path / "all.csv", "csv")
    table = pd.read_csv(out)
    assert list(table.columns[:4]) == list(ORIGIN)
    assert sorted(table["store"].unique()) == ["cl/cluster.zarr", *[f"mm1-{k}.zarr" for k in range(4)]]
