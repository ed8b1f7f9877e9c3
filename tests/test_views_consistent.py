"""Views that never mislead: table, plot, report, show and verify on a store whose run's
results are still in its journal include them and say so first; a merged store's overrides
and dropped references are the same in show, table and verify."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from schedsweep import pipeline, workloads
from schedsweep.pipeline import cli
from schedsweep.pipeline.read import verify
from schedsweep.pipeline.store import zarrstore as store_mod
from schedsweep.pipeline.execution.execute import provenance
from schedsweep.pipeline.store.export import merge
from schedsweep.pipeline.spec.sweep import parse

SPEC = 'name = "live"\nworkload = "mm1"\nreplications = 4\nseed = 1\n[sweep]\narrival_rate = [0.3, 0.5]\n'


def _outputs(values: np.ndarray) -> dict[str, np.ndarray]:
    n = len(values)
    return {"mean_wait": values, "mean_time_in_system": values + 1, "time_in_system_quantiles": np.ones((n, 3)),
            "reason": np.zeros(n, np.int8)}


def _half_written(path: Path) -> store_mod.Writer:
    """Cell 0 compacted into the arrays; cell 1's replications only in the journal."""
    spec = parse(SPEC)
    module = workloads.get("mm1")
    store_mod.create(path, spec, module, 4, provenance(spec, module))
    writer = store_mod.Writer(path, spec, module)
    writer.write_batch((0,), 0, writer.seeds((0,), 0, 4), _outputs(np.array([1.0, 2.0, 3.0, 4.0])), {}, 0.0)
    writer.compact()
    writer.write_batch((1,), 0, writer.seeds((1,), 0, 4), _outputs(np.array([10.0, 20.0, 30.0, 40.0])), {}, 0.0)
    return writer


def test_a_view_of_a_store_being_written_includes_the_journal_and_says_so_first(tmp_path, capsys):
    path = tmp_path / "live.zarr"
    _half_written(path)
    assert (path / "status" / "journal.bin").exists()
    capsys.readouterr()
    assert cli.main(["table", str(path), "--metric", "mean_wait", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    rows = {r["arrival_rate"]: r for r in json.loads(out)}
    assert rows[0.5]["mean"] == 25.0 and rows[0.5]["n"] == 4 and rows[0.3]["mean"] == 2.5
    assert err.splitlines()[0] == ("interrupted run: 4 results not yet compacted into the store are included "
                                   "(read from its journal; a run compacts them)")
    with store_mod.locked(path):  # a run holds the store: it is in progress
        assert cli.main(["table", str(path), "--metric", "mean_wait"]) == 0
        text = capsys.readouterr().out.splitlines()
        assert text[0].startswith("run in progress: 4 results not yet compacted")
        assert any("25 ± " in line for line in text)
        assert cli.main(["show", str(path)]) == 0
        shown = capsys.readouterr().out
        assert "status:      8 ok (of 8)" in shown and "journal:     4 results" in shown
        report = tmp_path / "r.html"
        assert cli.main(["report", str(path), "-o", str(report)]) == 0
        assert capsys.readouterr().out.startswith("run in progress: 4 results")
        assert "4 results of a running or interrupted run are included" in report.read_text()
        assert cli.main(["plot", str(path), "--metric", "mean_wait", "--x", "arrival_rate",
                         "-o", str(tmp_path / "p.png")]) == 0
        assert capsys.readouterr().out.startswith("run in progress: 4 results")
    # the arrays alone (what every view read before) still lack cell 1: the journal is what fills it
    assert np.isnan(store_mod.open_dataset(path)["mean_wait"].values[1]).all()


def test_a_view_across_stores_includes_a_written_store_and_names_it(tmp_path, capsys):
    _half_written(tmp_path / "live.zarr")
    done = tmp_path / "done.zarr"
    _half_written(done).flush()
    capsys.readouterr()
    assert cli.main(["table", str(tmp_path), "--metric", "mean_wait", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines[0] == ("live.zarr: interrupted run: 4 results not yet compacted into the store are included "
                        "(read from its journal; a run compacts them)")
    assert not any(line.startswith("done.zarr:") for line in lines)
    rows = [r for r in json.loads(out) if r["arrival_rate"] == 0.5]
    assert [r["mean"] for r in rows] == [25.0, 25.0] and [r["n"] for r in rows] == [4, 4]


def test_a_compacted_store_has_no_such_line(tmp_path, capsys):
    path = tmp_path / "done.zarr"
    _half_written(path).flush()
    capsys.readouterr()
    assert cli.main(["table", str(path), "--metric", "mean_wait"]) == 0
    assert capsys.readouterr().out.startswith("mean ± 95% CI")
    assert "pending_results" not in pipeline.open_store(path).attrs


REFERENCED = """name = "parts"
workload = "mm1"
reproduces = "RF Fig. 1"
replications = 6
seed = 4
[params]
customers = 300
warmup = 30
[sweep]
arrival_rate = [0.1, 0.3, 0.5, 0.7, 0.9]

[[reference.value]]
metric = "mean_time_in_system"
where = { arrival_rate = 0.1 }
value = 1.1111111111111112

[[reference.value]]
metric = "mean_time_in_system"
where = { arrival_rate = 0.5 }
value = 2.0

[[reference.value]]
metric = "mean_time_in_system"
where = { arrival_rate = 0.9 }
value = 10.0
"""


def test_a_merged_store_drops_and_judges_the_same_references_in_show_table_and_verify(tmp_path, capsys):
    spec = tmp_path / "parts.toml"
    spec.write_text(REFERENCED)
    a = pipeline.run(spec, tmp_path / "a.zarr", workers=0, progress=False, overrides=["sweep.arrival_rate=[0.1, 0.3]"])
    b = pipeline.run(spec, tmp_path / "b.zarr", workers=0, progress=False, overrides=["sweep.arrival_rate=[0.5, 0.7]"])
    assert len(pipeline.open_store(a).attrs["reference_dropped"]) == 2  # 0.5 and 0.9: part a's, not the whole's
    both = merge([a, b], tmp_path / "both.zarr")
    ds = pipeline.open_store(both)
    dropped = ["value mean_time_in_system at arrival_rate=0.9"]  # the one point no part ran
    assert ds.attrs["reference_dropped"] == dropped and ds.attrs["overrides"] == []
    assert [p["overrides"] for p in ds.attrs["merged_from"]] == [["sweep.arrival_rate=[0.1, 0.3]"],
                                                                 ["sweep.arrival_rate=[0.5, 0.7]"]]
    card = verify.scorecard(ds, label=str(both))
    assert card["dropped"] == dropped
    assert [v["where"] for v in card["values"]] == ["arrival_rate=0.1", "arrival_rate=0.5"]
    capsys.readouterr()
    assert cli.main(["show", str(both)]) == 0
    shown = capsys.readouterr().out
    assert f"dropped:     1 published reference point(s) the overrides removed: {dropped[0]}" in shown
    assert "merged part: " + a.name + ": --set sweep.arrival_rate=[0.1, 0.3]" in shown  # by folder name, no machine path
    assert "overrides:" not in shown  # none is shared by both parts
    assert cli.main(["table", str(both), "--wide"]) == 0
    table = capsys.readouterr().out
    judged = [line for line in table.splitlines() if "published" in line and "mean_time_in_system" in line]
    assert len(judged) == 2 and not any("arrival_rate=0.9" in line for line in judged)
    assert f"dropped by overrides: {dropped[0]}" in table
    assert cli.main(["verify", str(both), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)["specs"][0]
    assert doc["dropped"] == dropped and len(doc["values"]) == 2


def test_the_n_legend_tells_an_undefined_metric_from_a_cell_not_fully_run(tmp_path, capsys):
    """slot_selection, 3 algorithms x 4 replications: amp has every value; alp ran all 4, none
    with a window (reason 'no window'); csa ran 2 of 4, one with a value."""
    spec = parse('name = "legend"\nworkload = "slot_selection"\nreplications = 4\nseed = 1\n'
                 '[sweep]\nalgorithm = ["amp", "alp", "csa"]\n')
    module = workloads.get("slot_selection")
    path = tmp_path / "legend.zarr"
    store_mod.create(path, spec, module, 4, provenance(spec, module))
    writer = store_mod.Writer(path, spec, module)

    def batch(cell: int, n: int, value: float, reason: int) -> None:
        out = {m.name: np.full((n, *m.shape), value) for m in module.METRICS}
        out["reason"] = np.full(n, reason, np.int8)
        writer.write_batch((cell,), 0, writer.seeds((cell,), 0, n), out, {}, 0.0)

    batch(0, 4, 1.0, 0)
    batch(1, 4, np.nan, 1)
    writer.write_batch((2,), 0, writer.seeds((2,), 0, 2),
                       {**{m.name: np.array([5.0, np.nan]).reshape(2, *(1,) * len(m.shape)) * np.ones((2, *m.shape))
                           for m in module.METRICS}, "reason": np.array([0, 1], np.int8)}, {}, 0.0)
    writer.flush()
    capsys.readouterr()
    assert cli.main(["table", str(path), "--metric", "start", "--wide"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in ("amp", "alp", "csa")}
    assert rows["amp"].split()[1] == "1" and "[n=" not in rows["amp"] and "undefined" not in rows["amp"]
    assert "— undefined (no window)" in rows["alp"] and "[n=" not in rows["alp"]
    assert "[n=1, 2 of 4 run]" in rows["csa"]
    assert "[n=K, R of 4 run]: only R have run" in out
    assert "— undefined (reason): no replication run has a value" in out
