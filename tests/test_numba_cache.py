"""Stale numba caches are dropped when any workload source changes."""
from __future__ import annotations

from workloads._numba_cache import drop_stale_caches


def test_caches_dropped_only_when_a_source_changes(tmp_path):
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
