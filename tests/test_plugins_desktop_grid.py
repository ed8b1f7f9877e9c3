"""The desktop_grid dispatch plug-in point: the built-in Gcµ and PST written as
plug-in rules give the built-in kernel's results bit for bit, events included; a rule's
impossible choice fails the replication with a message naming the rule, the time, the
machine and the choice, and in a sweep only that cell's replications fail."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from schedsweep.pipeline.execution.execute import run
from schedsweep.pipeline.store.integrity import open_store
from schedsweep.pipeline.store.zarrstore import read_failures
from schedsweep.workloads import desktop_grid as dg
from schedsweep.workloads.kernel_support.plugins import PluginError

BUILTIN = {"gcmu": "schedsweep.workloads.desktop_grid.plugins:gcmu", "pst": "schedsweep.workloads.desktop_grid.plugins:pst"}
COMPARED = [m.name for m in dg.METRICS if not m.timing]

BAD_RULES = '''
def out_of_range(j, now, waiting, head_time, head_seq, mu, view, elig):
    return waiting.shape[0]

def empty_class(j, now, waiting, head_time, head_seq, mu, view, elig):
    # the first class with no waiting task, once one exists
    for i in range(waiting.shape[0]):
        if waiting[i] == 0:
            return i
    return 0
'''


def _same(a: dict, b: dict) -> None:
    for name in COMPARED:
        assert np.array_equal(np.asarray(a[name]), np.asarray(b[name]), equal_nan=True), name
    assert a["reason"] == b["reason"]
    assert a["trace"] == b["trace"]


@settings(max_examples=6, deadline=None)
@given(policy=st.sampled_from(sorted(BUILTIN)),
       case=st.sampled_from(["none", "alpha2:0.02/2+partial", "0.01/5+markov", "alpha2:none"]),
       system=st.sampled_from(["A", "B", "generated"]),
       resubmit=st.sampled_from(["original", "resubmission"]),
       seed=st.integers(0, 2**32))
def test_builtins_as_plugins_are_bit_identical(policy, case, system, resubmit, seed):
    extra = {"alpha": (0.3, 0.2, 0.4, 0.1)} if system == "generated" else {}
    params = dg.default_params(system=system, case=case, resubmit_order=resubmit, horizon=400.0, warmup=40.0,
                               groups=3, per_group=2, heterogeneity="LoHi", **extra)
    builtin = dg.simulate({**params, "policy": policy}, seed, trace=400)
    plugged = dg.simulate({**params, "policy": BUILTIN[policy]}, seed, trace=400)
    assert builtin["events"] > 50
    _same(builtin, plugged)


@pytest.fixture(scope="module")
def bad_rules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dgrules")
    (folder / "dg_bad_rules.py").write_text(BAD_RULES)
    import sys
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


@pytest.mark.parametrize("rule, says", [
    ("out_of_range", "chose class 4, an impossible choice (there is no class 4: classes are 0..3)"),
    ("empty_class", "an impossible choice (no task of class "),
])
def test_impossible_choice_raises_naming_rule_time_and_choice(bad_rules, rule, says):
    params = dg.default_params(system="A", horizon=200.0, policy=f"dg_bad_rules:{rule}")
    with pytest.raises(PluginError) as err:
        dg.simulate(params, 3)
    text = str(err.value)
    assert text.startswith(f"dispatch rule dg_bad_rules:{rule} at time ") and says in text
    # the time is the event at which the rule was asked: a real time within the horizon
    t = float(text.split(" at time ")[1].split(":")[0])
    assert 0 < t <= 200.0


def test_impossible_choice_is_recorded_and_the_sweep_goes_on(tmp_path):
    pkg = tmp_path / "dgplug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rules.py").write_text(BAD_RULES)
    spec = tmp_path / "dg.toml"
    spec.write_text(textwrap.dedent('''
        workload = "desktop_grid"
        replications = 3
        seed = 11
        [params]
        system = "A"
        horizon = 100.0
        [sweep]
        policy = ["gcmu", "dgplug.rules:out_of_range", "schedsweep.workloads.desktop_grid.plugins:gcmu"]
        '''))
    path = run(str(spec), tmp_path / "s.zarr", workers=0, progress=False)
    ds = open_store(path)
    status = ds["status"].values
    assert (status[0] == 1).all() and (status[1] == 3).all() and (status[2] == 1).all()
    assert np.array_equal(ds["W"].values[0], ds["W"].values[2], equal_nan=True)
    failures = read_failures(path)
    assert len(failures) == 3
    assert all("dispatch rule dgplug.rules:out_of_range at time " in f["traceback"]
               and "chose class 4, an impossible choice" in f["traceback"] for f in failures)
