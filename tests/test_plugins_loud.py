"""A plug-in that raises where plain Python raises (here: division by zero, integer and
float) fails its replication with a message naming it, in every workload's plug-in point.

Plug-ins are compiled with numba's Python error model, so the division raises; numba's C
wrapper cannot hand the exception to the kernel (it returns 0 and the kernel goes on), so
``_plugins.fails_loudly`` fails the workload's ``run_batch`` afterwards. With the numpy
error model (the code before) each of these five runs returned its metrics, reason 0, no
error: the plug-ins use the ratio only in a guard (tests/plugins_raising.py). The pipeline isolates a
failing ``run_batch`` per seed and records the error's message
(``test_plugins_cluster.py::test_pipeline_records_a_failing_plugin_and_goes_on``).
"""
from __future__ import annotations

import numpy as np
import pytest

from schedsweep.workloads import cluster, cyclic, desktop_grid, ga, slot_selection
from schedsweep.workloads.kernel_support.plugins import PluginError

SEED = np.array([3], np.uint64)


def _defaults(module, **kw):
    p = {prm.name: prm.default for prm in module.PARAMS}
    p.update(kw)
    return p


CASES = {
    "cluster": (cluster, "queue", "cluster_queue", dict(jobs=20, nodes=4, cores=2, load=0.9), "integer division"),
    "cyclic": (cyclic, "strategy", "cyclic_criterion",
               dict(nodes=10, jobs=6, interval=400.0, job_slots_max=3, n_css=3), "integer division"),
    "desktop_grid": (desktop_grid, "policy", "dg_rule", dict(system="A", horizon=100.0), "integer division"),
    "ga": (ga, "objective", "ga_objective",
           dict(units=8, groups=2, density=1.5, periods=1, algorithm="backfill"), "division by zero"),
    "slot_selection": (slot_selection, "algorithm", "ss_criterion", {}, "division by zero"),
}


@pytest.mark.parametrize("workload", sorted(CASES))
def test_a_raising_plugin_fails_the_replication_naming_it(workload):
    module, param, fn, params, says = CASES[workload]
    path = f"tests.plugins_raising:{fn}"
    with pytest.raises(PluginError) as err:
        module.run_batch(_defaults(module, **params, **{param: path}), SEED)
    text = str(err.value)
    assert text.startswith(f"{param} plug-in {path} raised ZeroDivisionError: "), text
    assert says in text and "\n" not in text
