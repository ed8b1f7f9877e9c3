"""What a spec may ask of the machine that reads it: the client's memory for its cells and runs.

The client's memory grows with the number of cells (a parameter record, batch records and,
on Dask, a future per task) and of runs (status, seeds): a sweep it cannot hold is refused
when its spec is read, before anything is built (``pipeline.spec.sweep``).
"""
from __future__ import annotations

import os

from ..base.errors import SpecError

# Client bytes per cell: its parameter dict (about 400 B for 4 parameters, measured as `dict(spec.cells())`
# at 2**20 cells) and its batch records, about 500 B in all on the local route (a 10**7-cell sweep
# reached 5 GB), and on Dask a future per task (4.3 KB per pending task, client and scheduler:
# benchmarks/bench_tasks.py); 2 kB lies between. Per run: the int8 status, the to-do mask and a
# share of the uint64 seeds.
CELL_BYTES = 2_000
RUN_BYTES = 16
MEMORY_SHARE = 0.5  # of the memory available now: the rest is for the workers, the OS and other users
CHECK_ABOVE = 256 * 2 ** 20  # below this estimate no need to look at the machine's memory


def client_bytes(n_cells: int, replications: int) -> int:
    """Estimated memory of the client for a sweep (bytes)."""
    return n_cells * CELL_BYTES + n_cells * replications * RUN_BYTES


def available_memory() -> int:
    """Bytes of memory available now (Linux MemAvailable), else the machine's physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_client_memory(where: str, n_cells: int, replications: int) -> None:
    """Refuse (SpecError) a sweep whose client would need more than MEMORY_SHARE of the
    memory available now."""
    need = client_bytes(n_cells, replications)
    if need <= CHECK_ABOVE:
        return
    have = available_memory()
    if need > MEMORY_SHARE * have:
        raise SpecError(f"{where}: {n_cells:,} cells x {replications:,} replications needs about {gb(need)} of "
                        f"memory in the client, more than half of the {gb(have)} available here; "
                        "sweep fewer values (split it into several specs; schedsweep merge joins their stores)")


def gb(nbytes: float) -> str:
    """``nbytes`` for people: '3.2 GB', '512 MB', '12 kB'."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} B"
