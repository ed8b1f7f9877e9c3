"""Text for a terminal: reStructuredText markup of docstrings made plain, lines wrapped to
the terminal's width (100 columns when output is not a terminal)."""
from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap

DEFAULT_WIDTH = 100

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^>]*>)?`")  # :func:`name`, :mod:`~a.b`
_LITERAL = re.compile(r"``([^`]+)``")
_LINK = re.compile(r"`([^`<]+?)\s*(?:<[^>]*>)?`_{1,2}")                # `text <url>`_
_EMPH = re.compile(r"(?<![\w*])\*\*?([^*\s][^*]*?)\*\*?(?![\w*])")      # *a*, **a**


def width() -> int:
    """Columns to wrap to: the terminal's, or $COLUMNS, else 100; never under 40."""
    if "COLUMNS" in os.environ or not sys.stdout.isatty():
        try:
            return max(40, int(os.environ.get("COLUMNS", DEFAULT_WIDTH)))
        except ValueError:
            return DEFAULT_WIDTH
    return max(40, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def plain(text: str) -> str:
    """reST inline markup removed: roles, literals, links and emphasis keep their text."""
    text = _ROLE.sub(lambda m: m.group(1).split(".")[-1] if m.group(0).count("~") else m.group(1), text)
    text = _LITERAL.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    return _EMPH.sub(r"\1", text)


def first_paragraph(doc: str | None) -> str:
    """The docstring's first paragraph as one line of plain text (not its first line, which
    may end mid-sentence)."""
    paragraph = []
    for line in (doc or "").strip().splitlines():
        if not line.strip():
            break
        paragraph.append(line.strip())
    return plain(" ".join(paragraph))


def wrap(text: str, indent: int = 0, hanging: int | None = None, columns: int | None = None) -> str:
    """``text`` wrapped to the terminal's width, the first line indented by ``indent``, the
    others by ``hanging`` (default: the same)."""
    columns = columns or width()
    hanging = indent if hanging is None else hanging
    return textwrap.fill(" ".join(text.split()), width=columns, initial_indent=" " * indent,
                         subsequent_indent=" " * hanging, break_on_hyphens=False, break_long_words=True)


def format_duration(seconds: float) -> str:
    """A duration in the unit that fits, two significant digits (three from 100 on, never an
    exponent): ``42 µs``, ``1.5 ms``, ``360 ms``, ``42 s``, ``3.5 min``, ``2.1 h``, ``1.5 d``."""
    for unit, size, below in (("µs", 1e-6, 1e-3), ("ms", 1e-3, 1.0), ("s", 1, 90), ("min", 60, 90 * 60),
                              ("h", 3600, 36 * 3600)):
        if seconds < below:
            return f"{_two_digits(seconds / size)} {unit}"
    return f"{_two_digits(seconds / 86400)} d"


def _two_digits(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2g}"
