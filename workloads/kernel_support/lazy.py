"""Names a workload package hands on without importing them at once.

A workload's ``__init__`` declares PARAMS, METRICS, REASONS and PLUGINS; listing them
(``schedsweep workloads``, the spec validation) must not import numba and every kernel
module (so that they answer quickly). The functions and classes the package used to import from its
kernel modules stay importable from it (``from schedsweep.workloads.cyclic import run_cycle``,
``cluster.simulate``): the module's ``__getattr__`` imports them on first use, and so do its
submodules (``cluster.simulator`` without ``import ...cluster.simulator``).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any, Callable, Mapping


def handed_on(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names`` maps a name to the submodule
    (relative, e.g. ``".cycle"``) that defines it; other names are tried as submodules."""

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name], package), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)    # found directly from now on
        return value

    return __getattr__
