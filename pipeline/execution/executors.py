"""Where tasks run: in this process (``workers=0``), in threads of this process each with its
own replication process (the local default), a Dask cluster of this machine
(``cluster='dask'``, its scheduler in a process of its own), a scheduler address or
scheduler file, or Slurm through dask-jobqueue. Each is a context
manager yielding an object with ``submit``, ``completed_groups``, ``results`` and ``n_workers``.

Wherever a task runs, its replications run in a child process of it (``pipeline.execution.child``),
so ``workers=0`` keeps the client safe from a replication that crashes or hangs.
"""
from __future__ import annotations

import contextlib
import logging
import os
import queue
import sys
import threading
from typing import Any, Callable, Iterator

from .sizing import TASK_COST

# Worker processes inherit these: one thread per worker for numba and BLAS, so that
# workers-per-core is the only parallelism and timings stay honest.
_SINGLE_THREAD_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                      "MKL_NUM_THREADS": "1"}


class _Done:
    """A call run when the runner asks for it, shaped like the part of a Dask future it uses."""

    def __init__(self, fn: Callable, args: tuple, key: str | None):
        self.fn, self.args, self.key = fn, args, key
        self.error: BaseException | None = None
        self.tb: str | None = None
        self.computed = False

    def compute(self) -> "_Done":
        if self.computed:  # a pilot's result was asked for before completed() reached it
            return self
        self.computed = True
        fn, args = self.fn, self.args
        try:
            self.value = fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported by the runner like a Dask task error
            import traceback
            self.error, self.tb = exc, traceback.format_exc()
        return self

    @property
    def status(self) -> str:
        return "error" if self.error else "finished"

    def result(self) -> Any:
        self.compute()
        if self.error:
            raise self.error
        return self.value


class SerialExecutor:
    """Runs tasks one by one from this process, in submission order (``workers=0``); each
    task's replications run in this process's child (``pipeline.execution.child``)."""

    n_workers = 1
    task_cost = TASK_COST["local"]
    dashboard_link = None

    def __init__(self) -> None:
        self._queue: list[_Done] = []

    def submit(self, fn: Callable, *args: Any, key: str | None = None) -> _Done:
        done = _Done(fn, args, key)
        self._queue.append(done)
        return done

    def submit_many(self, fn: Callable, calls: list[tuple], keys: list[str]) -> list[_Done]:
        return [self.submit(fn, *args, key=key) for args, key in zip(calls, keys)]

    def completed(self) -> Iterator[_Done]:
        while self._queue:
            yield self._queue.pop(0).compute()

    def completed_groups(self) -> Iterator[list[_Done]]:
        for done in self.completed():
            yield [done]

    @staticmethod
    def results(futures: list[_Done]) -> list[Any]:
        return [f.result() for f in futures]

    @staticmethod
    def error_text(future: _Done) -> str:
        return future.tb or repr(future.error)

    def __enter__(self) -> "SerialExecutor":
        # The child process of the last run in this process is kept (its imports and loaded
        # kernels warm; it exits after 10 min idle or with this process) unless stale.
        from .child import drop_stale

        drop_stale()
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is not None:  # interrupted: the child may be in the middle of a batch
            from .child import close_all

            close_all()


class _Task:
    """A call for a pool thread, shaped like the part of a Dask future the runner uses."""

    def __init__(self, fn: Callable, args: tuple, key: str | None):
        self.fn, self.args, self.key = fn, args, key
        self.error: BaseException | None = None
        self.tb: str | None = None
        self.value: Any = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.value = self.fn(*self.args)
        except Exception as exc:  # noqa: BLE001 - reported by the runner like a Dask task error
            import traceback
            self.error, self.tb = exc, traceback.format_exc()
        self.done.set()

    @property
    def status(self) -> str:
        return "error" if self.error else "finished"

    def result(self) -> Any:
        self.done.wait()
        if self.error:
            raise self.error
        return self.value


class ProcessExecutor:
    """``workers`` threads of this process, each running its tasks in its own replication
    process (:mod:`pipeline.execution.child`): the local cluster without Dask.

    The work already runs in child processes (for time limits and crash isolation), so
    Dask's worker processes would only add imports, a scheduler and a network hop: on a
    small sweep that is about a second of start-up and a tenth more CPU (benchmarks/README.md,
    "Small sweeps"). ``--cluster dask`` keeps a Dask cluster (:func:`local_cluster`), with its dashboard.
    """

    dashboard_link = None

    def __init__(self, workers: int, warm: Callable[[], None] | None = None):
        self.n_workers = workers
        self.task_cost = TASK_COST["local"]
        self._warm = warm
        self._todo: "queue.Queue[_Task | None]" = queue.Queue()
        self._done: "queue.Queue[_Task]" = queue.Queue()
        self._outstanding = 0
        self._threads = [threading.Thread(target=self._work, name=f"schedsweep-worker-{k}", daemon=True)
                         for k in range(workers)]

    def _work(self) -> None:
        if self._warm is not None:  # start this thread's replication process now, not at its first task
            self._warm()
        while (task := self._todo.get()) is not None:
            task.run()
            self._done.put(task)

    def submit(self, fn: Callable, *args: Any, key: str | None = None) -> _Task:
        task = _Task(fn, args, key)
        self._outstanding += 1
        self._todo.put(task)
        return task

    def submit_many(self, fn: Callable, calls: list[tuple], keys: list[str]) -> list[_Task]:
        return [self.submit(fn, *args, key=key) for args, key in zip(calls, keys)]

    def completed_groups(self) -> Iterator[list[_Task]]:
        """Lists of finished tasks: each time, all that finished since the last list."""
        while self._outstanding:
            group = [self._done.get()]
            while True:
                try:
                    group.append(self._done.get_nowait())
                except queue.Empty:
                    break
            self._outstanding -= len(group)
            yield group

    @staticmethod
    def results(futures: list[_Task]) -> list[Any]:
        return [f.result() for f in futures]

    @staticmethod
    def error_text(future: _Task) -> str:
        return future.tb or repr(future.error)

    def __enter__(self) -> "ProcessExecutor":
        from .child import allow, drop_stale

        allow()
        drop_stale()  # the children of the last run in this process stay warm unless stale
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        interrupted = exc[0] is not None
        if interrupted:  # stop the tasks still running, now: queued ones dropped, children killed
            from .child import stop_all

            while True:
                try:
                    self._todo.get_nowait()
                except queue.Empty:
                    break
            stop_all()
        for _ in self._threads:  # after the queue was emptied: every thread finds its end mark
            self._todo.put(None)
        # An interrupted run does not wait for its threads: their children are killed, so they
        # end in moments, and they are daemons, so none holds the process (a thread still
        # starting a child is what STOP_WAIT bounds).
        for t in self._threads:
            t.join(timeout=STOP_WAIT if interrupted else None)


STOP_WAIT = 0.2  # seconds an interrupted run waits for each worker thread to end


MAP_SIZE = 2048  # tasks per graph sent to a Dask scheduler (DaskExecutor.submit_many)


class DaskExecutor:
    def __init__(self, client: Any, n_workers: int | None = None, task_cost: float = TASK_COST["slurm"]):
        from distributed import as_completed

        self.client = client
        self.task_cost = task_cost  # CPU seconds per task of the busiest process (pipeline.execution.sizing.task_seconds)
        # Results are fetched by one gather per group (one request to each worker holding
        # some), not one by one as each task finishes (as_completed's with_results): over
        # TLS on Slurm that is 4-6 instead of 8-9 ms per no-op task, and less client CPU
        # on a LocalCluster too (benchmarks/README.md, "Result path").
        self._ac = as_completed()
        self._n_workers = n_workers
        self.dashboard_link = getattr(client, "dashboard_link", None)

    @property
    def n_workers(self) -> int:
        if self._n_workers:
            return self._n_workers
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def submit(self, fn: Callable, *args: Any, key: str | None = None) -> Any:
        future = self.client.submit(fn, *args, pure=False, key=key)
        self._ac.add(future)
        return future

    def submit_many(self, fn: Callable, calls: list[tuple], keys: list[str]) -> list[Any]:
        """``fn(*args)`` for each of ``calls``, as graphs of up to MAP_SIZE tasks: the scheduler
        takes them in one ``update_graph`` each instead of one per task (each a round of graph
        materialisation and two hops to its offload thread: most of the scheduler's CPU per
        task on a LocalCluster, whose scheduler shares the client's process)."""
        futures = []
        for k in range(0, len(calls), MAP_SIZE):  # a graph the scheduler takes in well under a second
            part = self.client.map(fn, *zip(*calls[k:k + MAP_SIZE]), key=list(keys[k:k + MAP_SIZE]), pure=False)
            self._ac.update(part)
            futures += part
        return futures

    def completed(self) -> Iterator[Any]:
        for group in self.completed_groups():
            yield from group

    def completed_groups(self) -> Iterator[list[Any]]:
        """Lists of futures: each time, all that have finished since the last list."""
        yield from self._ac.batches()

    def results(self, futures: list[Any]) -> list[Any]:
        """The futures' results, in one gather."""
        return self.client.gather(futures) if futures else []

    @staticmethod
    def error_text(future: Any) -> str:
        import traceback

        exc, tb = future.exception(), future.traceback()
        return "".join(traceback.format_exception(type(exc), exc, tb))


# A Dask worker silent (no heartbeat) for longer than Dask's ``distributed.scheduler.worker-ttl``
# (5 minutes unless configured; this when it is unset) is restarted by its nanny, or removed
# without one; a shorter task_timeout shortens it on the clusters this process starts. Dask
# never waits less than 10 heartbeat intervals (0.5 s with up to 10 workers, 6 s at 1,000).
WORKER_SILENCE = 300.0


@contextlib.contextmanager
def open_executor(workers: int | None = None, scheduler: str | None = None,
                  scheduler_file: str | None = None, cluster: str = "local",
                  slurm_options: dict[str, Any] | None = None,
                  warm: Callable[[], None] | None = None, task_timeout: float | None = None) -> Iterator[Any]:
    """Yield an executor for the chosen backend and close what was started here.

    ``warm`` (local processes only): called first in each worker thread, before any task,
    to start its replication process while the client does its own start-up (an error in
    it is the first task's to report). ``task_timeout`` (seconds): on the Dask clusters
    started here (``dask``, ``slurm``), a worker that stops answering for task_timeout
    seconds, or Dask's worker-ttl if shorter, is retired and its tasks rerun elsewhere (see
    :func:`_retire_silent_workers`)."""
    if workers == 0 and cluster == "local" and not scheduler and not scheduler_file:
        with SerialExecutor() as serial:
            yield serial
        return
    if cluster == "local" and not scheduler and not scheduler_file:
        os.environ.update(_SINGLE_THREAD_ENV)
        with ProcessExecutor(workers or os.cpu_count() or 1, warm) as pool:
            yield pool
        return
    from distributed import Client

    os.environ.update(_SINGLE_THREAD_ENV)
    if scheduler or scheduler_file:
        client = Client(scheduler, scheduler_file=scheduler_file) if scheduler_file else Client(scheduler)
        try:
            from .child import drop_stale

            client.run(drop_stale)  # the workers outlive runs, and so do their replication processes
            _say_retired_workers(client)  # that scheduler's own worker-ttl applies
            yield DaskExecutor(client)
        finally:
            client.close()
        return
    with contextlib.ExitStack() as stack:
        stack.enter_context(_retire_silent_workers(task_timeout))
        if cluster == "slurm":
            from .slurm import make_cluster

            dask_cluster = make_cluster(**(slurm_options or {}))
            # Workers arrive over time; size batches for the most the cluster will have.
            expected = getattr(dask_cluster, "max_workers", None) or (slurm_options or {}).get("jobs")
        elif cluster == "dask":
            # Nannies restart dead workers the same way, so __main__ stays hidden while the cluster lives.
            stack.enter_context(_workers_skip_main())
            n = workers or os.cpu_count() or 1
            dask_cluster = local_cluster(n)
            expected = n
        else:
            raise ValueError(f"cluster must be 'local', 'dask' or 'slurm', not {cluster!r}")
        stack.callback(dask_cluster.close)
        client = Client(dask_cluster)
        stack.callback(client.close)
        _say_retired_workers(client)
        try:
            yield DaskExecutor(client, expected, TASK_COST[cluster])
        except BaseException:  # interrupted (Ctrl-C, a stop): no graceful end of running tasks
            if cluster == "dask":
                _kill_local_workers(dask_cluster)
            raise


def local_cluster(workers: int) -> Any:
    """The Dask cluster of ``--cluster dask``: ``workers`` single-threaded worker processes
    (each with its nanny, as a LocalCluster's) and the scheduler in a process of its own, all
    listening on 127.0.0.1 only, the dashboard too.

    A LocalCluster keeps its scheduler in the client's process, where both take CPU for every
    task: the first of the two limits as workers grow (docs/running-on-slurm.md, "Sizing").
    The caller closes it (closing kills the scheduler's process, which also ends when this
    process does)."""
    from distributed import Nanny, SpecCluster
    from distributed.worker_memory import parse_memory_limit

    from .scheduler import scheduler_process

    scheduler = {"cls": scheduler_process(),
                 "options": {"scheduler_kwargs": {"host": "127.0.0.1", "port": 0, "dashboard": True,
                                                  "dashboard_address": "127.0.0.1:0"}}}
    worker = {"cls": Nanny, "options": {"nthreads": 1, "host": "127.0.0.1", "dashboard": False,
                                         "silence_logs": logging.ERROR,
                                         "memory_limit": parse_memory_limit("auto", 1, workers, logger=logging.getLogger(__name__))}}
    return SpecCluster(workers=dict.fromkeys(range(workers), worker), scheduler=scheduler, worker=worker,
                       silence_logs=logging.ERROR, name="schedsweep")


def _kill_local_workers(dask_cluster: Any) -> None:
    """SIGKILL the worker processes of a LocalCluster this process started, so that closing it
    does not wait for their running tasks (their replication processes die with them:
    ``pipeline.execution.child``'s PR_SET_PDEATHSIG)."""
    import signal

    for nanny in list(getattr(dask_cluster, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _retire_silent_workers(task_timeout: float | None) -> contextlib.AbstractContextManager:
    """Configuration for a scheduler started in this process: a worker that sends no
    heartbeat for task_timeout seconds (or Dask's worker-ttl if shorter) is killed by its
    nanny and restarted (removed if it has no nanny or the nanny does not answer either).

    A frozen worker (SIGSTOP, a node in a swap storm or stuck on NFS) cannot run the time
    limit of its own tasks; the scheduler then sends them to other workers, as after a
    worker death (``KilledWorker`` after ``allowed-failures`` such deaths, which the
    runner resubmits). Our tasks wait on their replication process without the GIL, so a
    live worker keeps its heartbeat even while a long batch runs.
    """
    import dask
    from dask.utils import parse_timedelta

    configured = parse_timedelta(dask.config.get("distributed.scheduler.worker-ttl", None)) or WORKER_SILENCE
    silence = min(task_timeout or configured, configured)
    return dask.config.set({"distributed.scheduler.worker-ttl": f"{silence:g}s"})


def _say_retired_workers(client: Any) -> None:
    """Say on stderr when the scheduler retires a worker that stopped answering."""
    from ..base.console import say

    def handler(event: tuple[float, Any]) -> None:
        msg = event[1]
        if isinstance(msg, dict) and msg.get("action") == "worker-ttl-timed-out":
            workers = ", ".join(msg.get("workers", []))
            say(f"worker {workers} sent no heartbeat for {msg.get('ttl', 0):g} s: restarted or removed; "
                "its tasks rerun on other workers")

    client.subscribe_topic("scheduler", handler)


@contextlib.contextmanager
def _workers_skip_main() -> Iterator[None]:
    """Start worker processes without re-running the caller's main script in them.

    multiprocessing's spawn re-imports ``__main__`` in every new process (from its file,
    or by module name under ``python -m``) so that functions defined there can be
    unpickled. Our tasks are functions of ``pipeline.execution.tasks``, never of ``__main__``; and a
    script that calls ``pipeline.run`` without an ``if __name__ == "__main__":`` guard
    would start the sweep again inside every worker. While this is active, ``__main__``
    shows spawn neither its file nor its module spec, so workers skip it.
    """
    main = sys.modules.get("__main__")
    hidden = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    if "__file__" in hidden:
        del main.__file__
    if "__spec__" in hidden:
        main.__spec__ = None
    try:
        yield
    finally:
        for k, v in hidden.items():
            setattr(main, k, v)
