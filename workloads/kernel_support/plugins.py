"""Plug-ins: a user's function running inside a workload's numba kernel.

A workload declares its plug-in points in ``PLUGINS`` (a tuple of :class:`PluginPoint`).
Each point belongs to a choice parameter (cluster ``queue``, ``allocation``, ...): the
parameter takes, besides its built-in names, a plug-in path ``"package.module:function"``
(or ``"package.module.function"``). The spec validation resolves the path here: it
imports the module, finds the function, and compiles it for the point's signature, so
that an unknown module, an unknown name or a wrong signature is one line before
anything runs.

How a plug-in reaches the kernel (measured in ``benchmarks/plugins.md``): the function
is compiled alone as a ``numba.cfunc`` of the point's fixed signature, and the kernel
takes it as a numba first-class function (``types.FunctionType``). The kernel is then
compiled once for the signature and cached on disk like every kernel; a new plug-in
costs only its own compilation (about a second for a cluster queue policy), and a call
costs an indirect call plus passing the state (25-80 ns for the cluster's ~13 arrays;
the array structures, not the call, are most of it), never Python. The alternative, passing the
``@njit`` dispatcher itself, inlines the plug-in but makes numba specialise, and
recompile, the whole kernel for every plug-in, in every process (numba does not cache
a kernel specialised on a dispatcher argument).

Adding a plug-in point to a workload (see ``workloads/cluster`` for a full one):

1. mark the choice parameter ``Param(..., choices=(built-ins), plugin=True)``;
2. declare ``PLUGINS = (PluginPoint(param=..., signature=numba signature, args=...,
   returns=..., state=...),)`` in the workload's ``__init__``: the signature uses
   :func:`ro_array` for what the plug-in only reads, :func:`rw_array` for its outputs;
   give it as a function of no argument returning the signature, with ``return_type``
   its return type as text, so that declaring the point (and ``schedsweep workloads``)
   does not import numba: it is built on first use;
3. in ``run_batch``, when the value is a plug-in path (:func:`is_path`), get the
   compiled function with :func:`function` and pass it to a kernel whose argument is
   ``types.FunctionType(signature)`` (a separate kernel, compiled only when a spec
   selects a plug-in, keeps the built-in kernels' compile time unchanged); wrap the
   state arrays with :func:`readonly` before the call; check every choice the plug-in
   returns and raise :class:`PluginError` naming the plug-in, the time and the choice
   (the pipeline records the replication as failed and the sweep goes on).

Where a plug-in module is imported from: wherever Python finds it (the current
directory, ``PYTHONPATH``, an installed package), and else from the folder of the spec
that names it; that folder is then added to ``sys.path`` and to ``PYTHONPATH`` of this
process, so that the replication processes, the Dask workers and Slurm jobs started
from it import the module the same way (:func:`resolve`).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .._contract import is_plugin_path

# numba is imported only where a plug-in is compiled: declaring a point, listing it
# (``schedsweep workloads``) and validating the rest of a spec do not need it.
# readonly, ro_array and rw_array (numba types) live in plugin_types, handed on here.
_NUMBA_NAMES = ("readonly", "ro_array", "rw_array")


def __getattr__(name: str) -> Any:
    if name in _NUMBA_NAMES:
        from . import plugin_types

        return getattr(plugin_types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["PluginPoint", "Plugin", "PluginError", "is_path", "point_of", "resolve", "function", "ro_array", "rw_array",
           "readonly", "describe_point"]

_OURS = Path(__file__).resolve().parent   # plug-ins under workloads/ are cached (their caches are kept current)


class PluginError(ValueError):
    """A plug-in path that cannot be used (import, name, signature), or a plug-in's
    impossible choice at run time; the message is one line."""


@dataclass(frozen=True)
class PluginPoint:
    """A place in a workload's kernel where a user's function decides.

    ``param``: the choice parameter that takes a plug-in path; ``signature``: the numba
    signature the function is compiled for (read-only arrays where it only reads), or a
    function of no argument returning it (called on first use, so that the declaration
    does not import numba; then ``return_type`` gives its return type as text for the
    listing, and a test checks the two agree);
    ``args``: (name, meaning with units) per argument; ``returns``: what the result means;
    ``state``: (field, meaning with units) of a state record argument, if any;
    ``builtins``: built-in choices re-written as plug-ins (path each), for reference and
    tests; ``helpers``: the module of njit helpers a plug-in may call.
    """

    param: str
    name: str
    signature: Any
    args: tuple[tuple[str, str], ...]
    returns: str
    state: tuple[tuple[str, str], ...] = ()
    builtins: tuple[tuple[str, str], ...] = ()
    helpers: str = ""
    notes: str = ""
    return_type: str = ""

    @property
    def numba_signature(self) -> Any:
        """The numba signature (built on first use when ``signature`` is a function)."""
        return _built(self.signature) if callable(self.signature) else self.signature

    def call_form(self) -> str:
        returns = self.return_type or self.numba_signature.return_type
        return f"{self.name}({', '.join(a for a, _ in self.args)}) -> {returns}"


@functools.cache
def _built(make: Any) -> Any:
    return make()


@dataclass(frozen=True)
class Plugin:
    """A resolved plug-in: its path, where it lives and the compiled function the kernel takes."""

    path: str
    module: ModuleType
    function: str
    cfunc: Any = field(repr=False)
    file: str


is_path = is_plugin_path


def split(path: str) -> tuple[str, str]:
    """(module, function) of a plug-in path."""
    if ":" in path:
        module, _, func = path.partition(":")
    else:
        module, _, func = path.rpartition(".")
    return module, func


def point_of(module: ModuleType, param: str) -> PluginPoint:
    """The plug-in point of ``param`` that the workload ``module`` declares in ``PLUGINS``."""
    for point in getattr(module, "PLUGINS", ()):
        if point.param == param:
            return point
    raise PluginError(f"parameter {param!r} of workload {module.__name__} takes no plug-in "
                      f"(its PLUGINS declare: {', '.join(p.param for p in getattr(module, 'PLUGINS', ())) or 'none'})")


_compiled: dict[tuple[str, str, int], Plugin] = {}   # (path, signature, file mtime) -> plug-in


def resolve(path: str, point: PluginPoint, base_dir: str | Path | None = None) -> Plugin:
    """Import, check and compile the plug-in ``path`` for ``point``; PluginError (one line) if it cannot be used.

    ``base_dir``: the spec's folder, searched when the module is not importable otherwise.
    Compiled plug-ins are kept per process (a changed file is compiled again)."""
    if not is_path(path):
        raise PluginError(f"{path!r} is not a plug-in path: write 'package.module:function'")
    modname, func = split(path)
    module = _import(modname, base_dir)
    file = getattr(module, "__file__", None) or ""
    stamp = os.stat(file).st_mtime_ns if file and os.path.exists(file) else 0
    key = (path, str(point.numba_signature), stamp)    # two workloads may name a point alike
    if key in _compiled:
        return _compiled[key]
    if not hasattr(module, func):
        public = [n for n, v in vars(module).items() if not n.startswith("_") and callable(v)
                  and getattr(v, "__module__", None) == module.__name__]
        raise PluginError(f"module {modname!r} ({file}) has no function {func!r}"
                          + (f"; it defines: {', '.join(sorted(public))}" if public else ""))
    obj = getattr(module, func)
    cf = _compile(obj, point, path, file)
    plugin = Plugin(path, module, func, cf, file)
    _compiled[key] = plugin
    return plugin


def function(module: ModuleType, param: str, value: str) -> Any:
    """The compiled function (a cfunc, typed ``FunctionType`` in a kernel) of the plug-in
    path ``value`` of parameter ``param``, or of the built-in ``value`` when the point
    lists it among ``builtins`` (a built-in re-written as a plug-in)."""
    point = point_of(module, param)
    builtins = dict(point.builtins)
    return resolve(builtins.get(value, value), point).cfunc


_loaded: dict[str, int] = {}   # module name -> its file's mtime when imported here


def _import(modname: str, base_dir: str | Path | None) -> ModuleType:
    """The module, imported again if its file changed since (an edit in a long-lived
    process, e.g. a notebook, must not run the old code under the new code's hash)."""
    module = _import_once(modname, base_dir)
    file = getattr(module, "__file__", None)
    stamp = os.stat(file).st_mtime_ns if file and os.path.exists(file) else 0
    if _loaded.setdefault(modname, stamp) != stamp:
        try:
            module = importlib.reload(module)
        except Exception as exc:  # noqa: BLE001 - the edited module does not import: say why
            raise PluginError(f"importing module {modname!r} failed: {exc.__class__.__name__}: {_one_line(exc)}") \
                from None
        _loaded[modname] = stamp
    return module


def _import_once(modname: str, base_dir: str | Path | None) -> ModuleType:
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        top = modname.split(".")[0]
        missing_top = exc.name == top
        if missing_top and base_dir is not None and _beside(Path(base_dir), top):
            _add_to_path(Path(base_dir).resolve())
            return _import_once(modname, None)
        where = f"; looked in the spec's folder {Path(base_dir).resolve()} too" if base_dir is not None else ""
        raise PluginError(f"cannot import module {modname!r}: {exc.__class__.__name__}: {_one_line(exc)} "
                          f"(a plug-in module is imported from the current directory, PYTHONPATH, an installed "
                          f"package or the spec's folder{where})") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed to import: its error is the message
        raise PluginError(f"importing module {modname!r} failed: {exc.__class__.__name__}: {_one_line(exc)}") \
            from None


def _beside(folder: Path, top: str) -> bool:
    return (folder / top / "__init__.py").is_file() or (folder / f"{top}.py").is_file()


def _add_to_path(folder: Path) -> None:
    """Make ``folder`` importable here and in every process started from here on."""
    text = str(folder)
    if text not in sys.path:
        sys.path.insert(0, text)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if text not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([text] + parts)
    importlib.invalidate_caches()


def _compile(obj: Any, point: PluginPoint, path: str, file: str) -> Any:
    """The plug-in compiled as a cfunc of the point's signature (one-line errors)."""
    import numba
    from numba.core.ccallback import CFunc

    sig = point.numba_signature
    if isinstance(obj, CFunc):
        if obj._sig != sig:
            raise PluginError(f"{path} is a numba cfunc of signature {obj._sig}; the {point.param} point needs "
                              f"{sig}")
        return obj
    py = getattr(obj, "py_func", obj)    # an @njit dispatcher: its Python function, compiled for the point
    if not inspect.isfunction(py):
        raise PluginError(f"{path} is a {type(obj).__name__}, not a function")
    try:
        params = inspect.signature(py).parameters.values()
    except (TypeError, ValueError):
        params = ()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) != len(sig.args) or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise PluginError(f"{path} takes {len(positional)} argument(s) ({', '.join(p.name for p in positional)}); "
                          f"the {point.param} point calls {point.call_form()}")
    cache = Path(file).resolve().is_relative_to(_OURS) if file else False
    try:
        # error_model python: a division by zero raises, as in plain Python. A cfunc cannot
        # hand the exception to the kernel: numba's wrapper writes it as "unraisable" and
        # returns 0; :func:`fails_loudly` turns that into the replication's error.
        return numba.cfunc(sig, cache=cache, error_model="python")(py)
    except Exception as exc:  # noqa: BLE001 - numba's typing error, made one line
        raise PluginError(f"{path} does not compile for the {point.param} point {point.call_form()}: "
                          f"{_numba_reason(exc)}") from None


def _numba_reason(exc: BaseException) -> str:
    """The first informative line of a numba compile error."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    skip = ("Failed in nopython mode", "Failed in", "During:", "File ", "^", "- Resolution failure",
            "No implementation of function", "Rejected as the implementation", "- Of which")
    keep = [ln for ln in lines if not ln.startswith(skip)]
    text = keep[0] if keep else (lines[0] if lines else exc.__class__.__name__)
    return f"{exc.__class__.__name__}: {text}"[:400]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def describe_point(point: PluginPoint) -> list[str]:
    """Lines for ``schedsweep workloads NAME``: the signature and the state a plug-in sees."""
    out = [f"{point.param}: {point.call_form()}"]
    for name, meaning in point.args:
        out.append(f"    {name:<10} {meaning}")
    out.append(f"    returns    {point.returns}")
    if point.state:
        out.append("  state (read-only):")
        for name, meaning in point.state:
            out.append(f"    {name:<12} {meaning}")
    if point.helpers:
        out.append(f"  helpers: {point.helpers}")
    if point.builtins:
        out.append("  built-ins as plug-ins: " + ", ".join(f"{n} = {p}" for n, p in point.builtins))
    if point.notes:
        out.append(f"  {point.notes}")
    return out


# ------------------------------------------------------------------ errors a plug-in raises
# A plug-in runs as a cfunc inside a kernel: when it raises (integer division by zero, an
# index out of range, ``raise``), numba's C wrapper hands the exception to
# ``sys.unraisablehook`` and returns 0 to the kernel, which goes on. :func:`raised_by`
# records those exceptions while a workload runs and fails the call afterwards.
_lock = threading.Lock()
_recorders: dict[int, list] = {}        # thread id -> exceptions its plug-ins raised
_previous_hook: Any = None


def _record(unraisable: Any) -> None:
    with _lock:
        own = _recorders.get(threading.get_ident())
        # a kernel's worker thread (numba parallel) has no recorder: every running call gets it
        targets = [own] if own is not None else list(_recorders.values())
    if not targets:
        (_previous_hook or sys.__unraisablehook__)(unraisable)
        return
    for rec in targets:
        rec.append((unraisable.exc_type, unraisable.exc_value))


@contextlib.contextmanager
def raised_by(names: list[str]) -> Iterator[None]:
    """Raise :class:`PluginError` at the end of the block if a plug-in raised inside it.

    ``names`` says who could have raised (e.g. ``"queue plug-in pkg.mod:f"``; the wrapper
    does not say which cfunc raised). The first exception is named, with the count; an
    error the kernel raised after it (it went on with a 0 from the plug-in) is replaced by it.
    """
    global _previous_hook
    rec: list = []
    with _lock:
        if not _recorders:
            _previous_hook, sys.unraisablehook = sys.unraisablehook, _record
        _recorders[threading.get_ident()] = rec
    try:
        try:
            yield
        except Exception as exc:
            if rec:
                raise PluginError(_raised_message(names, rec)) from exc
            raise
        if rec:
            raise PluginError(_raised_message(names, rec))
    finally:
        with _lock:
            del _recorders[threading.get_ident()]
            if not _recorders:
                sys.unraisablehook, _previous_hook = _previous_hook, None


def _raised_message(names: list[str], rec: list) -> str:
    exc_type, exc_value = rec[0]
    who = " or ".join(names) if names else "a plug-in"
    more = f" (and {len(rec) - 1} more exceptions in the same run)" if len(rec) > 1 else ""
    return f"{who} raised {exc_type.__name__}: {_one_line(exc_value)}{more}"


def fails_loudly(run_batch: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a workload's ``run_batch``: when a parameter names a plug-in and the plug-in
    raises, the call fails with :class:`PluginError` naming it (the pipeline then records
    the replication as failed, with the message, and the sweep goes on)."""

    @functools.wraps(run_batch)
    def run(params: Mapping[str, Any], seeds: Any, *more: Any) -> Any:
        points = getattr(sys.modules[run_batch.__module__], "PLUGINS", ())
        named = [f"{pt.param} plug-in {params[pt.param]}" for pt in points
                 if isinstance(params.get(pt.param), str) and is_plugin_path(params[pt.param])]
        if not named:
            return run_batch(params, seeds, *more)
        with raised_by(named):
            return run_batch(params, seeds, *more)

    return run
