"""What code a workload is: the source files it is made of, their hashes, its dependencies.

A store records this at creation so that a resumed sweep never mixes results of two
different models without a word (``schedsweep run --allow-changed-code`` to say it is
meant). The files are found from the source, not from what happens to be imported: the
workload's own module (every ``.py`` under it if it is a package), then, transitively,
every module of the same top-level package its files import (``cyclic`` imports
the scans of ``workloads.slots``, a user's model may import helpers of its own package).
Imports of other top-level packages are dependencies: their installed versions are kept.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable


def _source(name: str) -> Path | None:
    """The source file of module ``name`` (``__init__.py`` for a package), if it has one.

    Found through the import system, not by path arithmetic: our subpackages are mapped
    (``schedsweep.workloads`` is the folder ``workloads/``, schedsweep/__init__.py). Only
    parent packages get imported on the way, never the module itself.
    """
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None or spec.origin in (None, "namespace", "built-in", "frozen") or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).resolve()


def _package_files(name: str, init: Path) -> list[tuple[str, Path]]:
    """(module name, file) of every .py file of the package ``name`` whose __init__ is ``init``."""
    out = []
    for f in sorted(p for p in init.parent.rglob("*.py") if "__pycache__" not in p.parts):
        rel = f.relative_to(init.parent).with_suffix("").parts
        rel = rel[:-1] if rel[-1] == "__init__" else rel
        out.append((".".join((name, *rel)), f))
    return out


def _imports(file: Path, package: list[str]) -> tuple[list[tuple[list[str], list[str]]], set[str]]:
    """(imports as (absolute module path, names taken from it), top-level names imported);
    ``package`` is the dotted package the file belongs to, for relative imports. A plain
    ``import a.b`` takes no names: all of ``a.b`` is used."""
    try:
        tree = ast.parse(file.read_text(errors="replace"))
    except SyntaxError:
        return [], set()
    found: list[tuple[list[str], list[str]]] = []
    tops: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name.split("."), []))
                tops.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else list(package)
            else:
                base = []
            mod = base + (node.module.split(".") if node.module else [])
            if not node.level and mod:
                tops.add(mod[0])
            found.append((mod, [alias.name for alias in node.names]))
    return found, tops


def _lazy_loader(init: Path) -> bool:
    """Whether a package's __init__ defines a module ``__getattr__``: names taken from it may
    then import any of its modules at run time, which the source does not show."""
    try:
        tree = ast.parse(init.read_text(errors="replace"))
    except SyntaxError:
        return True
    return any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)


def _key(name: str, file: Path) -> str:
    """A file's name in the code identity: its module path, the same in a checkout and a wheel."""
    return name.replace(".", "/") + ("/__init__.py" if file.name == "__init__.py" else ".py")


def code_files(module: ModuleType) -> tuple[dict[str, Path], set[str]]:
    """({key: source file} of the workload, top-level names of other packages it imports)."""
    name = module.__name__
    file = Path(module.__file__).resolve()
    top = name.split(".")[0]
    is_pkg = file.name == "__init__.py"
    queue = _package_files(name, file) if is_pkg else [(name, file)]
    seen: dict[str, Path] = {}
    others: set[str] = set()
    while queue:
        mod_name, f = queue.pop()
        if _key(mod_name, f) in seen:
            continue
        seen[_key(mod_name, f)] = f
        parts = mod_name.split(".")
        package = parts if f.name == "__init__.py" else parts[:-1]
        imported, tops = _imports(f, package)
        others |= {t for t in tops if t != top}
        for mod, names in imported:
            if mod and mod[0] == top:
                queue += _resolve(mod, names)
    return dict(sorted(seen.items())), others


def _resolve(mod: list[str], names: list[str]) -> list[tuple[str, Path]]:
    """The (module name, file) pairs an import of ``mod`` (taking ``names`` from it) brings in.

    ``import pkg`` counts every file of the package (its attributes are all in reach).
    ``from pkg import a, b`` counts the package's __init__ and the submodules named, so a
    model that takes one helper module from ``schedsweep.pipeline`` is not made of the
    whole pipeline; all of the package only when a name is not a submodule and the
    __init__ loads names lazily (its ``__getattr__`` may import anything).
    """
    out: list[tuple[str, Path]] = []
    for k in range(len(mod), 0, -1):  # the longest prefix that is a module of ours
        hit = _source(".".join(mod[:k]))
        if hit is None:
            continue
        hit_name = ".".join(mod[:k])
        for j in range(1, k):  # the packages on the way are imported too
            init = _source(".".join(mod[:j]))
            if init is not None and init.name == "__init__.py":
                out.append((".".join(mod[:j]), init))
        if hit.name != "__init__.py" or k < len(mod):
            out.append((hit_name, hit))
        elif not names:
            out += _package_files(hit_name, hit)
        else:
            out.append((hit_name, hit))
            for name in names:
                sub = _source(f"{hit_name}.{name}")
                if sub is not None:
                    out += _package_files(f"{hit_name}.{name}", sub) if sub.name == "__init__.py" \
                        else [(f"{hit_name}.{name}", sub)]
                elif _lazy_loader(hit):
                    out += _package_files(hit_name, hit)
                    break
        break
    return out


def _dependency_versions(names: set[str]) -> dict[str, str]:
    """Installed versions of the distributions providing the imported top-level names.

    Most import names are their distribution's name (numpy, numba, scipy); those are looked
    up directly. Only an installed name that is not (``yaml`` of PyYAML) needs
    ``packages_distributions()``, which reads every installed file list: 0.25-0.5 s that
    a small sweep would otherwise pay on every run. Local code (not under site-packages,
    like our own ``workloads``) has no distribution and is skipped.
    """
    versions: dict[str, str] = {}
    others = []
    for name in sorted(names):
        if name in sys.stdlib_module_names or name == "__future__":
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            if _installed(name):
                others.append(name)
            continue
        versions[dist.metadata["Name"]] = dist.version
    if others:
        mapping = importlib.metadata.packages_distributions()
        for name in others:
            for dist_name in mapping.get(name, []):
                try:
                    versions[dist_name] = importlib.metadata.version(dist_name)
                except importlib.metadata.PackageNotFoundError:
                    pass
    return versions


def _installed(name: str) -> bool:
    """Whether the top-level module ``name`` comes from site-packages (an installed distribution)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = (spec.origin if spec and spec.origin not in (None, "namespace") else
              next(iter(spec.submodule_search_locations or []), None) if spec else None)
    return origin is not None and any(part in ("site-packages", "dist-packages") for part in Path(origin).parts)


def describe(module: ModuleType, plugins: Iterable[ModuleType] = ()) -> dict[str, Any]:
    """{"hash", "files": {relative path: sha256}, "dependencies": {distribution: version}}.

    ``plugins``: the modules of the plug-ins a spec names (``pipeline.spec.sweep.plugin_modules``);
    their files (found the same way) join the identity as ``plugin:<key>``, so a store
    resumed after a plug-in changed is refused like one whose model changed."""
    files, others = code_files(module)
    per_file = {key: hashlib.sha256(f.read_bytes()).hexdigest() for key, f in files.items()}
    for plugin in plugins:
        p_files, p_others = code_files(plugin)
        others |= p_others
        per_file.update({f"plugin:{key}": hashlib.sha256(f.read_bytes()).hexdigest() for key, f in p_files.items()})
    whole = hashlib.sha256("".join(f"{k}\0{v}\n" for k, v in sorted(per_file.items())).encode()).hexdigest()
    return {"hash": whole, "files": per_file, "dependencies": _dependency_versions(others)}


def changed_files(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Relative paths added, removed or edited between two ``files`` maps."""
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
