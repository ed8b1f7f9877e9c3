"""The contract between a workload and the pipeline (see docs/contracts.md).

A workload module declares, once:

* ``PARAMS``  – a tuple of :class:`Param` (name, kind, default, range/choices, description);
* ``METRICS`` – a tuple of :class:`Metric` (name, unit, description, optional extra dims);
* ``REASONS`` – ``{code: (label, description)}`` for the int8 ``reason`` codes, 0 = none;
* ``run_batch(params, seeds) -> dict[str, np.ndarray]`` – one replication per seed;
* optionally ``check_params(params) -> list[str]`` for rules that tie parameters together;
* optionally ``deterministic(params) -> bool | str`` – true (or a few words saying why, e.g.
  ``"whole trace"``) when a cell's result does not depend on the replication's seed: the
  pipeline then runs the cell once (replication 0) and shows its value without a confidence
  interval. Declare it only where it holds for every metric but the timing ones; a wrong
  ``True`` would hide real variability (:func:`deterministic_reason`).
* optionally ``check_replications(params, replications) -> list[str]``: rules on the number
  of replications a cell is asked for (``replications``, or ``max_replications`` with
  ``"auto"``), e.g. a trace cut into fewer windows than that;
* optionally ``TAKES_REPLICATIONS = True``: ``run_batch(params, seeds, replications)`` is
  then also given each seed's replication index (int64, aligned with ``seeds``), for a
  workload whose replication r must be the r-th of something (a trace's r-th window);
  ``job_records(params, seed, replication)`` likewise. Every other workload is called as before.

Everything else (validation, store schema, CLI listing) is derived from these declarations.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

#: The kinds a parameter can have. ``path`` is a string the pipeline resolves relative to
#: the spec file; ``floats`` is a list of numbers (fixed params only, never swept).
KINDS = ("int", "float", "bool", "str", "path", "floats")
#: Integer parameters are int64 in the kernels and the store.
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_PLUGIN_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*([:.][A-Za-z_]\w*)$", re.ASCII)


def is_plugin_path(value: Any) -> bool:
    """Whether ``value`` reads as a plug-in path, ``package.module:function`` (or
    ``package.module.function``); built-in choice names have neither ':' nor '.'.
    ``workloads.kernel_support.plugins`` imports and checks the function itself."""
    return isinstance(value, str) and (":" in value or "." in value) and bool(_PLUGIN_PATH.match(value)) \
        and value.count(":") <= 1


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    default: Any
    description: str
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    # Floats must be finite unless a parameter says otherwise (nan and inf silently give
    # wrong results: mean_wait = 0 with an infinite arrival rate). ``finite=False`` allows
    # +-inf within the range (e.g. an infinite bandwidth); nan is never allowed.
    finite: bool = True
    # A choice parameter with a plug-in point (the workload's ``PLUGINS``): it also takes a
    # plug-in path, whose function the spec validation imports and compiles (workloads.kernel_support.plugins).
    plugin: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Param {self.name}: kind {self.kind!r} not in {KINDS}")

    def allowed(self) -> str:
        """What is allowed, in words, for error messages and listings."""
        if self.choices is not None:
            plugin = " or a plug-in 'package.module:function'" if self.plugin else ""
            return "one of " + ", ".join(repr(c) for c in self.choices) + plugin
        rng = ""
        if self.low is not None and self.high is not None:
            rng = f" in [{self.low}, {self.high}]"
        elif self.low is not None:
            rng = f" >= {self.low}"
        elif self.high is not None:
            rng = f" <= {self.high}"
        finite = "finite " if self.finite else ""
        noun = {"int": "an integer", "float": f"a {finite}number", "bool": "true or false",
                "str": "a string", "path": "a file path", "floats": f"a list of {finite}numbers"}[self.kind]
        return noun + rng

    def check(self, value: Any) -> tuple[Any, str | None]:
        """Return ``(normalised value, None)`` or ``(value, reason it is not allowed)``."""
        k = self.kind
        if k == "bool":
            if not isinstance(value, (bool, np.bool_)):
                return value, f"must be {self.allowed()}"
            return bool(value), None
        if k == "int":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                return value, f"must be {self.allowed()}"
            value = int(value)
            if not INT64_MIN <= value <= INT64_MAX:  # kernels take int64: a larger one would wrap
                return value, f"is beyond the 64-bit integer range; must be {self.allowed()}"
        elif k == "float":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                return value, f"must be {self.allowed()}"
            value, problem = self._as_float(value)
            if problem:
                return value, problem
        elif k in ("str", "path"):
            if not isinstance(value, str):
                return value, f"must be {self.allowed()}"
        elif k == "floats":
            if not isinstance(value, (list, tuple)) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
            ):
                return value, f"must be {self.allowed()}"
            converted = [self._as_float(v) for v in value]
            problems = [problem for _, problem in converted if problem]
            if problems:
                return value, f"has an element that {problems[0]}"
            value = tuple(v for v, _ in converted)
            bad = [v for v in value if (self.low is not None and v < self.low)
                   or (self.high is not None and v > self.high)]
            if bad:
                return value, f"must be {self.allowed()}"
            return value, None
        if self.choices is not None and value not in self.choices and not (self.plugin and is_plugin_path(value)):
            return value, f"must be {self.allowed()}"
        if k in ("int", "float"):
            if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
                return value, f"must be {self.allowed()}"
        return value, None

    def _as_float(self, value: Any) -> tuple[Any, str | None]:
        """``value`` as a float, or the reason it is not one (too large, nan or inf where not allowed)."""
        try:
            out = float(value)
        except OverflowError:
            return value, f"is too large for a 64-bit float; must be {self.allowed()}"
        if math.isnan(out):
            return out, f"is nan (not a number); must be {self.allowed()}"
        if self.finite and math.isinf(out):
            return out, f"is not a finite number; must be {self.allowed()}"
        return out, None


@dataclass(frozen=True)
class Metric:
    """A scalar output per replication, or a small fixed vector (``dims``).

    ``dims`` is a tuple of ``(dim_name, labels)``; the returned array then has shape
    ``(n_replications, len(labels), ...)``. ``timing`` metrics are wall-clock measurements
    and are left out of bit-reproducibility comparisons.
    """

    name: str
    unit: str
    description: str
    dims: tuple[tuple[str, tuple[str, ...]], ...] = field(default_factory=tuple)
    timing: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(labels) for _, labels in self.dims)


def deterministic_reason(module: Any, params: Mapping[str, Any]) -> str | None:
    """Why the cell ``params`` of workload ``module`` is deterministic (its optional
    ``deterministic`` hook; ``True`` reads as "deterministic"), or None when it is not or the
    workload declares no hook."""
    hook = getattr(module, "deterministic", None)
    if hook is None:
        return None
    answer = hook(params)
    if not answer:
        return None
    return answer if isinstance(answer, str) else "deterministic"


def params_by_name(params: tuple[Param, ...]) -> dict[str, Param]:
    return {p.name: p for p in params}


def defaults(params: tuple[Param, ...]) -> dict[str, Any]:
    return {p.name: p.default for p in params}


def substreams(seed: int | np.integer, n: int) -> list[np.random.Generator]:
    """The ``n`` independent random streams of one replication, in the workload's fixed order.

    Always spawn every stream a workload documents, even when a method does not use one,
    so that no method's draws shift another component's numbers.
    """
    children = np.random.SeedSequence(int(seed)).spawn(n)
    return [np.random.Generator(np.random.PCG64(c)) for c in children]


def substream_seeds(seed: int | np.integer, n: int) -> np.ndarray:
    """The same children as :func:`substreams`, as uint64 seeds for numba kernels."""
    children = np.random.SeedSequence(int(seed)).spawn(n)
    return np.array([c.generate_state(1, np.uint64)[0] for c in children], dtype=np.uint64)


def empty_outputs(metrics: tuple[Metric, ...], n: int) -> dict[str, np.ndarray]:
    """NaN-filled metric arrays for ``n`` replications plus a zero ``reason`` array."""
    out = {m.name: np.full((n, *m.shape), np.nan) for m in metrics}
    out["reason"] = np.zeros(n, dtype=np.int8)
    return out


RunBatch = Callable[[Mapping[str, Any], np.ndarray], dict[str, np.ndarray]]


def kernel_array(a: Any, dtype: Any) -> np.ndarray:
    """``a`` as a C-contiguous, writeable, aligned array of ``dtype``: the one array type our
    kernels are compiled for. A read-only array (pandas' ``to_numpy()``, ``np.frombuffer``)
    or a strided view would make numba compile a second copy of the whole kernel, minutes of
    CPU; converting here costs at most one copy."""
    return np.require(a, dtype=dtype, requirements=("C", "W", "A"))


#: The per-replication percentiles of per-job quantities (an extra metric dimension).
QUANTILES = (("quantile", ("p50", "p90", "p99")),)
QUANTILE_LEVELS = (50.0, 90.0, 99.0)


def quantiles(values: np.ndarray) -> np.ndarray:
    """p50, p90 and p99 of ``values`` (``numpy.percentile``'s values, linear interpolation, bit
    for bit: ``kernel_support.order_stats``, which reads a few percent of a large array where
    numpy copies and partitions all of it); NaN if empty."""
    from .kernel_support.order_stats import percentiles

    return percentiles(values, QUANTILE_LEVELS)
