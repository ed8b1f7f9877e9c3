"""Calls run in a child process that can be killed.

A hung numba kernel holds the GIL and cannot be interrupted from inside its process, and
a replication that kills its process (``os._exit``, a segfault in a kernel) would take the
Dask worker, or with ``--workers 0`` the client, with it. So the replications run in a
child process: :func:`call` waits at most ``timeout`` seconds for the answer and kills the
child (SIGKILL) if it is late; a child that dies is noticed by the closed pipe.

One child per thread of the parent (a Dask worker has one task thread), started on first
use and kept for later calls and later runs, so imports and loaded numba kernels stay warm;
it is replaced after a timeout or a death, when the parent's setting changed (code,
environment, folder: :func:`drop_stale` at the start of a run), and it exits by itself
after ``IDLE_EXIT`` seconds without work. The child is ``python -m schedsweep.pipeline.execution.child``, a fresh interpreter:
it never imports the parent's ``__main__`` (a user's script without an
``if __name__ == "__main__":`` guard is safe) and on Linux it dies with the thread that
started it (``PR_SET_PDEATHSIG``), so an interrupted run leaves no spinning orphans.
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any, Callable

START_TIMEOUT = 300.0  # seconds for a child to import numpy and say it is ready (a loaded node can be slow)
# A child with nothing to do for this long exits: workers of a cluster that outlives the run
# (--scheduler) keep no idle child, while back-to-back runs and tasks find theirs warm.
IDLE_EXIT = 600.0
IDLE_EXIT_CODE = 75  # how a child that left for idleness exits (not a replication's doing)


class ChildTimeout(Exception):
    """The call did not return within its time limit; the child was killed."""

    def __init__(self, timeout: float):
        super().__init__(f"no answer within {timeout:g} s; the replication process was killed")
        self.timeout = timeout


class ChildDied(Exception):
    """The child process died during the call (``os._exit``, a signal such as SIGSEGV)."""

    def __init__(self, returncode: int | None):
        super().__init__(f"the replication process died ({describe_exit(returncode)})")
        self.returncode = returncode


class ChildError(RuntimeError):
    """The called function raised in the child; the message is the child's traceback."""


class _Gone(Exception):
    """The child had ended before the call (stopped by close_all, or killed while idle)."""


def describe_exit(returncode: int | None) -> str:
    """'exit code 3' or 'killed by SIGSEGV' for a ``Popen.returncode``."""
    import signal

    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


class _Child:
    """One child process and the two pipes to it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stamp = setting()
        self.once: set[tuple] = set()  # the calls of call_once this child has answered
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # os.pipe() descriptors are not inheritable: only this child gets the two passed here,
        # so a child sees EOF as soon as its own parent is gone, whatever else was started.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "schedsweep.pipeline.execution.child", str(to_child_r), str(from_child_w), str(os.getpid())],
            pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL, env=os.environ.copy())
        os.close(to_child_r)
        os.close(from_child_w)
        self.outbox = Connection(to_child_w, readable=False)
        self.inbox = Connection(from_child_r, writable=False)
        with _all_lock:  # stop_all kills a child that is still starting too
            _starting.add(self.proc)
        try:
            if _stopped.is_set():
                self.proc.kill()
            if not self.inbox.poll(START_TIMEOUT):
                raise ChildTimeout(START_TIMEOUT)
            self.inbox.recv()  # "ready"
            self.outbox.send(list(sys.path))  # the child imports what this process can import
        except (EOFError, OSError, ChildTimeout) as exc:
            self.kill()
            # Not the replications' fault: the task fails as a whole (retried, then 'error').
            raise ChildError(f"could not start the replication process `{sys.executable} -m schedsweep.pipeline.execution.child` "
                             f"({describe_exit(self.proc.returncode)}; {exc or type(exc).__name__})") from None
        finally:
            with _all_lock:
                _starting.discard(self.proc)

    def call(self, fn: Callable, args: tuple, timeout: float) -> Any:
        with self.lock:  # close_all stops only a child that is not in a call
            if self.proc.poll() is not None:
                raise _Gone
            try:
                return self._call(fn, args, timeout)
            except ChildError:  # the answer was read: still in step
                raise
            except BaseException:
                # Interrupted (Ctrl-C) or failed mid-call: an answer may still come, and the
                # next call would read it as its own, so this child is not used again.
                self.kill()
                raise

    def _call(self, fn: Callable, args: tuple, timeout: float) -> Any:
        try:
            self.outbox.send((fn.__module__, fn.__qualname__, args))
            if not self.inbox.poll(timeout):
                self.kill()
                raise ChildTimeout(timeout)
            status, value = self.inbox.recv()
        except (EOFError, OSError):
            try:
                self.proc.wait(timeout=5)  # its exit status says why it ended
            except subprocess.TimeoutExpired:
                pass
            self.kill()
            if self.proc.returncode == IDLE_EXIT_CODE:  # it left for idleness as this call arrived
                raise _Gone from None
            raise ChildDied(self.proc.returncode) from None
        if status == "error":
            raise ChildError(value)
        return value

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for conn in (self.outbox, self.inbox):
            try:
                conn.close()
            except (OSError, AttributeError):
                pass


_local = threading.local()
_all: set[_Child] = set()
_starting: set[subprocess.Popen] = set()  # children started and not yet ready (not in _all yet)
_all_lock = threading.Lock()


_stopped = threading.Event()  # set by stop_all: no new call starts until allow() (an interrupted run)


def call(fn: Callable, *args: Any, timeout: float) -> Any:
    """``fn(*args)`` in this thread's child process; at most ``timeout`` seconds.

    ``fn`` must be a module-level function (it is found by module and name in the child).
    Raises :class:`ChildTimeout` (child killed), :class:`ChildDied`, or :class:`ChildError`
    (``fn`` raised; the message is its traceback). After a timeout or a death the next call
    starts a new child. After :func:`stop_all`, raises :class:`ChildDied` at once.
    """
    for _ in range(2):
        if _stopped.is_set():
            raise ChildDied(None)
        child = getattr(_local, "child", None)
        if child is None:
            child = _local.child = _Child()
            with _all_lock:
                _all.add(child)
        try:
            return child.call(fn, args, timeout)
        except _Gone:  # not this call's doing: start another child and call again
            _forget(child)
        except (ChildTimeout, ChildDied):
            _forget(child)
            raise
    raise ChildError("the replication process ended twice before it was called")


def call_once(fn: Callable, *args: Any, timeout: float) -> None:
    """``fn(*args)`` as :func:`call`, unless this thread's child has already run it (it loaded
    a workload for an earlier task): one pipe round trip per task instead of two. ``args``
    must be hashable; the answer is not kept."""
    child = getattr(_local, "child", None)
    if child is not None and (fn, args) in child.once and child.proc.poll() is None:
        return
    call(fn, *args, timeout=timeout)
    _local.child.once.add((fn, args))


def _forget(child: _Child) -> None:
    child.kill()
    with _all_lock:
        _all.discard(child)
    if getattr(_local, "child", None) is child:
        _local.child = None


_VOLATILE = {"PYTEST_CURRENT_TEST"}  # changes with every test; no model reads it


def setting() -> tuple:
    """What a child inherits from this process at its start: environment, folder, import path,
    and the modification times of the loaded modules outside the Python installation (our
    pipeline and workloads, a user's model). A child started under another setting runs
    code or settings that are no longer this process's."""
    outside = (sys.prefix, sys.base_prefix, sys.exec_prefix)
    files = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and not path.startswith(outside):
            try:
                files.append((path, os.stat(path).st_mtime_ns))
            except OSError:
                pass
    environ = {k: v for k, v in os.environ.items() if k not in _VOLATILE}
    return (tuple(sorted(environ.items())), os.getcwd(), tuple(sys.path), frozenset(files))


def drop_stale() -> None:
    """Stop the idle children started under another :func:`setting` (start of a run: the
    children of the last run are kept warm unless code, environment or folder changed),
    and let go of ended ones (their thread ended, or they left for idleness)."""
    now = setting()
    with _all_lock:
        children = [child for child in _all if child.stamp != now or child.proc.poll() is not None]
    _stop_idle(children)


def close_all() -> None:
    """Stop every idle child of this process (an interrupted serial run, tests, benchmarks).

    A child in the middle of a call belongs to a task still running in another thread and
    is left alone; a stopped child is replaced on its thread's next call.
    """
    with _all_lock:
        children = list(_all)
    _stop_idle(children)


def stop_all() -> None:
    """Kill every child, busy or idle, and refuse new calls until :func:`allow` (an interrupted
    run whose tasks run in this process's threads: they end at once instead of finishing)."""
    _stopped.set()
    with _all_lock:
        children = list(_all)
        _all.clear()
        starting = list(_starting)
    for proc in [child.proc for child in children] + starting:
        if proc.poll() is None:
            proc.kill()  # not waited for: the thread that started it reaps it


def allow() -> None:
    """Calls may start children again (a new run)."""
    _stopped.clear()


def _stop_idle(children: list[_Child]) -> None:
    for child in children:
        if child.lock.acquire(blocking=False):
            try:
                child.kill()
            finally:
                child.lock.release()
            with _all_lock:
                _all.discard(child)


# -- the child's side --------------------------------------------------------------------------
def _die_with_parent(parent_pid: int) -> None:
    """Be killed when the parent goes, even while a kernel holds the GIL (Linux prctl)."""
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        # Elsewhere: a watchdog thread (runs whenever the GIL is free).
        import time

        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _serve(inbox: Connection, outbox: Connection) -> None:
    import traceback

    outbox.send("ready")
    sys.path[:] = inbox.recv()
    while True:
        try:
            if not inbox.poll(IDLE_EXIT):
                os._exit(IDLE_EXIT_CODE)  # a call racing this exit sees the code and starts another child
            module, name, args = inbox.recv()
        except EOFError:  # the parent closed the pipe or is gone
            return
        try:
            answer = ("ok", getattr(importlib.import_module(module), name)(*args))
        except (Exception, SystemExit):  # noqa: BLE001 - handed to the parent as text; sys.exit is an error too
            answer = ("error", traceback.format_exc())
        try:
            outbox.send(answer)  # pickled whole before anything is written
        except Exception:  # noqa: BLE001 - an answer that cannot be pickled is the call's error
            outbox.send(("error", traceback.format_exc()))


def main(argv: list[str]) -> None:
    import faulthandler
    import signal

    to_child, from_child, parent_pid = map(int, argv)
    _die_with_parent(parent_pid)
    # Ctrl-C is the parent's to handle (it stops the run and then this child).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.enable()  # a segfault in a kernel prints where, on the worker's stderr
    _serve(Connection(to_child, writable=False), Connection(from_child, readable=False))


if __name__ == "__main__":
    main(sys.argv[1:])
