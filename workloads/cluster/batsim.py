"""Batsim JSON workloads (``.json`` or ``.json.gz``): read as the SWF records they stand for, and write.

A Batsim workload is one JSON object: ``nb_res`` (the machine size, a positive integer),
``jobs`` (an array) and ``profiles`` (an object, name -> profile). Each job has ``id``
(an integer, or a string of one, optionally prefixed ``workload!``), ``subtime`` (s),
``res`` (processors) and ``profile`` (a name in ``profiles``); ``walltime`` (s) is
optional (absent or -1: none). Other fields are ignored, as Batsim ignores them.

The run time of a job is its profile's: ``delay`` (``DelayProfile``) gives its
``delay``; ``composed`` (``SequentialCompositionProfile``) the sum of its ``seq``
profiles' run times, ``repeat`` times (default 1). Other profile types (parallel tasks,
trace replays) take their run time from a simulated platform, which this project does
not model: a job using one is refused, naming its profile.

:func:`read_fields` turns the jobs into SWF records (``swf.read_fields``'s ``(n, 18)``
array, in file order): 1 id, 2 submit = subtime, 4 run time, 5 allocated = 8 requested
= res, 9 requested time = walltime (-1 when none); every other field -1. ``swf.read``
then applies its field rules unchanged, so a Batsim workload yields exactly the arrays an
SWF file with those records yields (estimate from the walltime; ``res = 0`` is dropped as
"no processor count"). The machine size is ``nb_res``, as the SWF header's MaxProcs.

Refused, in one line naming the file, the job (index in ``jobs`` and id) or profile,
its line in the file, and what is allowed: malformed JSON (line and column), a missing
or mistyped field, a negative or non-finite subtime, a walltime other than -1 or > 0,
res < 0 or res > nb_res, a duplicated id, an unknown profile, a profile type without a
fixed run time, a negative delay.
"""
from __future__ import annotations

import gzip
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

N_FIELDS = 18
SUFFIXES = (".json", ".json.gz")
DELAY_TYPES = ("delay", "DelayProfile")
SEQUENCE_TYPES = ("composed", "SequentialCompositionProfile")
_ID = re.compile(r"(?:[^!]*!)?(-?\d+)")
_MAX_ID = 2 ** 53               # ids travel as float64 in the records: exact below this


class BatsimError(ValueError):
    """A malformed Batsim workload; the message names the file, the job or profile, and its line."""


def is_batsim(path: str) -> bool:
    """Whether ``path`` names a Batsim JSON workload (by its suffix)."""
    return str(path).lower().endswith(SUFFIXES)


def _text(path: str) -> str:
    if str(path).lower().endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return fh.read()
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def read_fields(path: str) -> tuple[np.ndarray, int]:
    """The jobs of the workload ``path`` as float64 SWF records ``(n, 18)`` in file order, and ``nb_res``.

    Raises :class:`BatsimError` (one line: file, job index and id or profile name, line
    in the file, what is allowed) on the first malformed part.
    """
    text = _text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BatsimError(f"{path}, line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}") from None
    where = _Where(path, text)
    if not isinstance(doc, dict):
        raise BatsimError(f"{path}: a Batsim workload is a JSON object with nb_res, jobs and profiles, "
                          f"not a JSON {type(doc).__name__}")
    for key in ("nb_res", "jobs", "profiles"):
        if key not in doc:
            raise BatsimError(f"{path}: no {key!r} field; a Batsim workload has nb_res (a positive integer), "
                              "jobs (an array) and profiles (an object)")
    nb_res = doc["nb_res"]
    if not _is_int(nb_res) or nb_res <= 0:
        raise BatsimError(f"{where.top('nb_res')}: nb_res = {nb_res!r}; allowed: a positive integer (the machine size)")
    jobs, profiles = doc["jobs"], doc["profiles"]
    if not isinstance(jobs, list):
        raise BatsimError(f"{where.top('jobs')}: jobs is a JSON {type(jobs).__name__}; allowed: an array of jobs")
    if not isinstance(profiles, dict):
        raise BatsimError(f"{where.top('profiles')}: profiles is a JSON {type(profiles).__name__}; "
                          "allowed: an object, profile name -> profile")
    runs = _Profiles(profiles, where)
    data = np.full((len(jobs), N_FIELDS), -1.0)
    seen: dict[int, int] = {}
    for k, job in enumerate(jobs):
        jid, submit, res, walltime, run = _job(k, job, nb_res, runs, where)
        if jid in seen:
            raise BatsimError(f"{where.job(k, jid)}: id {jid} is also job {seen[jid]}'s; allowed: unique ids")
        seen[jid] = k
        data[k, 0], data[k, 1], data[k, 3] = jid, submit, run
        data[k, 4] = data[k, 7] = res
        data[k, 8] = walltime
    return data, int(nb_res)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _job(k: int, job: Any, nb_res: int, runs: _Profiles, where: _Where) -> tuple[int, float, int, float, float]:
    """One job's id, subtime, res, walltime (-1 = none) and run time, each checked."""
    if not isinstance(job, dict):
        raise BatsimError(f"{where.job(k)}: a job is a JSON object, not a JSON {type(job).__name__}")
    need = "each job has id, subtime, res and profile (walltime optional)"
    if "id" not in job:
        raise BatsimError(f"{where.job(k)}: no 'id' field; {need}")
    jid = _job_id(job["id"])
    if jid is None:
        raise BatsimError(f"{where.job(k)}: id = {job['id']!r}; allowed: an integer below 2^53, or a string "
                          "of one (optionally 'workload!N')")
    for key in ("subtime", "res", "profile"):
        if key not in job:
            raise BatsimError(f"{where.job(k, jid)}: no {key!r} field; {need}")
    submit = job["subtime"]
    if not _is_number(submit) or not math.isfinite(submit) or submit < 0:
        raise BatsimError(f"{where.job(k, jid)}: subtime = {submit!r}; allowed: a finite number >= 0 (s)")
    res = job["res"]
    if not _is_int(res) or res < 0 or res > nb_res:
        raise BatsimError(f"{where.job(k, jid)}: res = {res!r}; allowed: an integer from 0 to nb_res = {nb_res}")
    walltime = job.get("walltime", -1)
    if not _is_number(walltime) or not (walltime == -1 or (walltime > 0 and math.isfinite(walltime))):
        raise BatsimError(f"{where.job(k, jid)}: walltime = {walltime!r}; allowed: -1 (none) or a finite "
                          "number > 0 (s), or no walltime field")
    name = job["profile"]
    if not isinstance(name, str):
        raise BatsimError(f"{where.job(k, jid)}: profile = {name!r}; allowed: a profile name (a string)")
    if name not in runs.profiles:
        known = ", ".join(repr(p) for p in list(runs.profiles)[:5]) + (", ..." if len(runs.profiles) > 5 else "")
        raise BatsimError(f"{where.job(k, jid)}: profile {name!r} is not in profiles; allowed: one of "
                          f"{known or '(none defined)'}")
    return jid, float(submit), int(res), float(walltime), runs.run(name, k, jid)


def _job_id(raw: Any) -> int | None:
    """The job's integer id (Batsim's ids are strings or integers; the records number jobs by integers)."""
    if _is_int(raw):
        jid = raw
    elif isinstance(raw, str) and _ID.fullmatch(raw):
        jid = int(_ID.fullmatch(raw).group(1))
    else:
        return None
    return jid if abs(jid) < _MAX_ID else None


class _Profiles:
    """Run times of the profiles jobs use, each computed once (composed ones from their parts)."""

    def __init__(self, profiles: Mapping[str, Any], where: _Where) -> None:
        self.profiles, self.where = profiles, where
        self.done: dict[str, float] = {}

    def run(self, name: str, k: int, jid: int, stack: tuple[str, ...] = ()) -> float:
        if name in self.done:
            return self.done[name]
        at = _Lazy(lambda: f"{self.where.profile(name)}: profile {name!r} (job {k}, id {jid})")   # lines: on error only
        p = self.profiles[name]
        kind = p.get("type") if isinstance(p, dict) else None
        allowed = (f"allowed types: {' or '.join(map(repr, DELAY_TYPES))} (a fixed delay), "
                   f"{' or '.join(map(repr, SEQUENCE_TYPES))} of those")
        if kind in DELAY_TYPES:
            d = p.get("delay")
            if not _is_number(d) or not math.isfinite(d) or d < 0:
                raise BatsimError(f"{at}: delay = {d!r}; allowed: a finite number >= 0 (s)")
            t = float(d)
        elif kind in SEQUENCE_TYPES:
            t = self._sequence(name, p, at, k, jid, stack)
        elif kind is None:
            raise BatsimError(f"{at}: no 'type' field (or not an object); {allowed}")
        else:
            raise BatsimError(f"{at}: type {kind!r} takes its run time from a simulated platform, which "
                              f"schedsweep does not model; {allowed}")
        self.done[name] = t
        return t

    def _sequence(self, name: str, p: Mapping[str, Any], at: _Lazy, k: int, jid: int, stack: tuple[str, ...]) -> float:
        seq, repeat = p.get("seq"), p.get("repeat", 1)
        if not isinstance(seq, list) or not all(isinstance(s, str) for s in seq):
            raise BatsimError(f"{at}: seq = {seq!r}; allowed: an array of profile names")
        if not _is_int(repeat) or repeat < 1:
            raise BatsimError(f"{at}: repeat = {repeat!r}; allowed: an integer >= 1")
        for s in seq:
            if s not in self.profiles:
                raise BatsimError(f"{at}: seq names profile {s!r}, which is not in profiles")
            if s == name or s in stack:
                raise BatsimError(f"{at}: seq names {s!r}, which leads back to {name!r}; allowed: composed "
                                  "profiles without a cycle")
        t = 0.0
        for _ in range(repeat):      # in execution order, as the parts run one after the other
            for s in seq:
                t += self.run(s, k, jid, stack + (name,))
        return t


class _Lazy:
    """A message prefix made only when formatted (finding a line scans the file)."""

    def __init__(self, make: Callable[[], str]) -> None:
        self.make = make

    def __format__(self, spec: str) -> str:
        return format(self.make(), spec)


class _Where:
    """``file, line N: job K (id I)`` prefixes; line numbers are looked up only when an error is raised."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text

    def _line(self, pos: int | None) -> str:
        return f"{self.path}, line {self.text.count(chr(10), 0, pos) + 1}" if pos is not None else self.path

    def top(self, key: str) -> str:
        return self._line(_top_members(self.text).get(key, (None, None))[0])

    def job(self, k: int, jid: int | None = None) -> str:
        starts = _element_starts(self.text, _top_members(self.text).get("jobs", (None, None))[1], "[")
        pos = starts[k] if k < len(starts) else None
        return f"{self._line(pos)}: job {k}" + (f" (id {jid})" if jid is not None else "")

    def profile(self, name: str) -> str:
        pos = _element_starts(self.text, _top_members(self.text).get("profiles", (None, None))[1], "{")
        return self._line(pos.get(name) if isinstance(pos, dict) else None)


_decoder = json.JSONDecoder()
_ws = re.compile(r"[ \t\n\r]*")


def _top_members(text: str) -> dict[str, tuple[int, int]]:
    """Top-level keys of a valid JSON object -> (position of the key, position of its value); the last wins."""
    out: dict[str, tuple[int, int]] = {}
    i = _ws.match(text, 0).end() + 1          # past '{'
    while True:
        i = _ws.match(text, i).end()
        if text[i] == "}":
            return out
        key_at = i
        key, i = json.decoder.scanstring(text, i + 1)
        i = _ws.match(text, _ws.match(text, i).end() + 1).end()   # past ':'
        out[key] = (key_at, i)
        _, i = _decoder.scan_once(text, i)
        i = _ws.match(text, i).end()
        if text[i] == ",":
            i += 1


def _element_starts(text: str, at: int | None, kind: str) -> Any:
    """Where each element of the array (``kind = '['``: list of positions) or each member of the
    object (``'{'``: name -> position of its key) at ``at`` starts; empty if it is not one."""
    out: Any = [] if kind == "[" else {}
    if at is None or text[at] != kind:
        return out
    close = "]" if kind == "[" else "}"
    i = at + 1
    while True:
        i = _ws.match(text, i).end()
        if text[i] == close:
            return out
        if kind == "{":
            start = i
            key, i = json.decoder.scanstring(text, i + 1)
            i = _ws.match(text, _ws.match(text, i).end() + 1).end()
            out[key] = start
        else:
            out.append(i)
        _, i = _decoder.scan_once(text, i)
        i = _ws.match(text, i).end()
        if text[i] == ",":
            i += 1


def write(path: str, job_id: np.ndarray, submit: np.ndarray, run: np.ndarray, procs: np.ndarray,
          walltime: np.ndarray | None, nb_res: int, description: str = "job flow") -> None:
    """Write jobs as a Batsim JSON workload (gzip if ``path`` ends in .gz), one delay profile per run time.

    ``walltime`` <= 0 (or None) writes no walltime field. Numbers are written as Python's
    shortest exact form, so reading the file back gives the same float64 values.
    """
    profiles: dict[str, dict[str, Any]] = {}
    jobs = []
    for k in range(len(job_id)):
        r = float(run[k])
        name = f"delay_{_number(r)}"
        profiles.setdefault(name, {"type": "delay", "delay": _value(r)})
        job: dict[str, Any] = {"id": int(job_id[k]), "subtime": _value(float(submit[k])), "res": int(procs[k]),
                               "profile": name}
        if walltime is not None and walltime[k] > 0:
            job["walltime"] = _value(float(walltime[k]))
        jobs.append(job)
    doc = {"description": description, "nb_res": int(nb_res), "jobs": jobs, "profiles": profiles}
    opener = gzip.open(path, "wt", encoding="utf-8") if str(path).endswith(".gz") else open(path, "w", encoding="utf-8")
    with opener as fh:
        fh.write('{\n  "description": ' + json.dumps(doc["description"]) + f',\n  "nb_res": {int(nb_res)},\n')
        fh.write('  "jobs": [\n' + ",\n".join("    " + json.dumps(j) for j in jobs) + "\n  ],\n")
        fh.write('  "profiles": {\n' + ",\n".join(f"    {json.dumps(n)}: {json.dumps(p)}" for n, p in profiles.items())
                 + "\n  }\n}\n")


def _value(x: float) -> int | float:
    """Integers as JSON integers (as Batsim's own workloads write them), others as shortest exact floats."""
    return int(x) if x.is_integer() and abs(x) < _MAX_ID else x


def _number(x: float) -> str:
    return str(_value(x))


def write_swf_records(path: str, data: np.ndarray, max_procs: int, description: str = "converted from SWF") -> int:
    """Write SWF records (``swf.read_fields``'s ``(n, 18)`` array) as a Batsim workload for a
    machine of ``max_procs`` processors: the records the textbook rules keep, as they read them.

    Each usable record (run time >= 0, a processor count: allocated (5), else requested
    (8), at most ``max_procs``) becomes a job with its id, submit time, processors, a delay
    of its run time and walltime = its requested time (9) when > 0. Returns the number of
    records left out. An SWF file: ``write_swf_records(out, *swf.read_fields(path))`` when
    its header has MaxProcs.
    """
    if max_procs is None or max_procs <= 0:
        raise ValueError(f"max_procs = {max_procs!r}: the machine size (nb_res) must be a positive integer")
    procs = np.where(data[:, 4] > 0, data[:, 4], data[:, 7]).astype(np.int64)
    keep = (data[:, 3] >= 0) & (procs > 0) & (procs <= max_procs)
    write(path, data[keep, 0].astype(np.int64), data[keep, 1], data[keep, 3], procs[keep], data[keep, 8],
          int(max_procs), description=description)
    return int((~keep).sum())
