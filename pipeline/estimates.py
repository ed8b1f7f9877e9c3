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

from .shipped import folder

FILE = "estimates.json"


@lru_cache(maxsize=1)
def shipped() -> dict[str, Any]:
    """The estimates file as a dict (empty when missing or unreadable: estimates are optional)."""
    try:
        data = json.loads((folder("jobs") / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def identity_hash(identity: str) -> str:
    """Short hash of a spec's identity: an estimate is valid for the spec it was measured on."""
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def spec_seconds_per_rep(file_name: str, identity: str) -> float | None:
    """Measured seconds per replication (one core) of the shipped spec ``file_name``, or None
    when there is none or the spec changed since it was measured."""
    entry = shipped().get("specs", {}).get(file_name)
    if not isinstance(entry, dict) or entry.get("identity") != identity_hash(identity):
        return None
    value = entry.get("seconds_per_replication")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def compile_seconds(workload: str) -> float | None:
    """CPU seconds of the workload's cold numba compile on the reference machine, or None."""
    value = shipped().get("compile_cpu_seconds", {}).get(workload)
    return float(value) if isinstance(value, (int, float)) and value > 0 else None
