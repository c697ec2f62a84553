"""The ranged engine: a case file read over byte ranges, merged into what one process gives.

``build``, ``validate`` and ``stats`` read big inputs this way, in worker processes on this
machine (``on_workers``) or as tasks on a Dask cluster (``on_cluster``). A range owns the
lines whose first byte lies in it. Each is read by the one line loop (``cases.reading``),
its lines counted from 1 and its case ids not checked against each other yet; what it makes
of its cases is the command's (a ``Produce``: build's records in a part file, stats' rows).
It comes back as a ``Part``: that, its line counts and check tally, its rejects (a part
file, or in memory) and a log of its cases (id hash, line, offset, where its output ends).

The parent takes the parts in input order (``Merger``): it finds the late duplicates (a
case whose id an earlier line used: one index of the whole input here, ``ParentIndex``, or
the cluster's reducers), reads each one's line again for its reject, renumbers lines and
offsets, and hands each part to the command (a ``Combine``) with its late duplicates and a
way to read the range again without them (``Merger.again``), since no count of a capped
table or list can be taken back. The bytes and figures are those of one process, for any
number of workers or machines.

Everything a worker receives (``Settings``, with the command's ``Produce``) is plain data:
workers may be spawned, and Dask sends it with every task.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import msgspec

from evalstream._cases.duplicates import (
    Bucket,
    Dup,
    ParentIndex,
    buckets,
    by_task,
    duplicate_lines,
    reduce_bucket,
    reducers_for,
)
from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import (
    FIRST_REJECTS_KEPT,
    LineCounts,
    Record,
    case_reader,
    duplicate_case,
)
from evalstream._cases.rejects import Reject
from evalstream._cases.schema import Case
from evalstream._checks.checker import Checker, CheckTally
from evalstream._engines import local as processes
from evalstream._engines.dask import Cluster
from evalstream._engines.local import map_ordered, range_bytes
from evalstream._files.lines import (
    Progress,
    Readable,
    open_range,
    range_tasks,
    read_chunks,
    read_line_at,
)
from evalstream._files.outputs import escape_line_breaks, write_all
from evalstream._files.sniff import check_cases_head
from evalstream._files.store import (
    FileOffsets,
    InputFile,
    PartFile,
    Task,
    TaskReader,
    open_file,
    range_size,
    tasks_of,
)
from evalstream._files.temporaries import temp_folder
from evalstream.errors import OutputError, ReaderGone

R = TypeVar("R")  # what a range makes of its cases: build's records, stats' rows
R_co = TypeVar("R_co", covariant=True)
# A cluster task: ~1 s of work, few enough tasks for the scheduler. Larger than the workers'
# ranges (engines.local.range_bytes, at most 16 MiB): a cluster task costs a scheduler round
# trip and a part file in the store, not a pipe message.
RANGE_BYTES = 64 << 20
REJECT_BYTES = 1 << 18  # a range's rejects go to their part file in pieces of about this
# Where a range's rejects go: a part file; all back with the part (a cluster run with no
# folder for part files); or only the first ones (the run writes no rejects).
TO_FILE, ALL, FIRST = "file", "all", "first"
REJECTS = "rejects"  # the kind of a range's rejects part file


class Writer(Protocol):
    """A part file being written (``files.store.PartFile`` on a cluster, ``_LocalPart`` here)."""

    path: str
    size: int

    def write_all(self, pieces: list[bytes]) -> None: ...
    def commit(self) -> int: ...
    def abort(self) -> None: ...


class Produce(Protocol[R_co]):
    """What a command makes of each range, in a worker or a task (sent to each: plain data)."""

    @property
    def allow_unknown_fields(self) -> bool: ...

    @property
    def max_line_bytes(self) -> int: ...

    def checker(self) -> Checker | None:
        """The checker a range's cases go past (None: validate, which checks nothing)."""
        ...

    def read(self, records: Iterator[Record[Any] | Reject], checker: Checker | None,
             reject: Callable[[bytes], object], log: CaseLog, files: PartFiles) -> R_co:
        """Take every record and reject of the range (each reject to ``reject`` as one JSON
        line, each case logged in ``log``); part files from ``files``."""
        ...


@dataclass
class Part(Generic[R]):
    """One range's result: line numbers in its counts, rejects and log count from 1; byte
    offsets are its file's (``offset_base``: the bytes of the input before that file)."""

    index: int
    start: int
    end: int
    made: R
    lines: LineCounts
    checks: CheckTally | None
    log: tuple[array[int], ...]  # lo, hi, line, offset, end (see ids.CaseLog); () on a cluster
    rejects_path: str | None = None  # its rejects as JSONL, when they went to a part file
    rejects_data: bytes = b""  # else those kept, as JSONL
    files: list[str] = field(default_factory=list)  # its part files
    offset_base: int = 0


class Late(NamedTuple):
    """A case of a part whose id an earlier line used, which one process rejects: where it
    lies in its part (local line, offset, output span), its line in the input, the case."""

    dup: Dup
    line: int
    case: Case


class Combine(Protocol[R]):
    """How the parent combines the parts' results, which come in input order."""

    def arrived(self, part: Part[R]) -> None:
        """A part came back, before its late duplicates are known."""
        ...

    def take(self, part: Part[R], late: list[Late], merger: Merger[R]) -> None:
        """Add the part's result. Its ``late`` cases are rejected: take them back out of
        ``part.made`` and ``part.checks`` (``merger.again`` reads the range without them)."""
        ...


@dataclass
class Settings(Generic[R]):
    """What every worker or task needs."""

    produce: Produce[R]
    folder: str | None  # where part files go (None: nowhere to put them)
    rejects: str  # TO_FILE, ALL or FIRST
    path: str = ""  # the input file (workers on this machine)
    target: str | None = None  # the output named when a worker cannot write a part file
    reducers: int = 0  # the reducers of the duplicate ids (a cluster)


class Merged(NamedTuple):
    """What the parts added up to, as one process would have counted it."""

    lines: LineCounts
    checks: CheckTally | None
    first_rejects: list[Reject]
    bytes: int  # input bytes read (decompressed)
    stopped: bool = False  # standard output was closed by its reader before the end


# -- in a worker or a task -----------------------------------------------------------------------
class PartFiles:
    """The part files of one range, ``{index:08d}.{kind}`` in the run's folder, committed
    together when the range is read, or dropped."""

    def __init__(self, folder: str | None, index: int, local: bool) -> None:
        self.folder, self.index, self.local = folder, index, local
        self.opened: list[Writer] = []

    def open(self, kind: str) -> Writer | None:
        """A new part file, or None when the run has no folder for them."""
        if self.folder is None:
            return None
        path = f"{self.folder}/{self.index:08d}.{kind}"
        # A command's output writes over a spare; a range's rejects, mostly few, do not.
        writer: Writer = _LocalPart(path, kind != REJECTS) if self.local else PartFile(path)
        self.opened.append(writer)
        return writer

    def commit(self) -> None:
        for writer in self.opened:
            writer.commit()

    def abort(self) -> None:
        for writer in self.opened:
            writer.abort()


class _LocalPart:
    """A worker's part file on this machine: pieces written with ``os.writev``, no copy
    (the parent's temporary folder holds it: nothing to rename). With ``spare`` it writes
    over a spare (``Spares``) where the parent left one; it is cut to its own bytes on
    ``commit``."""

    def __init__(self, path: str, spare: bool = True) -> None:
        self.path, self.size = path, 0
        if spare:
            _claim_spare(path)
        # No O_TRUNC: a claimed spare's pages are written over, not freed and allocated again.
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)

    def write_all(self, pieces: list[bytes]) -> None:
        write_all(self._fd, pieces)
        self.size += sum(map(len, pieces))

    def commit(self) -> int:
        os.ftruncate(self._fd, self.size)  # a longer spare's tail is not this part's
        self._close()
        return self.size

    def abort(self) -> None:
        self._close()  # the parent removes the folder

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


SPARE = "spare-"  # a part file the parent is done with (``Spares``)
SPARES_PER_WORKER = 2  # a worker writes one range while the parent takes another
MIN_SPARE = 1 << 20  # smaller part files (most rejects) are not worth keeping


class Spares:
    """Part files the parent has taken, kept in the run's folder for the workers' next part
    files to write over (``_claim_spare``), at most ``most`` at a time (the rest removed).

    A part file's bytes are copied into the output, so a run with workers writes its output
    twice; on tmpfs most of a write's cost is taking pages for a new file and giving them
    back when it is removed (1.5 GB of 16 MiB files, this machine: 0.66-0.69 CPU s written
    anew and removed, 0.22-0.28 s written over), and a build with the built-in rubrics
    writes ~5 bytes of records per input byte. On a disk a file written over needs no new
    blocks either."""

    def __init__(self, folder: str, most: int) -> None:
        self.folder, self.most, self.made = folder, most, 0

    def add(self, path: str) -> None:
        """Keep the part file at ``path`` as a spare, or remove it when it is small or there
        are enough."""
        if os.stat(path).st_size >= MIN_SPARE and \
                sum(name.startswith(SPARE) for name in os.listdir(self.folder)) < self.most:
            os.rename(path, f"{self.folder}/{SPARE}{self.made:08d}")
            self.made += 1
        else:
            os.unlink(path)


def _claim_spare(path: str) -> bool:
    """Rename a spare of ``path``'s folder to ``path``; whether there was one. Two workers may
    try the same spare: the rename is atomic, and the one that loses tries the next."""
    folder = os.path.dirname(path)
    for name in os.listdir(folder):
        if name.startswith(SPARE):
            try:
                os.rename(f"{folder}/{name}", path)
                return True
            except FileNotFoundError:  # the other worker took it
                continue
    return False


class _Rejects:
    """A range's rejects, as JSON lines: into a part file in pieces, or kept (all, or the
    first ones)."""

    def __init__(self, settings: Settings[Any], files: PartFiles) -> None:
        self.file = files.open(REJECTS) if settings.rejects == TO_FILE else None
        self.keep_all = settings.rejects == ALL
        self.kept: list[bytes] = []
        self.held = 0

    def add(self, line: bytes) -> None:
        if self.file is not None:
            self.kept.append(line)
            self.held += len(line)
            if self.held >= REJECT_BYTES:
                self.flush()
        elif self.keep_all or len(self.kept) < FIRST_REJECTS_KEPT:
            self.kept.append(line)

    def flush(self) -> None:
        if self.file is not None and self.kept:
            self.file.write_all(self.kept)
            self.kept, self.held = [], 0


def _read(s: Settings[R], index: int, stream: Readable, start: int,
          end: Callable[[], int], local: bool) -> Part[R]:
    """Read one range (its first line at byte ``start`` of its file) into a Part."""
    produce = s.produce
    reader = case_reader(produce.allow_unknown_fields, produce.max_line_bytes,
                         check_duplicates=False)
    checker = produce.checker()
    log = CaseLog()
    files = PartFiles(s.folder, index, local)
    try:
        rejects = _Rejects(s, files)
        items = read_chunks(stream, produce.max_line_bytes, first_line=1, first_offset=start)
        made = produce.read(reader.read(items), checker, rejects.add, log, files)
        rejects.flush()
        files.commit()
    except BaseException:
        files.abort()
        raise
    return Part(index, start, end(), made, reader.counts, checker.tally if checker else None,
                log.arrays(), rejects.file.path if rejects.file is not None else None,
                b"".join(rejects.kept) if rejects.file is None else b"",
                [w.path for w in files.opened])


@dataclass
class _Worker:
    settings: Settings[Any]
    fd: int


def _init_worker(settings: Settings[Any]) -> _Worker:
    return _Worker(settings, os.open(settings.path, os.O_RDONLY))


def _read_range(worker: _Worker, task: tuple[int, int, int]) -> Part[Any]:
    index, start, end = task  # line-aligned by ``range_tasks``
    s = worker.settings
    try:
        with open_range(worker.fd, start, end) as stream:
            return _read(s, index, stream, start, lambda: end, local=True)
    except OSError as exc:  # reading errors are InputError already: this is a part file
        target = s.target or f"the rejects (part files in {s.folder})"
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None


def _init_task(settings: Settings[Any]) -> Settings[Any]:
    return settings


def _read_task(s: Settings[Any], task: Task) -> tuple[Part[Any], list[Bucket]]:
    with TaskReader(task, check_cases_head) as stream:
        part = _read(s, task.index, stream, stream.start,
                     lambda: stream.start + stream.bytes, local=False)
    # The case log stays on the cluster, cut into buckets for the reducers.
    log, part.log = part.log, ()
    return part, buckets(task.index, log, s.reducers)


# -- in the parent -------------------------------------------------------------------------------
LineSource = Callable[[Part[Any], Dup], bytes]  # the line of a duplicate, to read it again
RangeSource = Callable[[Part[Any]], AbstractContextManager[Readable]]  # a part's range, again


class Merger(Generic[R]):
    """Takes the parts in input order and counts them as one process would.

    The duplicates of each part are given (found by ``ParentIndex`` or by a cluster's
    reducers); each one's line is read again through ``line_of`` for its reject, and
    ``again`` reads a range again through ``range_of``: a local file with ``os.pread`` for
    the workers, a task's file (local or a URL) through fsspec on a cluster."""

    def __init__(self, produce: Produce[R], combine: Combine[R], counts_checks: bool,
                 rejects_out: Any, line_of: LineSource, range_of: RangeSource) -> None:
        self.produce, self.combine, self.rejects_out = produce, combine, rejects_out
        self.line_of, self.range_of = line_of, range_of
        self.lines = LineCounts()
        self.checks = CheckTally() if counts_checks else None
        self.first_rejects: list[Reject] = []
        self.bases: list[int] = []  # lines before each part taken so far
        self.decode_case = case_reader(produce.allow_unknown_fields).kind.decode
        self._decode_reject = msgspec.json.Decoder(Reject).decode
        self._encode = msgspec.json.Encoder().encode

    def add(self, part: Part[R], dups: list[Dup]) -> None:
        """Take the next part, whose cases ``dups`` (in log order) repeat earlier ids."""
        base = self.lines.lines
        self.bases.append(base)
        late: list[Late] = []
        rejected: list[Reject] = []
        for d in dups:
            raw = self.line_of(part, d)
            case = self.decode_case(raw)
            line = d.line + base
            late.append(Late(d, line, case))
            rejected.append(duplicate_case(case.id, line, d.offset + part.offset_base,
                                           self.bases[d.first_task] + d.first_line, raw))
        self.combine.take(part, late, self)
        self._merge_rejects(part, base, rejected)
        if late:
            part.lines.records -= len(late)
            part.lines.rejected += len(late)
            part.lines.rejected_by_kind["duplicate id"] += len(late)
        if part.checks is not None and self.checks is not None:
            for item in part.checks.over_budget:
                item.line += base
            self.checks.merge(part.checks)
        self.lines.merge(part.lines)

    def again(self, part: Part[R], skip: set[int]) -> Iterator[Record[Any]]:
        """The cases of ``part``'s range read again, without those on the lines in ``skip``
        (line numbers local to the range)."""
        produce = self.produce
        reader = case_reader(produce.allow_unknown_fields, produce.max_line_bytes,
                             check_duplicates=False)
        with self.range_of(part) as stream:
            items = read_chunks(stream, produce.max_line_bytes, first_line=1,
                                first_offset=part.start)
            for item in reader.read(items):
                if type(item) is not Reject and item[0] not in skip:  # type: ignore[index]
                    yield item  # type: ignore[misc]

    def _merge_rejects(self, part: Part[R], base: int, extra: list[Reject]) -> None:
        data = part.rejects_data
        if part.rejects_path is not None:
            with open_file(part.rejects_path) as f:  # a local path, or a URL on a cluster
                data = f.read()
        merged = []
        for raw in data.splitlines():
            r = self._decode_reject(raw)
            r.line += base
            r.offset += part.offset_base
            merged.append(r)
        if extra:
            merged = sorted(merged + extra, key=lambda r: r.line)
        if merged and self.rejects_out is not None:
            self.rejects_out.write(b"".join(escape_line_breaks(self._encode(r)) + b"\n"
                                            for r in merged))
        room = FIRST_REJECTS_KEPT - len(self.first_rejects)
        self.first_rejects += merged[:max(room, 0)]

    def merged(self, n_bytes: int, stopped: bool = False) -> Merged:
        return Merged(self.lines, self.checks, self.first_rejects, n_bytes, stopped)


def _rejects_mode(folder: str | None, rejects_out: Any) -> str:
    if rejects_out is None:
        return FIRST
    return TO_FILE if folder is not None else ALL


def on_workers(produce: Produce[R], combine: Combine[R], *, path: str, size: int, workers: int,
               where: tuple[str, str, str], counts_checks: bool, rejects_out: Any,
               target: str | None = None, on_progress: Progress | None = None,
               stop_quietly: bool = False) -> Merged:
    """Read the plain file ``path`` (``size`` bytes) in ``workers`` processes, part files in
    a temporary folder (``where``: folder, prefix, suffix, as ``temp_folder`` takes them).
    ``counts_checks``: the run counts checks (validate does not); ``rejects_out``: where
    every reject goes, in order (None: only the first ones are kept); ``target`` is named
    when a part file cannot be written; with ``stop_quietly`` a closed standard output
    (``ReaderGone``) ends the run with the counts of the parts written."""
    fd = os.open(path, os.O_RDONLY)
    limit = produce.max_line_bytes + 1
    merger = Merger(produce, combine, counts_checks, rejects_out,
                    lambda part, dup: read_line_at(fd, dup.offset, limit),
                    lambda part: open_range(fd, part.start, part.end))
    index = ParentIndex()
    try:
        with temp_folder(*where) as folder:
            settings = Settings(produce, folder, _rejects_mode(folder, rejects_out), path, target)
            spares = Spares(folder, SPARES_PER_WORKER * workers)
            if processes.start_method() == "fork":  # as map_ordered decides
                # What each worker would load at its first case (stats' tokenizer, ~0.3 s of
                # CPU): loaded once here, and shared by the workers forked below.
                checker = produce.checker()
                if checker is not None:
                    checker.preload()
            for part in map_ordered(_init_worker, _read_range, settings,
                                    range_tasks(fd, size, range_bytes(size, workers)), workers,
                                    describe=lambda t: f"bytes {t[1]:,}-{t[2]:,} of {path}"):
                combine.arrived(part)
                try:
                    merger.add(part, index.duplicates(part.index, part.log))
                except ReaderGone:  # `| head`: stop; the counts are of the ranges written
                    if not stop_quietly:
                        raise
                    return merger.merged(size, stopped=True)
                finally:
                    for name in part.files:
                        spares.add(name)
                if on_progress is not None:
                    on_progress(part.end, size)
    finally:
        os.close(fd)
    return merger.merged(size)


def shared_folder(prefix: str) -> tuple[str, str, str]:
    """Part files of no target: in the system's temporary folder, under a shared prefix
    (``files.temporaries.SHARED``: every run removes what dead runs left there)."""
    return tempfile.gettempdir(), prefix, ""


def on_cluster(cluster: Cluster, produce: Produce[R], combine: Combine[R], *,
               files: list[InputFile], folder: str | None, counts_checks: bool,
               rejects_out: Any, on_progress: Progress | None = None,
               stop_quietly: bool = False) -> Merged:
    """Read ``files`` in order as tasks on ``cluster`` (part files in ``folder``, in the
    output's store; None: no part files, rejects come back with the results); the rest as
    ``on_workers``."""
    total = sum(f.size for f in files)
    tasks = tasks_of(files, range_size(total, RANGE_BYTES))
    settings = Settings(produce, folder, _rejects_mode(folder, rejects_out),
                        reducers=reducers_for(total))
    summaries, reductions = cluster.map_reduce(_init_task, _read_task, settings, tasks,
                                               settings.reducers, reduce_bucket, describe=str)
    parts: list[Part[R]] = []
    done = 0
    for part in summaries:
        parts.append(part)
        combine.arrived(part)
        done += tasks[part.index].nominal_bytes
        if on_progress is not None:
            on_progress(done, total)
    found = by_task(reductions())
    raw = duplicate_lines(found, tasks,
                          lambda jobs: cluster.read_lines(jobs, produce.max_line_bytes))
    merger = Merger(produce, combine, counts_checks, rejects_out,
                    lambda part, dup: raw[part.index, dup.k],
                    lambda part: TaskReader(tasks[part.index]))
    offsets = FileOffsets()
    for part in parts:
        part.offset_base = offsets.base(tasks[part.index], part.end)
        try:
            merger.add(part, found.get(part.index, []))
        except ReaderGone:  # `| head`: stop; the counts are of the ranges written
            if not stop_quietly:
                raise
            return merger.merged(offsets.total, stopped=True)
    return merger.merged(offsets.total)
