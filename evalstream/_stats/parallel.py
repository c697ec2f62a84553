"""``stats --workers N``: byte ranges of a plain input file read in worker processes.

Each worker reads newline-aligned ranges of the input with ``os.pread`` and returns, per
range, its rows (a ``Collector`` with its own codes), its line counts and check tally,
its rejects (the first ones, or a part file of all of them) and a log of its cases' id
hashes with their lines and offsets. The parent takes the ranges in order: it renumbers
their lines, checks every id against one index of the whole input (so a duplicate id is
found exactly as in one process, wherever its first use was), reads each duplicate's
line again to take it back out of the counts, and merges the rest. The figures are the
same as with one process.

Workers never import Polars (the parent loads it while they start).
"""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import msgspec

from evalstream._cases.duplicates import Dup, ParentIndex
from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import LineCounts, case_reader, duplicate_case
from evalstream._cases.rejects import Reject
from evalstream._checks.checker import CheckTally
from evalstream._checks.rubrics import RubricSet
from evalstream._engines.local import map_ordered, range_bytes
from evalstream._files.lines import Readable, open_range, range_tasks, read_chunks, read_line_at
from evalstream._files.outputs import AtomicOutput, escape_line_breaks
from evalstream._files.temporaries import STATS_PARTS, temp_folder
from evalstream._stats.rows import Collector, stats_checker
from evalstream.errors import OutputError

WORTHWHILE_BYTES = 128 << 20  # below this one process is as fast


def worthwhile(path: str, size: int | None, workers: int) -> bool:
    """Whether workers can and should run: a plain file over WORTHWHILE_BYTES.

    Starting workers costs about 0.3 s of CPU (each imports evalstream); measured here, two
    workers broke even with one process at 100 MB and took 0.54x its time at 1 GB."""
    return (workers > 1 and size is not None and size > WORTHWHILE_BYTES
            and path != "-" and not path.endswith((".gz", ".zst")))


@dataclass
class Settings:
    """What a worker needs to read like the parent."""

    path: str
    by: list[str]
    rubric_set: RubricSet
    max_tokens: int
    tokenizer: str
    max_line_bytes: int
    allow_unknown_fields: bool
    parts_dir: str | None  # write every reject here; None: keep only the first ones
    first_rejects: int


@dataclass
class Part:
    """One range's result, in the worker's own codes and line numbers (from 1)."""

    index: int
    start: int
    end: int
    rows: Collector
    lines: LineCounts
    checks: CheckTally
    rejects: list[Reject]  # the first few, when the run does not write rejects
    rejects_path: str | None  # a file of every reject of the range, when it does
    log: tuple[array[int], ...]  # id hash halves, line, offset of each case, in row order
    offset_base: int = 0  # bytes of the input before this range's file (several files)


# -- in the worker -------------------------------------------------------------------------------
@dataclass
class _Worker:
    settings: Settings
    fd: int
    size: int


def _init(settings: Settings) -> _Worker:
    fd = os.open(settings.path, os.O_RDONLY)
    return _Worker(settings, fd, os.fstat(fd).st_size)


def _run_range(worker: _Worker, task: tuple[int, int, int]) -> Part:
    index, start, end = task  # line-aligned by ``range_tasks``
    s = worker.settings
    reader = case_reader(s.allow_unknown_fields, s.max_line_bytes, check_duplicates=False)
    checker = stats_checker(s.rubric_set, s.max_tokens, s.tokenizer)
    rows = Collector(s.rubric_set, s.by)
    log = CaseLog()
    rejects: list[Reject] = []
    rejects_path = None
    if s.parts_dir is not None:
        rejects_path = os.path.join(s.parts_dir, f"{index:08d}.rejects")
    encode = msgspec.json.Encoder().encode

    def keep(reject: Reject) -> None:
        if rejects_path is not None:
            out.write(encode(reject) + b"\n")
        elif len(rejects) < s.first_rejects:
            rejects.append(reject)

    try:
        with open(rejects_path or os.devnull, "wb") as out, \
                open_range(worker.fd, start, end) as stream:
            items = read_chunks(stream, s.max_line_bytes, first_line=1, first_offset=start)
            rows.take(reader.read(items), checker, keep, log)
    except OSError as exc:  # reading errors are InputError already: this is a part file
        raise OutputError(f"cannot write the rejects (part files in {s.parts_dir}): "
                          f"{exc.strerror or exc}") from None
    rows.flush()
    return Part(index, start, end, rows, reader.counts, checker.tally, rejects, rejects_path,
                log.arrays()[:4])


def _ignore(reject: Reject) -> None:
    return None


# -- in the parent -------------------------------------------------------------------------------
LineSource = Callable[[Part, Dup], bytes]  # the line of a duplicate, to read it again
RangeSource = Callable[[Part], AbstractContextManager[Readable]]  # a part's range, again


class Merger:
    """Takes the parts in input order and adds them to one collector and one tally.

    The duplicates of each part are given (found by ``ParentIndex`` here, or by a
    cluster's reducers); each late duplicate's line is read again through ``line_of`` for
    its reject, and a range with a late duplicate is read again through ``range_of``
    without those lines (``_without``). Both engines merge through this class: ``line_of``
    and ``range_of`` read a local file with ``os.pread`` for ``--workers``, a task's file
    (local or a URL) through fsspec for ``--engine dask``."""

    def __init__(self, collector: Collector, settings: Settings, rejects_out: Any,
                 line_of: LineSource, range_of: RangeSource) -> None:
        self.collector = collector
        self.settings = settings
        self.rejects_out = rejects_out
        self.line_of, self.range_of = line_of, range_of
        self.lines = LineCounts()
        self.checks = CheckTally()
        self.first_rejects: list[Reject] = []
        self.bases: list[int] = []  # lines before each part taken so far
        self.decode_case = case_reader(settings.allow_unknown_fields).kind.decode
        self._decode_reject = msgspec.json.Decoder(Reject).decode
        self._encode = msgspec.json.Encoder().encode

    def add(self, part: Part, dups: list[Dup]) -> None:
        """Take the next part, whose cases ``dups`` (in log order) repeat earlier ids."""
        base = self.lines.lines
        self.bases.append(base)
        found = []
        for d in dups:
            raw = self.line_of(part, d)
            found.append(duplicate_case(self.decode_case(raw).id, d.line + base,
                                        d.offset + part.offset_base,
                                        self.bases[d.first_task] + d.first_line, raw))
        if dups:
            # The worker counted cases it could not know were duplicates. Taking them back
            # out cannot undo what they did to the capped tables (a metadata key or rubric
            # id holding a place among the first 1,000, a value in a distinct-count
            # sketch), so the range is read again here without them: the figures are then
            # those of one process. Only a range with a late duplicate pays this.
            part.rows, part.checks = self._without(part, {d.line for d in dups})
        self.collector.absorb(part.rows)
        part.lines.records -= len(dups)
        part.lines.rejected += len(dups)
        if dups:
            part.lines.rejected_by_kind["duplicate id"] += len(dups)
        self.lines.merge(part.lines)
        self.checks.merge(part.checks)
        self._merge_rejects(part, base, found)

    def _without(self, part: Part, skip: set[int]) -> tuple[Collector, CheckTally]:
        """The rows and check tally of ``part``'s range without the cases on the lines in
        ``skip`` (line numbers local to the range)."""
        s = self.settings
        reader = case_reader(s.allow_unknown_fields, s.max_line_bytes, check_duplicates=False)
        checker = stats_checker(s.rubric_set, s.max_tokens, s.tokenizer)
        rows = Collector(s.rubric_set, s.by)
        with self.range_of(part) as stream:
            items = read_chunks(stream, s.max_line_bytes, first_line=1, first_offset=part.start)
            kept = (item for item in reader.read(items)
                    if type(item) is not Reject and item[0] not in skip)  # type: ignore[index]
            rows.take(kept, checker, _ignore)
        rows.flush()
        return rows, checker.tally

    def _merge_rejects(self, part: Part, base: int, found: list[Reject]) -> None:
        rejects = part.rejects
        if part.rejects_path is not None:
            with open(part.rejects_path, "rb") as f:
                rejects = [self._decode_reject(raw) for raw in f]
            os.unlink(part.rejects_path)
        for r in rejects:
            r.line += base
            r.offset += part.offset_base
        if found:
            rejects = sorted(rejects + found, key=lambda r: r.line)
        if rejects and self.rejects_out is not None:
            self.rejects_out.write(b"".join(escape_line_breaks(self._encode(r)) + b"\n"
                                            for r in rejects))
        room = self.settings.first_rejects - len(self.first_rejects)
        if room > 0:
            self.first_rejects += rejects[:room]


def run(collector: Collector, settings: Settings, workers: int, size: int,
        rejects_out: AtomicOutput | None,
        on_progress: Callable[[int, int | None], None] | None) -> Merger:
    """Read the input with ``workers`` processes into ``collector``; return the merger with
    the line counts, the check tally and the first rejects."""
    with temp_folder(tempfile.gettempdir(), STATS_PARTS) as parts_dir:
        if rejects_out is not None:
            settings.parts_dir = parts_dir
        fd = os.open(settings.path, os.O_RDONLY)
        limit = settings.max_line_bytes + 1
        merger = Merger(collector, settings, rejects_out,
                        lambda part, dup: read_line_at(fd, dup.offset, limit),
                        lambda part: open_range(fd, part.start, part.end))
        index = ParentIndex()
        try:
            results = map_ordered(_init, _run_range, settings,
                                  range_tasks(fd, size, range_bytes(size, workers)), workers,
                                  describe=lambda t: f"bytes {t[1]:,}-{t[2]:,} of {settings.path}")
            first = True
            for part in results:
                if first:  # for the aggregation, while the other ranges are read
                    import polars  # noqa: F401
                    first = False
                merger.add(part, index.duplicates(part.index, part.log))
                if on_progress is not None:
                    on_progress(part.end, size)
        finally:
            os.close(fd)
    return merger
