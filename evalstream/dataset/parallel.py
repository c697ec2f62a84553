"""``stats --workers N``: worker processes over byte ranges of a plain input file.

Each worker reads newline-aligned ranges of the input with ``os.pread`` and returns, per
range, its rows and counts (``stats_rows.Collector`` with its own codes), the line counts,
its rejects, and a log of its cases' id hashes with their lines and offsets. The parent
takes the ranges in order: it renumbers their lines, checks every id against one index
of the whole input (so a duplicate id is found exactly as in one process, wherever its
first use was), reads each duplicate's line again to take it back out of the counts,
and merges the rest. The figures are the same as with one process.

Workers never import Polars. They are forked when the parent has not loaded Polars yet (the
command line loads it only once the workers run), and spawned otherwise: forking a
process whose Polars thread pool is running can deadlock the child.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import tempfile
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from evalstream.cases import ids
from evalstream.cases.rejects import Reject, raw_text
from evalstream.checks.report import Tally
from evalstream.checks.rubrics import RubricSet
from evalstream.dataset.rows import Collector
from evalstream.files.lines import (
    Chunk,
    line_start,
    open_range,
    range_tasks,
    read_chunks,
    read_line_at,
)
from evalstream.files.outputs import AtomicOutput
from evalstream.pipeline.build import Processor

RANGE_BYTES = 16 << 20
MIN_RANGES = 8  # below 128 MiB one process is as fast
MAX_WORKERS = 8
AHEAD = 2  # ranges sent to a worker before its first result is taken


def default_workers() -> int:
    """The CPUs this process may use, at most MAX_WORKERS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def worthwhile(path: str, size: int | None, workers: int) -> bool:
    """Whether workers can and should run: a plain file of more than MIN_RANGES ranges.

    Starting workers costs about 0.3 s of CPU (each imports evalstream); measured here, two
    workers broke even with one process at 100 MB and took 0.54x its time at 1 GB."""
    return (workers > 1 and size is not None and size > MIN_RANGES * RANGE_BYTES
            and path != "-"
            and not path.endswith((".gz", ".zst")))


@dataclass
class Settings:
    """What a worker needs to read like the parent."""

    path: str
    by: list[str]
    rubric_set: RubricSet
    max_tokens: int
    max_line_bytes: int
    allow_unknown_fields: bool
    parts_dir: str | None  # write every reject here; None: keep only the first ones
    first_rejects: int


@dataclass
class Part:
    """One range's result, in the worker's own codes and line numbers (from 1)."""

    index: int
    end: int
    rows: Collector  # without its processor
    tally: Tally
    rejects: list[Reject]  # the first few, when the run does not write rejects
    rejects_path: str | None  # a file of every reject of the range, when it does
    log: tuple[array[int], ...]  # id hash halves, line, offset of each case, in row order


# -- in the worker -------------------------------------------------------------------------------
_worker: dict[str, Any] = {}


def _init(settings: Settings) -> None:
    _worker["settings"] = settings
    _worker["fd"] = os.open(settings.path, os.O_RDONLY)
    _worker["size"] = os.fstat(_worker["fd"]).st_size


def _run_range(task: tuple[int, int, int]) -> Part:
    index, start, end = task
    s: Settings = _worker["settings"]
    fd, size = _worker["fd"], _worker["size"]
    start, end = line_start(fd, start, size), line_start(fd, end, size)
    processor = Processor(s.rubric_set, s.max_tokens, s.max_line_bytes, s.allow_unknown_fields,
                          check_duplicates=False)
    rows = Collector(processor, s.by)
    log = ids.CaseLog()
    rejects: list[Reject] = []
    rejects_path = None
    out = None
    if s.parts_dir is not None:
        rejects_path = os.path.join(s.parts_dir, f"{index:08d}.rejects")
        out = open(rejects_path, "wb")
    encode = msgspec.json.Encoder().encode
    try:
        with open_range(fd, start, end) as lines:
            for item in read_chunks(lines, s.max_line_bytes, first_line=1, first_offset=start):
                if isinstance(item, Chunk):
                    accepted, found = rows.take(item)
                    log.add(item, [(line - item.line, case.id, 0) for line, case in accepted])
                else:
                    found = processor.long_line(item)
                if found:
                    if out is not None:
                        out.write(b"".join(encode(r) + b"\n" for r in found))
                    elif len(rejects) < s.first_rejects:
                        rejects += found[: s.first_rejects - len(rejects)]
    finally:
        if out is not None:
            out.close()
    rows.flush()
    tally = processor.tally
    rows.processor = None  # type: ignore[assignment]  # not sent back: decoders do not pickle
    rows.sizer = None  # type: ignore[assignment]
    return Part(index, end, rows, tally, rejects, rejects_path, log.arrays()[:4])


# -- in the parent -------------------------------------------------------------------------------
class Merger:
    """Takes the parts in input order and adds them to one collector and one tally."""

    def __init__(self, collector: Collector, settings: Settings,
                 rejects_out: AtomicOutput | None) -> None:
        self.collector = collector
        self.settings = settings
        self.rejects_out = rejects_out
        self.tally = collector.processor.tally
        self.first_rejects: list[Reject] = []
        self.index = ids.IdIndex()
        self.lines = 0
        self.fd = os.open(settings.path, os.O_RDONLY)
        self._decode_reject = msgspec.json.Decoder(Reject).decode
        self._encode = msgspec.json.Encoder().encode

    def close(self) -> None:
        os.close(self.fd)

    def add(self, part: Part) -> None:
        base = self.lines
        lo, hi, line, offset = part.log
        first = self.index.add(lo, hi, [n + base for n in line])
        dups = [k for k, used in enumerate(first) if used]
        duplicates = []
        found = []
        for k in dups:
            at, line_no = offset[k], line[k] + base
            raw = read_line_at(self.fd, at, self.settings.max_line_bytes + 1)
            case = self.collector.processor.decode(raw)
            duplicates.append(case)
            found.append(Reject(
                line_no, at, case.id, "$.id",
                f"Case id {case.id!r} was already used on line {first[k]}; case ids must "
                "be unique in a dataset.", raw_text(raw)))
        self.collector.absorb(part.rows, drop=dups)
        for case in duplicates:
            self.collector.forget(case)
        tally = part.tally
        tally.counts.cases -= len(dups)
        tally.counts.rejected += len(dups)
        if dups:
            tally.rejected_by_kind["duplicate id"] += len(dups)
        self.tally.merge(tally)
        self.lines += tally.counts.lines
        self._merge_rejects(part, base, found)

    def _merge_rejects(self, part: Part, base: int, found: list[Reject]) -> None:
        rejects = part.rejects
        if part.rejects_path is not None:
            with open(part.rejects_path, "rb") as f:
                rejects = [self._decode_reject(raw) for raw in f]
            os.unlink(part.rejects_path)
        for r in rejects:
            r.line += base
        if found:
            rejects = sorted(rejects + found, key=lambda r: r.line)
        if rejects and self.rejects_out is not None:
            self.rejects_out.write(b"".join(self._encode(r) + b"\n" for r in rejects))
        room = self.settings.first_rejects - len(self.first_rejects)
        if room > 0:
            self.first_rejects += rejects[:room]


def _start_method() -> str:
    """``fork`` (instant, nothing to import again) while this process has one thread and
    has not loaded Polars; ``spawn`` otherwise, since forking a process whose Polars
    thread pool runs can deadlock the child."""
    import sys
    import threading

    if "polars" in sys.modules or threading.active_count() > 1:
        return "spawn"
    return "fork"


def _serve(conn: Any, settings: Settings) -> None:
    """A worker: run the ranges sent on ``conn`` in order, until None."""
    # Ctrl-C goes to the whole process group; the parent alone decides what happens.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init(settings)
    while True:
        task = conn.recv()
        if task is None:
            return
        try:
            conn.send((True, _run_range(task)))
        except Exception as exc:  # sent to the parent, which raises it
            conn.send((False, exc))


def run_parallel(collector: Collector, settings: Settings, workers: int, size: int,
                 rejects_out: AtomicOutput | None,
                 on_progress: Callable[[int, int | None], None] | None) -> list[Reject]:
    """Read the input with ``workers`` processes into ``collector`` (and its processor's
    tally); return the first rejects.

    Range ``i`` goes to worker ``i % workers``, at most ``AHEAD`` ranges ahead, and the
    results are taken in range order. No shared queue or lock: a worker that dies is an
    error here (EOF on its pipe), never a hang, and the workers are always stopped.
    """
    ctx: Any = multiprocessing.get_context(_start_method())
    tasks = range_tasks(size, RANGE_BYTES)
    procs: list[Any] = []
    conns: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="evalstream-stats-") as parts_dir:
        if rejects_out is not None:
            settings.parts_dir = parts_dir
        merger = Merger(collector, settings, rejects_out)
        try:
            for _ in range(min(workers, len(tasks))):
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(target=_serve, args=(theirs, settings), daemon=True)
                proc.start()
                theirs.close()
                procs.append(proc)
                conns.append(mine)
            import polars  # noqa: F401  # for the aggregation, while the workers start up

            n = len(conns)
            for i in range(min(len(tasks), AHEAD * n)):
                conns[i % n].send(tasks[i])
            for i in range(len(tasks)):
                try:
                    ok, result = conns[i % n].recv()
                except EOFError:
                    raise RuntimeError(f"a stats worker process died (exit code "
                                       f"{procs[i % n].exitcode}) while reading bytes "
                                       f"{tasks[i][1]}-{tasks[i][2]}") from None
                if not ok:
                    raise result
                if i + AHEAD * n < len(tasks):
                    conns[i % n].send(tasks[i + AHEAD * n])
                merger.add(result)
                if on_progress is not None:
                    on_progress(result.end, size)
            for conn in conns:
                conn.send(None)
        finally:
            for proc in procs:
                if proc.is_alive() and proc.exitcode is None:
                    proc.join(timeout=0.5)
                if proc.is_alive():
                    proc.kill()
                proc.join()
            for conn in conns:
                conn.close()
            merger.close()
    return merger.first_rejects
