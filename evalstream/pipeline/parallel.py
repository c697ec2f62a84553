"""``build --workers N``: worker processes over byte ranges, spliced back in input order.

Each worker reads its own newline-aligned byte range of the input with ``os.pread``,
writes the range's output and rejects to part files, and returns only counts and a
compact log of its accepted cases (id hash, line, offset, where its output ends). The
parent takes the results in range order: it checks every id against one index of the
whole input (so duplicate ids are found exactly as in one process), drops the output of
duplicates, renumbers lines, and splices the parts into the targets with
``os.copy_file_range``. The output is byte-identical for any number of workers.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from evalstream.cases import ids
from evalstream.cases.rejects import Reject, raw_text
from evalstream.checks.report import Tally
from evalstream.checks.rubrics import RubricSet
from evalstream.files.lines import (
    Chunk,
    line_start,
    open_range,
    range_tasks,
    read_chunks,
    read_line_at,
)
from evalstream.files.outputs import AtomicOutput, write_all
from evalstream.pipeline.build import FIRST_REJECTS_KEPT, Options, Processor

RANGE_BYTES = 16 << 20


@dataclass
class Part:
    """One worker's result for one byte range."""

    index: int
    start: int
    end: int
    out_path: str
    rejects_path: str
    tally: Tally
    log: tuple[array[int], ...]  # lo, hi, line, offset, end (see ids.CaseLog)


def worthwhile(opts: Options, size: int | None) -> bool:
    """Whether workers can and should run: a plain input file bigger than one range."""
    return (opts.workers > 1 and size is not None and size > RANGE_BYTES
            and opts.input != "-" and not opts.input.endswith((".gz", ".zst")))


# -- in the worker -----------------------------------------------------------------------------
_worker: dict[str, Any] = {}


def _init(opts: Options, rubric_set: RubricSet, parts_dir: str) -> None:
    _worker["opts"] = opts
    _worker["dir"] = parts_dir
    _worker["fd"] = os.open(opts.input, os.O_RDONLY)
    _worker["size"] = os.fstat(_worker["fd"]).st_size
    _worker["processor"] = Processor(rubric_set, opts.max_tokens, opts.max_line_bytes,
                                     opts.allow_unknown_fields, check_duplicates=False)


def _run_range(task: tuple[int, int, int]) -> Part:
    index, start, end = task
    opts: Options = _worker["opts"]
    fd, size = _worker["fd"], _worker["size"]
    processor: Processor = _worker["processor"]
    processor.tally, processor.log = Tally(), ids.CaseLog()
    start, end = line_start(fd, start, size), line_start(fd, end, size)
    out_path = os.path.join(_worker["dir"], f"{index:08d}.out")
    rejects_path = os.path.join(_worker["dir"], f"{index:08d}.rejects")
    encode = msgspec.json.Encoder().encode
    with open(out_path, "wb", buffering=0) as out, open(rejects_path, "wb") as rej, \
            open_range(fd, start, end) as lines:
        for item in read_chunks(lines, opts.max_line_bytes, first_line=1, first_offset=start):
            if isinstance(item, Chunk):
                records, rejects = processor.chunk(item)
                write_all(out.fileno(), records)  # no join: one copy fewer
            else:
                rejects = processor.long_line(item)
            if rejects:
                rej.write(b"".join(encode(r) + b"\n" for r in rejects))
    processor.finish()
    return Part(index, start, end, out_path, rejects_path, processor.tally,
                processor.log.arrays())


# -- in the parent -----------------------------------------------------------------------------
class Merger:
    """Takes parts in order and writes their output, rejects and counts as one run would."""

    def __init__(self, opts: Options, rubric_set: RubricSet, out: AtomicOutput | None,
                 rejects: AtomicOutput | None) -> None:
        self.opts, self.out, self.rejects = opts, out, rejects
        self.tally = Tally()
        self.first_rejects: list[Reject] = []
        self.index = ids.IdIndex()
        self.lines = 0
        self.fd = os.open(opts.input, os.O_RDONLY)
        # Re-evaluates a duplicate's checks to take them back out of the counts.
        self.scratch = Processor(rubric_set, opts.max_tokens, opts.max_line_bytes,
                                 opts.allow_unknown_fields, check_duplicates=False)
        self._decode_reject = msgspec.json.Decoder(Reject).decode
        self._encode = msgspec.json.Encoder().encode

    def close(self) -> None:
        os.close(self.fd)

    def add(self, part: Part) -> None:
        base = self.lines
        lo, hi, line, offset, end = part.log
        first = self.index.add(lo, hi, [n + base for n in line])
        dups = [k for k, used in enumerate(first) if used]
        dup_rejects = [self._undo(part, k, base, first[k]) for k in dups]
        self._splice_output(part, dups, end)
        self._merge_rejects(part, base, dup_rejects)
        for item in part.tally.over_budget:
            item.line += base
        dup_lines = {r.line for r in dup_rejects}
        part.tally.over_budget = [o for o in part.tally.over_budget if o.line not in dup_lines]
        self.tally.merge(part.tally)
        self.lines += part.tally.counts.lines
        os.unlink(part.out_path)
        os.unlink(part.rejects_path)

    def _undo(self, part: Part, k: int, base: int, first_line: int) -> Reject:
        """Turn logged case ``k`` into a duplicate-id reject and take back what it counted."""
        lo, hi, line, offset, end = part.log
        line_no, at = line[k] + base, offset[k]
        raw = read_line_at(self.fd, at, self.opts.max_line_bytes + 1)
        case = self.scratch.decode(raw)
        self.scratch.tally = Tally()
        for _ in self.scratch.checks(case, line_no):
            pass
        undo = self.scratch.finish()
        undo.counts.cases = 1
        part.tally.subtract(undo)
        part.tally.counts.rejected += 1
        part.tally.rejected_by_kind["duplicate id"] += 1
        return Reject(line_no, at, case.id, "$.id",
                      f"Case id {case.id!r} was already used on line {first_line}; case ids "
                      "must be unique in a dataset.", raw_text(raw))

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
        if self.rejects is None:
            return
        merged: list[Reject] = []
        with open(part.rejects_path, "rb") as f:
            for raw in f:
                r = self._decode_reject(raw)
                r.line += base
                merged.append(r)
        if extra:
            merged = sorted(merged + extra, key=lambda r: r.line)
        if merged:
            self.rejects.write(b"".join(self._encode(r) + b"\n" for r in merged))
            room = FIRST_REJECTS_KEPT - len(self.first_rejects)
            self.first_rejects += merged[:max(room, 0)]


def run_parallel(opts: Options, rubric_set: RubricSet, size: int, out: AtomicOutput | None,
                 rejects: AtomicOutput | None,
                 on_progress: Callable[[int, int | None], None] | None) -> Merger:
    """Build with ``opts.workers`` processes; returns the merger holding tally and rejects."""
    directory = os.path.dirname(os.path.abspath(opts.output or opts.input))
    if opts.output in (None, "-"):
        directory = tempfile.gettempdir()
    merger = Merger(opts, rubric_set, out, rejects)
    ctx = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory(prefix=".evalstream-parts-", dir=directory) as parts_dir:
        pool = ctx.Pool(opts.workers, initializer=_init, initargs=(opts, rubric_set, parts_dir))
        try:
            results: Iterator[Part] = pool.imap(_run_range, range_tasks(size, RANGE_BYTES))
            for part in results:
                merger.add(part)
                if on_progress is not None:
                    on_progress(part.end, size)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
            merger.close()
    return merger
