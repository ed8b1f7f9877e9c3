"""Keep numba's on-disk caches consistent with the source.

numba checks only the source file of each cached kernel, but our kernels call kernels of
sibling modules and of shared packages (``cyclic`` and ``slot_selection`` inline the scans
of ``slots``), so an edit of one module could leave others running stale machine code. At
import we hash every workload module; when the hash differs from the one stamped beside the
caches, all ``*.nbi``/``*.nbc`` files of our modules are deleted and numba recompiles on
first use: under ``workloads/`` (numba's ``__pycache__``), or under ``NUMBA_CACHE_DIR`` when
that is set (a cache on a shared file system for every worker of a cluster,
docs/running-on-slurm.md, "Compilation").
A fresh checkout has no caches and only writes the stamp.

A cache built on another CPU is not ours to drop: numba keys every cached entry by the CPU
name and features it was compiled for and compiles anew (adding an entry) on a CPU that
differs, so a shared cache serves mixed nodes safely.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the workloads package: every model's source, not just this folder's


def source_digest(root: Path = ROOT) -> str:
    sha = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        sha.update(str(path.relative_to(root)).encode())
        sha.update(path.read_bytes())
    return sha.hexdigest()


def numba_subpath(directory: Path) -> str:
    """The folder under ``NUMBA_CACHE_DIR`` where numba caches the kernels of modules in
    ``directory`` (numba's ``_CacheLocator.get_suitable_cache_subpath``)."""
    subpath = os.path.abspath(directory)
    return "_".join([os.path.split(subpath)[-1], hashlib.sha1(subpath.encode()).hexdigest()])


def cache_locations(root: Path = ROOT) -> tuple[list[Path], Path]:
    """(folders that hold the kernel caches of modules under ``root``, the stamp file)."""
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    if not cache_dir:
        return [root], root / "__pycache__" / "kernels.sha1"
    folders = sorted({p.parent for p in root.rglob("*.py")})
    tag = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:12]
    return [Path(cache_dir) / numba_subpath(f) for f in folders], Path(cache_dir) / f"schedsweep-kernels-{tag}.sha1"


def drop_stale_caches(root: Path = ROOT) -> bool:
    """Delete the kernel caches if any workload source changed; True if it deleted them."""
    folders, stamp = cache_locations(root)
    digest = source_digest(root)
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass  # no stamp yet
    try:
        for folder in folders:
            for pattern in ("*.nbi", "*.nbc"):
                for f in folder.rglob(pattern):
                    f.unlink(missing_ok=True)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    except OSError:
        return False  # a read-only install: numba then compiles in memory
    return True


def has_cached_kernels(directory: Path) -> bool:
    """Whether numba has cached kernels of modules in ``directory`` (in the cache location now in force)."""
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    folder = Path(cache_dir) / numba_subpath(directory) if cache_dir else directory / "__pycache__"
    return any(folder.glob("*.nbi"))
