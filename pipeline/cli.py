"""The ``schedsweep`` command line."""
from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

EXIT_USAGE = 2
EXIT_ALL_FAILED = 1  # a run whose every replication failed
EXIT_SOME_FAILED = 3  # the store holds failed replications (schedsweep show STORE --failures)
EXIT_UNWRITABLE = 4  # the store cannot be written: disk full, read-only, not ours to write
EXIT_DAMAGED = 5  # chunks found damaged during the run were marked not run; the same command reruns them
RUN_EXIT_CODES = ("exit codes: 0 every replication ok (or 'no result' by the model's rule); "
                  f"{EXIT_SOME_FAILED} some replications failed (schedsweep show STORE --failures); "
                  f"{EXIT_ALL_FAILED} every replication this run ran failed; {EXIT_USAGE} a usage error or a "
                  f"refused run; {EXIT_UNWRITABLE} the store cannot be written (disk full, read-only); "
                  f"{EXIT_DAMAGED} chunks of the store were found damaged during the run (their replications "
                  "marked not run); 130, 143, 129 stopped by Ctrl-C, SIGTERM, SIGHUP. After 4, 5 or a stop, "
                  "the same command resumes.")
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
    from .execution.execute import run

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
        from .execution.slurm import SlurmOptionError, resolve_options

        slurm = {k: getattr(args, k) for k in ("jobs", "cores_per_job", "memory", "walltime", "partition",
                                               "account", "profile")}
        try:  # before anything starts: a bad profile entry is one line, not a traceback mid-run
            resolve_options(**slurm)
        except SlurmOptionError as exc:
            print(f"schedsweep: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.dry_run:
        return _dry_run(args)
    from .execution.execute import DamagedDuringRun, SweepFailed, status_counts

    spec, store, overrides = _spec_or_store(args)
    quiet = args.quiet or args.no_progress
    try:
        with _signals_interrupt():
            path = run(spec, store, workers=args.workers, scheduler=args.scheduler,
                       scheduler_file=args.scheduler_file, cluster=args.cluster, slurm_options=slurm,
                       batch_size=args.batch_size, batch_seconds=args.batch_seconds, retry_failed=args.retry_failed,
                       progress=False if quiet else None, task_timeout=args.task_timeout,
                       allow_changed_code=args.allow_changed_code, overrides=overrides)
    except SweepFailed as exc:  # the store is kept; nothing in it is a result
        print(f"schedsweep: {exc}", file=sys.stderr)
        return EXIT_ALL_FAILED
    except DamagedDuringRun as exc:  # what was damaged is marked not run; the rest is stored
        print(f"schedsweep: {exc}", file=sys.stderr)
        return EXIT_DAMAGED
    except OSError as exc:
        if exc.errno not in _UNWRITABLE:
            raise
        print(f"schedsweep: error: {_unwritable(exc, store)}", file=sys.stderr)
        return EXIT_UNWRITABLE
    print(path)
    _say_next(path)
    return EXIT_SOME_FAILED if status_counts(path)["failed"] else 0


_UNWRITABLE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def _unwritable(exc: OSError, store: str | None) -> str:
    """One line for a store that cannot be written: where, why, what to do."""
    where = exc.filename or store or "the store"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"cannot write {where}: {exc.strerror}; free space (or give --store on another disk) and run "
                "the same command again: the replications already stored are kept")
    beside_store = (exc.filename is None or store is None  # the store, its lock or its temporary build
                    or Path(exc.filename).resolve().is_relative_to(Path(store).resolve().parent))
    if not beside_store:
        return f"cannot write {where}: {exc.strerror}; make it writable and run the same command again"
    return (f"cannot write {where}: {exc.strerror}; give --store a folder you can write, or make this one "
            "writable, and run the same command again")


class _Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so the run stops as after Ctrl-C: the
    tasks stopped, the lock removed, what was written kept."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _silence_dask() -> None:
    """From here on Dask's own loggers say nothing: a stopping run's client, scheduler and
    cluster report every connection the stop breaks (a scheduler killed with its batch job
    gives a 30-line ``distributed.client`` traceback), and the one line said is the whole story."""
    import logging

    # Dask's configuration gives some children a level of their own (``distributed.client:
    # warning``), which a parent's level does not override: every such logger is quietened.
    families = ("distributed", "dask_jobqueue", "tornado")
    names = [n for n in list(logging.root.manager.loggerDict)
             if any(n == f or n.startswith(f + ".") for f in families)]
    for name in {*families, *names}:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """While a run goes on, Ctrl-C, SIGTERM (a batch system's stop) and SIGHUP (a closed
    terminal) stop it: one line at once, then the tasks are killed and the lock removed; a
    second such signal during that clean-up is ignored, so it cannot leave a lock behind. A
    signal ignored when the run starts stays ignored (``nohup schedsweep run`` outlives its
    terminal; a shell's background job ignores Ctrl-C)."""
    def stop(signum: int, frame: Any) -> None:
        journal = sys.modules.get(f"{__package__}.store.journal")
        if journal is not None and journal.after_append(lambda: stop(signum, frame)):
            return  # a journal record is being appended: stop once it is whole
        for s in STOP_SIGNALS:
            if signal.getsignal(s) is not signal.SIG_IGN:
                signal.signal(s, signal.SIG_IGN)
        lead = "\n" if sys.stderr.isatty() else ""  # below a progress bar, not over it
        print(f"{lead}schedsweep: stopping ({signal.Signals(signum).name}): the running tasks are killed, "
              "what is stored is kept", file=sys.stderr, flush=True)
        _silence_dask()
        raise _Signalled(signum) if signum != signal.SIGINT else KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    before = {s: signal.signal(s, stop) for s in STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def _dry_run(args: argparse.Namespace) -> int:
    """``run --dry-run``: the sweep's size and where it goes; nothing is run or written."""
    from .execution.execute import size_lines
    from .spec.sweep import Spec, load
    from .store.zarrstore import default_path

    spec, store, overrides = _spec_or_store(args)  # a spec file, or a store to resume
    if not isinstance(spec, Spec):
        spec = load(spec, overrides)  # refuses, like run, a sweep the client cannot hold
    store = store or default_path(spec)
    print(f"store path:  {store}{' (exists: the run resumes it)' if os.path.exists(store) else ''}")
    for line in size_lines(spec, args.batch_size):
        print(line)
    print(f"run time:    {_estimate_line(spec, store)}")
    return 0


def _estimate_line(spec: Any, store: str) -> str:
    """The whole sweep's estimated run time, as `schedsweep jobs` gives it: from the store's
    own pilot when it exists, else a pilot cached beside it, else the shipped estimate."""
    from pathlib import Path

    from .read.catalogue import Entry, cores, estimate, read_cache, seconds_per_rep

    if (Path(store) / "zarr.json").is_file():
        rate, basis = seconds_per_rep(Path(store), spec)
        seconds = None if rate is None else float(rate.sum()) * spec.replications / cores()
    else:
        seconds, basis = estimate(spec, Path(store).parent, read_cache(Path(store).parent))
    return Entry(Path(spec.path), spec, seconds=seconds, basis=basis).estimate


def _spec_or_store(args: argparse.Namespace) -> tuple[Any, str | None, list[str]]:
    """(spec, store, overrides) for ``run``: a spec file as given, or a store, which is resumed
    from the spec (and overrides) it holds, with any new ``--set`` on top."""
    from pathlib import Path

    given = Path(args.spec)
    if not (given.is_dir() and (given / "zarr.json").is_file()):
        return args.spec, args.store, args.set
    from .spec.sweep import parse
    from .store.zarrstore import StoreError, is_ours, stored_spec

    if not is_ours(given):
        raise StoreError(f"{given}: a zarr store that schedsweep did not make; give a sweep spec (TOML)")
    if args.store and Path(args.store).resolve() != given.resolve():
        raise StoreError(f"run {given} resumes that store; --store {args.store} names another one (give a spec "
                         "file to run it into a new store)")
    text, where, overrides = stored_spec(given)
    spec = parse(text, where, Path(where).parent, _folded([*overrides, *args.set]))
    return spec, str(given), []


def _folded(overrides: list[str]) -> list[str]:
    """``--set`` overrides with only the last of each key (a store's own, then the new ones):
    what the store records is the spec as it is now, not every step to it."""
    last = {item.split("=", 1)[0].strip(): k for k, item in enumerate(overrides)}
    return [item for k, item in enumerate(overrides) if last[item.split("=", 1)[0].strip()] == k]


def _say_next(path: Any) -> None:
    """One line with the next useful command: the spec's own suggestion, else its table."""
    from .base.console import say
    from .store.zarrstore import StoreError, attrs_of, open_group

    try:
        attrs = attrs_of(open_group(path, "r"))
    except (StoreError, OSError, KeyError, ValueError):
        return
    suggestion = _run_table(attrs.get("spec_text", "")).get("next")
    command = suggestion.replace("{store}", str(path)) if isinstance(suggestion, str) else f"schedsweep table {path}"
    say(f"next: {command}   (also: schedsweep report {path})")


def _run_table(text: str) -> dict:
    try:
        import tomllib

        table = tomllib.loads(text).get("run", {})
    except ValueError:
        return {}
    return table if isinstance(table, dict) else {}


def _show(args: argparse.Namespace) -> int:
    from .store.integrity import open_store
    from .read.tables import auto_lines, completeness

    if args.store.endswith(".toml") or os.path.isfile(args.store):  # a spec: what running it would make
        from .execution.execute import size_lines
        from .spec.sweep import load

        spec = load(args.store)
        print(f"spec:        {args.store} ({spec.name}: {spec.description})")
        for line in size_lines(spec):
            print(line)
        return 0
    from .store.integrity import scan

    ds = open_store(args.store, verify=False)  # damage is reported below, not raised
    a = ds.attrs
    if args.failures:
        from .store.zarrstore import read_failures

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
    report = scan(args.store)
    if not report.clean:  # the counts below would count damaged replications as what status says
        for line in report.lines():
            print(f"DAMAGED:     {line}")
        print(f"             (run the spec again to rerun them; `schedsweep check {args.store}` lists the same)")
        ds = ds.drop_vars([d.variable for d in report.damages if d.variable != "status"], errors="ignore")
    done = completeness(ds) if "status" in ds and not any(d.variable == "status" for d in report.damages) else {}
    total = sum(done.values())
    print("status:      " + (", ".join(f"{v} {k}" for k, v in done.items() if v) + f" (of {total})" if done
                             else "unreadable (damaged)"))
    if report.pending:
        print(f"journal:     {a.get('pending_results', 0)} results of a running or interrupted run are not compacted "
              "into the store yet (counted above; a run compacts them)")
    reasons = a.get("reasons", {})
    counts = {}
    for code in map(int, reasons if "reason" in ds else {}):
        if code:
            n = int((ds["reason"].values == code).sum())
            if n:
                counts[reasons[str(code)][0]] = n
    if counts:
        print("reasons:     " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    for line in auto_lines(ds):  # what replications = "auto" did
        print(line)
    if a.get("overrides"):
        print(f"overrides:   {' '.join('--set ' + o for o in a['overrides'])}")
    for part in a.get("merged_from") or []:  # each part's own (the line above: those they share)
        print(f"merged part: {part.get('store')}: "
              + (" ".join("--set " + o for o in part.get("overrides") or []) or "no overrides"))
    if a.get("reference_dropped"):
        print(f"dropped:     {len(a['reference_dropped'])} published reference point(s) the overrides removed: "
              + "; ".join(a["reference_dropped"]))
    for k, g in enumerate(a.get("grown") or []):  # the history of growth, oldest first
        sizes = ", ".join(f"{d} {g['from'][d]} to {n}" if d in g.get("from", {}) else f"{d} to {n}"
                          for d, n in g["sizes"].items())
        how = " ".join("--set " + o for o in g.get("overrides") or []) or g.get("spec_path") or "a larger spec"
        print(f"{'grown:' if k == 0 else '':<13}{sizes} ({how}{', ' + g['time'] if g.get('time') else ''})")
    print(f"made:        {a.get('created')} on {a.get('host')}, schedsweep {a.get('schedsweep_version')}, "
          f"git {(a.get('git_commit') or '-')[:10]}{' (uncommitted changes)' if a.get('git_dirty') else ''}")
    print(f"last run:    {a.get('last_run_started', '-')} → {a.get('last_run_ended', '-')}")
    print(f"versions:    {json.dumps(a.get('versions', {}))}")
    now = f" (as it is now: the text below with {' '.join('--set ' + o for o in a['overrides'])})" \
        if a.get("overrides") else " (as it is now)"
    print(f"spec:{now}")
    for line in a.get("spec_text", "").splitlines():
        print("  " + line)
    return 0


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _table_across(args: argparse.Namespace) -> int:
    """``table A B ...`` or ``table DIR``: the stores along the one spec parameter that tells
    them apart, else along ``store``."""
    from .read.across import compare
    from .read.tables import render
    from .base.terminal import width

    ds = _aligned(args.store, args.allow_mixed)
    result, how = compare(ds, args.metric, args.sel, args.paired, args.ratio, args.level, args.over)
    if how:
        print(how, file=sys.stderr)
    print(render(result, args.format, args.by, columns=None if args.wide else width()))
    return 0


def _aligned(paths: list[str], allow_mixed: bool) -> Any:
    """The stores under ``paths`` aligned (pipeline.read.across.align), saying on stderr along which
    dimension and each difference --allow-mixed let through."""
    from .read.across import open_aligned

    ds, lines = open_aligned(paths, allow_mixed)
    print("\n".join(lines), file=sys.stderr)  # the differences allowed are said, not hidden
    return ds


def _several(paths: list[str]) -> bool:
    """Several paths, or one folder that is not a store: a question across stores."""
    one = Path(paths[0])
    return len(paths) > 1 or (one.is_dir() and not (one / "zarr.json").is_file())


def _table(args: argparse.Namespace) -> int:
    from .store.integrity import open_store
    from .read.tables import compute, render

    if _several(args.store):  # stores, or a folder of them
        return _table_across(args)
    args.store = args.store[0]
    ds = open_store(args.store)
    _say_pending(ds, args.store, on_stdout=args.format == "text")
    result = compute(ds, args.metric, args.sel, args.paired, args.ratio, args.level, args.over)
    from .base.terminal import width

    print(render(result, args.format, args.by, columns=None if args.wide else width()))
    if args.format == "text" and not (args.paired or args.ratio):
        from .spec.reference import store_section
        from .read.verify import store_text

        # the published values and claims this sweep reproduces: the scorecard of `schedsweep verify`
        section = store_text(ds, args.level) or store_section(ds, args.level)
        if section:
            print()
            print(section if args.wide else _fit_lines(section, width()))
    return 0


def _fit_lines(text: str, columns: int) -> str:
    """Lines longer than ``columns`` wrapped, their continuation indented under their start."""
    from .base.terminal import wrap

    out = []
    for line in text.splitlines():
        if len(line) <= columns:
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip())
        out.append(wrap(line, indent=lead, hanging=lead + 4, columns=columns))
    return "\n".join(out)


def _check(args: argparse.Namespace) -> int:
    """Scrub a store: exit 0 when clean, 1 when damage is listed."""
    from .store.integrity import scan

    report = scan(args.store)
    for line in report.lines():
        print(f"{args.store}: DAMAGED {line}")
    if report.store_format < 2:  # status was checked against the data; the values themselves cannot be
        state = "status agrees with the data" if report.clean else f"{len(report.damages)} kinds of damage"
        print(f"{args.store}: written before checksums (store format 1): {state}, but its chunks cannot be "
              f"verified; run `schedsweep upgrade {args.store}` (or resume it: a run upgrades it first)")
        return 1
    from .store.integrity import journal_lines

    for line in journal_lines(report):  # an interrupted run's batches: copied, or run again
        print(f"{args.store}: {line}")
    state = "clean" if report.clean else f"{len(report.damages)} kinds of damage (run the spec again to rerun them)"
    pending = "; a run's journal is not compacted yet" if report.pending else ""
    print(f"{args.store}: {state}; {report.chunks} checksummed chunks in {report.files} shard files verified{pending}")
    return 0 if report.clean else 1


def _upgrade(args: argparse.Namespace) -> int:
    """Rewrite a format-1 store checksummed (pipeline.store.upgrade), under the store's lock."""
    from pathlib import Path

    from .store.zarrstore import StoreError, is_complete, locked
    from .store.upgrade import upgrade

    path = Path(args.store)
    if not is_complete(path):
        raise StoreError(f"{path}: not a schedsweep store")
    with locked(path):
        dropped = upgrade(path)
    if dropped is None:
        print(f"{path}: already in the checksummed store format; nothing to do")
        return 0
    rerun = f"; {dropped} replications of damaged chunks written as not run (the next run reruns them)" \
        if dropped else ""
    print(f"{path}: upgraded to the checksummed store format, values unchanged{rerun}")
    return 0


def _workloads(args: argparse.Namespace) -> int:
    from schedsweep import workloads

    from .spec.sweep import load_workload

    from .base.terminal import first_paragraph, plain, wrap

    if not args.name:  # the short form: one line each; the detail is under `workloads NAME`
        names = workloads.names()
        width = max(map(len, names))
        for name in names:
            module = load_workload("schedsweep workloads", name)
            text = wrap(_one_sentence(first_paragraph(module.__doc__), name), indent=width + 2)
            print(f"{name:<{width}}  {text[width + 2:]}")
        print(f"\n{len(names)} workloads; parameters, metrics and plug-in points: schedsweep workloads NAME")
        return 0
    for name in [args.name]:
        module = load_workload("schedsweep workloads", name)
        header = first_paragraph(module.__doc__)
        print(wrap(f"{name}: {header.removeprefix(name + ': ')}", hanging=4))
        print("  parameters:")
        for p in module.PARAMS:
            print(f"    {p.name} ({p.kind}, default {p.default!r})")
            print(wrap(plain(f"{p.description}. Allowed: {p.allowed()}."), indent=8))
        print("  metrics:")
        for m in module.METRICS:
            extra = "".join(f" [{d}: {', '.join(labels)}]" for d, labels in m.dims)
            timing = " (timing)" if m.timing else ""
            print(f"    {m.name} ({m.unit}){timing}")
            print(wrap(plain(f"{m.description}{extra}"), indent=8))
        reasons = {k: v for k, v in module.REASONS.items() if k}
        if reasons:
            print(wrap("reasons: " + "; ".join(f"{k} {v[0]}" for k, v in reasons.items()), indent=2, hanging=4))
        points = getattr(module, "PLUGINS", ())
        if points:
            from schedsweep.workloads.kernel_support.plugins import describe_point

            print(wrap("plug-in points (the parameter also takes 'package.module:function'; README "
                       "\"Your own algorithm\"):", indent=2, hanging=4))
            for point in points:
                for line in describe_point(point):
                    lead = len(line) - len(line.lstrip())
                    print(wrap(plain(line), indent=4 + lead, hanging=8 + lead))
        print()
    return 0


def _one_sentence(paragraph: str, name: str) -> str:
    """A docstring's first paragraph cut to its first sentence (the one-line listing)."""
    text = paragraph.removeprefix(name + ": ").strip()
    cut = re.search(r"(?<=[a-z0-9)\]])[.;](\s|$)", text)
    return text[:cut.start() + 1] if cut else text


def _gantt(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .store import records
    from .spec.sweep import label_of, parse
    from .store.zarrstore import StoreError, check_same_files, is_ours, stored_spec

    if not is_ours(Path(args.store)):
        raise StoreError(f"{args.store}: not a schedsweep store")
    text, where, overrides = stored_spec(Path(args.store))
    spec = parse(text, where, Path(where).parent, overrides)
    check_same_files(Path(args.store), spec)  # records recomputed from another file would mislead
    chosen = {k: label_of(spec.files, v) for k, v in (item.split("=", 1) for item in args.sel)}
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
    if output.lower().endswith(".csv"):    # the table, in Batsim's jobs.csv columns (evalys reads it)
        rows = records.jobs_csv(recs, output, spec.name)
        print(f"{output}: {rows} job executions in Batsim's jobs.csv columns ({source})")
        return 0
    bars = records.gantt(recs, f"{spec.name}: {label or 'single cell'}, replication {args.replication}", output)
    print(f"{output}: {bars} job pieces ({source})")
    return 0


def _say_pending(ds: Any, store: str, on_stdout: bool = True) -> None:
    """First line of a view: the run's results it includes from the journal (nothing when none).
    On stderr where stdout is data (csv, json)."""
    from .store.integrity import pending_line

    line = pending_line(ds, store)
    if line:
        print(line, file=sys.stdout if on_stdout else sys.stderr)


def _journal_first_line(store: str) -> None:
    """For the views that open the store themselves (plot, report): the same first line."""
    from .store.journal import NAME

    if (Path(store) / NAME).exists():
        from .store.integrity import open_store

        _say_pending(open_store(store, verify=False), store)


def _plot(args: argparse.Namespace) -> int:
    from .read.plot import plot_across, plot_store

    if _several(args.store):
        print(plot_across(args.store, args.metric, args.x, args.hue, args.sel, args.paired, args.level,
                          args.output, args.allow_mixed))
        return 0
    args.store = args.store[0]
    _journal_first_line(args.store)
    print(plot_store(args.store, args.metric, args.x, args.hue, args.sel, args.paired, args.level, args.output))
    return 0


def _report(args: argparse.Namespace) -> int:
    from .read.report import write_report

    if len(args.store) > 1:  # stores compared on one page
        from .read.index import write_across

        output = args.output or str(Path(args.store[0]).parent / "across.html")
        print(write_across(args.store, output, args.paired, args.level, args.figure_format, args.allow_mixed))
        return 0
    args.store = args.store[0]
    if _several([args.store]):  # a folder of stores
        from .read.index import write_index

        print(write_index(args.store, args.output, args.paired, args.level, args.figure_format))
        return 0
    _journal_first_line(args.store)
    print(write_report(args.store, args.output, args.paired, args.level, args.figure_format))
    return 0


def _export(args: argparse.Namespace) -> int:
    given = Path(args.store)
    if given.is_dir() and not (given / "zarr.json").is_file():  # a folder of stores: one dataset
        from .read.query import export_folder
        from .store.export import SUFFIX

        out = args.output or str(given.resolve().with_suffix(SUFFIX.get(args.to, "")))
        print(export_folder([given], out, args.to))
        return 0
    from .store.export import export

    print(export(args.store, args.to, args.output))
    return 0


def _merge(args: argparse.Namespace) -> int:
    from .store.export import merge

    print(merge(args.stores, args.output))
    return 0


def _stores(args: argparse.Namespace) -> int:
    from .read.stores import catalogue, render

    paths = args.paths or ["results"]
    print(render(catalogue(paths, args.workload, args.where), args.format), end="")
    return 0


def _jobs(args: argparse.Namespace) -> int:
    from .read.catalogue import entries, render

    items = entries(args.dir, args.results, run_pilot=args.estimate, pilot_seconds=args.pilot_seconds)
    print(render(items, long=bool(args.verbose)), end="")
    return 0


def _traces(args: argparse.Namespace) -> int:
    from .spec import traces

    if args.action is None:
        print(traces.listing(), end="")
    elif args.action == "fetch":
        for name in args.names:
            print(f"{name}: {traces.fetch(name)}")
    else:
        trace, path = traces.add(args.file, args.name)
        print(f"{trace.name}: {path} (sha256 {trace.sha256} checked)")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from .read import verify

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



def _verbosity() -> argparse.ArgumentParser:
    """-q/-v, accepted before the verb and after it (every verb)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("output")
    group.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="print results and errors only (no progress, no notes)")
    group.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                       help="more detail: tracebacks with errors")
    return common


def build_parser() -> argparse.ArgumentParser:
    from schedsweep import __version__

    common = _verbosity()
    parser = _Parser(prog="schedsweep", description="Simulation sweeps of scheduling algorithms.", parents=[common])
    parser.add_argument("--version", action="version", version=f"schedsweep {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_parser = sub.add_parser
    sub.add_parser = lambda *a, **k: _add_parser(*a, parents=[common], **k)  # type: ignore[method-assign]

    run = sub.add_parser("run", help="run or resume a sweep spec into its zarr store", epilog=RUN_EXIT_CODES)
    run.add_argument("spec", help="sweep spec (TOML), e.g. jobs/quickstart.toml; or a store, to resume it "
                                  "from the spec it holds")
    run.add_argument("--store", help="store path (default results/<name>.zarr)")
    run.add_argument("--workers", type=_int_in(0, 100_000), help="local worker processes (default: one per core; 0 = in this process)")
    run.add_argument("--scheduler", type=_address, help="address of a running Dask scheduler, e.g. tls://host:8786")
    run.add_argument("--scheduler-file", type=_existing_file, help="Dask scheduler file (the sbatch route)")
    run.add_argument("--cluster", choices=("local", "dask", "slurm"), default="local",
                     help="local: worker processes on this machine (default); dask: a Dask cluster on this machine "
                          "(its scheduler in a process of its own, with its dashboard); slurm: Dask workers as Slurm jobs")
    run.add_argument("--batch-size", type=_int_in(1, 10_000_000), help="replications per task (skips the pilot)")
    run.add_argument("--batch-seconds", type=_float_in(0, 86_400), help="target wall time of one task (default 2)")
    run.add_argument("--retry-failed", action="store_true", help="also rerun replications marked failed")
    run.add_argument("--task-timeout", type=_float_in(0, 10 ** 7), metavar="SECONDS",
                     help="kill a task after this long and retry its replications one by one; one that times "
                          "out again is recorded as failed (default: [run] task_timeout, else 20x the "
                          "batch's time from the pilot, at least 15 min)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--dry-run", action="store_true",
                     help="print the sweep's cells, runs, estimated store files and bytes and client memory; run nothing")
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

    show = sub.add_parser("show", help="what a store holds (or, given a spec, how big its sweep is)")
    show.add_argument("store", help="a store, or a spec (TOML): its cells, runs, store files and bytes")
    show.add_argument("--failures", action="store_true", help="print failed replications with seeds and tracebacks")
    show.set_defaults(func=_show)

    table = sub.add_parser("table", help="mean ± CI per cell and metric (of one store, or of several along "
                                         "the spec parameter that tells them apart, else along 'store')")
    table.add_argument("store", nargs="+", metavar="STORE",
                       help="a store; several stores or a folder of stores of one workload: compared along the "
                            "one spec parameter that tells them apart (one store per queue value: 'queue'), "
                            "else along 'store'")
    table.add_argument("--allow-mixed", action="store_true",
                       help="compare stores made by different model code or with metrics in different units "
                            "(the differences are printed)")
    table.add_argument("--metric", action="append", help="metric to show (repeatable; default all)")
    table.add_argument("--sel", action="append", default=[], help="DIM=VALUE (repeatable)")
    table.add_argument("--by", help="dimension whose values become columns")
    table.add_argument("--paired", help="DIM=BASELINE: paired differences against the baseline")
    table.add_argument("--over", metavar="DIM", help="with --paired: pool the paired differences over the values of "
                       "DIM (traces, windows, any dimension): one Student-t interval per remaining cell")
    table.add_argument("--ratio", help="DIM=BASELINE: ratio of means against the baseline")
    table.add_argument("--level", type=_float_in(0, 1, high_open=True), default=0.95, help="confidence level (default 0.95)")
    table.add_argument("--format", default="text", choices=("text", "csv", "markdown", "json"))
    table.add_argument("--wide", action="store_true",
                       help="metrics as columns however wide (default: a layout that fits the terminal, "
                            "100 columns when not on one)")
    table.set_defaults(func=_table)

    wl = sub.add_parser("workloads", help="list the workloads, one line each; with NAME, its parameters and metrics")
    wl.add_argument("name", nargs="?", help="a workload: its parameters, metrics, reasons and plug-in points")
    wl.set_defaults(func=_workloads)

    plot = sub.add_parser("plot", help="a metric's mean with CI against a dimension (PNG/SVG; of one store, or "
                                       "of several with the stores as the hue)")
    plot.add_argument("store", nargs="+", metavar="STORE",
                      help="a store; several stores or a folder of stores of one workload: one series per "
                           "store, along the one spec parameter that tells them apart, else along 'store'")
    plot.add_argument("--allow-mixed", action="store_true",
                      help="compare stores made by different model code or with metrics in different units "
                           "(the differences are printed)")
    plot.add_argument("--metric", required=True)
    plot.add_argument("--x", help="dimension on the x axis (default: the only dimension not taken by --sel, "
                                  "--hue or --paired)")
    plot.add_argument("--hue", help="dimension drawn as one line per value (across stores: the stores' "
                                    "dimension unless it is --x)")
    plot.add_argument("--sel", action="append", default=[], help="DIM=VALUE (repeatable)")
    plot.add_argument("--paired", help="DIM=BASELINE: plot paired differences against the baseline")
    plot.add_argument("--level", type=_float_in(0, 1, high_open=True), default=0.95, help="confidence level (default 0.95)")
    plot.add_argument("-o", "--output", help="FILE.png or FILE.svg (default beside the store; across stores "
                                             "DIR/across-METRIC-X.png, or beside the first store)")
    plot.set_defaults(func=_plot)

    gantt = sub.add_parser("gantt", help="one replication's schedule as a Gantt chart (workloads with per-job records)")
    gantt.add_argument("store")
    gantt.add_argument("--sel", action="append", default=[], help="DIM=VALUE (repeatable; every dimension of "
                                                                   "more than one value)")
    gantt.add_argument("--replication", type=int, default=0, help="replication index (default 0)")
    gantt.add_argument("-o", "--output", help="FILE.png or FILE.svg (default beside the store), or FILE.csv: "
                       "the jobs in Batsim's jobs.csv columns, as evalys reads them")
    gantt.set_defaults(func=_gantt)

    check = sub.add_parser("check", help="verify every chunk's checksum and status against the data; "
                                         "exit 0 only when the store is clean")
    check.add_argument("store")
    check.set_defaults(func=_check)

    upg = sub.add_parser("upgrade", help="rewrite a store made before checksums (format 1) in today's "
                                         "checksummed format, values unchanged")
    upg.add_argument("store")
    upg.set_defaults(func=_upgrade)

    report = sub.add_parser("report", help="a self-contained HTML report of a store; of a folder: a page "
                                           "listing its stores with their verdicts and reports; of several "
                                           "stores: one page comparing them")
    report.add_argument("store", nargs="+", metavar="STORE",
                        help="a store; a folder of stores (the page: DIR/index.html, each store's report beside "
                             "it; --paired store=NAME adds the comparison across stores of each workload); or "
                             "several stores of one workload: one page comparing them (figure, tables, the "
                             "difference against the first store or --paired)")
    report.add_argument("-o", "--output", help="HTML file (default beside the store: NAME.html; of several stores "
                                               "across.html beside the first)")
    report.add_argument("--paired", help="DIM=BASELINE (default: first value of the first dimension; across "
                                         "stores, the first store)")
    report.add_argument("--allow-mixed", action="store_true",
                        help="with several stores: compare stores made by different model code or with metrics "
                             "in different units (the differences are printed on the page)")
    report.add_argument("--level", type=_float_in(0, 1, high_open=True), default=0.95, help="confidence level (default 0.95)")
    report.add_argument("--figure-format", choices=("png", "svg"), default="png")
    report.set_defaults(func=_report)

    exp = sub.add_parser("export", help="a store as netCDF, or as a long table (parquet, csv) for other tools; "
                                        "a folder of stores as one hive-partitioned parquet dataset (or one csv)")
    exp.add_argument("store", help="a store, or a folder searched recursively for stores")
    exp.add_argument("--to", required=True, choices=("netcdf", "parquet", "csv"))
    exp.add_argument("-o", "--output", help="file to write (default beside the store: NAME.nc/.parquet/.csv)")
    exp.set_defaults(func=_export)

    mrg = sub.add_parser("merge", help="stores that differ along one sweep dimension into one store")
    mrg.add_argument("stores", nargs="+", help="two or more stores of the same spec but one dimension's values")
    mrg.add_argument("-o", "--output", required=True, help="the new store (must not exist)")
    mrg.set_defaults(func=_merge)

    sto = sub.add_parser("stores", help="list the stores in folders: spec, workload, dimensions, completeness, "
                                        "size, versions, dates (metadata only)")
    sto.add_argument("paths", nargs="*", metavar="DIR|STORE", help="stores, or folders searched recursively "
                                                                  "(default results)")
    sto.add_argument("--workload", help="only the stores of this workload")
    sto.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                     help="only stores whose spec parameter KEY is VALUE or whose sweep dimension KEY has "
                          "VALUE among its values (repeatable: all must hold)")
    sto.add_argument("--format", default="text", choices=("text", "markdown", "csv", "json"))
    sto.set_defaults(func=_stores)

    jobs = sub.add_parser("jobs", help="list the sweep specs, one line each: size and estimated run time "
                                       "(-v: with descriptions and what they reproduce)")
    jobs.add_argument("--dir", default="jobs", help="folder of specs (default jobs)")
    jobs.add_argument("--results", default="results", help="folder of stores for the estimate (default results)")
    jobs.add_argument("--estimate", action="store_true",
                      help="pilot (here, in this process) every spec without a stored or cached estimate, "
                           "and cache the result in RESULTS/.schedsweep-estimates.json")
    jobs.add_argument("--pilot-seconds", type=_float_in(0, 3600), default=1.0,
                      help="time spent per piloted cell, up to 6 cells per spec (default 1)")
    jobs.set_defaults(func=_jobs)

    trc = sub.add_parser("traces", help="the workload logs known by name (pwa:NAME in a spec): list, fetch, add")
    trc_sub = trc.add_subparsers(dest="action", metavar="{fetch,add}")
    fetch = trc_sub.add_parser("fetch", help="download into the trace cache, checked against the catalogue's SHA-256")
    fetch.add_argument("names", nargs="+", metavar="NAME")
    add = trc_sub.add_parser("add", help="register a local copy into the trace cache (its SHA-256 must be the "
                                         "catalogue's)")
    add.add_argument("file", metavar="FILE")
    add.add_argument("--name", help="the catalogue entry (default: the one of the file's hash)")
    trc.set_defaults(func=_traces)

    ver = sub.add_parser("verify", help="the reproduction scorecard: published values and claims against our CIs")
    ver.add_argument("targets", nargs="*", metavar="SPEC|STORE",
                     help="specs to run (or resume) or stores to read (default: every shipped spec with a "
                          "[reference]; with --quick, the quick set)")
    ver.add_argument("--quick", action="store_true",
                     help="reduced sizes (pipeline/read/verify.py QUICK), in a temporary folder unless --results")
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


def _cwd_on_path() -> None:
    """The current directory first on the import path, as ``python -m schedsweep`` has it, so
    that a workload or plug-in package beside the spec is found by the console script too
    (and by the worker processes, which inherit PYTHONPATH)."""
    cwd = os.getcwd()
    if "" in sys.path or cwd in sys.path:
        return
    sys.path.insert(0, cwd)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = cwd + (os.pathsep + old if old else "")


def main(argv: list[str] | None = None) -> int:
    _cwd_on_path()
    from schedsweep import workloads

    from .base.errors import QueryError, SpecError, StoreError

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a usage error (one line printed) or --help: a code, not an exception
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    from .base import console

    args.quiet, args.verbose = getattr(args, "quiet", False), getattr(args, "verbose", 0)
    console.set_level(args.quiet, args.verbose)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        return code
    except BrokenPipeError:
        return _closed_pipe()
    except (SpecError, StoreError, QueryError) as exc:  # records.QueryError is the same class
        if args.verbose:
            import traceback

            traceback.print_exc()
        print(f"schedsweep: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except workloads.UnknownWorkload as exc:
        print(f"schedsweep: error: no workload {exc.args[0]!r}; available: {', '.join(workloads.names())}",
              file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:  # a Slurm option found wrong only when the cluster starts (no TLS tool)
        slurm = sys.modules.get("schedsweep.pipeline.execution.slurm")  # only raised once that module is loaded
        if slurm is None or not isinstance(exc, slurm.SlurmOptionError):
            raise
        print(f"schedsweep: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, _Signalled) else signal.SIGINT
        print(f"schedsweep: interrupted ({signal.Signals(signum).name}); run the same command again to resume",
              file=sys.stderr)
        return 128 + signum


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
