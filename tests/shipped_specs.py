"""Full validation of a shipped spec in any clone, the trace cache empty or not.

A spec that names catalogued logs (``trace = "pwa:NAME"``) validates against them when the
trace cache holds them. Without them (the tests' own cache is empty: ``conftest.py``) its full
validation must refuse in one line that gives the fetch command, and everything else in it is
validated on a copy whose logs are replaced by their committed excerpts (``tests/excerpts.py``):
the same workload, parameters, dimensions and cells, on files that are here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import excerpts
from schedsweep.pipeline.spec import sweep as spec_mod, traces
from schedsweep.pipeline.base.errors import SpecError

PWA = re.compile(r'"pwa:([^"]+)"')


def load_shipped(path: Path, folder: Path) -> spec_mod.Spec:
    """The spec at ``path`` fully validated (copies, if any, written into ``folder``)."""
    text = path.read_text()
    absent = [n for n in PWA.findall(text) if not traces.is_cached(traces.entry(n))]
    if not absent:
        return spec_mod.load(path)
    with pytest.raises(SpecError) as exc:
        spec_mod.load(path)
    message = str(exc.value)
    assert "\n" not in message and str(path) in message, message
    assert any(message.endswith(f"schedsweep traces fetch {n}") for n in absent), message
    copy = folder / path.name
    copy.write_text(PWA.sub(lambda m: f'"{excerpts.path(m.group(1))}"', text))
    return spec_mod.load(copy)
