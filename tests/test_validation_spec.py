"""A fuzz of malformed sweep specs, every workload. Each one is refused through
the CLI before anything runs: exit 2, exactly one line on stderr naming the file, the key (or
parameter pair) and the value or reason, no traceback, no store."""
from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from schedsweep.pipeline import cli
from schedsweep.pipeline.spec import sweep as spec_mod
from shipped_specs import load_shipped

MM1 = """
name = "t"
workload = "mm1"
replications = 4
seed = 1
[params]
customers = 2000
warmup = 100
[sweep]
arrival_rate = [0.3, 0.5]
"""


def mm1(old: str, new: str) -> str:
    assert old in MM1, old
    return MM1.replace(old, new, 1)


def of(workload: str, params: str = "", sweep: str = "", extra: str = "") -> str:
    text = f'workload = "{workload}"\nreplications = 2\nseed = 7\n{extra}\n[params]\n{params}\n'
    return text + (f"[sweep]\n{sweep}\n" if sweep else "")


BIG = 2 ** 63
# case -> (spec text, words that the one-line error must contain). "{dir}" is the spec's folder.
CASES: dict[str, tuple[str, list[str]]] = {
    # non-finite and out-of-range numbers
    "nan param": (mm1("warmup = 100", "warmup = 100\narrival_rate = nan").replace("[sweep]\narrival_rate = [0.3, 0.5]", ""),
                  ["[params] arrival_rate", "nan"]),
    "inf param": (mm1("[sweep]\narrival_rate = [0.3, 0.5]", "[sweep]\nservice_rate = [1.0, inf]"),
                  ["[sweep] service_rate[1]", "inf", "finite"]),
    "-inf sweep": (mm1("[0.3, 0.5]", "[0.3, -inf]"), ["arrival_rate[1]", "finite"]),
    "nan sweep": (mm1("[0.3, 0.5]", "[nan, 0.5]"), ["arrival_rate[0]", "nan"]),
    "1e400 is inf": (mm1("[0.3, 0.5]", "[0.3, 1e400]"), ["arrival_rate[1]", "finite"]),
    "huge int for float": (mm1("[0.3, 0.5]", f"[0.3, {10 ** 400}]"), ["arrival_rate[1]", "too large"]),
    "int beyond int64": (mm1("customers = 2000", f"customers = {BIG}"), ["customers", "64-bit"]),
    "int below int64": (mm1("warmup = 100", f"warmup = {-BIG - 1}"), ["warmup", "64-bit"]),
    "int out of range": (mm1("customers = 2000", "customers = 0"), ["customers", ">= 1"]),
    "bool for int": (mm1("customers = 2000", "customers = true"), ["customers", "integer"]),
    "float for int": (mm1("customers = 2000", "customers = 2.5"), ["customers", "integer"]),
    "string for float": (mm1("[0.3, 0.5]", '[0.3, "fast"]'), ["arrival_rate[1]", "number"]),
    "table for float": (mm1("[0.3, 0.5]", "[0.3, {a = 1}]"), ["arrival_rate[1]", "number"]),
    "date for int": (mm1("customers = 2000", "customers = 2024-01-01"), ["customers", "integer"]),
    # top-level keys
    "replications huge": (mm1("replications = 4", "replications = 1000000000000"), ["replications", "too many"]),
    "replications 0": (mm1("replications = 4", "replications = 0"), ["replications", "positive"]),
    "replications negative": (mm1("replications = 4", "replications = -3"), ["replications", "positive"]),
    "replications float": (mm1("replications = 4", "replications = 2.5"), ["replications", "positive integer"]),
    "replications string": (mm1("replications = 4", 'replications = "4"'), ["replications", "positive integer"]),
    "replications bool": (mm1("replications = 4", "replications = true"), ["replications", "positive integer"]),
    "replications missing": (mm1("replications = 4", ""), ["replications", "missing"]),
    "too many runs": (mm1("replications = 4", "replications = 10000000").replace(
        "[0.3, 0.5]", str([round(0.001 * (i + 1), 3) for i in range(200)])), ["runs", "too many"]),
    "seed negative": (mm1("seed = 1", "seed = -1"), ["seed", "non-negative"]),
    "seed beyond int64": (mm1("seed = 1", f"seed = {2 ** 64}"), ["seed", "2**63"]),
    "seed float": (mm1("seed = 1", "seed = 1.5"), ["seed", "integer"]),
    "seed missing": (mm1("seed = 1", ""), ["seed", "missing"]),
    "name with slash": (mm1('name = "t"', 'name = "a/b"'), ["name", "'a/b'"]),
    "name dotdot": (mm1('name = "t"', 'name = ".."'), ["name", "'..'"]),
    "name empty": (mm1('name = "t"', 'name = ""'), ["name", "non-empty"]),
    "name number": (mm1('name = "t"', "name = 5"), ["name", "5"]),
    "name control char": (mm1('name = "t"', 'name = "a\\tb"'), ["name", "printable"]),
    "description number": (mm1('name = "t"', 'name = "t"\ndescription = 3'), ["description", "string"]),
    "workload missing": (mm1('workload = "mm1"', ""), ["workload", "missing"]),
    "workload number": (mm1('workload = "mm1"', "workload = 5"), ["workload", "5"]),
    "workload unknown": (mm1('"mm1"', '"nosuch"'), ["workload", "nosuch", "not a known workload", "mm1"]),
    "workload private": (mm1('"mm1"', '"_contract"'), ["workload", "_contract", "not a known workload"]),
    "dotted not found": (mm1('"mm1"', '"nolab_pkg.models.queue"'),
                         ["nolab_pkg.models.queue", "could not be imported", "No module named 'nolab_pkg'"]),
    "dotted not a workload": (mm1('"mm1"', '"os.path"'), ["os.path", "is not a workload", "PARAMS", "run_batch"]),
    "dotted import error": (mm1('"mm1"', '"vlab_pkg.broken"'),
                            ["vlab_pkg.broken", "could not be imported", "ModuleNotFoundError",
                             "no_such_dependency_xyz"]),
    "unknown top key": ("replicatoins = 3\n" + MM1, ["replicatoins", "allowed keys"]),
    # tables and lists
    "params not a table": (mm1("[params]\ncustomers = 2000\nwarmup = 100\n", "params = 3\n"), ["params", "table"]),
    "sweep not a table": ("sweep = [1, 2]\n" + mm1("[sweep]\narrival_rate = [0.3, 0.5]", ""), ["sweep", "table"]),
    "zip not tables": ("zip = 3\n" + MM1, ["zip", "array of tables"]),
    "zip empty": (MM1 + "[[zip]]\n", ["[[zip]] #1", "empty"]),
    "zip unequal": (mm1("warmup = 100", "") + "[[zip]]\nservice_rate = [1.0, 2.0]\nwarmup = [1]\n",
                    ["[[zip]] #1", "equal lengths"]),
    "zip repeated": (mm1("warmup = 100", "") + "[[zip]]\nservice_rate = [1.0, 1.0]\nwarmup = [1, 2]\n",
                     ["service_rate", "repeated"]),
    "sweep not a list": (mm1("[0.3, 0.5]", "0.3"), ["[sweep] arrival_rate", "list"]),
    "sweep empty": (mm1("[0.3, 0.5]", "[]"), ["[sweep] arrival_rate", "empty list"]),
    "sweep repeated": (mm1("[0.3, 0.5]", "[0.3, 0.3]"), ["[sweep] arrival_rate", "repeated"]),
    "sweep list-valued": (of("desktop_grid", sweep="cpu_levels = [[0.5, 1.0]]"), ["cpu_levels", "cannot be swept"]),
    "duplicate key": (MM1 + "[[zip]]\ncustomers = [10, 20]\nservice_rate = [1.0, 2.0]\n", ["duplicate key", "customers"]),
    "unknown param": (mm1("warmup = 100", "wormup = 100"), ["wormup", "unknown parameter", "arrival_rate"]),
    "independent not list": (mm1("seed = 1", 'seed = 1\nindependent = "arrival_rate"'), ["independent", "list"]),
    "independent not dim": (mm1("seed = 1", 'seed = 1\nindependent = ["nodes"]'), ["independent", "nodes"]),
    # [run]
    "run unknown": (MM1 + "[run]\nbatch_secs = 1\n", ["[run] batch_secs", "unknown"]),
    "run inf": (MM1 + "[run]\nbatch_seconds = inf\n", ["[run] batch_seconds", "finite"]),
    "run nan": (MM1 + "[run]\nbatch_seconds = nan\n", ["[run] batch_seconds", "finite"]),
    "run zero": (MM1 + "[run]\nbatch_seconds = 0\n", ["[run] batch_seconds", "> 0"]),
    "run batch_size 0": (MM1 + "[run]\nbatch_size = 0\n", ["[run] batch_size", "[1, 10000000]"]),
    "run batch_size huge": (MM1 + f"[run]\nbatch_size = {BIG}\n", ["[run] batch_size", "[1, 10000000]"]),
    "run task_timeout inf": (MM1 + "[run]\ntask_timeout = inf\n", ["[run] task_timeout", "finite"]),
    "run batch_size float": (MM1 + "[run]\nbatch_size = 1.5\n", ["[run] batch_size", "integer"]),
    # TOML and files
    "not toml": ("this is { not toml", ["not valid TOML"]),
    "toml duplicate": (mm1("warmup = 100", "warmup = 100\nwarmup = 200"), ["not valid TOML"]),
    # cross-parameter rules, every workload
    "mm1 warmup": (mm1("warmup = 100", "warmup = 5000"), ["warmup", "customers"]),
    "mm1 warmup in a cell": (mm1("customers = 2000\n", "").replace("arrival_rate = [0.3, 0.5]", "customers = [2000, 50]"),
                             ["at customers=50", "warmup (100)", "customers (50)"]),
    "ga width": (of("ga", "width_low = 9\nwidth_high = 4"), ["width_low (9)", "width_high (4)"]),
    "ga width swept": (of("ga", "width_low = 9", "width_high = [8, 12]"), ["at width_high=8", "width_low (9)"]),
    "ga groups": (of("ga", "units = 3\ngroups = 4"), ["groups (4)", "units (3)"]),
    "ga speeds": (of("ga", "speed_low = 3.0"), ["speed_low (3.0)", "speed_high (2.0)"]),
    "ga lengths": (of("ga", "length_high = 5.0"), ["length_low (10.0)", "length_high (5.0)"]),
    "ga migrants": (of("ga", "migrants = 50"), ["migrants (50)", "population (50)"]),
    "ga parallel width": (of("ga", "parallel = true\nunits = 8\ngroups = 4"), ["width_high (8)", "smallest group"]),
    "ga pc range": (of("ga", "pc = 1.5"), ["pc", "[0.0, 1.0]"]),
    "ga dep_prob nan": (of("ga", "dep_prob = nan"), ["dep_prob", "nan"]),
    "slots job_slots": (of("slot_selection", "nodes = 3\njob_slots = 5"), ["job_slots (5)", "nodes (3)"]),
    "slots perf": (of("slot_selection", "perf_min = 11.0"), ["perf_min (11.0)", "perf_max (10.0)"]),
    "slots perf integer": (of("slot_selection", "perf_min = 2.5"), ["perf_integer", "perf_min"]),
    "slots load range": (of("slot_selection", "local_load_max = 1.0"), ["local_load_max", "0.99"]),
    "slots interval": (of("slot_selection", "interval = 12.0"), ["interval (12.0)", "local_task_min"]),
    "cyclic job slots": (of("cyclic", "nodes = 4\njob_slots_max = 5"), ["job_slots_max (5)", "nodes (4)"]),
    "cyclic runtime factor": (of("cyclic", "runtime_factor_min = 0.9\nruntime_factor_max = 0.5"),
                              ["runtime_factor_min (0.9)", "runtime_factor_max (0.5)"]),
    "cyclic n_css": (of("cyclic", 'method = "css_bf"\nn_css = 30'), ["n_css (30)", "jobs (20)"]),
    "cyclic price margins": (of("cyclic", "price_margin_min = 0.7"), ["price_margin_min (0.7)", "price_margin_max"]),
    "grid warmup": (of("desktop_grid", "warmup = 30000.0"), ["warmup (30000.0)", "horizon"]),
    "grid case nan rate": (of("desktop_grid", 'case = "nan/1"'), ["case 'nan/1'", "failure rate", "finite"]),
    "grid case inf down": (of("desktop_grid", 'case = "0.01/inf"'), ["case '0.01/inf'", "down time", "finite"]),
    "grid case malformed": (of("desktop_grid", 'case = "sometimes"'), ["case 'sometimes'", "RATE/MEAN"]),
    "grid custom no rates": (of("desktop_grid", 'system = "custom"\nalpha = [0.5]'), ["custom", "rates_file"]),
    "grid rates dir": (of("desktop_grid", 'system = "custom"\nalpha = [0.5]\nrates_file = "."'),
                       ["rates_file", "not a file"]),
    "grid rates garbage": (of("desktop_grid", 'system = "custom"\nalpha = [0.5]\nrates_file = "rates.txt"'),
                           ["rates_file", "rates.txt", "cannot be read"]),
    "grid alpha length": (of("desktop_grid", "alpha = [0.1]"), ["alpha has 1 rates", "classes"]),
    "grid cpu_avail length": (of("desktop_grid", 'cpu = "custom"\ncpu_avail = [0.5]'), ["cpu_avail has 1 values"]),
    "grid cpu_levels nan": (of("desktop_grid", "cpu_levels = [0.5, nan]"), ["cpu_levels", "finite"]),
    "grid weibull": (of("desktop_grid", "weibull_scale_min = 1e7"), ["weibull_scale_max", "weibull_scale_min"]),
    "cluster swf no trace": (of("cluster", 'source = "swf"'), ["source = 'swf'", "trace"]),
    "cluster trace dir": (of("cluster", 'source = "swf"\ntrace = "."'), ["trace", "not a file"]),
    "cluster trace NUL": (of("cluster", 'source = "swf"\ntrace = "a\\u0000b.swf"'), ["trace", "not a usable path"]),
    "cluster trace missing": (of("cluster", 'source = "swf"\ntrace = "none.swf"'), ["trace", "no such file"]),
    "cluster mem": (of("cluster", "mem_low = 3000000.0"), ["mem_low (3000000.0)", "mem_high"]),
    "cluster bandwidth nan": (of("cluster", "bandwidth = nan"), ["bandwidth", "nan"]),
    "cluster mbs sizes": (of("cluster", 'network = "packet"\nlayout = "torus:6x6"\nnodes = 36\ncores = 1\n'
                                   'queue = "easy"\nallocation = "mbs"'), ["mbs", "power-of-two", "[6, 6]"]),
    "cluster paging sizes": (of("cluster", 'network = "packet"\nlayout = "torus:6x6"\nnodes = 36\ncores = 1\n'
                                      'queue = "easy"\nallocation = "paging"', "page_side = [3, 4]"),
                             ["at page_side=4", "page_side (4)", "[6, 6]"]),
    "cluster topo alloc": (of("cluster", 'allocation = "mbs"'), ["allocation 'mbs'", "network = 'packet'"]),
}


@pytest.fixture
def user_model(tmp_path, monkeypatch):
    """A user's package on sys.path whose model module fails to import (a missing dependency)."""
    pkg = tmp_path / "lib" / "vlab_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "broken.py").write_text("import no_such_dependency_xyz\nPARAMS = ()\n")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))


def test_enough_cases():
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_spec_one_line_exit_2(case, tmp_path, capsys, user_model):
    text, words = CASES[case]
    (tmp_path / "rates.txt").write_text("1 2\nthree 4\n")
    path = tmp_path / "spec.toml"
    path.write_text(textwrap.dedent(text))
    store = tmp_path / "s.zarr"
    code = cli.main(["run", str(path), "--workers", "0", "--store", str(store), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("schedsweep: error: ") and str(path) in err, err
    for word in words:
        assert word in err, (word, err)
    assert not store.exists()


@pytest.mark.parametrize("what", ["missing", "directory", "binary"])
def test_unreadable_spec_file(what, tmp_path, capsys):
    path = tmp_path / "spec.toml"
    if what == "directory":
        path.mkdir()
    elif what == "binary":
        path.write_bytes(b"\xff\xfe\x00name = 1")
    code = cli.main(["run", str(path), "--workers", "0", "--store", str(tmp_path / "s.zarr")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and str(path) in err


def test_values_on_the_allowed_side_still_pass(tmp_path):
    """The new rules refuse only what they should: inf where a parameter allows it, an unset
    path, equal bounds, and every shipped spec."""
    ok = {
        "bandwidth inf": of("cluster", "bandwidth = inf"),
        "trace unset": of("cluster", 'trace = ""'),
        "ga equal widths": of("ga", "width_low = 4\nwidth_high = 4"),
        "slots job_slots = nodes": of("slot_selection", "nodes = 5\njob_slots = 5"),
        "int64 max": mm1("customers = 2000", f"customers = {BIG - 1}").replace(
            "[params]", "[params]\n# the largest int64 is allowed by the type (the run would be long)"),
    }
    for name, text in ok.items():
        path = tmp_path / f"{name.replace(' ', '_')}.toml"
        path.write_text(text)
        spec_mod.load(path)
    assert spec_mod.load(_write(tmp_path, of("cluster", "bandwidth = inf"))).params["bandwidth"] == float("inf")
    for path in sorted(Path(__file__).resolve().parents[1].glob("jobs/*.toml")):
        load_shipped(path, tmp_path)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "w.toml"
    path.write_text(text)
    return path


# --- random mutations: whatever a value is replaced with, a spec loads or is refused in one line

JUNK = st.one_of(
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 2 ** 63, -(2 ** 63) - 1, 10 ** 30, 0, -1, True,
                     "", "x/y", "nan", [], [float("nan")], {}, {"a": 1}, 1e308, 5e-324]),
    st.integers(), st.floats(), st.text(max_size=5), st.lists(st.integers(-3, 3), max_size=3))
PLACES = [("", "replications"), ("", "seed"), ("", "name"), ("", "workload"), ("", "independent"),
          ("params", "customers"), ("params", "warmup"), ("params", "service_rate"), ("params", "nokey"),
          ("sweep", "arrival_rate"), ("sweep", "customers"), ("run", "batch_seconds"), ("run", "batch_size"),
          ("run", "task_timeout")]


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if v != v else ("inf" if v == float("inf") else "-inf" if v == -float("inf") else repr(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"


def _toml(doc: dict) -> str:
    top = [f"{k} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    tables = [f"[{k}]\n" + "\n".join(f"{kk} = {_toml_value(vv)}" for kk, vv in v.items())
              for k, v in doc.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n" + "\n".join(tables) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(place=st.sampled_from(PLACES), value=JUNK)
def test_random_mutations_load_or_one_line(place, value, tmp_path):
    doc = {"name": "t", "workload": "mm1", "replications": 4, "seed": 1,
           "params": {"customers": 2000, "warmup": 100}, "sweep": {"arrival_rate": [0.3, 0.5]}, "run": {}}
    table, key = place
    (doc[table] if table else doc)[key] = value
    path = tmp_path / "m.toml"
    path.write_text(_toml(doc))
    try:
        spec = spec_mod.load(path)
    except spec_mod.SpecError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(str(path)) and len(message) < 600, message
        return
    # accepted: then every number that reached a cell is finite and within int64
    for _, params in spec.cells():
        for v in params.values():
            if isinstance(v, float):
                assert math.isfinite(v)
            if isinstance(v, int):
                assert -(2 ** 63) <= v < 2 ** 63
    assert 1 <= spec.replications <= spec_mod.MAX_REPLICATIONS


def test_no_workload_parameter_shares_a_name_with_the_store():
    # every parameter can be swept: none may be named like a metric, a metric's own
    # dimension or the store's bookkeeping (they share the store's one namespace)
    from schedsweep import workloads

    for name in workloads.names():
        module = workloads.get(name)
        taken = {m.name for m in module.METRICS} | {d for m in module.METRICS for d, _ in m.dims} \
            | {"replication", "status", "reason", "seed", "cell_seconds"}
        clash = {p.name for p in module.PARAMS} & taken
        assert not clash, f"{name}: parameters named like store variables: {sorted(clash)}"


def test_sweeping_a_parameter_named_like_a_metric_is_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "clashpkg").mkdir()
    (tmp_path / "clashpkg" / "__init__.py").write_text("")
    (tmp_path / "clashpkg" / "model.py").write_text(textwrap.dedent('''
        from schedsweep.workloads._contract import Metric, Param
        PARAMS = (Param("cost", "float", 1.0, "a price"),)
        METRICS = (Metric("cost", "money", "what it cost"),)
        REASONS = {0: ("none", "fine")}
        def run_batch(params, seeds):
            raise AssertionError("never runs")
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = tmp_path / "s.toml"
    spec.write_text('workload = "clashpkg.model"\nreplications = 2\nseed = 1\n[sweep]\ncost = [1.0, 2.0]\n')
    assert cli.main(["run", str(spec), "--store", str(tmp_path / "s.zarr")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cost cannot be swept" in err[0] and "metric 'cost'" in err[0]
    assert not (tmp_path / "s.zarr").exists()
    # fixed in [params] it is fine: only coordinates share the namespace
    spec.write_text('workload = "clashpkg.model"\nreplications = 2\nseed = 1\n[params]\ncost = 2.0\n')
    assert spec_mod.load(spec).params["cost"] == 2.0
