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
from dataclasses import dataclass
from typing import Any

import msgspec

from evalstream.cases.ids import CaseLog, IdIndex
from evalstream.cases.reading import FIRST_REJECTS_KEPT, LineCounts, case_reader, duplicate_case
from evalstream.cases.rejects import Reject
from evalstream.checks.checker import MAX_OVER_BUDGET_LISTED, CheckTally, OverBudget
from evalstream.checks.rubrics import RubricSet
from evalstream.engines.local import map_ordered, range_bytes
from evalstream.errors import OutputError, ReaderGone
from evalstream.files.lines import open_range, range_tasks, read_chunks, read_line_at
from evalstream.files.outputs import AtomicOutput, escape_line_breaks, write_all
from evalstream.files.temporaries import temp_folder
from evalstream.pipeline.run import Options, Outcome, Progress, checker_for, process

WORTHWHILE_BYTES = 16 << 20  # smaller inputs run in one process


@dataclass
class Settings:
    """What a worker needs (sent once to each)."""

    opts: Options
    rubric_set: RubricSet | None
    parts_dir: str


@dataclass
class Part:
    """One worker's result for one byte range."""

    index: int
    start: int
    end: int
    out_path: str
    rejects_path: str
    lines: LineCounts
    checks: CheckTally | None
    log: tuple[array[int], ...]  # lo, hi, line, offset, end (see ids.CaseLog)


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
                checker.tally if checker else None, log.arrays())


# -- in the parent -----------------------------------------------------------------------------
class Merger:
    """Takes parts in order and writes their output, rejects and counts as one run would."""

    def __init__(self, opts: Options, rubric_set: RubricSet | None, out: AtomicOutput | None,
                 rejects: AtomicOutput | None) -> None:
        self.opts, self.out, self.rejects = opts, out, rejects
        self.lines = LineCounts()
        self.checks = CheckTally() if rubric_set is not None else None
        self.first_rejects: list[Reject] = []
        self.index = IdIndex()
        self.fd = os.open(opts.input, os.O_RDONLY)
        # Re-checks a late duplicate to take its checks back out of the counts.
        self.scratch = checker_for(opts, rubric_set)
        self.decode_case = case_reader(opts.allow_unknown_fields).kind.decode
        self._decode_reject = msgspec.json.Decoder(Reject).decode
        self._encode = msgspec.json.Encoder().encode

    def close(self) -> None:
        os.close(self.fd)

    def add(self, part: Part) -> None:
        base = self.lines.lines
        lo, hi, line, offset, end = part.log
        first = self.index.add(lo, hi, [n + base for n in line])
        dups = [k for k, used in enumerate(first) if used]
        dup_rejects = [self._undo(part, k, base, first[k]) for k in dups]
        self._splice_output(part, dups, end)
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
        os.unlink(part.out_path)
        os.unlink(part.rejects_path)

    def _over_budget_without(self, part: Part, skip: set[int]) -> list[OverBudget]:
        """The first over-budget checks of ``part``'s range, without the cases on the lines
        in ``skip`` (line numbers local to the range). Only for ranges with late duplicates."""
        opts = self.opts
        reader = case_reader(opts.allow_unknown_fields, opts.max_line_bytes,
                             check_duplicates=False)
        assert self.scratch is not None
        self.scratch.tally = CheckTally()
        with open_range(self.fd, part.start, part.end) as stream:
            items = read_chunks(stream, opts.max_line_bytes, first_line=1,
                                first_offset=part.start)
            for item in reader.read(items):
                if type(item) is not Reject:
                    line_no, _, _, case = item  # type: ignore[misc]
                    if line_no not in skip:
                        self.scratch.check(case, line_no)
        return self.scratch.tally.over_budget

    def _undo(self, part: Part, k: int, base: int, first_line: int) -> Reject:
        """Turn logged case ``k`` into a duplicate-id reject and take back what it counted."""
        lo, hi, line, offset, end = part.log
        line_no, at = line[k] + base, offset[k]
        raw = read_line_at(self.fd, at, self.opts.max_line_bytes + 1)
        case = self.decode_case(raw)
        if self.scratch is not None and part.checks is not None:
            self.scratch.tally = CheckTally()
            self.scratch.check(case, line_no)
            part.checks.subtract(self.scratch.tally)
        part.lines.records -= 1
        part.lines.rejected += 1
        part.lines.rejected_by_kind["duplicate id"] += 1
        return duplicate_case(case.id, line_no, at, first_line, raw)

    def _splice_output(self, part: Part, dups: list[int], end: array[int]) -> None:
        if self.out is None:
            return
        total = os.path.getsize(part.out_path)
        keep: list[tuple[int, int]] = []
        at = 0
        for k in dups:
            start = end[k - 1] if k else 0
            keep.append((at, start))
            at = end[k]
        keep.append((at, total))
        for a, b in keep:
            if b > a:
                self.out.splice(part.out_path, a, b)

    def _merge_rejects(self, part: Part, base: int, extra: list[Reject]) -> None:
        merged: list[Reject] = []
        with open(part.rejects_path, "rb") as f:
            for raw in f:
                r = self._decode_reject(raw)
                r.line += base
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
    directory = os.path.dirname(os.path.abspath(opts.output or opts.input))
    if opts.output in (None, "-"):
        directory = tempfile.gettempdir()
    merger = Merger(opts, rubric_set, out, rejects)
    stopped = False
    try:
        with temp_folder(directory, ".evalstream-parts-") as parts:
            settings = Settings(opts, rubric_set, parts)
            for part in map_ordered(_init, _run_range, settings,
                                    range_tasks(merger.fd, size,
                                                range_bytes(size, opts.workers)),
                                    opts.workers,
                                    describe=lambda t: _describe(opts.input, t)):
                try:
                    merger.add(part)
                except ReaderGone:  # `| head`: stop; the counts are of the ranges written
                    stopped = True
                    break
                if on_progress is not None:
                    on_progress(part.end, size)
    finally:
        merger.close()
    return Outcome(merger.lines, merger.checks, merger.first_rejects, stopped)


def _describe(path: str, task: Any) -> str:
    return f"bytes {task[1]:,}-{task[2]:,} of {path}"
