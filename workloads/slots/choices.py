"""The names of the AEP scan's algorithms, without numba: slot_selection's ``algorithm``
declaration reads them here; :mod:`.aep` hands them on."""
from __future__ import annotations

#: The algorithms of the scan (``alp`` runs as ``amp`` on its eligible nodes; slot_selection adds ``csa``).
AEP_ALGORITHMS = ("amp", "alp", "min_cost", "min_runtime", "min_runtime_exact", "min_finish",
                  "min_finish_exact", "min_proc_time", "min_proc_time_exact")
