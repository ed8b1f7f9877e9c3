"""Walltime changeovers on the multi-host namespace Slurm (``slurm/multihost.sh up``, as root):
the busy fraction of a sweep whose worker jobs reach their walltime several times, against the
same sweep whose jobs never do.

One worker job at a time (``jobs: 1``) runs sleeping replications (``benchmarks.napper``) from
the login host with ``--cluster slurm``; with ``--walltime 00:01:00`` the job hands over to a
replacement (on the other compute host) about every 40 s. Progress is read from the store
every half second: the rate is replications finished per second from the first result to the
last, and the busy fraction that rate times the replication length (one worker slot; above
100 % while a replacement overlaps the job it replaces). The figure that matters is the
ratio of the rates: what the changeovers cost.

    python -m benchmarks.bench_walltime [--replications 200] [--seconds 0.25] [--record]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import results

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "slurm" / "multihost.sh"
SPEC = """
name = "walltime"
workload = "benchmarks.napper"
replications = {reps}
seed = 7
[params]
seconds = {seconds}
[sweep]
cell = [0, 1]
"""


def _done(store: Path) -> int:
    import zarr

    try:
        return int((zarr.open_group(store, mode="r")["status"][...] != 0).sum())
    except Exception:  # noqa: BLE001 - not created yet, or half-written while we look
        return 0


def sweep(folder: Path, walltime: str, reps: int, seconds: float, batch: int) -> tuple[float, float, str]:
    """(replications per second from first to last result, wall seconds, the run's stderr)."""
    spec = folder / f"spec-{walltime.replace(':', '')}.toml"
    spec.write_text(SPEC.format(reps=reps, seconds=seconds))
    store = folder / f"{spec.stem}.zarr"
    profile = folder / "profile.yaml"
    lines = [x for x in (REPO / "slurm" / "multihost.yaml").read_text().splitlines()
             if not x.startswith("log_directory:")]
    profile.write_text("\n".join(lines) + f"\nlog_directory: {folder / 'logs'}\njobs: 1\nmin_jobs: 1\n")
    cmd = ["bash", str(SCRIPT), "run", "login", sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(spec),
           "--store", str(store), "--cluster", "slurm", "--profile", str(profile), "--walltime", walltime,
           "--batch-size", str(batch), "--no-progress"]
    env = dict(os.environ, PYTHONPATH=str(REPO), SCHEDSWEEP_COMPACT_SECONDS="0.2")
    total = 2 * reps
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    first = last = None
    at_first = 0
    while proc.poll() is None:
        done = _done(store)
        now = time.monotonic()
        if first is None and done > 0:
            first, at_first = now, done
        if done >= total and last is None:
            last = now
        time.sleep(0.5)
    err = proc.stderr.read()
    if proc.returncode != 0:
        raise SystemExit(f"the sweep with walltime {walltime} failed ({proc.returncode}):\n{err}")
    last = last or time.monotonic()
    return (total - at_first) / (last - first), time.monotonic() - t0, err


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replications", type=int, default=200, help="per cell (2 cells)")
    ap.add_argument("--seconds", type=float, default=0.25, help="each replication sleeps this long")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/bench_walltime.json")
    a = ap.parse_args(argv)
    check = subprocess.run(["bash", str(SCRIPT), "status"], capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit(f"the multi-host Slurm is not up ({check.stderr.strip()}); bash slurm/multihost.sh up")
    load_before = results.load()
    with tempfile.TemporaryDirectory(prefix="bench-walltime-") as tmp:
        folder = Path(tmp)
        steady, steady_wall, _ = sweep(folder, "00:30:00", a.replications, a.seconds, a.batch_size)
        rolled, rolled_wall, err = sweep(folder, "00:01:00", a.replications, a.seconds, a.batch_size)
    changeovers = err.count("retired before its walltime")
    figures = [
        ("busy fraction of one worker slot, walltime 30 min (no changeover)", round(100 * steady * a.seconds, 1), "%"),
        (f"busy fraction of one worker slot, walltime 1 min ({changeovers} changeovers)",
         round(100 * rolled * a.seconds, 1), "%"),
        ("throughput across changeovers, relative to no changeover", round(100 * rolled / steady, 1), "%"),
    ]
    for label, value, unit in figures:
        print(f"{label}: {results.value_text(value, unit)}")
    print(f"wall: {steady_wall:.0f} s without changeover, {rolled_wall:.0f} s with")
    if a.record:
        note = (f"{2 * a.replications} replications of {a.seconds:g} s in batches of {a.batch_size}, one worker job "
                "at a time, on the namespace cluster of slurm/multihost.sh. Busy fraction: replications per second "
                "from the first result to the last, times their length; above 100 % while a replacement job "
                "overlaps the one it replaces (both work).")
        print(results.record("bench_walltime", figures, load_before, note=note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
