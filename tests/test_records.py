"""Per-job records and the Gantt chart: a record is the replication the
sweep ran, recomputed from its seed; [record] keeps chosen ones in the store."""
from __future__ import annotations

import numpy as np
import pytest

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import records
from schedsweep.pipeline.spec.sweep import load

SPEC = """
name = "rec"
workload = "cluster"
replications = 3
seed = 11
[params]
jobs = 120
nodes = 6
cores = 2
load = 0.9
[sweep]
queue = ["fcfs", "easy"]
[record]
replications = [1, 2]
where = { queue = "easy" }
"""


def test_recorded_replications_reproduce_the_stored_metrics(write_spec, tmp_path, capsys):
    spec_path = write_spec(SPEC, "rec.toml")
    store = pipeline.run(spec_path, tmp_path / "rec.zarr", workers=0, progress=False)
    ds = pipeline.open_store(store)
    spec = load(spec_path)
    for r in (1, 2):
        rec, source = records.load(store, spec, (1,), r)
        assert source == "store"
        assert np.array_equal(rec["job"], records.compute(spec, (1,), r)["job"])
        first = np.unique(rec["job"], return_index=True)[1]          # one row per job
        wait = (rec["start"] - rec["submit"])[first]
        assert float(ds["mean_wait"].sel(queue="easy", replication=r)) == pytest.approx(wait.mean(), rel=1e-12)
        assert np.allclose(ds["wait_quantiles"].sel(queue="easy", replication=r), np.percentile(wait, [50, 90, 99]))
        # every job's pieces hold its cores, on distinct nodes, within the machine
        for j in np.unique(rec["job"]):
            mine = rec["job"] == j
            assert len(set(rec["resource"][mine])) == mine.sum() and ((0 <= rec["resource"][mine]) &
                                                                       (rec["resource"][mine] < 6)).all()
    # fcfs was not chosen: recomputed on demand, not stored
    assert records.load(store, spec, (0,), 1)[1] == "recomputed from the seed"
    out = tmp_path / "g.png"
    assert cli.main(["gantt", str(store), "--sel", "queue=easy", "--replication", "2", "-o", str(out)]) == 0
    assert out.stat().st_size > 0 and "(store)" in capsys.readouterr().out


def test_gantt_and_record_errors_name_the_key(write_spec, tmp_path, capsys):
    bad = SPEC.replace("replications = [1, 2]", "replications = [5]")
    with pytest.raises(pipeline.SpecError, match=r"\[record\] replications = \[5\]"):
        load(write_spec(bad, "bad.toml"))
    mm1 = 'name = "m"\nworkload = "mm1"\nreplications = 2\nseed = 1\n[record]\nreplications = [0]\n'
    with pytest.raises(pipeline.SpecError, match="keeps no per-job records"):
        load(write_spec(mm1, "mm1.toml"))
    store = pipeline.run(write_spec(SPEC.replace("[record]\nreplications = [1, 2]\nwhere = { queue = \"easy\" }\n", ""),
                                    "plain.toml"), tmp_path / "p.zarr", workers=0, progress=False)
    assert cli.main(["gantt", str(store), "--replication", "0"]) == cli.EXIT_USAGE
    assert "--sel queue=VALUE is needed" in capsys.readouterr().err
