"""A tiny workload with one plug-in point, for the plug-in infrastructure tests
(``workload = "tests.plugins_toy_workload"``): replication r draws x ~ U[0, 1) and
reports ``y = rule(x)``; ``rule`` is 'double', 'square' or a plug-in
``float64(float64)``. A plug-in returning a negative number is an impossible choice:
the replication fails with a message naming the plug-in and the value.
"""
from __future__ import annotations

import sys

import numba
import numpy as np
from numba import types

from schedsweep.workloads._contract import Metric, Param, empty_outputs, substreams
from schedsweep.workloads.kernel_support.plugins import PluginError, PluginPoint, function

PARAMS = (Param("rule", "str", "double", "what y is", choices=("double", "square"), plugin=True),)
METRICS = (Metric("y", "1", "rule(x)"),)
REASONS = {0: ("none", "")}
PLUGINS = (PluginPoint("rule", "rule", types.float64(types.float64), (("x", "the draw, in [0, 1)"),),
                       "y, >= 0", builtins=(("double", "tests.plugins_toy_workload:double"),
                                                  ("square", "tests.plugins_toy_workload:square"))),)


def double(x):
    return 2.0 * x


def square(x):
    return x * x


@numba.njit(cache=True)
def _apply(rule, xs, out):
    for k in range(xs.size):
        out[k] = rule(xs[k])
        if out[k] < 0:
            return k
    return -1


def run_batch(params, seeds):
    name = params["rule"]
    rule = function(sys.modules[__name__], "rule", name)   # a plug-in, or a built-in written as one
    out = empty_outputs(METRICS, len(seeds))
    xs = np.array([substreams(s, 1)[0].random() for s in seeds])
    y = np.empty(len(seeds))
    bad = _apply(rule, xs, y)
    if bad >= 0:
        raise PluginError(f"rule plug-in {name} returned y = {y[bad]!r} < 0 for x = {xs[bad]!r}")
    out["y"][:] = y
    return out
