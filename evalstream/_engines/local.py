"""Worker processes on this machine: tasks run in parallel, results come back in task order.

``map_ordered`` is the engine ``build``, ``validate`` and ``stats`` spread their byte
ranges with. Each worker runs ``init(settings)`` once, then ``work(state, task)`` for each
task it is given. Tasks go to whichever worker is free (a slow range does not hold up the
others), at most ``window`` tasks past the oldest unfinished one, so that the results
waiting to be taken in order stay few. Results are taken in task order.

Each worker talks to the parent over its own pipe: no shared queue or lock, so a worker
that dies (the OOM killer, SIGKILL, a crash in a native library) is seen at once as the
end of its pipe and ends the run with ``WorkerDied``; a worker whose parent dies sees the
end of its pipe too, and on Linux is also killed by the kernel (``PR_SET_PDEATHSIG``).
Workers ignore Ctrl-C and die quietly on SIGTERM and SIGHUP: the parent alone decides
what happens and reports it.

Workers are forked while the parent has not loaded Polars (instant, nothing imported
again), and spawned otherwise: forking a process whose Polars thread pool
runs can deadlock the child. ``init``, ``work`` and ``settings`` must therefore be
picklable (module-level functions, plain data).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from evalstream.errors import EvalstreamError

S = TypeVar("S")  # what a worker needs (sent once)
W = TypeVar("W")  # a worker's own state, made by ``init``
T = TypeVar("T")  # one task
R = TypeVar("R")  # one task's result
MAX_WORKERS = 8
# Range sizes: about TASKS_PER_WORKER ranges a worker, between MIN_RANGE and MAX_RANGE bytes.
MAX_RANGE = 16 << 20
MIN_RANGE = 1 << 20
TASKS_PER_WORKER = 8


class WorkerDied(EvalstreamError):
    """A worker process ended without finishing its task (killed, out of memory, crashed)."""


def default_workers() -> int:
    """The CPUs this process may use, at most MAX_WORKERS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def range_bytes(size: int, workers: int) -> int:
    """How many bytes of input a task should cover: about ``TASKS_PER_WORKER`` tasks a
    worker, within [MIN_RANGE, MAX_RANGE].

    Tasks go to whichever worker is free, so several per worker keep every worker busy on a
    skewed file: the shared corpus's tau-bench cases (2% of its cases, most of its token
    counting) fill one 16 MiB range of its 35 MB, and two workers ran it at 1.0x one
    process. Each task costs a part file and a few milliseconds, so ranges stay above a
    MiB; above MAX_RANGE nothing is gained."""
    per_task = -(-size // max(1, workers * TASKS_PER_WORKER))
    return max(MIN_RANGE, min(MAX_RANGE, per_task))


def start_method() -> str:
    """``fork`` while this process has not loaded Polars, else ``spawn``.

    Other threads of ours (the progress bar's refresh, the output writer) hold no lock a
    worker takes: a forked worker only reads its range and writes its own part files."""
    return "spawn" if "polars" in sys.modules else "fork"


def map_ordered(init: Callable[[S], W], work: Callable[[W, T], R], settings: S,
                tasks: Sequence[T], workers: int, window: int | None = None,
                describe: Callable[[T], str] = str) -> Iterator[R]:
    """``work(init(settings), task)`` for every task, in ``workers`` processes; the results
    in task order. ``describe(task)`` names a task in the error when its worker dies.

    An exception raised by ``work`` is raised here, as it was raised there. Stopping the
    iteration early (or an error) stops every worker.
    """
    workers = max(1, min(workers, len(tasks)))
    window = max(window or 4 * workers, workers)
    ctx: Any = multiprocessing.get_context(start_method())
    procs: list[Any] = []
    conns: list[Connection] = []
    finished = False
    try:
        for _ in range(workers):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(theirs, init, work, settings), daemon=True)
            proc.start()
            theirs.close()
            procs.append(proc)
            conns.append(mine)
        running: dict[Connection, list[int]] = {conn: [] for conn in conns}  # task indexes
        done: dict[int, R] = {}
        sent = taken = 0

        def died(conn: Connection, index: int) -> WorkerDied:
            proc = procs[conns.index(conn)]
            proc.join(timeout=1)
            return WorkerDied(
                f"a worker process died ({_how(proc.exitcode)}) while working on "
                f"{describe(tasks[index])}; nothing was written. If it ran out of "
                "memory, use fewer --workers.")

        def feed(conn: Connection) -> None:
            nonlocal sent
            # Two tasks queued per worker keep it busy while the parent takes a result.
            while sent < len(tasks) and sent < taken + window and len(running[conn]) < 2:
                try:
                    conn.send(tasks[sent])
                except OSError:  # the worker is gone: a broken pipe is its death, not stdout's
                    raise died(conn, running[conn][0] if running[conn] else sent) from None
                running[conn].append(sent)
                sent += 1

        for conn in conns:
            feed(conn)
        while taken < len(tasks):
            ready: list[Any] = wait([c for c in conns if running[c]])
            for conn in ready:
                index = running[conn][0]
                try:
                    ok, result = conn.recv()
                except (EOFError, OSError):
                    raise died(conn, index) from None
                running[conn].pop(0)
                if not ok:
                    raise result
                done[index] = result
            while taken in done:
                yield done.pop(taken)
                taken += 1
            for conn in conns:
                feed(conn)
        for conn in conns:
            try:
                conn.send(None)
            except OSError:  # a worker that died after its last task: nothing is lost
                pass
        finished = True
    finally:
        for proc in procs:
            if finished and proc.is_alive():
                proc.join(timeout=0.5)  # done: let it leave on its own
            if proc.is_alive():
                proc.kill()  # an error or an early stop: at once
            proc.join()
        for conn in conns:
            conn.close()


def _how(exitcode: int | None) -> str:
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def _serve(conn: Connection, init: Callable[[Any], Any], work: Callable[[Any, Any], Any],
           settings: Any) -> None:
    """A worker: run the tasks sent on ``conn`` in order, until None or the parent is gone."""
    # Ctrl-C reaches the whole process group: the parent alone decides what happens.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a quiet death, no traceback
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    _die_with_parent()
    state = init(settings)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if task is None:
            return
        try:
            result = (True, work(state, task))
        except Exception as exc:  # sent to the parent, which raises it
            result = (False, exc)
        try:
            conn.send(result)
        except (BrokenPipeError, OSError):
            return


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (no orphan keeps working)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the request took effect
        os._exit(1)
