"""Standard Workload Format (Parallel Workloads Archive) traces: read and write.

Field semantics (``docs/models/cluster.md``, PWA definitions, 1-based field numbers):
processors = allocated (5), or requested (8) when field 5 <= 0; run time = field 4;
estimate = max(requested time (9), run time, 1 s), so no trace job is ever killed.
Jobs with run time < 0 or no processor count are dropped (``dropped_invalid``), jobs
larger than the machine are dropped (``dropped_too_large``). Queue order: submit time,
ties by job id. Lines starting with ``;`` are header lines (``; MaxProcs: N``); a data
line that does not have exactly 18 numeric fields is an error naming file and line.
A Batsim JSON workload (``.json``, ``.json.gz``) is read as the SWF records it stands for
(``batsim.py``), its ``nb_res`` as MaxProcs; the rules below then apply to it unchanged.
"""
from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import batsim

N_FIELDS = 18
_MAXPROCS = re.compile(r";\s*MaxProcs:\s*(-?\d+)")


class SWFError(ValueError):
    """A malformed SWF file; the message names the file and the line."""


@dataclass(frozen=True)
class Trace:
    """A parsed trace, jobs in queue order (submit, id). Times in seconds."""

    path: str
    max_procs: int          # machine size used (header MaxProcs or the override)
    job_id: np.ndarray      # int64
    submit: np.ndarray      # float64
    run: np.ndarray         # float64, the real run time
    procs: np.ndarray       # int64
    estimate: np.ndarray    # float64, max(requested, run, 1)
    dropped_invalid: int
    dropped_too_large: int
    cut: np.ndarray | None = None   # pyss conversions: bool, the job ran past its request (killed there)

    @property
    def n_jobs(self) -> int:
        return int(self.job_id.size)


def _open(path: str):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def read_fields(path: str) -> tuple[np.ndarray, int | None]:
    """All data records as a float64 ``(n, 18)`` array, and the header's MaxProcs (or None).

    Raises :class:`SWFError` naming the file and 1-based line number of the first
    malformed record (wrong field count or a non-numeric field). A Batsim workload
    (``batsim.is_batsim``) gives its jobs as records and its nb_res, or raises
    ``batsim.BatsimError``.
    """
    if batsim.is_batsim(path):
        return batsim.read_fields(path)
    header_procs = None
    tokens: list[str] = []
    lines: list[int] = []
    with _open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            if not s:
                continue
            if s[0] == ";":
                m = _MAXPROCS.match(s)
                if m:
                    header_procs = int(m.group(1))
                continue
            parts = s.split()
            if len(parts) != N_FIELDS:
                raise SWFError(f"{path}, line {lineno}: expected {N_FIELDS} fields, found {len(parts)}: {s[:80]!r}")
            tokens.extend(parts)
            lines.append(lineno)
    try:
        data = np.array(tokens, dtype=np.float64).reshape(-1, N_FIELDS)
    except ValueError:
        data = None
    if data is None or not np.all(np.isfinite(data)):
        for k, lineno in enumerate(lines):  # slow path, only to name the bad line
            for f, tok in enumerate(tokens[k * N_FIELDS:(k + 1) * N_FIELDS], 1):
                try:
                    ok = np.isfinite(float(tok))
                except ValueError:
                    ok = False
                if not ok:
                    raise SWFError(f"{path}, line {lineno}: field {f} is not a finite number: {tok!r}")
    return data, header_procs


def read(path: str, max_procs: int = 0, conversion: str = "textbook") -> Trace:
    """Parse ``path`` (.swf or .swf.gz, or a Batsim .json or .json.gz) with the field rules of this module.

    ``max_procs`` > 0 overrides the header's MaxProcs; without either, SWFError.
    ``conversion = "pyss"`` applies pyss's rules instead (:func:`pyss_fields`: nothing is
    dropped, except a malformed record whose processor count exceeds the machine), with the
    requested processor count (field 8, else field 5); ``"pyss_allocated"`` the same rules
    with the allocated count (field 5) as predictsim's ``_job_input_to_job`` reads it;
    ``conversion = "walltime"`` is the default rules with estimate = requested time
    (field 9) where it is > 0 (``kill_at_estimate``: the kernel kills a job whose run time
    exceeds it, at start + estimate), else max(run time, 1 s).
    """
    data, header_procs = read_fields(path)
    if conversion not in PYSS_CONVERSIONS:  # pyss's rule submits such a record at 1 s (pyss_fields); ours has no time before 0
        _refuse_negative_submit(path, data)
    m = max_procs if max_procs > 0 else header_procs
    if m is None or m <= 0:
        raise SWFError(f"{path}: no '; MaxProcs:' header line; set trace_max_procs")
    job_id = data[:, 0].astype(np.int64)
    submit = data[:, 1]
    pyss = conversion in PYSS_CONVERSIONS
    if pyss:
        submit, run, procs, est = pyss_fields(data, m, PYSS_CONVERSIONS[conversion])
        cut = data[:, 3] > run           # run time shortened (cut at the request)
        valid = np.ones(data.shape[0], bool)
    elif conversion == "textbook":
        run = data[:, 3]
        procs = data[:, 4].astype(np.int64)
        procs = np.where(procs <= 0, data[:, 7].astype(np.int64), procs)
        valid = (run >= 0) & (procs > 0)
        est = np.maximum(np.maximum(data[:, 8], run), 1.0)
    elif conversion == "walltime":
        run = data[:, 3]
        procs = data[:, 4].astype(np.int64)
        procs = np.where(procs <= 0, data[:, 7].astype(np.int64), procs)
        valid = (run >= 0) & (procs > 0)
        est = np.where(data[:, 8] > 0, data[:, 8], np.maximum(run, 1.0))
    else:
        raise ValueError(f"conversion = {conversion!r}: allowed 'textbook', 'pyss', 'pyss_allocated', 'walltime'")
    too_large = valid & (procs > m)
    keep = valid & ~too_large
    if not pyss:
        cut = np.zeros(data.shape[0], bool)
    if pyss:      # pyss's event queue breaks ties of submit time by file order
        order = np.argsort(submit[keep], kind="stable")
    else:
        order = np.lexsort((job_id[keep], submit[keep]))
    return Trace(path=path, max_procs=int(m), job_id=job_id[keep][order], submit=submit[keep][order],
                 run=run[keep][order], procs=procs[keep][order], estimate=est[keep][order],
                 dropped_invalid=int((~valid).sum()), dropped_too_large=int(too_large.sum()),
                 cut=cut[keep][order])


def _refuse_negative_submit(path: str, data: np.ndarray) -> None:
    """SWFError naming the line of the first record submitted before time 0 (field 2 < 0;
    -1 is SWF's "unknown"): a simulation starts at 0, and a queue order of unknown submit
    times would be made up."""
    bad = np.flatnonzero(data[:, 1] < 0)
    if not bad.size:
        return
    records = -1
    with _open(path) as fh:  # only to name the line: the k-th data record
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            records += bool(s) and s[0] != ";"
            if records == bad[0]:
                break
    raise SWFError(f"{path}, line {lineno}: field 2 (submit time) is {_number(data[bad[0], 1])}: a job submitted "
                   f"before time 0 (-1 is SWF's 'unknown'); allowed: >= 0 ({bad.size} such records in the file; "
                   "semantics = \"pyss\" submits them at 1 s, as pyss does)")


#: pyss conversions of :func:`read` and the processor count each reads (``pyss_processors``).
PYSS_CONVERSIONS = {"pyss": "requested", "pyss_allocated": "allocated"}


def pyss_fields(data: np.ndarray, max_procs: int,
                processors: str = "requested") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """pyss's trace conversion of SWF records ``(n, 18)``: submit, run time, processors, estimate.

    Run time and estimate from pyss's own source, ``_job_input_to_job`` in
    ``simulation/pyss/src/base/prototype.py`` of the predictsim repository (its
    ``run_simulator.py`` feeds every data line of the trace through it, after
    ``workload_parser.parse_lines``, which skips only comments and blank lines), 1-based SWF
    field numbers. The processor count ``c``: ``processors = "requested"`` (default, as pyss
    runs in the literature: schedules of pyss on the whole KTH-SP2 log agree with it, not
    with field 5) is the requested count (8) when > 0, else the allocated count (5), as
    pyss's ``num_requested_processors`` reads it; ``"allocated"`` is field 5, as predictsim's
    ``_job_input_to_job`` reads it.

    - a record with run time (4) <= 0, ``c`` <= 0 or submit time (2) < 0 becomes a 1 s job
      with a 1 s estimate, on max(1, c) processors, submitted at max(field 2, 1);
    - every other record: estimate = int(max(requested time (9), run time, 1)),
      run time = int(max(min(requested time, run time), 1)), processors = ``c`` clamped
      to [1, machine size]. So a job that ran past its request runs until its request (it
      is cut there) but keeps its real run time as its estimate, and a job without a
      requested time (-1) runs 1 s with its real run time as its estimate;
    - no record is dropped.

    ``int`` truncates toward zero (``np.trunc`` here). The caller orders the jobs as pyss's
    event queue does: by submit time, ties in file order.
    """
    if processors not in ("requested", "allocated"):
        raise ValueError(f"processors = {processors!r}: allowed 'requested', 'allocated'")
    submit, run, alloc, req = data[:, 1], data[:, 3], data[:, 4], data[:, 8]
    if processors == "requested":
        alloc = np.where(data[:, 7] > 0, data[:, 7], alloc)
    bad = (run <= 0) | (alloc <= 0) | (submit < 0)
    est = np.where(bad, 1.0, np.trunc(np.maximum(np.maximum(req, run), 1.0)))
    run_out = np.where(bad, 1.0, np.trunc(np.maximum(np.minimum(req, run), 1.0)))
    procs = np.where(bad, np.maximum(alloc, 1), np.clip(alloc, 1, max_procs)).astype(np.int64)
    return np.where(bad, np.maximum(submit, 1.0), submit), run_out, procs, est


@lru_cache(maxsize=8)
def _read_cached(path: str, max_procs: int, mtime_ns: int, size: int, conversion: str) -> Trace:
    return read(path, max_procs, conversion)


def read_cached(path: str, max_procs: int = 0, conversion: str = "textbook") -> Trace:
    """:func:`read`, parsed once per process (keyed by path, override, mtime, size and conversion)."""
    st = os.stat(path)
    return _read_cached(os.path.abspath(path), int(max_procs), st.st_mtime_ns, st.st_size, conversion)


def write(path: str, job_id: np.ndarray, submit: np.ndarray, start: np.ndarray, end: np.ndarray,
          procs: np.ndarray, estimate: np.ndarray, killed: np.ndarray, max_procs: int,
          comment: str = "simulated schedule") -> None:
    """Write a simulated schedule as SWF (gzip if ``path`` ends in .gz).

    Fields written: 1 id, 2 submit, 3 wait = start − submit, 4 run = end − start,
    5 allocated = 8 requested = procs, 9 requested time = estimate, 11 status
    (1 completed, 0 killed at its estimate); every other field −1. Times are written with
    up to 6 decimals (integers stay integers), so an integer trace round-trips exactly.
    """
    def line(k: int) -> list[str]:
        f = ["-1"] * N_FIELDS
        f[0] = str(int(job_id[k]))
        f[1] = _number(submit[k])
        f[2] = _number(start[k] - submit[k])
        f[3] = _number(end[k] - start[k])
        f[4] = f[7] = str(int(procs[k]))
        f[8] = _number(estimate[k])
        f[10] = "0" if killed[k] else "1"
        return f

    _write_lines(path, comment, max_procs, map(line, range(len(job_id))))


def write_flow(path: str, job_id: np.ndarray, submit: np.ndarray, run: np.ndarray, procs: np.ndarray,
               estimate: np.ndarray, max_procs: int, queue: np.ndarray | None = None,
               comment: str = "generated job flow") -> None:
    """Write a job flow (before any scheduling) as SWF, a trace any simulator reads.

    Fields: 1 id, 2 submit, 4 run, 5 allocated = 8 requested = procs, 9 requested time =
    estimate, 15 queue (the job type, if given); wait and status unknown (−1)."""
    def line(k: int) -> list[str]:
        f = ["-1"] * N_FIELDS
        f[0], f[1], f[3] = str(int(job_id[k])), _number(submit[k]), _number(run[k])
        f[4] = f[7] = str(int(procs[k]))
        f[8] = _number(estimate[k])
        if queue is not None:
            f[14] = str(int(queue[k]))
        return f

    _write_lines(path, comment, max_procs, map(line, range(len(job_id))))


def _number(x: float) -> str:
    """Integers as integers, others with up to 6 decimals (an integer trace round-trips exactly)."""
    return str(int(x)) if float(x).is_integer() else f"{x:.6f}".rstrip("0")


def _write_lines(path: str, comment: str, max_procs: int, lines: Iterable[list[str]]) -> None:
    """An SWF file (gzip if ``path`` ends in .gz): the header comments, then one job per line."""
    opener = gzip.open(path, "wt") if path.endswith(".gz") else open(path, "w")
    with opener as fh:
        fh.write(f"; {comment}\n; MaxProcs: {int(max_procs)}\n")
        for fields in lines:
            fh.write(" ".join(fields) + "\n")
