"""The asv suite (benchmarks/suite/) cannot rot silently: every module imports against today's
API, declares what asv discovers, covers every target of benchmarks/README.md's table, and
one cheap benchmark runs. Speed itself is measured by asv, never asserted here."""
from __future__ import annotations

import importlib
import inspect
import math
import pkgutil

import numpy as np
import pytest

import benchmarks.suite as suite
from benchmarks.suite import _common
from benchmarks.suite.desktop_grid import DesktopGridVsPeer

# One benchmark (module.Class.method) per target row of benchmarks/README.md.
TARGETS = {
    "cluster.ClusterVsPeer.track_vs_peer", "cluster.ClusterKernel.track_cpu_seconds",
    "kernels.Network.time_messages", "kernels.Network.time_spmd", "kernels.SlotSelection.time_search",
    "kernels.Cyclic.time_cycles", "ga.GAVsDEAP.track_vs_deap", "desktop_grid.DesktopGridVsPeer.track_gcmu_vs_simpy",
    "desktop_grid.DesktopGridVsPeer.track_lpas_vs_gcmu", "plugins.ClusterPlugin.track_easy_plugin_vs_builtin",
    "plugins.DesktopGridPlugin.track_gcmu_plugin_vs_builtin", "pipeline.ColdCompile.track_cpu_seconds",
    "pipeline.PerTask.track_ms_per_task", "startup.CLIStartup.time_help",
    "windows.TraceWindows.track_vs_excerpt",
}


def _benchmarks() -> dict[str, object]:
    """module.Class.method -> class, as asv discovers them (time_/track_ methods of public classes)."""
    found = {}
    for info in pkgutil.iter_modules(suite.__path__):
        mod = importlib.import_module(f"benchmarks.suite.{info.name}")
        for cname, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ != mod.__name__ or cname.startswith("_"):
                continue
            for name, _ in inspect.getmembers(cls, inspect.isfunction):
                if name.startswith(("time_", "track_")):
                    found[f"{info.name}.{cname}.{name}"] = cls
    return found


def test_suite_covers_every_target_and_declares_parameters():
    found = _benchmarks()
    assert TARGETS <= set(found), sorted(TARGETS - set(found))
    for name, cls in found.items():
        params = getattr(cls, "params", None)
        if params is None:
            continue
        lists = params if isinstance(params, tuple) else (params,)
        assert len(lists) == len(cls.param_names), name
        method = getattr(cls, name.rsplit(".", 1)[1])
        assert len(inspect.signature(method).parameters) == 1 + len(lists), name   # self + one per parameter
        if name.rsplit(".", 1)[1].startswith("track_"):
            assert isinstance(getattr(method, "unit", None), str), name


def test_ab_best_alternates_and_keeps_the_untimed_part_out():
    calls = []
    ta, tb = _common.ab_best(lambda: calls.append("a"), lambda: calls.append("b"), 3,
                             untimed=lambda: calls.append("u"))
    assert calls == ["a", "u", "b"] * 3
    assert 0 <= ta < 1 and 0 <= tb < 1


def test_without_the_peers_or_the_full_logs_a_benchmark_is_skipped_with_the_reason(tmp_path, monkeypatch):
    """The peers and the full logs lie outside the repository (benchmarks/outside.py): a
    benchmark that needs one that is absent raises asv's skip (a NotImplementedError) saying
    what is missing and how to get it."""
    from benchmarks import outside
    from benchmarks.suite.cluster import KTH, ClusterVsPeer

    assert (_common.ROOT / "asv.conf.json").is_file()
    monkeypatch.setattr(outside, "PEERS", tmp_path / "no-peers")
    monkeypatch.setenv("SCHEDSWEEP_DATA", str(tmp_path / "empty-cache"))
    with pytest.raises(NotImplementedError, match="schedsweep traces fetch KTH-SP2-1996-2.1-cln-filtered"):
        ClusterVsPeer().setup(KTH, "easy")
    with pytest.raises(NotImplementedError, match="peer easy_backfill_python.py, not found in .*no-peers"):
        _common.load_peer("easy_backfill_python")
    monkeypatch.setattr(outside, "PEERS", None)  # SCHEDSWEEP_PEERS unset: no default folder is guessed
    with pytest.raises(NotImplementedError, match="set SCHEDSWEEP_PEERS to the folder of the peer scripts"):
        _common.load_peer("easy_backfill_python")


def test_one_benchmark_runs():
    """The LPAS_DG / Gcµ ratio on the peer's system: the two policies' parameters differ in the
    policy alone, the peer's 30 machines are built, and the ratio is a positive finite number."""
    bench = DesktopGridVsPeer()
    bench.setup()
    try:
        gcmu, lpas = bench.params["gcmu"], bench.params["lpas_dg"]
        assert {k for k in gcmu if not np.array_equal(gcmu[k], lpas[k])} == {"policy"}
        assert len(gcmu["cpu_avail"]) == 30
        ratio = bench.track_lpas_vs_gcmu()
        assert math.isfinite(ratio) and ratio > 0
    finally:
        bench.teardown()
