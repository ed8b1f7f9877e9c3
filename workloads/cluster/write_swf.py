"""``python -m schedsweep.workloads.cluster.write_swf``: simulate one replication's flow and
write its schedule (or, with ``--flow-only``, the flow itself) as an SWF file, for other
tools (pyss, AccaSim, a plotter) to read."""
from __future__ import annotations

import argparse

from . import swf
from .flows import flow, schedule
from .params import with_defaults


def main(argv: list[str] | None = None) -> None:
    """Simulate one flow and write its schedule as SWF; with ``--flow-only``, write the
    generated flow itself, unscheduled."""

    ap = argparse.ArgumentParser(description="Simulate a trace or a Lublin flow and write the schedule as SWF.")
    ap.add_argument("out", help="output .swf or .swf.gz")
    ap.add_argument("--trace", help="input SWF trace (omit for a generated Lublin flow)")
    ap.add_argument("--queue", default="easy", choices=("fcfs", "mpfs_scan", "easy", "conservative"))
    ap.add_argument("--allocation", default="first_fit")
    ap.add_argument("--seed", type=int, default=1, help="replication seed (Lublin flows, random choices)")
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                    help="other workload parameters, e.g. load=0.8 jobs=5000 (numbers parsed as such)")
    ap.add_argument("--flow-only", action="store_true",
                    help="write the job flow itself (submit, size, runtime, estimate, type), not a schedule")
    args = ap.parse_args(argv)
    params: dict = {"queue": args.queue, "allocation": args.allocation}
    if args.trace:
        params.update(source="swf", trace=args.trace)
    for item in args.set:
        name, _, value = item.partition("=")
        for conv in (int, float):
            try:
                value = conv(value)
                break
            except ValueError:
                pass
        params[name] = value
    if args.flow_only:
        f, _ = flow(with_defaults(params), args.seed)
        swf.write_flow(args.out, f.job_id, f.submit, f.tau, f.cores_req, f.estimate, int(f.node_cores.sum()),
                   f.job_type, comment=f"schedsweep cluster flow: {params}, seed {args.seed}")
        print(f"{args.out}: {f.submit.size} jobs")
        return
    f, r, wall = schedule(params, args.seed)
    swf.write(args.out, f.job_id, f.submit, r.start, r.end, f.cores_req, f.estimate, r.killed, int(f.node_cores.sum()),
          comment=f"schedsweep cluster schedule: {params}, seed {args.seed}")
    print(f"{args.out}: {f.submit.size} jobs, kernel {wall:.3f} s")


if __name__ == "__main__":
    main()
