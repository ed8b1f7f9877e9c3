"""Why a ga replication is ``target_not_reached``: each period's target against the run's final.

Re-runs replication REP of a ga store's cell (the store's seed and fixed parameters, the
cell's swept values given as ``--set NAME=VALUE``) through ``planning.plan`` and prints, per
period, the target (the one-island reference's final docking gap tau and log f) beside the
run's own final tau and log f. A period misses its target when the run ends with a larger
tau, or the same tau and log f more than log(1.01) above the target's.

    python studies/ga_target_trace.py /tmp/sp.zarr 1 --set islands=2
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schedsweep.pipeline.store.integrity import open_store  # noqa: E402
from schedsweep.workloads import ga  # noqa: E402
from schedsweep.workloads._contract import substreams  # noqa: E402
from schedsweep.workloads.ga.instance import make_instance  # noqa: E402
from schedsweep.workloads.ga.planning import plan  # noqa: E402


def _value(default, text: str):
    if isinstance(default, bool):
        return text.lower() == "true"
    return type(default)(text)


def trace(store: str, rep: int, sets: list[str]) -> str:
    ds = open_store(store)
    seed = ds["seed"]
    seed = int(seed.isel({d: 0 for d in seed.dims if d != "replication"}).values[rep])
    params = {p.name: p.default for p in ga.PARAMS}
    params.update(ds.attrs["params"])
    for item in sets:
        name, _, text = item.partition("=")
        params[name] = _value(params[name], text)
    settings = ga.ga_settings(params)
    streams = substreams(seed, 1 + settings.islands)
    inst = make_instance(ga.instance_settings(params), streams[0])
    t0 = time.process_time()
    res = plan(inst, "ga", settings, streams[1:], target=params["target"])
    out = [f"replication {rep} (seed {seed}), {' '.join(sets) or 'fixed params'}: "
           f"{res.generations} generations, reached {res.reached}, {time.process_time() - t0:.1f} CPU-s (with any numba compile)",
           "| period | target tau | target log f | final tau | final log f | final f / target f |",
           "|---|---|---|---|---|---|"]
    for q, ((t_tau, t_fit), tau, lf) in enumerate(zip(res.targets, res.tau, res.log_gmean)):
        out.append(f"| {q} | {t_tau:.3f} | {t_fit:.5f} | {tau:.3f} | {lf:.5f} | {math.exp(lf - t_fit):.4f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store")
    ap.add_argument("replication", type=int)
    ap.add_argument("--set", action="append", default=[], help="NAME=VALUE: the cell's swept values")
    args = ap.parse_args(argv)
    print(trace(args.store, args.replication, args.set))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
