"""Keep numba's on-disk caches consistent with the source.

numba checks only the source file of each cached kernel, but our kernels call kernels of
sibling modules and of other workloads (``cyclic`` inlines ``slot_selection``'s scans), so
an edit of one module could leave others running stale machine code. At import we hash
every workload module; when the hash differs from the one stamped beside the caches, all
``*.nbi``/``*.nbc`` files under ``workloads/`` are deleted and numba recompiles on first use.
A fresh checkout has no caches and only writes the stamp.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).parent


def source_digest(root: Path = ROOT) -> str:
    sha = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        sha.update(str(path.relative_to(root)).encode())
        sha.update(path.read_bytes())
    return sha.hexdigest()


def drop_stale_caches(root: Path = ROOT) -> bool:
    """Delete the kernel caches if any workload source changed; True if it deleted them."""
    stamp = root / "__pycache__" / "kernels.sha1"
    digest = source_digest(root)
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass  # no stamp yet
    try:
        for pattern in ("*.nbi", "*.nbc"):
            for f in root.rglob(pattern):
                f.unlink(missing_ok=True)
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:
        return False  # a read-only install: numba then compiles in memory
    return True
