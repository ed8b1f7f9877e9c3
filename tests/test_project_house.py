"""The project's own house rules, checked on the tree: imports flow one way (no cycle among
our modules, and every import along CONTRIBUTING.md's layer table; function-level imports
included), one import name for our packages, and no absolute path of anyone's machine or
work log in a tracked file."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"pipeline": "schedsweep.pipeline", "workloads": "schedsweep.workloads", "schedsweep": "schedsweep"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """{dotted name: (file, is a package)} of every module of ours."""
    out = {}
    for folder, package in PACKAGES.items():
        for path in (REPO / folder).rglob("*.py"):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            out[".".join([package] + (parts[:-1] if is_package else parts))] = (path, is_package)
    return out


def _targets(name: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    """Our modules an import statement loads: ``from pkg import sub`` names the submodule, not
    the package (a submodule's parent package is always loaded first: not an edge of a cycle)."""
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = name.split(".") if is_package else name.split(".")[:-1]
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = set()
    for target in wanted:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = set().union(*([_targets(name, is_package, n, known) for n in ast.walk(tree)
                                     if isinstance(n, (ast.Import, ast.ImportFrom))] or [set()]))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_flow_one_way():
    graph = import_graph()
    assert "schedsweep.pipeline.cli" in graph and "schedsweep.workloads.cluster" in graph
    found = cycles(graph)
    assert not found, "import cycles (function-level imports count):\n" + "\n".join(
        " <-> ".join(c) + "\n    " + "\n    ".join(f"{a} imports {sorted(graph[a] & set(c))}" for a in c)
        for c in found)


LAYER_ROW = re.compile(r"^\| `(\w+)` \| `([\w/.]+)` \|[^|]*\| (.*) \|$")


def layer_table() -> dict[str, tuple[str, set[str]]]:
    """CONTRIBUTING.md's layer table: {layer: (folder or file, the layers it may import)}."""
    text = (REPO / "CONTRIBUTING.md").read_text()
    start = text.index("**Layers and what each may import.**")
    rows = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            m = LAYER_ROW.match(line)
            if m:
                rows[m.group(1)] = (m.group(2), set(re.findall(r"`(\w+)`", m.group(3).split("(")[0])) - {"pipeline"})
        elif rows:
            break
    return rows


def layer_of(module: str, table: dict[str, tuple[str, set[str]]]) -> str | None:
    """The layer a module of ours belongs to (None: the packages' faces, ``schedsweep`` itself)."""
    path = module.replace("schedsweep.", "", 1).replace(".", "/")
    for layer, (where, _) in table.items():
        where = where.rstrip("/").removesuffix(".py")
        if path == where or path.startswith(where + "/"):
            return layer
    return None


# The one import from a model into the pipeline (CONTRIBUTING.md, the workloads row says why).
DOORS = {("schedsweep.workloads.ga.dask_islands", "schedsweep.pipeline.execution.subtasks")}


def test_layer_table_is_read():
    table = layer_table()
    assert list(table) == ["base", "spec", "store", "execution", "read", "cli", "workloads"]
    assert table["read"][1] == {"base", "spec", "store", "execution", "workloads"} and table["base"][1] == {"workloads"}
    assert layer_of("schedsweep.pipeline.store.journal", table) == "store"
    assert layer_of("schedsweep.pipeline.cli", table) == "cli"
    assert layer_of("schedsweep.workloads.cluster.events", table) == "workloads"
    assert layer_of("schedsweep.pipeline", table) is None


def test_every_pipeline_module_lives_in_a_layer():
    table = layer_table()
    loose = [m for m in _modules() if m.startswith("schedsweep.pipeline.") and layer_of(m, table) is None]
    assert not loose, f"modules outside every layer of CONTRIBUTING.md's table: {loose}"
    for layer, (where, _) in table.items():
        face = REPO / where / "__init__.py"
        if where.startswith("pipeline/") and where.endswith("/"):
            doc = ast.get_docstring(ast.parse(face.read_text()))
            assert doc and "\n" not in doc.strip(), f"{face.relative_to(REPO)}: a one-line docstring says what the layer holds"


def layer_violations(graph: dict[str, set[str]], table: dict[str, tuple[str, set[str]]]) -> list[str]:
    """The imports of ``graph`` that go to a layer their module's row does not name."""
    bad = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module, table)
        for target in sorted(targets):
            there = layer_of(target, table)
            if here is None or there is None or there == here or (module, target) in DOORS:
                continue
            if there not in table[here][1]:
                bad.append(f"{module} ({here}) imports {target} ({there})")
    return bad


def test_imports_follow_the_layer_table():
    """Every import of every module (function-level ones too) goes to its own layer or to one
    its row of CONTRIBUTING.md's table names."""
    bad = layer_violations(import_graph(), layer_table())
    assert not bad, "imports against the layer table of CONTRIBUTING.md:\n" + "\n".join(bad)


def test_layer_check_catches_an_upward_import():
    table = layer_table()
    graph = {"schedsweep.pipeline.store.journal": {"schedsweep.pipeline.read.tables", "schedsweep.pipeline.base.errors"},
             "schedsweep.pipeline.spec.sweep": {"schedsweep.pipeline.execution.sizing"},
             "schedsweep.workloads.mm1": {"schedsweep.pipeline.base.stats"},
             "schedsweep.workloads.ga.dask_islands": {"schedsweep.pipeline.execution.subtasks"},
             "schedsweep.pipeline.cli": {"schedsweep.pipeline.read.verify"}}
    assert layer_violations(graph, table) == [
        "schedsweep.pipeline.spec.sweep (spec) imports schedsweep.pipeline.execution.sizing (execution)",
        "schedsweep.pipeline.store.journal (store) imports schedsweep.pipeline.read.tables (read)",
        "schedsweep.workloads.mm1 (workloads) imports schedsweep.pipeline.base.stats (base)"]


# Inside workloads/ (one layer of the table above), CONTRIBUTING's finer rule: a workload imports
# its own package, what every workload may use (SUPPORT) and the kernel packages workloads share
# (SHARED); a shared package imports only itself and SUPPORT, so following a kernel never climbs
# into another workload. Imports out of workloads/ are the layer table's (DOORS).
WORKLOADS = "schedsweep.workloads"
#: What every module under workloads/ may import: the contract and the kernel support.
SUPPORT = ("_contract", "kernel_support")
#: Each kernel package two workloads share, with the workloads that import it.
SHARED = {"slots": ("cyclic", "slot_selection")}
#: A single-module workload's kernel, in a module of its own so that declaring the workload
#: (``schedsweep workloads``) imports no numba.
KERNEL_OF = {"_lindley": "mm1"}


def _unit(name: str) -> str:
    """The folder or top-level module under workloads/ that module ``name`` belongs to ('' for
    the registry, ``schedsweep.workloads`` itself)."""
    return name[len(WORKLOADS) + 1:].split(".")[0] if name.startswith(WORKLOADS + ".") else ""


def _inside(name: str) -> bool:
    return name == WORKLOADS or name.startswith(WORKLOADS + ".")


def _allowed(unit: str) -> set[str]:
    if unit in SUPPORT or unit == "":
        return set(SUPPORT)
    if unit in SHARED or unit in KERNEL_OF:
        return {*SUPPORT, unit}
    return {*SUPPORT, unit, *SHARED, *(k for k, owner in KERNEL_OF.items() if owner == unit)}


def workload_import_violations(graph: dict[str, set[str]]) -> list[str]:
    """One line per import between two modules under workloads/ that the finer rule does not allow."""
    found = []
    for name in sorted(filter(_inside, graph)):
        allowed = _allowed(_unit(name))
        for target in sorted(filter(_inside, graph[name])):
            if target == WORKLOADS or _unit(target) not in allowed:
                found.append(f"{name} imports {target}: allowed are {', '.join(sorted(allowed))} under "
                             f"{WORKLOADS} (a kernel two workloads share goes into a package of SHARED)")
    return found


def test_workload_rule_catches_an_import_of_another_workload():
    w = WORKLOADS
    graph = {f"{w}.cyclic.search": {f"{w}.slot_selection.aep", f"{w}.slots.aep", f"{w}.kernel_support.jit"},
             f"{w}.slots.aep": {f"{w}.slots.exactsum", f"{w}.cyclic.dp"},
             f"{w}.ga.model": {f"{w}._contract", "schedsweep.pipeline.base.stats"},
             f"{w}.mm1": {f"{w}._lindley"}, f"{w}.cluster.simulator": {f"{w}._lindley"},
             f"{w}.desktop_grid": {w}, "schedsweep.pipeline.spec.sweep": {f"{w}.cluster"}}
    bad = [line.split(":")[0] for line in workload_import_violations(graph)]
    assert bad == [f"{w}.cluster.simulator imports {w}._lindley", f"{w}.cyclic.search imports {w}.slot_selection.aep",
                   f"{w}.desktop_grid imports {w}", f"{w}.slots.aep imports {w}.cyclic.dp"]


def test_workloads_import_only_their_own_package_the_support_and_the_shared_kernels():
    graph = import_graph()
    found = workload_import_violations(graph)
    assert not found, "imports inside workloads/ the rule does not allow (function-level imports count):\n" \
        + "\n".join(found)
    for module, target in DOORS:   # each door is still used (else it goes)
        assert target in graph[module], f"{module} no longer imports {target}: close the door in DOORS"
    for shared, users in SHARED.items():   # SHARED says who shares each package
        importers = {_unit(n) for n, targets in graph.items() if _unit(n) not in ("", shared)
                     and any(_unit(t) == shared for t in filter(_inside, targets))}
        assert importers == set(users) and len(users) >= 2, (shared, sorted(importers))


def test_every_folder_of_workloads_is_a_workload_or_declared_in_the_workload_rule():
    from schedsweep import workloads

    units = {_unit(n) for n in import_graph()} - {""}
    declared = set(SUPPORT) | set(SHARED) | set(KERNEL_OF)
    assert declared <= units, sorted(declared - units)
    assert units - declared == set(workloads.names()), "a module under workloads/ that is no workload " \
        "belongs in SUPPORT, SHARED or KERNEL_OF of tests/test_project_house.py"


@pytest.mark.parametrize("folder", ["workloads", "pipeline"])
def test_only_the_schedsweep_name_imports(folder):
    """``import workloads`` with a checkout's root on the path would compile kernels cached
    under a second module name, which break every later run of the installed package."""
    out = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:") and f"import schedsweep.{folder}, not {folder}" in last


# Folders of somebody's machine: a checkout, a home, a user's or a sandbox's work folder. (/tmp
# in a documented example command is allowed: it names no machine.)
MACHINE_PATH = re.compile(r"(?<![\w.~$-])/(?:work|home|root|Users|scratch|mnt)/[\w.-]+")


def test_no_machine_paths_in_the_tree():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    if files.returncode or not files.stdout:
        pytest.fail("git ls-files found no files: the tests need the repository's git checkout")
    found = []
    for name in files.stdout.split("\0"):
        path = REPO / name
        if not name or not path.is_file() or path.suffix in (".gz", ".png", ".npz", ".npy", ".pkl"):
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{name}:{k}: {m.group(0)}" for k, line in enumerate(text.splitlines(), 1)
                  for m in MACHINE_PATH.finditer(line)]
    assert not found, "absolute paths of a machine (find files relative to the repository instead):\n" \
        + "\n".join(found)


# A work log: who changed what, or when (history lives in git). Written in pieces so that
# this file does not match itself.
WORK_LOG = re.compile(r"\b[Ii]ssues? ?#?[0-9]+\b|\b(?:this|last|previous|earlier) (?:sess" r"ion|st" r"op)\b"
                      r"|\b[0-9]{1,2} Nov(?:ember)?\b|\bNov" r"ember\b")


def test_no_work_log_in_the_tree():
    files = subprocess.run(["git", "ls-files", "-z", "*.py", "*.md", "*.toml", "*.sh", "*.yaml", "*.sbatch"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split("\0")
    found = []
    for name in filter(None, files):
        path = REPO / name
        if not path.is_file():
            continue
        found += [f"{name}:{k}: {line.strip()[:100]}" for k, line in enumerate(path.read_text().splitlines(), 1)
                  if WORK_LOG.search(line)]
    assert not found, "text about who changed what or when (say the fact, the method or the reason):\n" \
        + "\n".join(found)


def test_work_log_pattern():
    assert WORK_LOG.search("default since iss" "ue 20") and WORK_LOG.search("measured 26 N" "ov")
    assert not WORK_LOG.search("see the issues page") and not WORK_LOG.search("a Dask session")


def test_machine_path_pattern():
    # written in two pieces, so that this file does not hold what it looks for
    assert MACHINE_PATH.search("PEER = Path('/wo" "rk/data/peers/x.py')")
    assert MACHINE_PATH.search(". /ho" "me/ana/venv/bin/activate")
    assert not MACHINE_PATH.search("--store /tmp/sp.zarr") and not MACHINE_PATH.search("~/work/x")
    assert not MACHINE_PATH.search("https://example.org/work/x")
