"""What the command line prints besides its results: the verbosity every verb shares.

``-q`` silences informational lines and progress bars (results and errors still print);
``-v`` adds tracebacks to errors and detail lines. Kept in a module of its own so that
any layer may print through it without importing the command line.
"""
from __future__ import annotations

import sys

QUIET, NORMAL, VERBOSE = -1, 0, 1
level = NORMAL  # set once by the command line from -q/-v


def set_level(quiet: bool, verbose: int) -> None:
    global level
    level = QUIET if quiet else (VERBOSE if verbose else NORMAL)


def say(message: str, *, detail: bool = False) -> None:
    """A line on stderr, above a progress bar if one is showing; none under ``-q``, and a
    ``detail`` line only under ``-v``."""
    if level < NORMAL or (detail and level < VERBOSE):
        return
    from tqdm import tqdm

    tqdm.write(message, file=sys.stderr)
    sys.stderr.flush()
