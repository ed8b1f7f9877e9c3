"""What code a workload is: the source files it is made of, their hashes, its dependencies.

A store records this at creation so that a resumed sweep never mixes results of two
different models without a word (``schedsweep run --allow-changed-code`` to say it is
meant). The files are found from the source, not from what happens to be imported: the
workload's own module (every ``.py`` under it if it is a package), then, transitively,
every module of the same top-level package its files import (``cyclic`` imports
``slot_selection``'s scans, a user's model may import helpers of its own package).
Imports of other top-level packages are dependencies: their installed versions are kept.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable


def _module_files(path: Path) -> list[Path]:
    """The file of a module, or every .py file of a package directory."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
    return [path]


def _module_path(root_dir: Path, parts: list[str]) -> Path | None:
    """The package dir or module file ``root_dir/parts...``, if it exists."""
    target = root_dir.joinpath(*parts) if parts else root_dir
    if target.is_dir() and (target / "__init__.py").exists():
        return target
    file = target.with_suffix(".py")
    return file if file.is_file() else None


def _imports(file: Path, package_parts: list[str]) -> tuple[list[list[str]], set[str]]:
    """(absolute module paths the file imports, top-level names it imports)."""
    try:
        tree = ast.parse(file.read_text(errors="replace"))
    except SyntaxError:
        return [], set()
    found: list[list[str]] = []
    tops: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(alias.name.split("."))
                tops.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)] if node.level > 1 else list(package_parts)
            else:
                base = []
            mod = base + (node.module.split(".") if node.module else [])
            if not node.level and mod:
                tops.add(mod[0])
            found.append(mod)
            found += [mod + [alias.name] for alias in node.names]  # `from pkg import submodule`
    return found, tops


def code_files(module: ModuleType) -> tuple[Path, list[Path], set[str]]:
    """(root directory, source files of the workload, top-level names of other packages it imports)."""
    file = Path(module.__file__).resolve()
    top = module.__name__.split(".")[0]
    is_pkg = file.name == "__init__.py"
    start = file.parent if is_pkg else file
    depth = module.__name__.count(".") + (1 if is_pkg else 0)
    root_dir = file.parents[depth]  # the folder holding the top-level package (or module)
    seen: dict[Path, None] = {}
    others: set[str] = set()
    queue = _module_files(start)
    while queue:
        f = queue.pop()
        if f in seen:
            continue
        seen[f] = None
        rel = f.relative_to(root_dir).with_suffix("")
        parts = list(rel.parts)
        package_parts = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
        imported, tops = _imports(f, package_parts)
        others |= {t for t in tops if t != top}
        for mod in imported:
            if not mod or mod[0] != top:
                continue
            for k in range(len(mod), 0, -1):  # the longest prefix that is a module of ours
                hit = _module_path(root_dir, mod[:k])
                if hit is not None:
                    queue += [p for p in _module_files(hit) if p not in seen] if hit.is_dir() and k == len(mod) \
                        else ([hit / "__init__.py"] if hit.is_dir() else [hit])
                    # the packages on the way are imported too
                    for j in range(1, k):
                        init = _module_path(root_dir, mod[:j])
                        if init is not None and init.is_dir():
                            queue.append(init / "__init__.py")
                    break
    return root_dir, sorted(seen), others


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
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = (spec.origin if spec and spec.origin not in (None, "namespace") else
              next(iter(spec.submodule_search_locations or []), None) if spec else None)
    return origin is not None and any(part in ("site-packages", "dist-packages") for part in Path(origin).parts)


def describe(module: ModuleType, plugins: Iterable[ModuleType] = ()) -> dict[str, Any]:
    """{"hash", "files": {relative path: sha256}, "dependencies": {distribution: version}}.

    ``plugins``: the modules of the plug-ins a spec names (``pipeline.spec.plugin_modules``);
    their files (found the same way) join the identity as ``plugin:<relative path>``, so a
    store resumed after a plug-in changed is refused like one whose model changed."""
    root_dir, files, others = code_files(module)
    per_file = {str(f.relative_to(root_dir)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    for plugin in plugins:
        p_root, p_files, p_others = code_files(plugin)
        others |= p_others
        per_file.update({f"plugin:{f.relative_to(p_root)}": hashlib.sha256(f.read_bytes()).hexdigest()
                         for f in p_files})
    whole = hashlib.sha256("".join(f"{k}\0{v}\n" for k, v in sorted(per_file.items())).encode()).hexdigest()
    return {"hash": whole, "files": per_file, "dependencies": _dependency_versions(others)}


def changed_files(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Relative paths added, removed or edited between two ``files`` maps."""
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
