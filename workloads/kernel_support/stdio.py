"""Keep file descriptor 1 clean of C libraries' prints (solver banners): a user pipes our
stdout (tables, JSON) on, and a print from C++ bypasses ``sys.stdout``."""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send file descriptor 1 (C libraries' prints included) to stderr for a while."""
    with _stdout_to(2):
        yield


@contextlib.contextmanager
def stdout_silenced() -> Iterator[None]:
    """Drop what is written to file descriptor 1 for a while (a library's banner: not ours to show)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with _stdout_to(devnull):
            yield
    finally:
        os.close(devnull)


@contextlib.contextmanager
def _stdout_to(fd: int) -> Iterator[None]:
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(fd, 1)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
