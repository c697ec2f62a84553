"""A Dask cluster: tasks that are pure functions of a byte range, results in task order.

The same contract as ``engines.local.map_ordered`` (``work(init(settings), task)`` for each
task, results in task order, the task's own exception raised here), on a
``dask.distributed`` cluster: one at ``--scheduler ADDRESS``, or a local cluster of this
machine's cores. ``map_reduce`` adds the one shuffle evalstream needs: each task's result
is ``(summary, buckets)``; the summaries come back in task order, bucket ``j`` of every
task goes, in task order, to reducer ``j``, and only the reducers' results come back, so
the buckets (every case's id hash) never reach this process.

Fault tolerance is Dask's (https://distributed.dask.org/en/stable/resilience.html): a task
whose worker dies is run again elsewhere, and a result lost with its worker is computed
again. That is safe because every task is a pure function of its byte range and writes
its part files whole under fixed names. Settings travel as a task's argument, never
``scatter``-ed: scattered data dies with its worker.

Dask is imported only here, and only when a run asks for this engine; a missing one is a
usage error naming the extra that installs it.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from evalstream._engines.local import WorkerDied
from evalstream._files.store import EXTRA, Task, lines_at
from evalstream.errors import UsageError

GROUP = 64  # tasks whose buckets one combine task gathers before the reducers take them
S = TypeVar("S")
W = TypeVar("W")
T = TypeVar("T")
R = TypeVar("R")


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--engine dask needs Dask; install it with {EXTRA}.") from None
    return distributed


class Cluster:
    """A client of a Dask cluster: the scheduler at ``address``, or (None) a local cluster
    of ``workers`` processes of one thread each (default: this machine's cores)."""

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        distributed = _distributed()
        self._local: Any = None
        self.run_id = uuid.uuid4().hex[:12]
        try:
            if address is None:
                self._local = distributed.LocalCluster(
                    n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                    processes=True, dashboard_address=None, silence_logs=logging.ERROR)
                self.client = distributed.Client(self._local, set_as_default=False)
            else:
                import dask

                # Dask's own setting (distributed.comm.timeouts.connect, 30 s by default).
                timeout = dask.config.get("distributed.comm.timeouts.connect")
                self.client = distributed.Client(address, timeout=timeout,
                                                 set_as_default=False)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}. Start one "
                             "with `dask scheduler` and workers with `dask worker ADDRESS`, "
                             "or leave out --scheduler for a cluster of this machine.") from None
        self._check_versions()

    def _check_versions(self) -> None:
        """Every worker must run this evalstream: another version could write other bytes."""
        from evalstream._version import __version__

        found = self.client.run(_version)
        if not found:
            raise UsageError("the Dask cluster has no worker; start some with `dask worker "
                             "ADDRESS`.")
        other = {w: v for w, v in found.items() if v != __version__}
        if other:
            worker, version = next(iter(other.items()))
            raise UsageError(f"the Dask worker at {worker} runs evalstream {version}, this "
                             f"client {__version__}; install the same version on every "
                             "worker.")

    @property
    def threads(self) -> int:
        """Tasks the cluster runs at once."""
        return max(1, sum(self.client.nthreads().values()))

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self._local is not None:
            self._local.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running tasks
    def _key(self, name: str, i: int) -> str:
        return f"evalstream-{name}-{self.run_id}-{i}"

    def map_ordered(self, init: Callable[[S], W], work: Callable[[W, T], R], settings: S,
                    tasks: Sequence[T], describe: Callable[[T], str] = str,
                    name: str = "task") -> Iterator[R]:
        """``work(init(settings), task)`` for every task on the cluster; the results in task
        order. Stopping early (or an error) cancels what is left."""
        client = self.client
        futures = [client.submit(_call, init, work, settings, task, pure=False,
                                 key=self._key(name, i)) for i, task in enumerate(tasks)]
        try:
            for i, future in enumerate(futures):
                yield _result(future, partial(describe, tasks[i]))
                futures[i] = None
        finally:
            client.cancel([f for f in futures if f is not None])

    def map_reduce(self, init: Callable[[S], W], work: Callable[[W, T], tuple[R, list[Any]]],
                   settings: S, tasks: Sequence[T], reducers: int,
                   reduce: Callable[[list[Any]], Any], describe: Callable[[T], str] = str,
                   ) -> tuple[Iterator[R], Callable[[], list[Any]]]:
        """Run every task; return the summaries in task order (an iterator) and a function
        that returns each reducer's ``reduce([bucket j of each task, in task order])`` once
        the summaries are taken. ``work`` returns ``(summary, buckets)``, ``reducers``
        buckets; the buckets stay on the cluster."""
        client = self.client
        maps = [client.submit(_call, init, work, settings, task, pure=False,
                              key=self._key("map", i)) for i, task in enumerate(tasks)]
        summaries = [client.submit(_item, m, 0, pure=False, key=self._key("summary", i))
                     for i, m in enumerate(maps)]
        # Each combine task gathers the buckets of GROUP consecutive tasks (64 bytes a case
        # moves once), and one small task a (group, reducer) pair moves bucket j where reducer
        # j runs: (tasks / GROUP) x reducers tasks, not tasks x reducers (at 1 TB: 4,096 map
        # tasks and 128 reducers give 8,192 such tasks instead of 524,288, each costing the
        # scheduler up to a millisecond).
        combined = [client.submit(_combine, reducers, maps[g:g + GROUP], pure=False,
                                  key=self._key("combine", g)) for g in range(0, len(maps), GROUP)]
        picks = [[client.submit(_item, c, j, pure=False, key=self._key(f"pick{j}", g))
                  for g, c in enumerate(combined)] for j in range(reducers)]
        reduced = [client.submit(reduce, picks[j], pure=False, key=self._key("reduce", j))
                   for j in range(reducers)]
        del maps, combined, picks  # held by the cluster while the tasks that need them run
        pending: list[Any] = [*summaries, *reduced]

        def in_order() -> Iterator[R]:
            try:
                for i, future in enumerate(summaries):
                    yield _result(future, partial(describe, tasks[i]))
                    summaries[i] = None
            except BaseException:
                client.cancel([f for f in pending if f is not None])
                raise

        def reductions() -> list[Any]:
            try:
                return [_result(f, partial(_share, j, reducers)) for j, f in enumerate(reduced)]
            finally:
                client.cancel([f for f in pending if f is not None])

        return in_order(), reductions

    def read_lines(self, jobs: list[tuple[Task, list[int]]],
                   max_line_bytes: int) -> Iterator[list[bytes]]:
        """For each (task, offsets): the lines at those offsets of the task's file, read by
        a task on the cluster (the files may be where only the workers reach them)."""
        return self.map_ordered(_identity, _lines, max_line_bytes, jobs,
                                describe=lambda job: str(job[0]), name="lines")


def _lines(max_line_bytes: int, job: tuple[Task, list[int]]) -> list[bytes]:
    task, offsets = job
    return lines_at(task, offsets, max_line_bytes)


def _identity(value: Any) -> Any:
    return value


def sum_arrays(arrays: list[Any]) -> Any:
    """The arrays one after the other (one copy)."""
    out = arrays[0][:0]
    for a in arrays:
        out.extend(a)
    return out


def _share(j: int, reducers: int) -> str:
    return f"the duplicate ids of share {j + 1} of {reducers}"


def _version() -> str:
    from evalstream._version import __version__

    return __version__


def _call(init: Callable[[Any], Any], work: Callable[[Any, Any], Any], settings: Any,
          task: Any) -> Any:
    return work(init(settings), task)


def _item(result: tuple[Any, ...], i: int) -> Any:
    return result[i]


def _combine(reducers: int, results: list[tuple[Any, list[Any]]]) -> list[Any]:
    """Bucket j of every task in ``results``, in task order, joined into one bucket each:
    a bucket is a tuple of arrays (one a field), and arrays join by ``+``."""
    joined = []
    for j in range(reducers):
        columns = [result[1][j] for result in results]
        joined.append(tuple(sum_arrays(list(field)) for field in zip(*columns, strict=True)))
    return joined


def _result(future: Any, describe: Callable[[], str]) -> Any:
    """The future's result; a task that kept killing its workers is WorkerDied."""
    distributed = _distributed()
    try:
        return future.result()
    except distributed.KilledWorker:
        raise WorkerDied(f"Dask workers died while working on {describe()} (three in a row: "
                         "out of memory, or killed); nothing was written. Give the workers "
                         "more memory, or use smaller inputs per task.") from None
    except distributed.client.FutureCancelledError:
        raise WorkerDied(f"the cluster dropped the task for {describe()}; nothing was "
                         "written.") from None
