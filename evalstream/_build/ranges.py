"""``build``/``validate`` with ``--workers N``: byte ranges in worker processes, spliced in order.

Each worker reads its own newline-aligned byte range of the input (a range owns the lines
whose first byte lies in it) with ``os.pread``, runs the same loop as one process
(``run.process``) into part files, and returns only counts and a compact log of its
accepted cases (id hash, line, offset, where its output ends). The parent takes the
results in range order: it checks every id against one index of the whole input (so
duplicate ids are found exactly as in one process), drops the output of duplicates,
renumbers lines and splices the parts into the targets with ``os.copy_file_range``. The
output is byte-identical for any number of workers.
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

from evalstream._build.run import Options, Outcome, Progress, checker_for, process
from evalstream._cases.duplicates import Dup, ParentIndex
from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import FIRST_REJECTS_KEPT, LineCounts, case_reader, duplicate_case
from evalstream._cases.rejects import Reject
from evalstream._checks.checker import MAX_OVER_BUDGET_LISTED, CheckTally, OverBudget
from evalstream._checks.rubrics import RubricSet
from evalstream._engines.local import map_ordered, range_bytes
from evalstream._files.lines import Readable, open_range, range_tasks, read_chunks, read_line_at
from evalstream._files.outputs import AtomicOutput, escape_line_breaks, write_all
from evalstream._files.store import open_file
from evalstream._files.temporaries import PARTS_SUFFIX, SHARED_PARTS, temp_folder
from evalstream.errors import OutputError, ReaderGone

WORTHWHILE_BYTES = 16 << 20  # smaller inputs run in one process


@dataclass
class Settings:
    """What a worker needs (sent once to each)."""

    opts: Options
    rubric_set: RubricSet | None
    parts_dir: str


@dataclass
class Part:
    """One task's result for one byte range (of one file): line numbers in its rejects and
    log count from 1, byte offsets are the file's."""

    index: int
    start: int
    end: int
    out_path: str | None  # its records; None when validating
    rejects_path: str | None  # its rejects as JSONL; None when they are in ``rejects_data``
    lines: LineCounts
    checks: CheckTally | None
    log: tuple[array[int], ...]  # lo, hi, line, offset, end (see ids.CaseLog); () on a cluster
    rejects_data: bytes = b""
    out_size: int = 0  # bytes in ``out_path``
    offset_base: int = 0  # bytes of the input before this range's file (several files)


def worthwhile(opts: Options, size: int | None) -> bool:
    """Whether workers can and should run: a plain input file over WORTHWHILE_BYTES."""
    return (opts.workers > 1 and size is not None and size > WORTHWHILE_BYTES
            and opts.input != "-" and not opts.input.endswith((".gz", ".zst")))


# -- in the worker -----------------------------------------------------------------------------
@dataclass
class _Worker:
    settings: Settings
    fd: int
    size: int


def _init(settings: Settings) -> _Worker:
    fd = os.open(settings.opts.input, os.O_RDONLY)
    return _Worker(settings, fd, os.fstat(fd).st_size)


def _run_range(worker: _Worker, task: tuple[int, int, int]) -> Part:
    index, start, end = task  # line-aligned by ``range_tasks``
    s = worker.settings
    opts = s.opts
    reader = case_reader(opts.allow_unknown_fields, opts.max_line_bytes, check_duplicates=False)
    checker = checker_for(opts, s.rubric_set)
    log = CaseLog()
    out_path = os.path.join(s.parts_dir, f"{index:08d}.out")
    rejects_path = os.path.join(s.parts_dir, f"{index:08d}.rejects")
    try:
        with open(out_path, "wb", buffering=0) as out, open(rejects_path, "wb") as rej, \
                open_range(worker.fd, start, end) as stream:
            items = read_chunks(stream, opts.max_line_bytes, first_line=1, first_offset=start)
            process(reader.read(items), checker, lambda pieces: write_all(out.fileno(), pieces),
                    rej.write, log)
    except OSError as exc:  # reading errors are InputError already: this is a part file
        target = opts.output if opts.output is not None else opts.rejects
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
    return Part(index, start, end, out_path, rejects_path, reader.counts,
                checker.tally if checker else None, log.arrays(),
                out_size=os.path.getsize(out_path))


# -- in the parent -----------------------------------------------------------------------------
LineSource = Callable[[Part, Dup], bytes]  # the line of a duplicate, to read it again
RangeSource = Callable[[Part], AbstractContextManager[Readable]]  # a part's range, to read it again


class Merger:
    """Takes parts in order and writes their output, rejects and counts as one run would.

    The duplicates of each part are given (found by ``ParentIndex`` here, or by a
    cluster's reducers); a late duplicate's line is read again through ``line_of`` to turn
    it into a reject and take back what it counted, and its records are left out of the
    output. A range whose list of over-budget checks was full is read again through
    ``range_of`` (see ``_over_budget_without``). Both engines merge through this class:
    ``line_of`` and ``range_of`` read a local file with ``os.pread`` for ``--workers``, a
    task's file (local or a URL) through fsspec for ``--engine dask``."""

    def __init__(self, opts: Options, rubric_set: RubricSet | None, out: Any,
                 rejects: Any, line_of: LineSource, range_of: RangeSource) -> None:
        self.opts, self.out, self.rejects = opts, out, rejects
        self.line_of, self.range_of = line_of, range_of
        self.lines = LineCounts()
        self.checks = CheckTally() if rubric_set is not None else None
        self.first_rejects: list[Reject] = []
        self.bases: list[int] = []  # lines before each part taken so far
        # Re-checks a late duplicate to take its checks back out of the counts.
        self.scratch = checker_for(opts, rubric_set)
        self.decode_case = case_reader(opts.allow_unknown_fields).kind.decode
        self._decode_reject = msgspec.json.Decoder(Reject).decode
        self._encode = msgspec.json.Encoder().encode

    def add(self, part: Part, dups: list[Dup], written: bool = False) -> None:
        """Take the next part, whose cases ``dups`` (in log order) repeat earlier ids;
        ``written``: its records are in the output already (no duplicate among them)."""
        base = self.lines.lines
        self.bases.append(base)
        dup_rejects = [self._undo(part, d, base) for d in dups]
        if not written:
            self._splice_output(part, dups)
        self._merge_rejects(part, base, dup_rejects)
        if part.checks is not None and self.checks is not None:
            listed = part.checks.over_budget
            full = len(listed) >= MAX_OVER_BUDGET_LISTED
            dup_lines = {r.line - base for r in dup_rejects}
            listed = [o for o in listed if o.line not in dup_lines]
            if full and len(listed) < len(part.checks.over_budget) and \
                    len(self.checks.over_budget) + len(listed) < MAX_OVER_BUDGET_LISTED:
                # The worker's list was full and its duplicates took places that later checks
                # of the range would have had: list the range again without them.
                listed = self._over_budget_without(part, dup_lines)
            for item in listed:
                item.line += base
            part.checks.over_budget = listed
            self.checks.merge(part.checks)
        self.lines.merge(part.lines)

    def _over_budget_without(self, part: Part, skip: set[int]) -> list[OverBudget]:
        """The first over-budget checks of ``part``'s range, without the cases on the lines
        in ``skip`` (line numbers local to the range). Only for ranges with late duplicates."""
        opts = self.opts
        reader = case_reader(opts.allow_unknown_fields, opts.max_line_bytes,
                             check_duplicates=False)
        assert self.scratch is not None
        self.scratch.tally = CheckTally()
        with self.range_of(part) as stream:
            items = read_chunks(stream, opts.max_line_bytes, first_line=1,
                                first_offset=part.start)
            for item in reader.read(items):
                if type(item) is not Reject:
                    line_no, _, _, case = item  # type: ignore[misc]
                    if line_no not in skip:
                        self.scratch.check(case, line_no)
        return self.scratch.tally.over_budget

    def _undo(self, part: Part, dup: Dup, base: int) -> Reject:
        """Turn a logged case into a duplicate-id reject and take back what it counted."""
        line_no = dup.line + base
        raw = self.line_of(part, dup)
        case = self.decode_case(raw)
        if self.scratch is not None and part.checks is not None:
            self.scratch.tally = CheckTally()
            self.scratch.check(case, line_no)
            part.checks.subtract(self.scratch.tally)
        part.lines.records -= 1
        part.lines.rejected += 1
        part.lines.rejected_by_kind["duplicate id"] += 1
        first = self.bases[dup.first_task] + dup.first_line
        return duplicate_case(case.id, line_no, dup.offset + part.offset_base, first, raw)

    def _splice_output(self, part: Part, dups: list[Dup]) -> None:
        if self.out is None or part.out_path is None:
            return
        keep: list[tuple[int, int]] = []
        at = 0
        for d in dups:
            keep.append((at, d.out_start))
            at = d.out_end
        keep.append((at, part.out_size))
        for a, b in keep:
            if b > a:
                self.out.splice(part.out_path, a, b)

    def _merge_rejects(self, part: Part, base: int, extra: list[Reject]) -> None:
        merged: list[Reject] = []
        data = part.rejects_data
        if part.rejects_path is not None:
            with open_file(part.rejects_path) as f:  # a local path, or a URL on a cluster
                data = f.read()
        for raw in data.splitlines():
            r = self._decode_reject(raw)
            r.line += base
            r.offset += part.offset_base
            merged.append(r)
        if extra:
            merged = sorted(merged + extra, key=lambda r: r.line)
        if merged and self.rejects is not None:
            self.rejects.write(b"".join(escape_line_breaks(self._encode(r)) + b"\n"
                                        for r in merged))
        room = FIRST_REJECTS_KEPT - len(self.first_rejects)
        self.first_rejects += merged[:max(room, 0)]


def run(opts: Options, rubric_set: RubricSet | None, size: int, out: AtomicOutput | None,
        rejects: AtomicOutput | None, on_progress: Progress | None) -> Outcome:
    """Build (or validate) with ``opts.workers`` processes."""
    # Beside the output file, named for it (the next run of that output removes the folder
    # a killed run left, with or without workers); else in the temporary folder, where
    # every run removes what dead runs left (files.temporaries).
    if out is not None and out.tmp is not None:
        where = (os.path.dirname(out.tmp), f".{os.path.basename(out.path)}.", PARTS_SUFFIX)
    else:
        where = (tempfile.gettempdir(), SHARED_PARTS, "")
    fd = os.open(opts.input, os.O_RDONLY)
    limit = opts.max_line_bytes + 1
    merger = Merger(opts, rubric_set, out, rejects,
                    lambda part, dup: read_line_at(fd, dup.offset, limit),
                    lambda part: open_range(fd, part.start, part.end))
    index = ParentIndex()
    stopped = False
    try:
        with temp_folder(*where) as parts:
            settings = Settings(opts, rubric_set, parts)
            for part in map_ordered(_init, _run_range, settings,
                                    range_tasks(fd, size, range_bytes(size, opts.workers)),
                                    opts.workers,
                                    describe=lambda t: _describe(opts.input, t)):
                try:
                    merger.add(part, index.duplicates(part.index, part.log))
                except ReaderGone:  # `| head`: stop; the counts are of the ranges written
                    stopped = True
                    break
                finally:
                    assert part.out_path is not None and part.rejects_path is not None
                    os.unlink(part.out_path)
                    os.unlink(part.rejects_path)
                if on_progress is not None:
                    on_progress(part.end, size)
    finally:
        os.close(fd)
    return Outcome(merger.lines, merger.checks, merger.first_rejects, stopped)


def _describe(path: str, task: Any) -> str:
    return f"bytes {task[1]:,}-{task[2]:,} of {path}"
