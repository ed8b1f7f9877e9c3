"""Kill a run at a chosen instant: the store's fault points (``pipeline.store.zarrstore.fault_point``)."""
from __future__ import annotations

import os
import signal
from typing import Callable

from schedsweep.pipeline.execution import child
from schedsweep.pipeline.store import zarrstore as store_mod


def killed_at(at: int, run: Callable[[], object]) -> bool:
    """Call ``run()`` in a forked process that SIGKILLs itself at fault point ``at``.

    True if it was killed there, False if the run ended before reaching that point.
    """
    pid = os.fork()
    if pid == 0:  # the child: its own replication process, never the parent's
        code = 1
        try:
            child._local.child = None
            child._all.clear()
            store_mod._fault_calls = 0
            os.environ["SCHEDSWEEP_KILL_AT"] = str(at)
            run()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0
    return False
