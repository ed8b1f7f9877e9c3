"""Run-time estimates shipped with the specs: ``jobs/estimates.json``.

Measured on the project's reference machine by ``python -m benchmarks.estimate_jobs``
(which rewrites the file): for every shipped spec its mean seconds per replication over a
few piloted cells, on one core, with the spec's identity it was measured for; and for every
workload the CPU seconds of its cold numba compile. ``schedsweep jobs`` shows the spec
estimates scaled to this machine's cores (no pilot needed), and a first run says how long
the compile it is about to wait for takes.
"""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

from ..base.shipped import folder

FILE = "estimates.json"


@lru_cache(maxsize=1)
def shipped() -> dict[str, Any]:
    """The estimates file as a dict (empty when missing or unreadable: estimates are optional)."""
    try:
        data = json.loads((folder("jobs") / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


#: Keys of a spec that do not change what a replication costs.
_NOT_COST = ("name", "description", "reproduces", "reference", "run")


def spec_key(text: str) -> str:
    """Short hash of what in a spec's text sets its cost (workload, params, sweep, replications,
    ...; not its description, references or [run] options): an estimate is valid for the spec
    as it was measured. A changed model default does not invalidate it (the cost moves little;
    the script refreshes it)."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return ""
    kept = {k: v for k, v in doc.items() if k not in _NOT_COST}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:16]


def spec_seconds_per_rep(file_name: str, text: str) -> float | None:
    """Measured seconds per replication (one core) of the shipped spec ``file_name`` whose
    text is ``text``, or None when there is none or the spec changed since it was measured."""
    entry = shipped().get("specs", {}).get(file_name)
    if not isinstance(entry, dict) or entry.get("identity") != spec_key(text):
        return None
    value = entry.get("seconds_per_replication")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def compile_seconds(workload: str) -> float | None:
    """CPU seconds of the workload's cold numba compile on the reference machine, or None."""
    value = shipped().get("compile_cpu_seconds", {}).get(workload)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None
