"""What some benchmarks measure against lies outside the repository: the full workload logs
and the peer scripts. Without them those benchmarks say what is missing and skip; the tests
never need either (they run on ``tests/data/traces`` and the oracles ``tests/naive_*.py``).

- Full logs: the trace cache, by catalogue name or archive file name
  (``schedsweep traces``; ``schedsweep traces fetch NAME`` or ``traces add FILE`` fills it).
- Peers: the plain-Python and SimPy/DEAP programs our kernels are compared with, kept by
  the team apart from the project: the folder ``SCHEDSWEEP_PEERS`` names (unset: none).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from schedsweep.pipeline.spec import traces  # noqa: E402

_PEERS = os.environ.get("SCHEDSWEEP_PEERS")
PEERS = Path(_PEERS) if _PEERS else None


class Missing(RuntimeError):
    """A full log or a peer script a benchmark needs is not here (the message says how to get it)."""


def peer(script: str) -> Path:
    """The peer script ``script`` (e.g. ``easy_backfill_python.py``)."""
    if PEERS is None:
        raise Missing(f"this benchmark compares against the peer {script}: set SCHEDSWEEP_PEERS to the "
                      "folder of the peer scripts")
    path = PEERS / script
    if not path.is_file():
        raise Missing(f"this benchmark compares against the peer {script}, not found in {PEERS} "
                      "(set SCHEDSWEEP_PEERS to the peers' folder)")
    return path


def full_trace(name: str) -> str:
    """The cached full log ``name`` (a catalogue name, or the archive file name it is cached as)."""
    known = traces.catalogue()
    entry = known.get(name) or next((t for t in known.values() if t.file == name), None)
    if entry is None:
        raise Missing(f"no catalogued trace {name!r}; known: {', '.join(sorted(known))}")
    if not traces.is_cached(entry):
        raise Missing(f"this benchmark runs on the full log {entry.name}, not in the trace cache "
                      f"({traces.cache_dir()}): schedsweep traces fetch {entry.name}")
    return str(traces.cached_path(entry))


def skip_without(exc: Missing) -> int:
    """A script's clean exit when what it measures against is absent: the reason, status 0."""
    print(f"skipped: {exc}", file=sys.stderr)
    return 0
