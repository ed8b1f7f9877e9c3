"""Tasks a replication submits to the sweep's own Dask cluster (the GA's islands).

A replication runs in a child process of its Dask worker (:mod:`pipeline.execution.child`), and that
process has no Dask client. A workload whose ``uses_cluster(params)`` says so gets one:

- the worker's task hands the child the scheduler's address and the worker's security
  (TLS on Slurm) with the batch (:func:`run_connected`), and the child opens its own
  client to the same scheduler (:func:`client`, one per child, kept for later batches);
- while the child waits for its subtasks, the task gives its worker slot back
  (``distributed.secede``) and takes one again when the batch is done (``rejoin``), so the
  subtasks find free slots even when every worker is driving a replication. Holding the slot
  instead deadlocks as soon as the drivers fill the cluster's slots;
- each subtask runs in the replication process of the worker thread that picks it up
  (:func:`in_child`), like a replication: a crash or a hang in a kernel does not take the
  worker, and the compiled kernels stay loaded there;
- subtasks go first (:data:`PRIORITY`): a slot that a driver gives back goes to the waiting
  islands before the next batch of replications starts another driver.

Without a Dask cluster (local processes, ``--workers 0``) there is no scheduler to connect to;
:func:`check` refuses such a run before it starts.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from . import child
from ..base.errors import SpecError

PRIORITY = 10          # Dask task priority of subtasks (replication batches have 0)
SUBTASK_TIMEOUT = 3600.0  # seconds a subtask may take in its replication process

_cluster: tuple | None = None   # (scheduler address, security) in a child connected by run_connected
_client: Any = None


class ClusterNeeded(SpecError):
    """A workload asked for the sweep's Dask cluster where the run has none."""


def uses_cluster(module: Any, params: dict[str, Any]) -> bool:
    """Whether the workload submits subtasks for ``params`` (its optional ``uses_cluster`` hook)."""
    hook = getattr(module, "uses_cluster", None)
    return bool(hook(params)) if hook is not None else False


def check(module: Any, cells: list[dict[str, Any]], on_dask: bool, name: str) -> None:
    """Raise :class:`ClusterNeeded` if a cell's replications need a Dask cluster and the run has none."""
    if not on_dask and any(uses_cluster(module, p) for p in cells):
        raise ClusterNeeded(f"workload {name}: a cell asks for Dask subtasks (e.g. island_execution = 'dask'), "
                            "which need the sweep on a Dask cluster: run with --cluster dask, --cluster slurm, "
                            "--scheduler or --scheduler-file")


def worker_cluster() -> tuple | None:
    """``(scheduler address, security)`` of the Dask worker running this thread, or None."""
    try:
        import distributed

        worker = distributed.get_worker()
    except (ImportError, ValueError):
        return None
    return worker.scheduler.address, _as_client(worker.security)


def _as_client(security: Any) -> Any:
    """The worker's TLS settings for a client: a Slurm worker gets its certificate as the
    worker's role only (dask-jobqueue's --tls-cert), and the scheduler asks clients for one too;
    every role uses the same temporary certificate (``pipeline.execution.slurm.temporary_security``)."""
    if security is None or getattr(security, "tls_client_cert", None) or not getattr(security, "tls_worker_cert", None):
        return security
    from distributed.security import Security

    return Security(require_encryption=security.require_encryption, tls_ca_file=security.tls_ca_file,
                    tls_client_cert=security.tls_worker_cert, tls_client_key=security.tls_worker_key)


@contextlib.contextmanager
def seceded() -> Iterator[None]:
    """Give this Dask task's worker slot back for the block, then wait for one again."""
    import distributed

    distributed.secede()
    try:
        yield
    finally:
        distributed.rejoin()


def run_connected(cluster: tuple, run: Callable, *args: Any) -> Any:
    """In the child: remember the cluster, then ``run(*args)`` (``tasks.run_replications``,
    handed in so that this module stays beneath ``tasks``)."""
    global _cluster
    _cluster = cluster
    return run(*args)


def client() -> Any:
    """This child's client to the sweep's scheduler (made on first use, then kept)."""
    global _client
    if _cluster is None:
        raise ClusterNeeded("no Dask cluster: subtasks need the replication to run on a Dask worker "
                            "(--cluster dask, --cluster slurm, --scheduler or --scheduler-file)")
    if _client is None or _client.status not in ("running", "connecting") or _client.scheduler.address != _cluster[0]:
        from distributed import Client

        address, security = _cluster
        _client = Client(address, security=security, set_as_default=False)
    return _client


def in_child(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` in the replication process of the worker thread running this subtask."""
    return child.call(fn, *args, timeout=SUBTASK_TIMEOUT)


def submit(fn: Callable, *args: Any, client: Any = None) -> Any:
    """A subtask ``fn(*args)`` on the sweep's cluster, or ``client``'s (run in a replication
    process of the worker), as a future."""
    return (client or globals()["client"]()).submit(in_child, fn, *args, pure=False, priority=PRIORITY)
