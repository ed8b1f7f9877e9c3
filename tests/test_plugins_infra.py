"""The plug-in infrastructure (workloads/kernel_support/plugins.py, spec validation, code identity),
on the toy workload ``tests.plugins_toy_workload`` (y = rule(x), one plug-in point).

Each test writes its plug-in package beside its spec in a temporary folder, so the
spec-folder import rule is exercised every time.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from schedsweep.pipeline import cli
from schedsweep.pipeline.execution.execute import run
from schedsweep.pipeline.spec.sweep import load
from schedsweep.pipeline.store.zarrstore import read_failures
from schedsweep.workloads.kernel_support import plugins as _plugins
from schedsweep.workloads._contract import Param, is_plugin_path

RULES = '''
import numba

@numba.njit
def triple(x):
    return 3.0 * x

def double(x):               # a plain function: we compile it
    return 2.0 * x

def negative(x):
    return -1.0 - x

def two_args(x, y):
    return x

def wrong_type(x):
    return x.nope
'''


def _setup(tmp_path, rules: str, sweep: str) -> str:
    # one package name per test: a module stays imported in this process once imported
    pkg_name = "toyplug_" + tmp_path.name.replace("-", "_")
    sweep = sweep.replace("toyplug.", pkg_name + ".")
    pkg = tmp_path / pkg_name
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "rules.py").write_text(rules)
    spec = tmp_path / "toy.toml"
    spec.write_text(textwrap.dedent(f'''
        workload = "tests.plugins_toy_workload"
        replications = 5
        seed = 7
        [sweep]
        rule = {sweep}
        '''))
    return str(spec)


def test_path_syntax():
    assert is_plugin_path("mylab.policies:smallest_area_first")
    assert is_plugin_path("mylab.policies.smallest_area_first")
    for bad in ("easy", "a:b:c", "a..b", "1a:b", "a.b:c.d", "", 3):
        assert not is_plugin_path(bad)
    p = Param("queue", "str", "fcfs", "q", choices=("fcfs", "easy"), plugin=True)
    assert p.check("pkg.mod:f") == ("pkg.mod:f", None)
    assert p.check("fifo")[1] is not None and "plug-in" in p.check("fifo")[1]
    assert Param("queue", "str", "fcfs", "q", choices=("fcfs",)).check("pkg.mod:f")[1] is not None


@pytest.mark.parametrize("name, says", [
    ("nothere", "has no function 'nothere'; it defines: double, negative, triple, two_args, wrong_type"),
    ("two_args", "takes 2 argument(s) (x, y); the rule point calls rule(x) -> float64"),
    ("wrong_type", "does not compile for the rule point rule(x) -> float64: TypingError: Unknown attribute 'nope'"),
])
def test_bad_plugin_is_one_line_exit_2(tmp_path, capsys, name, says):
    spec = _setup(tmp_path, RULES, f'["double", "toyplug.rules:{name}"]')
    assert cli.main(["run", spec, "--workers", "0", "--store", str(tmp_path / "s.zarr")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith(f"schedsweep: error: {spec}: [sweep] rule[1] = 'toyplug_{tmp_path.name}.rules:{name}': ")
    assert says in err
    assert not (tmp_path / "s.zarr").exists()


def test_unknown_module_is_one_line_exit_2(tmp_path, capsys):
    spec = _setup(tmp_path, RULES, '["toyplgu.rules:double"]')
    assert cli.main(["run", spec, "--workers", "0", "--store", str(tmp_path / "s.zarr")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "[sweep] rule[0] = 'toyplgu.rules:double': cannot import module" in err
    assert "No module named 'toyplgu'" in err


def test_plugins_run_in_the_pipeline_like_builtins(tmp_path):
    """A plug-in re-writing a built-in gives the same numbers; an njit and a plain
    function both work; the replications ran in child processes that imported the
    spec-folder package."""
    spec = _setup(tmp_path, RULES, '["double", "toyplug.rules:double", "toyplug.rules:triple"]')
    ds = _open(run(spec, tmp_path / "s.zarr", workers=0, progress=False))
    y = ds["y"].values
    assert np.array_equal(y[0], y[1])
    assert np.allclose(y[2], 1.5 * y[0], rtol=0, atol=1e-15)
    assert (ds["status"].values == 1).all()


def test_impossible_choice_fails_the_replication_and_the_sweep_goes_on(tmp_path):
    spec = _setup(tmp_path, RULES, '["double", "toyplug.rules:negative"]')
    path = run(spec, tmp_path / "s.zarr", workers=0, progress=False)
    ds = _open(path)
    assert (ds["status"].values[0] == 1).all() and (ds["status"].values[1] == 3).all()
    failures = read_failures(path)
    assert len(failures) == 5
    seeds = sorted(int(f["seed"]) for f in failures)
    assert seeds == sorted(int(s) for s in ds["seed"].values)
    assert all(f"rule plug-in toyplug_{tmp_path.name}.rules:negative returned y = " in f["traceback"]
               for f in failures)


def test_changed_plugin_is_part_of_the_code_identity(tmp_path):
    spec = _setup(tmp_path, RULES, '["double", "toyplug.rules:triple"]')
    store = tmp_path / "s.zarr"
    run(spec, store, workers=0, progress=False)
    (tmp_path / ("toyplug_" + tmp_path.name) / "rules.py").write_text(RULES + "\n# an edit\n")
    assert cli.main(["run", spec, "--workers", "0", "--store", str(store)]) == 2


def test_listing_shows_the_point(capsys):
    assert cli.main(["workloads", "tests.plugins_toy_workload"]) == 0
    out = capsys.readouterr().out
    assert "rule: rule(x) -> float64" in out and "the draw, in [0, 1)" in out


def test_readonly_state_cannot_be_written():
    from numba import types

    point = _plugins.PluginPoint("p", "p", types.int64(_plugins.ro_array(types.int64)), (("a", "array"),), "int")

    def writes(a):
        a[0] = 1
        return 0

    import types as pytypes

    module = pytypes.ModuleType("writes_mod")
    module.writes = writes
    with pytest.raises(_plugins.PluginError, match="does not compile"):
        _plugins._compile(writes, point, "writes_mod:writes", "")


def _open(path):
    from schedsweep.pipeline.store.integrity import open_store

    return open_store(path)


def test_changed_plugin_invalidates_the_cached_pilot(tmp_path):
    """The catalogue's pilot cache (``schedsweep jobs --estimate``) is keyed by the plug-in's
    source like the store's identity: an edited plug-in is piloted again."""
    from schedsweep.pipeline.read import catalogue

    spec = _setup(tmp_path, RULES, '["double", "toyplug.rules:triple"]')
    before = catalogue.cache_key(load(spec))
    catalogue.code_hash.cache_clear()
    assert catalogue.cache_key(load(spec)) == before            # same source, same key
    (tmp_path / ("toyplug_" + tmp_path.name) / "rules.py").write_text(RULES + "\n# an edit\n")
    catalogue.code_hash.cache_clear()
    assert catalogue.cache_key(load(spec)) != before
