"""The ``schedsweep`` command line."""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from typing import Any

EXIT_USAGE = 2
EXIT_ALL_FAILED = 1  # a run whose every replication failed
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left
INT64_MAX = 2 ** 63 - 1


class _Parser(argparse.ArgumentParser):
    """argparse with errors in one line (no usage block), exit 2, like every other refusal."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"schedsweep: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def _int_in(low: int, high: int = INT64_MAX, what: str = "an integer"):
    """An argparse type: an integer in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} in [{low}, {high}]") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} in [{low}, {high}]")
        return value
    parse.__name__ = "integer"
    return parse


def _address(text: str) -> str:
    """An argparse type: a Dask address, ``[protocol://]host:port``."""
    if not re.fullmatch(r"(?:[a-z]+://)?[^\s/:]+(?::\d{1,5})?|(?:[a-z]+://)?\[[0-9a-fA-F:.]+\](?::\d{1,5})?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a scheduler address like tls://host:8786")
    return text


def _existing_file(text: str) -> str:
    """An argparse type: a path to an existing, readable file."""
    if not os.path.isfile(text) or not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not a readable file")
    return text


def _float_in(low: float, high: float, low_open: bool = True, high_open: bool = False):
    """An argparse type: a finite number in the interval (low, high] (or as the flags say)."""
    def parse(text: str) -> float:
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        ok = math.isfinite(value) and (value > low if low_open else value >= low) \
            and (value < high if high_open else value <= high)
        if not ok:
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number in {interval}")
        return value
    parse.__name__ = "number"
    return parse


def _run(args: argparse.Namespace) -> int:
    from .execute import run

    slurm_given = [f"--{k.replace('_', '-')}" for k in ("jobs", "cores_per_job", "memory", "walltime",
                                                          "partition", "account", "profile")
                   if getattr(args, k) is not None]
    remote = args.cluster == "slurm" or args.scheduler or args.scheduler_file
    conflict = (f"{', '.join(slurm_given)} only apply with --cluster slurm" if slurm_given and args.cluster != "slurm"
                else "--workers applies to the local cluster only" if args.workers is not None and remote
                else None)
    if conflict:  # an option that would be silently ignored is refused instead
        print(f"schedsweep: error: {conflict} (see schedsweep run --help)", file=sys.stderr)
        return EXIT_USAGE
    slurm = None
    if args.cluster == "slurm":
        from .slurm import SlurmOptionError, resolve_options

        slurm = {k: getattr(args, k) for k in ("jobs", "cores_per_job", "memory", "walltime", "partition",
                                               "account", "profile")}
        try:  # before anything starts: a bad profile entry is one line, not a traceback mid-run
            resolve_options(**slurm)
        except SlurmOptionError as exc:
            print(f"schedsweep: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    from .execute import SweepFailed

    try:
        path = run(args.spec, args.store, workers=args.workers, scheduler=args.scheduler,
                   scheduler_file=args.scheduler_file, cluster=args.cluster, slurm_options=slurm,
                   batch_size=args.batch_size, batch_seconds=args.batch_seconds, retry_failed=args.retry_failed,
                   progress=False if args.no_progress else None, task_timeout=args.task_timeout,
                   allow_changed_code=args.allow_changed_code, overrides=args.set)
    except SweepFailed as exc:  # the store is kept; nothing in it is a result
        print(f"schedsweep: {exc}", file=sys.stderr)
        return EXIT_ALL_FAILED
    print(path)
    return 0


def _show(args: argparse.Namespace) -> int:
    from .store import open_store
    from .tables import completeness

    ds = open_store(args.store)
    a = ds.attrs
    if args.failures:
        from .store import read_failures

        for f in read_failures(args.store):  # those still failed: a --retry-failed run may have filled some
            print(f"--- cell {f['cell']} replication {f['replication']} seed {f['seed']}")
            print(f["traceback"].rstrip())
        return 0
    print(f"store:       {args.store}")
    print(f"sweep:       {a.get('name')} — {a.get('description', '')}")
    print(f"workload:    {a.get('workload')}   seed {a.get('seed')}   replications {a.get('replications')}")
    dims = ", ".join(f"{d}[{ds.sizes[d]}]={list(map(_plain, ds[d].values))}" for d in a.get("dims", []))
    print(f"dimensions:  {dims or '(single cell)'}")
    print(f"metrics:     {', '.join(a.get('metrics', []))}")
    done = completeness(ds)
    total = sum(done.values())
    print("status:      " + ", ".join(f"{v} {k}" for k, v in done.items() if v) + f" (of {total})")
    reasons = a.get("reasons", {})
    counts = {}
    for code in map(int, reasons):
        if code:
            n = int((ds["reason"].values == code).sum())
            if n:
                counts[reasons[str(code)][0]] = n
    if counts:
        print("reasons:     " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    for line in auto_lines(ds):
        print(line)
    if a.get("overrides"):
        print(f"overrides:   {' '.join('--set ' + o for o in a['overrides'])}")
    if a.get("reference_dropped"):
        print(f"dropped:     {len(a['reference_dropped'])} published reference point(s) the overrides removed: "
              + "; ".join(a["reference_dropped"]))
    if a.get("grown"):
        print(f"grown:       {len(a['grown'])} times in place (" + "; ".join(
            ", ".join(f"{d} to {n}" for d, n in g["sizes"].items()) for g in a["grown"]) + ")")
    print(f"made:        {a.get('created')} on {a.get('host')}, schedsweep {a.get('schedsweep_version')}, "
          f"git {(a.get('git_commit') or '-')[:10]}{' (uncommitted changes)' if a.get('git_dirty') else ''}")
    print(f"last run:    {a.get('last_run_started', '-')} → {a.get('last_run_ended', '-')}")
    print(f"versions:    {json.dumps(a.get('versions', {}))}")
    print("spec:")
    for line in a.get("spec_text", "").splitlines():
        print("  " + line)
    return 0


def auto_lines(ds: Any) -> list[str]:
    """What replications = "auto" did, per cell: replications run, precision reached, met."""
    auto = ds.attrs.get("auto")
    if not auto:
        return []
    import numpy as np

    run = np.asarray(auto["replications_run"]).ravel()
    reached = np.array([np.nan if v is None else v for v in auto["precision_reached"]], float)
    met = np.asarray(auto["met"]).ravel()
    dims = [d for d in ds.attrs.get("dims", [])]
    lines = [f"auto:        target relative precision {auto['precision']:g} of {auto['metric']}: "
             f"{int(met.sum())} of {met.size} cells met it; replications run {int(run.min())}-{int(run.max())} "
             f"of at most {auto['max_replications']}"]
    if dims and met.size <= 60:
        import itertools

        values = [list(map(_plain, ds[d].values)) for d in dims]
        for k, combo in enumerate(itertools.product(*values)):
            where = ", ".join(f"{d}={v}" for d, v in zip(dims, combo))
            lines.append(f"    {where}: {run[k]} replications, precision {reached[k]:.3g}"
                         f" {'met' if met[k] else 'NOT met'}")
    return lines


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _table(args: argparse.Namespace) -> int:
    from .store import open_store
    from .tables import compute, render

    ds = open_store(args.store)
    result = compute(ds, args.metric, args.sel, args.paired, args.ratio, args.level)
    print(render(result, args.format, args.by))
    if args.format == "text" and not (args.paired or args.ratio):
        from .reference import store_section
        from .verify import store_text

        # the published values and claims this sweep reproduces: the scorecard of `schedsweep verify`
        section = store_text(ds, args.level) or store_section(ds, args.level)
        if section:
            print()
            print(section)
    return 0


def _workloads(args: argparse.Namespace) -> int:
    from schedsweep import workloads

    from .spec import load_workload

    names = [args.name] if args.name else workloads.names()
    for name in names:
        module = load_workload("schedsweep workloads", name)
        doc = (module.__doc__ or "").strip().splitlines()
        print(f"{name}: {doc[0] if doc else ''}")
        print("  parameters:")
        for p in module.PARAMS:
            print(f"    {p.name:<24} {p.kind:<6} default {p.default!r:<14} {p.allowed()}; {p.description}")
        print("  metrics:")
        for m in module.METRICS:
            extra = "".join(f" [{d}: {', '.join(labels)}]" for d, labels in m.dims)
            timing = " (timing)" if m.timing else ""
            print(f"    {m.name:<24} {m.unit:<10} {m.description}{extra}{timing}")
        reasons = {k: v for k, v in module.REASONS.items() if k}
        if reasons:
            print("  reasons: " + "; ".join(f"{k} {v[0]}" for k, v in reasons.items()))
        points = getattr(module, "PLUGINS", ())
        if points:
            from schedsweep.workloads._plugins import describe_point

            print("  plug-in points (the parameter also takes 'package.module:function'; README \"Your own algorithm\"):")
            for point in points:
                print("\n".join("    " + line for line in describe_point(point)))
        print()
    return 0


def _gantt(args: argparse.Namespace) -> int:
    from pathlib import Path

    from . import records
    from .spec import parse
    from .store import StoreError, attrs_of, open_group

    try:
        attrs = attrs_of(open_group(Path(args.store), "r"))
    except (FileNotFoundError, KeyError, ValueError) as exc:
        raise StoreError(f"{args.store}: not a schedsweep store ({exc})") from None
    where = attrs.get("spec_path", "<spec>")
    spec = parse(attrs["spec_text"], where, Path(where).parent, attrs.get("overrides", []))
    chosen = dict(item.split("=", 1) for item in args.sel)
    unknown = set(chosen) - {d.name for d in spec.dims}
    if unknown:
        raise records.QueryError(f"--sel {', '.join(sorted(unknown))}: not a sweep dimension; "
                                 f"dimensions: {[d.name for d in spec.dims]}")
    cell = []
    for d in spec.dims:
        if d.name not in chosen:
            if len(d) > 1:
                raise records.QueryError(f"--sel {d.name}=VALUE is needed: one of {list(d.values)}")
            cell.append(0)
            continue
        hits = [i for i, v in enumerate(d.values) if str(v) == chosen[d.name]]
        if not hits:
            raise records.QueryError(f"--sel {d.name}={chosen[d.name]}: not a value; one of {list(d.values)}")
        cell.append(hits[0])
    if not 0 <= args.replication < spec.replications:
        raise records.QueryError(f"--replication {args.replication}: the store has replications 0-{spec.replications - 1}")
    recs, source = records.load(Path(args.store), spec, tuple(cell), args.replication)
    label = ", ".join(f"{k}={v}" for k, v in chosen.items())
    output = args.output or str(Path(args.store).with_suffix("")) + f"-gantt-r{args.replication}.png"
    bars = records.gantt(recs, f"{spec.name}: {label or 'single cell'}, replication {args.replication}", output)
    print(f"{output}: {bars} job pieces ({source})")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from .plot import plot_store

    print(plot_store(args.store, args.metric, args.x, args.hue, args.sel, args.paired, args.level, args.output))
    return 0


def _report(args: argparse.Namespace) -> int:
    from .report import write_report

    print(write_report(args.store, args.output, args.paired, args.level, args.figure_format))
    return 0


def _export(args: argparse.Namespace) -> int:
    from .export import export

    print(export(args.store, args.to, args.output))
    return 0


def _merge(args: argparse.Namespace) -> int:
    from .export import merge

    print(merge(args.stores, args.output))
    return 0


def _jobs(args: argparse.Namespace) -> int:
    from .catalogue import entries, render

    print(render(entries(args.dir, args.results, run_pilot=args.estimate, pilot_seconds=args.pilot_seconds)), end="")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from . import verify

    if args.quick and args.replications:
        print("schedsweep: error: give --quick or --replications N, not both (see schedsweep verify --help)",
              file=sys.stderr)
        return EXIT_USAGE
    if args.update_expected and not args.quick:
        print("schedsweep: error: --update-expected records the verdicts of --quick (see schedsweep verify --help)",
              file=sys.stderr)
        return EXIT_USAGE
    result = verify.verify(args.targets, quick=args.quick, replications=args.replications, seed=args.seed,
                           results=args.results, workers=args.workers, level=args.level)
    print(verify.render(result, args.format))
    if args.update_expected:  # the same runs under other seeds mark the verdicts that are not stable
        others = [verify.verify(args.targets, quick=True, seed=seed, results=args.results, workers=args.workers,
                                level=args.level) for seed in verify.STABILITY_SEEDS if seed != args.seed]
        path = verify.write_expected(result, others, args.update_expected)
        flapping = sum(map(len, verify.unstable(path).values()))
        print(f"wrote {path}: {flapping} verdict(s) not stable under seeds {verify.STABILITY_SEEDS}", file=sys.stderr)
    if args.check_expected:
        moves = verify.moved(result, args.check_expected)
        for line in moves:
            print(f"schedsweep verify: verdict moved: {line}", file=sys.stderr)
        if moves:
            print(f"schedsweep verify: {len(moves)} verdict(s) differ from {args.check_expected}; if on purpose: "
                  "schedsweep verify --quick --update-expected", file=sys.stderr)
            return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="schedsweep", description="Simulation sweeps of scheduling algorithms.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run or resume a sweep spec into its zarr store")
    run.add_argument("spec", help="sweep spec (TOML), e.g. jobs/quickstart.toml")
    run.add_argument("--store", help="store path (default results/<name>.zarr)")
    run.add_argument("--workers", type=_int_in(0, 100_000), help="local worker processes (default: one per core; 0 = in this process)")
    run.add_argument("--scheduler", type=_address, help="address of a running Dask scheduler, e.g. tls://host:8786")
    run.add_argument("--scheduler-file", type=_existing_file, help="Dask scheduler file (the sbatch route)")
    run.add_argument("--cluster", choices=("local", "dask", "slurm"), default="local",
                     help="local: worker processes on this machine (default); dask: a Dask LocalCluster "
                          "(with its dashboard); slurm: Dask workers as Slurm jobs")
    run.add_argument("--batch-size", type=_int_in(1, 10_000_000), help="replications per task (skips the pilot)")
    run.add_argument("--batch-seconds", type=_float_in(0, 86_400), help="target wall time of one task (default 2)")
    run.add_argument("--retry-failed", action="store_true", help="also rerun replications marked failed")
    run.add_argument("--task-timeout", type=_float_in(0, 10 ** 7), metavar="SECONDS",
                     help="kill a task after this long and retry its replications one by one; one that times "
                          "out again is recorded as failed (default: [run] task_timeout, else 20x the "
                          "batch's time from the pilot, at least 15 min)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override the spec: params.nodes=200, sweep.load=[0.5,0.9], replications=50 "
                          "(TOML values; checked like the file; recorded in the store)")
    run.add_argument("--allow-changed-code", action="store_true",
                     help="resume a store although the model's source changed since it was made (recorded)")
    slurm = run.add_argument_group("Slurm (with --cluster slurm)")
    slurm.add_argument("--jobs", type=_int_in(1, 100_000), help="maximum number of worker jobs")
    slurm.add_argument("--cores-per-job", type=_int_in(1, 100_000))
    slurm.add_argument("--memory", help="memory per job, e.g. 4GB")
    slurm.add_argument("--walltime", help="per job, e.g. 01:00:00")
    slurm.add_argument("--partition")
    slurm.add_argument("--account")
    slurm.add_argument("--profile", help="YAML profile, e.g. slurm/example-site.yaml")
    run.set_defaults(func=_run)

    show = sub.add_parser("show", help="what a store holds")
    show.add_argument("store")
    show.add_argument("--failures", action="store_true", help="print failed replications with seeds and tracebacks")
    show.set_defaults(func=_show)

    table = sub.add_parser("table", help="mean ± CI per cell and metric")
    table.add_argument("store")
    table.add_argument("--metric", action="append", help="metric to show (repeatable; default all)")
    table.add_argument("--sel", action="append", default=[], help="DIM=VALUE (repeatable)")
    table.add_argument("--by", help="dimension whose values become columns")
    table.add_argument("--paired", help="DIM=BASELINE: paired differences against the baseline")
    table.add_argument("--ratio", help="DIM=BASELINE: ratio of means against the baseline")
    table.add_argument("--level", type=_float_in(0, 1, high_open=True), default=0.95, help="confidence level (default 0.95)")
    table.add_argument("--format", default="text", choices=("text", "csv", "markdown", "json"))
    table.set_defaults(func=_table)

    wl = sub.add_parser("workloads", help="list workloads with their parameters and metrics")
    wl.add_argument("name", nargs="?")
    wl.set_defaults(func=_workloads)

    plot = sub.add_parser("plot", help="a metric's mean with CI against a dimension (PNG/SVG)")
    plot.add_argument("store")
    plot.add_argument("--metric", required=True)
    plot.add_argument("--x", required=True, help="dimension on the x axis")
    plot.add_argument("--hue", help="dimension drawn as one line per value")
    plot.add_argument("--sel", action="append", default=[], help="DIM=VALUE (repeatable)")
    plot.add_argument("--paired", help="DIM=BASELINE: plot paired differences against the baseline")
    plot.add_argument("--level", type=_float_in(0, 1, high_open=True), default=0.95, help="confidence level (default 0.95)")
    plot.add_argument("-o", "--output", help="FILE.png or FILE.svg (default beside the store)")
    plot.set_defaults(func=_plot)

    gantt = sub.add_parser("gantt", help="one replication's schedule as a Gantt chart (workloads with per-job records)")
    gantt.add_argument("store")
    gantt.add_argument("--sel", action="append", default=[], help="DIM=VALUE (repeatable; every dimension of "
                                                                   "more than one value)")
    gantt.add_argument("--replication", type=int, default=0, help="replication index (default 0)")
    gantt.add_argument("-o", "--output", help="FILE.png or FILE.svg (default beside the store)")
    gantt.set_defaults(func=_gantt)

    report = sub.add_parser("report", help="a self-contained HTML report of a store")
    report.add_argument("store")
    report.add_argument("-o", "--output", help="HTML file (default beside the store: NAME.html)")
    report.add_argument("--paired", help="DIM=BASELINE (default: first value of the first dimension)")
    report.add_argument("--level", type=_float_in(0, 1, high_open=True), default=0.95, help="confidence level (default 0.95)")
    report.add_argument("--figure-format", choices=("png", "svg"), default="png")
    report.set_defaults(func=_report)

    exp = sub.add_parser("export", help="a store as netCDF, or as a long table (parquet, csv) for other tools")
    exp.add_argument("store")
    exp.add_argument("--to", required=True, choices=("netcdf", "parquet", "csv"))
    exp.add_argument("-o", "--output", help="file to write (default beside the store: NAME.nc/.parquet/.csv)")
    exp.set_defaults(func=_export)

    mrg = sub.add_parser("merge", help="stores that differ along one sweep dimension into one store")
    mrg.add_argument("stores", nargs="+", help="two or more stores of the same spec but one dimension's values")
    mrg.add_argument("-o", "--output", required=True, help="the new store (must not exist)")
    mrg.set_defaults(func=_merge)

    jobs = sub.add_parser("jobs", help="list the sweep specs with description, size and estimated run time")
    jobs.add_argument("--dir", default="jobs", help="folder of specs (default jobs)")
    jobs.add_argument("--results", default="results", help="folder of stores for the estimate (default results)")
    jobs.add_argument("--estimate", action="store_true",
                      help="pilot (here, in this process) every spec without a stored or cached estimate, "
                           "and cache the result in RESULTS/.schedsweep-estimates.json")
    jobs.add_argument("--pilot-seconds", type=_float_in(0, 3600), default=1.0,
                      help="time spent per piloted cell, up to 6 cells per spec (default 1)")
    jobs.set_defaults(func=_jobs)

    ver = sub.add_parser("verify", help="the reproduction scorecard: published values and claims against our CIs")
    ver.add_argument("targets", nargs="*", metavar="SPEC|STORE",
                     help="specs to run (or resume) or stores to read (default: every shipped spec with a "
                          "[reference]; with --quick, the quick set)")
    ver.add_argument("--quick", action="store_true",
                     help="reduced sizes (pipeline/verify.py QUICK), in a temporary folder unless --results")
    ver.add_argument("--replications", type=_int_in(2, 10_000_000), help="run every spec at N replications")
    ver.add_argument("--seed", type=_int_in(0), help="root seed instead of the spec's (to check stability)")
    ver.add_argument("--results", help="keep the runs' stores in this folder (default: results/ for full-size "
                                       "runs, a temporary folder for reduced ones)")
    ver.add_argument("--workers", type=_int_in(0, 100_000), help="local worker processes (default: one per core)")
    ver.add_argument("--level", type=_float_in(0, 1, high_open=True), default=0.95,
                     help="confidence level (default 0.95)")
    ver.add_argument("--format", default="text", choices=("text", "markdown", "json"))
    ver.add_argument("--check-expected", nargs="?", const="benchmarks/verify-expected.json", metavar="FILE",
                     help="exit 1 if a verdict differs from FILE (default benchmarks/verify-expected.json)")
    ver.add_argument("--update-expected", nargs="?", const="benchmarks/verify-expected.json", metavar="FILE",
                     help="with --quick: write the verdicts to FILE (default benchmarks/verify-expected.json)")
    ver.set_defaults(func=_verify)
    return parser


def main(argv: list[str] | None = None) -> int:
    from schedsweep import workloads

    from .errors import QueryError, SpecError, StoreError

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a usage error (one line printed) or --help: a code, not an exception
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        return code
    except BrokenPipeError:
        return _closed_pipe()
    except (SpecError, StoreError, QueryError) as exc:  # records.QueryError is the same class
        print(f"schedsweep: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except workloads.UnknownWorkload as exc:
        print(f"schedsweep: error: no workload {exc.args[0]!r}; available: {', '.join(workloads.names())}",
              file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:  # a Slurm option found wrong only when the cluster starts (no TLS tool)
        slurm = sys.modules.get("schedsweep.pipeline.slurm")  # only raised once that module is loaded
        if slurm is None or not isinstance(exc, slurm.SlurmOptionError):
            raise
        print(f"schedsweep: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("schedsweep: interrupted; run the same command again to resume", file=sys.stderr)
        return 130


def _closed_pipe() -> int:
    """The reader of our output left (``schedsweep show … | head``): stop quietly.

    Python would report the unflushed rest at exit; pointing stdout at /dev/null drops it."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (tests)
        pass
    return EXIT_CLOSED_PIPE


if __name__ == "__main__":
    sys.exit(main())
