"""Quick commands answer without the heavy imports.

Speed itself is measured in benchmarks/; here we check the cause: which modules a command
loads before it answers."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from numba import types

from schedsweep import workloads
from schedsweep.workloads._contract import kernel_array

HEAVY = ("xarray", "zarr", "pandas", "dask", "distributed", "scipy.special", "matplotlib")


def loaded_after(argv: list[str]) -> set[str]:
    code = (
        "import sys, contextlib, io\n"
        "from schedsweep.pipeline.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "assert code == 0, code\n"
        "print('\\n'.join(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_help_loads_neither_numba_nor_the_data_stack():
    mods = loaded_after(["--help"])
    assert "numba" not in mods
    assert not [m for m in HEAVY if m in mods]


WORKLOADS = workloads.names()
#: What declaring a workload must not import: numba (so no kernel module, all of which import
#: it: a regression measured at 0.36 -> 0.55 s) and HiGHS (desktop_grid's LP).
KERNELS = ("numba", "llvmlite", "highspy")


@pytest.mark.parametrize("argv", [["workloads"]] + [["workloads", name] for name in WORKLOADS])
def test_workloads_lists_without_numba_kernels_or_the_data_stack(argv):
    mods = loaded_after(argv)
    assert not [m for m in HEAVY if m in mods], [m for m in HEAVY if m in mods]
    assert not [m for m in KERNELS if m in mods], [m for m in mods if m.split(".")[0] in KERNELS][:5]


def test_every_workload_is_listed_and_all_declare_plug_in_points_lazily_or_not_at_all():
    assert {"cluster", "cyclic", "desktop_grid", "ga", "mm1", "slot_selection"} <= set(WORKLOADS)
    for name in WORKLOADS:
        for point in getattr(workloads.get(name), "PLUGINS", ()):
            assert callable(point.signature), (name, point.param)   # else declaring it imported numba


def test_a_lazy_signature_is_built_once_and_returns_the_type_the_listing_shows():
    from schedsweep.workloads.kernel_support.plugins import PluginPoint

    for name in WORKLOADS:
        for point in getattr(workloads.get(name), "PLUGINS", ()):
            sig = point.numba_signature
            assert point.numba_signature is sig
            assert str(sig.return_type) == point.return_type, (name, point.param)
            assert len(sig.args) == len(point.args), (name, point.param)
    eager = PluginPoint("p", "f", types.int64(types.float64), (("x", "a number"),), "int")
    assert eager.numba_signature is eager.signature and eager.call_form() == "f(x) -> int64"


def test_kernel_names_a_package_hands_on_are_the_kernel_modules_own():
    from schedsweep.workloads import cluster, cyclic, desktop_grid, ga, slot_selection
    from schedsweep.workloads.cluster import simulator, topo_allocation
    from schedsweep.workloads.cluster.choices import TOPO_METHODS
    from schedsweep.workloads.cyclic import cycle, dp
    from schedsweep.workloads.cyclic import run_cycle
    from schedsweep.workloads.desktop_grid import timeline
    from schedsweep.workloads.slots import aep

    assert run_cycle is cycle.run_cycle and cyclic.STRATEGIES is dp.STRATEGIES
    assert cluster.simulate is simulator.simulate and cluster.simulator is simulator
    assert desktop_grid.Timeline is timeline.Timeline and slot_selection.aep_search is aep.aep_search
    assert ga.plan.__module__.endswith("ga.planning")
    assert tuple(topo_allocation.METHODS) == TOPO_METHODS    # the listing's names are the methods'
    with pytest.raises(AttributeError):
        cluster.no_such_name


def _read_only(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a


def test_kernel_array_gives_the_one_array_type_the_kernels_are_compiled_for():
    strided = np.arange(20, dtype=np.int32)[::2]
    for a in (_read_only(np.arange(5.0)), strided, np.asfortranarray(np.ones((3, 2)))):
        b = kernel_array(a, np.float64)
        assert b.flags.c_contiguous and b.flags.writeable and b.flags.aligned and b.dtype == np.float64
        assert np.array_equal(b, a)
    plain = np.arange(4.0)
    assert kernel_array(plain, np.float64) is plain  # no copy when nothing needs converting


def test_read_only_or_strided_trace_arrays_compile_no_second_kernel():
    from schedsweep.workloads.cluster import simulator

    rng = np.random.default_rng(3)
    n = 40
    args = dict(submit=np.sort(rng.uniform(0, 500, n)), cores_req=rng.integers(1, 5, n),
                mem_req=np.zeros(n), disk_req=np.zeros(n), estimate=rng.uniform(10, 100, n))
    args["tau"] = args["estimate"] * rng.uniform(0.2, 1.0, n)
    nodes = dict(node_cores=np.full(4, 2), node_mem=np.full(4, 1e9), node_disk=np.full(4, 1e9), node_speed=np.ones(4))
    first = simulator.simulate(**args, **nodes, queue="easy", allocation_policy="first_fit", rng_seed=1)
    loop = simulator._RUN[simulator.EASY]    # the EASY event loop
    compiled = len(loop.signatures)
    frozen = {k: _read_only(v) for k, v in args.items()}
    frozen["submit"] = np.repeat(args["submit"], 2)[::2]  # a strided view
    again = simulator.simulate(**frozen, **{k: _read_only(v) for k, v in nodes.items()}, queue="easy",
                               allocation_policy="first_fit", rng_seed=1)
    assert len(loop.signatures) == compiled
    assert np.array_equal(first.start, again.start)


def test_a_cold_cache_is_filled_by_one_pilot_before_the_others_start(tmp_path, write_spec):
    """Compiled once per sweep, not once per worker; and a second process loads, not compiles."""
    import json
    import os

    cache = tmp_path / "numba-cache"
    spec = write_spec('name = "c"\nworkload = "mm1"\nreplications = 8\nseed = 1\n[params]\ncustomers = 300\n'
                      'warmup = 10\n[sweep]\narrival_rate = [0.3, 0.5, 0.7]\n', "cold.toml")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    run = [sys.executable, "-m", "schedsweep.pipeline.cli", "run", str(spec), "--workers", "2", "--no-progress", "--store"]
    first = subprocess.run(run + [str(tmp_path / "a.zarr")], capture_output=True, text=True, env=env, check=True)
    assert "compiling the mm1 kernels" in first.stderr and "one worker compiles, the others wait" in first.stderr
    second = subprocess.run(run + [str(tmp_path / "b.zarr")], capture_output=True, text=True, env=env, check=True)
    assert "compiling" not in second.stderr
    # A fresh process finds every kernel mm1 needs (in _lindley.py) in the cache: loads, does not compile.
    code = ("import json, numpy as np\nfrom schedsweep.workloads import _lindley, mm1\n"
            "mm1.run_batch({'arrival_rate': 0.5, 'service_rate': 1.0, 'customers': 300, 'warmup': 10},"
            " np.arange(2, dtype=np.uint64))\n"
            "print(json.dumps({n: [len(f.stats.cache_hits), len(f.stats.cache_misses)] for n, f in vars(_lindley).items()"
            " if hasattr(f, 'stats') and f.signatures}))")
    stats = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                      check=True).stdout)
    assert stats and all(hits >= 1 and misses == 0 for hits, misses in stats.values()), stats


def test_traces_listing_loads_neither_numba_nor_pooch():
    """``schedsweep traces`` reads the catalogue and the cache folder only; pooch (and the
    network stack) load when a download starts."""
    mods = loaded_after(["traces"])
    assert not [m for m in HEAVY + KERNELS + ("pooch", "requests") if m in mods]
