"""Per-job records in Batsim's jobs.csv columns (`schedsweep gantt -o FILE.csv`), loaded with
evalys (JobSet.from_csv): every column round-trips to the records, the resources to the
nodes the jobs ran on, and pyss's processor pool to a valid assignment."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from evalys.jobset import JobSet
from procset import ProcSet

from schedsweep import pipeline
from schedsweep.pipeline import cli
from schedsweep.pipeline.store import records
from schedsweep.pipeline.spec.sweep import load
from tests.test_cluster_batsim import MACHINE, synthetic_swf, to_batsim


def by_job(js: JobSet) -> dict[str, dict]:
    return {row["jobID"]: row for row in js.df.to_dict("records")}


def test_hand_made_records_every_column(tmp_path):
    """Closed form: a job on two nodes, one killed, one resubmitted, one never started, one on a pool."""
    rec = {  # job 7 on nodes 0-1 and 3; job 8 killed on node 2; job 9 twice (failure, then done); 10 never started
        "job": np.array([7, 7, 7, 8, 9, 9, 10]),
        "submit": np.array([1.0, 1.0, 1.0, 2.0, 0.5, 0.5, 3.0]),
        "start": np.array([4.0, 4.0, 4.0, 2.0, 1.0, 6.25, np.nan]),
        "end": np.array([10.0, 10.0, 10.0, 5.0, 6.25, 7.0, np.nan]),
        "resource": np.array([0, 1, 3, 2, 2, 4, -1]),
        "size": np.array([2, 2, 1, 1, 1, 1, 3]),
        "status": np.array([0, 0, 0, 1, 1, 0, 2]),
        "estimate": np.array([20.0, 20.0, 20.0, 3.0, 9.0, 9.0, 5.0]),
    }
    out = tmp_path / "jobs.csv"
    assert records.jobs_csv(rec, str(out), "w0") == 5
    with open(out) as fh:
        assert next(csv.reader(fh)) == list(records.JOBS_CSV_COLUMNS)
    js = JobSet.from_csv(str(out))
    rows = by_job(js)
    assert sorted(rows) == ["10", "7", "8", "9", "9#1"]
    j7 = rows["7"]
    assert (j7["submission_time"], j7["starting_time"], j7["finish_time"]) == (1.0, 4.0, 10.0)
    assert (j7["waiting_time"], j7["execution_time"], j7["turnaround_time"], j7["stretch"]) == (3.0, 6.0, 9.0, 1.5)
    assert j7["allocated_resources"] == ProcSet((0, 1), 3) and str(j7["allocated_resources"]) == "0-1 3"
    assert j7["requested_number_of_resources"] == 5 and j7["requested_time"] == 20.0
    assert (j7["success"], j7["final_state"], j7["workload_name"]) == (1, "COMPLETED_SUCCESSFULLY", "w0")
    assert (rows["8"]["success"], rows["8"]["final_state"]) == (0, "COMPLETED_KILLED")
    assert rows["9"]["finish_time"] == 6.25 and rows["9#1"]["starting_time"] == 6.25       # ids by start order
    assert rows["9#1"]["allocated_resources"] == ProcSet(4)
    never = rows["10"]
    assert never["final_state"] == "SUBMITTED" and np.isnan(never["starting_time"])
    assert len(never["allocated_resources"]) == 0
    assert js.MaxProcs == 5 and (js.df["consumed_energy"] == -1).all()


def test_pool_processors_are_a_valid_assignment():
    rng = np.random.default_rng(2)
    start = np.round(rng.uniform(0, 50, 200))
    end = start + np.round(rng.uniform(0, 10, 200))      # zero-length jobs too
    size = rng.integers(1, 6, 200)
    procs = records.pool_processors(start, end, size)
    busy_peak = 0
    for t in np.unique(np.concatenate([start, end])):
        now = [k for k in range(200) if start[k] <= t < end[k]]
        busy_peak = max(busy_peak, int(size[now].sum()))
        ids = [p for k in now for p in procs[k]]
        assert len(ids) == len(set(ids))                  # no processor holds two jobs at once
    assert [len(set(p)) for p in procs] == size.tolist()
    assert max(max(p) for p in procs) < busy_peak + size.max()


SPEC = """
name = "csv"
workload = "cluster"
replications = 2
seed = 4
[params]
jobs = 150
nodes = 8
cores = 1
load = 0.9
[sweep]
queue = ["fcfs", "easy"]
"""


def test_gantt_csv_round_trips_through_evalys(write_spec, tmp_path, capsys):
    spec_path = write_spec(SPEC, "csv.toml")
    store = pipeline.run(spec_path, tmp_path / "csv.zarr", workers=0, progress=False)
    out = tmp_path / "easy-r1.csv"
    assert cli.main(["gantt", str(store), "--sel", "queue=easy", "--replication", "1", "-o", str(out)]) == 0
    assert "150 job executions" in capsys.readouterr().out
    rec = records.compute(load(spec_path), (1,), 1)
    js = JobSet.from_csv(str(out))
    rows = by_job(js)
    assert len(rows) == 150 and js.MaxProcs <= 8
    for j in np.unique(rec["job"]):
        mine = rec["job"] == j
        row = rows[str(j)]
        start, end, submit = rec["start"][mine][0], rec["end"][mine][0], rec["submit"][mine][0]
        assert row["starting_time"] == round(start, 6) and row["finish_time"] == round(end, 6)
        assert row["waiting_time"] == round(start - submit, 6)
        assert row["allocated_resources"] == ProcSet(*rec["resource"][mine].tolist())
        assert row["requested_number_of_resources"] == rec["size"][mine].sum()
        assert row["requested_time"] == round(rec["estimate"][mine][0], 6)
    # evalys's utilisation (its own start = submit + wait, rounded) holds the records' processor-seconds
    ran = rec["status"] != 2
    used = js.utilisation
    area = float(np.nansum(used["area"].values))
    assert area == pytest.approx(float((rec["size"] * (rec["end"] - rec["start"]))[ran].sum()), rel=1e-9)
    # never above the 8 nodes, except across evalys's own rounding (start = rounded submit + rounded wait)
    lasting = np.diff(used.index.values, append=np.inf) > 1e-5
    assert 0 < used["load"].values[lasting].max() <= 8


@pytest.mark.parametrize("trace", ["swf", "json"])
def test_pyss_pool_export_loads_with_evalys(trace, tmp_path):
    s = synthetic_swf(tmp_path / "t.swf", n=120)
    path = str(s if trace == "swf" else to_batsim(s, tmp_path / "t.json"))
    spec = tmp_path / "p.toml"
    spec.write_text(f'name = "p"\nworkload = "cluster"\nreplications = 1\nseed = 1\n[params]\nsource = "swf"\n'
                    f'trace = "{path}"\nsemantics = "pyss"\nqueue = "easy"\n')
    rec = records.compute(load(spec), (), 0)
    assert (rec["resource"] == -1).all()
    out = tmp_path / "jobs.csv"
    assert records.jobs_csv(rec, str(out), "p") == 120
    js = JobSet.from_csv(str(out))
    assert js.MaxProcs <= MACHINE
    assert (js.df["proc_alloc"].values == js.df["requested_number_of_resources"].values).all()
    used = js.utilisation
    assert float(used["load"].values[np.diff(used.index.values, append=np.inf) > 1e-5].max()) <= MACHINE
