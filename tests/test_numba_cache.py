"""Stale numba caches are dropped when any workload source changes."""
from __future__ import annotations

from schedsweep.workloads.kernel_support.numba_cache import drop_stale_caches


def test_caches_dropped_only_when_a_source_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)  # numba's caches beside the sources
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "__pycache__").mkdir()
    src = tmp_path / "pkg" / "kernels.py"
    src.write_text("x = 1\n")
    cache = tmp_path / "pkg" / "__pycache__" / "kernels.f-1.py311.nbi"
    cache.write_text("stale")
    assert drop_stale_caches(tmp_path) is True and not cache.exists()   # no stamp yet: drop
    cache.write_text("fresh")
    assert drop_stale_caches(tmp_path) is False and cache.exists()      # same sources: keep
    (tmp_path / "other.py").write_text("y = 2\n")                        # any module changes
    assert drop_stale_caches(tmp_path) is True and not cache.exists()


def test_caches_under_numba_cache_dir_are_dropped_too(tmp_path, monkeypatch):
    from numba.core.caching import _CacheLocator

    from schedsweep.workloads.kernel_support.numba_cache import numba_subpath

    src_root = tmp_path / "src"
    (src_root / "pkg").mkdir(parents=True)
    src = src_root / "pkg" / "kernels.py"
    src.write_text("x = 1\n")
    assert numba_subpath(src.parent) == _CacheLocator.get_suitable_cache_subpath(str(src))  # numba's own rule
    cache_dir = tmp_path / "shared-cache"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache_dir))
    cached = cache_dir / numba_subpath(src.parent) / "kernels.f-1.py311.nbi"
    cached.parent.mkdir(parents=True)
    cached.write_text("stale")
    other = cache_dir / "elsewhere_0123" / "theirs.nbi"  # another project's cache: not ours to touch
    other.parent.mkdir()
    other.write_text("theirs")
    assert drop_stale_caches(src_root) is True and not cached.exists()
    cached.write_text("fresh")
    assert drop_stale_caches(src_root) is False and cached.exists()
    src.write_text("x = 2\n")
    assert drop_stale_caches(src_root) is True and not cached.exists()
    assert other.read_text() == "theirs"
    assert not (src_root / "__pycache__").exists()  # the stamp lives with the caches


def test_the_guard_hashes_every_workload_source(monkeypatch):
    """The default root is the workloads package (this module lives in its kernel_support
    folder): an edit of any model's kernels, or of the constants they read, drops the caches."""
    from pathlib import Path

    from schedsweep import workloads
    from schedsweep.workloads.kernel_support import numba_cache

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    root = Path(workloads.__file__).resolve().parent
    assert numba_cache.ROOT == root and numba_cache.cache_locations()[0] == [root]
    hashed = {p.relative_to(root).as_posix() for p in root.rglob("*.py")}
    assert {"cluster/bookkeeping.py", "cyclic/dp.py", "desktop_grid/simulator.py", "ga/islands.py"} <= hashed
