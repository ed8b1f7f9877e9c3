"""The Dask scheduler in a process of its own, for ``--cluster dask``
(:func:`pipeline.execution.executors.local_cluster`) and ``--cluster slurm``
(:mod:`pipeline.execution.slurm`): its CPU per task is then not the client's, and each takes a
core of its own (docs/running-on-slurm.md, "Sizing"). The process carries the walltime
handover's handlers (:mod:`pipeline.execution.handover`).

    python -m schedsweep.pipeline.execution.scheduler   # started by scheduler_process, never by hand
"""
from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from typing import Any


@functools.cache
def scheduler_process() -> type:
    """The class of the scheduler's process, made on first use: it subclasses a class of ``distributed``,
    which this module does not import until a Dask route is chosen."""
    from distributed.deploy.subprocess import SubprocessScheduler

    class _SchedulerProcess(SubprocessScheduler):
        """A Dask scheduler in a process of its own (``python -m
        schedsweep.pipeline.execution.scheduler``), started with this process's Dask
        configuration and the scheduler's keyword arguments (``scheduler_kwargs``, or as
        keywords themselves, as dask-jobqueue's ``scheduler_cls`` is called); its address
        comes back on its stdout.

        The arguments go on its stdin, not its command line, where any user's ``ps`` would
        read a temporary TLS key. Its own session, so a Ctrl-C or hang-up of the terminal
        reaches the client alone, which decides how the run stops and then closes it; it
        exits by itself when this process goes (its stdin, a pipe from here, ends)."""

        def __init__(self, scheduler_kwargs: dict[str, Any] | None = None, timeout: int = 30,
                     **kwargs: Any) -> None:
            super().__init__(scheduler_kwargs={**(scheduler_kwargs or {}), **kwargs}, timeout=timeout)

        async def _start(self) -> None:
            import asyncio
            import json

            import dask

            # The address comes on stdout, not in the scheduler file SubprocessScheduler names (never removed).
            kwargs = {k: v for k, v in self.scheduler_kwargs.items() if k != "scheduler_file"}
            if kwargs.get("security") is not None:
                kwargs["security"] = _security_fields(kwargs["security"])
            env = dict(os.environ, DASK_INTERNAL_INHERIT_CONFIG=dask.config.serialize(dask.config.global_config))
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "schedsweep.pipeline.execution.scheduler",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, start_new_session=True)
            self.process.stdin.write(json.dumps(kwargs).encode() + b"\n")
            await self.process.stdin.drain()
            try:
                line = await asyncio.wait_for(self.process.stdout.readline(), self.timeout)
            except asyncio.TimeoutError:
                line = b""
            if not line:
                raise RuntimeError(f"the Dask scheduler's process (`{sys.executable} -m "
                                   f"schedsweep.pipeline.execution.scheduler`) did not start within {self.timeout} s "
                                   f"(exit code {self.process.returncode}); its errors are above")
            self.address = json.loads(line)["address"]

    return _SchedulerProcess


def _security_fields(security: Any) -> dict[str, Any]:
    """A ``distributed.security.Security`` as plain values (file paths, or PEM text when temporary)."""
    return {name: getattr(security, name) for name in type(security).__slots__
            if getattr(security, name, None) is not None}


def serve_scheduler() -> None:
    """The scheduler's process: a ``distributed.Scheduler`` with the keyword arguments of the
    first line of stdin (JSON; ``security`` as :func:`_security_fields`), with the walltime
    handover's handlers (:mod:`pipeline.execution.handover`); its address printed as one JSON
    line on stdout; ends when its stdin does (the client gone)."""
    import asyncio
    import json

    from distributed import Scheduler
    from distributed.security import Security

    from . import handover

    logging.getLogger("distributed").setLevel(logging.ERROR)  # as the LocalCluster's silence_logs did
    scheduler_kwargs = json.loads(sys.stdin.buffer.readline())
    if scheduler_kwargs.get("security") is not None:
        scheduler_kwargs["security"] = Security(**scheduler_kwargs["security"])

    def exit_with_client() -> None:
        sys.stdin.buffer.read()
        os._exit(0)

    async def serve() -> None:
        async with Scheduler(**scheduler_kwargs) as scheduler:
            handover.install(scheduler)
            print(json.dumps({"address": scheduler.address}), flush=True)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing else goes to the client's pipe
            threading.Thread(target=exit_with_client, daemon=True).start()
            await scheduler.finished()

    asyncio.run(serve())


if __name__ == "__main__":
    serve_scheduler()
