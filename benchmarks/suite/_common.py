"""Helpers shared by the suite's benchmarks: the peers and full logs (or asv's skip without them), CPU clocks,
peer runs, and A/B timing within one process."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from benchmarks import outside

ROOT = Path(__file__).resolve().parents[2]
# The peers and the full logs lie outside the repository (benchmarks/outside.py says where);
# a benchmark that needs one that is absent is skipped by asv with the reason.
PEERS = outside.PEERS

try:
    from asv_runner.benchmarks.mark import SkipNotImplemented as _Skip  # asv skips, from setup or body
except ImportError:  # asv not installed: the suite's modules still import (tests/test_bench_suite.py)
    _Skip = NotImplementedError


def peer_path(script: str) -> Path:
    """``PEERS/script``, or asv's skip saying the peer is absent."""
    try:
        return outside.peer(script)
    except outside.Missing as exc:
        raise _Skip(str(exc)) from None


def trace(name: str) -> str:
    """The cached full log ``name`` (catalogue or archive file name), or asv's skip saying how
    to fetch it."""
    try:
        return outside.full_trace(name)
    except outside.Missing as exc:
        raise _Skip(str(exc)) from None


def load_peer(name: str) -> ModuleType:
    """Import ``PEERS/name.py`` as a module (the peers are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"peer_{name}", peer_path(f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_peer_json(script: str, args: list[str]) -> dict:
    """Run the peer ``PEERS/script`` in a fresh interpreter; its last stdout line as JSON
    (every peer reports its own timed section as ``wall_s``, start-up excluded)."""
    out = subprocess.run([sys.executable, str(peer_path(script)), *args], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_peer_cpu(name: str, args: list[str]) -> dict:
    """Run the peer ``PEERS/name.py``'s ``main()`` in this process with ``args``; its JSON line,
    in which ``wall_s`` (and every rate the peer derives from it) is the CPU seconds of this
    thread over the section the peer times: its ``time.perf_counter`` is read as
    ``time.thread_time``, so other processes on a shared machine do not count, as for ours."""
    peer = load_peer(name)
    peer.time = types.SimpleNamespace(**{**vars(time), "perf_counter": time.thread_time})
    out = io.StringIO()
    argv = sys.argv
    sys.argv = [f"{name}.py", *args]
    try:
        with contextlib.redirect_stdout(out):
            peer.main()
    finally:
        sys.argv = argv
    return json.loads(out.getvalue().strip().splitlines()[-1])


def cpu_seconds(fn: Callable[[], object]) -> tuple[float, object]:
    """(CPU seconds of this thread spent in ``fn()``, its result)."""
    t0 = time.thread_time()
    out = fn()
    return time.thread_time() - t0, out


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The fewest CPU seconds of ``repeat`` calls of ``fn`` (a shared machine only ever adds time)."""
    return min(cpu_seconds(fn)[0] for _ in range(repeat))


def ab_best(fa: Callable[[], object], fb: Callable[[], object], rounds: int,
            untimed: Callable[[], object] | None = None) -> tuple[float, float]:
    """Fewest CPU seconds of ``fa`` and of ``fb`` over ``rounds`` alternating calls (a, b, a, b, ...),
    so that load drifting during the run affects both alike; ``untimed()``, if given, is called
    before each call of ``fb``, outside its time (e.g. to give it fresh inputs)."""
    ta = tb = float("inf")
    for _ in range(rounds):
        ta = min(ta, cpu_seconds(fa)[0])
        if untimed is not None:
            untimed()
        tb = min(tb, cpu_seconds(fb)[0])
    return ta, tb
