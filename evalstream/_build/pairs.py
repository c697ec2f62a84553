"""``build --pair-with``: two runs' cases, aligned by id, into pairwise judge states written
in both orders (issue 28).

Run A (the input) and run B (``--pair-with``) are each read by the one read loop, each with
its own duplicate-id index, and meet by case id. Two cases of one id pair when they hold the
same values in every field a pair must share (``Checker.mismatch``: ``input`` always, and
each of ``messages``, ``context`` and ``policy`` that a pairwise rubric shows, compared as
decoded values); a pair that differs, and a case in one file only, are counted and listed in
the report, never judged. Each pair's checks come from ``Checker.check_pair`` and are
written run A's response first (order ``ab``), then run B's (``ba``), on consecutive lines
(``RecordEncoder.add_pair``), in run A's order of cases.

How the two files meet:

- In step, while both are sorted by id (code point order: Python's ``sorted``, and
  ``LC_ALL=C sort`` on the ids' UTF-8 bytes): a merge, in memory that does not grow with the
  pairs (a chunk of each file, and each file's duplicate-id index, 32-64 bytes a case).
- With an index, when they are not: the first id out of order in either file ends the merge
  (the output it wrote is dropped: held back up to ``HOLD_BYTES``, which is where an
  unsorted file shows itself, and rewound after that; a target that cannot be rewound,
  stdout or a compressed file, is then an error that says to sort the files). Run B is read
  once into an index (its duplicate-id index, and each case's line and byte offset: 16
  bytes more a case), then run A in order, each partner read back from its offset (a
  compressed run B from a decompressed copy in the temporary folder, removed as it is
  opened). ``benchmarks/pairs.py`` measures both.

Either way the records are the same bytes, and the rejects are run A's then run B's, each
with its file (``FileReject``); the report says how the files met (``read``).
"""

from __future__ import annotations

import os
import tempfile
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import msgspec
from msgspec import Struct

from evalstream._build.loop import FLUSH_BYTES, Options, Outcome, checker_for, report_of
from evalstream._build.records import RecordEncoder
from evalstream._cases import schema
from evalstream._cases.ids import IdIndex
from evalstream._cases.reading import LineCounts, RecordReader, case_kind
from evalstream._cases.rejects import FileReject, Reject
from evalstream._checks.report import RunReport
from evalstream._checks.report import encode as encode_report
from evalstream._checks.rubrics import RubricSet
from evalstream._files.lines import (
    HeldInput,
    Progress,
    input_size,
    progress,
    read_chunks,
    read_line_at,
)
from evalstream._files.outputs import AtomicOutput, escape_line_breaks
from evalstream._files.sniff import HEAD_BYTES, check_cases_head
from evalstream._files.store import needs_resolving
from evalstream._files.temporaries import temp_file
from evalstream._files.transaction import Transaction
from evalstream.errors import InputError, ReaderGone, UsageError

# Output held back before it is written while the files are read in step: a file out of
# order shows it in its first lines, and the merge is then dropped without a trace.
HOLD_BYTES = 8 << 20
MAX_LISTED = 1_000  # unpaired cases (of each file) and mismatched pairs named in the report
IN_STEP, INDEXED = "in step", "indexed"


# -- the report ------------------------------------------------------------------------------------
class PairFile(Struct):
    """One run's file: ``lines == blank + cases + rejected``, and ``cases == pairs +
    mismatched + only`` (``only``: cases whose id the other run's file does not hold)."""

    path: str
    lines: int
    blank: int
    cases: int
    rejected: int
    only: int


class Unpaired(Struct):
    """A case of one run (``a`` or ``b``) whose id the other run's file does not hold."""

    file: str
    line: int
    id: str


class Mismatched(Struct):
    """Two cases of one id that differ in fields a pair must share: not judged."""

    id: str
    line_a: int
    line_b: int
    fields: list[str]


class PairCounts(Struct):
    """What ``build --pair-with`` found: the two files, the pairs judged, and those not."""

    a: PairFile
    b: PairFile
    pairs: int  # ids in both files whose shared fields are equal: judged in both orders
    mismatched: int  # ids in both files that differ in a field in ``must_be_equal``
    must_be_equal: list[str]  # the case fields two cases of a pair must hold equal
    read: str  # how the files met: "in step" (both sorted by id) or "indexed"
    unpaired: list[Unpaired]  # the first of run A, then the first of run B
    mismatches: list[Mismatched]


class PairRunReport(RunReport):
    """The report of ``build --pair-with``: a run report whose counts add both files
    (``lines``, ``cases``, ``rejected``...; ``checks`` counts each order), and the pairs."""

    pairs: PairCounts | None = None


# -- reading ---------------------------------------------------------------------------------------
class Disorder(Exception):
    """A file's ids are not in ascending order: the files cannot be read in step."""

    def __init__(self, path: str, line: int) -> None:
        super().__init__(f"{path}: line {line:,}")
        self.path, self.line = path, line


@dataclass
class _Side:
    """One run's file as this attempt reads it: its rejects spooled, its counts, its cases
    with no partner."""

    role: str  # "a" or "b"
    held: HeldInput
    rejects: IO[bytes]
    reader: RecordReader[Any] | None = None
    only: int = 0
    listed: list[Unpaired] = field(default_factory=list)
    done: int = 0  # bytes read, for the progress

    @property
    def path(self) -> str:
        return self.held.path

    @property
    def counts(self) -> LineCounts:
        return self.reader.counts if self.reader is not None else LineCounts()

    def unpaired(self, line: int, case_id: str) -> None:
        self.only += 1
        if len(self.listed) < MAX_LISTED:
            self.listed.append(Unpaired(self.role, line, case_id))


class _Held:
    """The records' output, held back until ``HOLD_BYTES`` while a merge may yet be dropped."""

    def __init__(self, out: AtomicOutput) -> None:
        self.out = out
        self.pieces: list[bytes] = []
        self.size = 0
        self.passed = False  # some of it was written: a restart must rewind

    def write_all(self, pieces: list[bytes]) -> None:
        if self.passed:
            self.out.write_all(pieces)
            return
        self.pieces += pieces
        self.size += sum(map(len, pieces))
        if self.size >= HOLD_BYTES:
            self.release()

    def release(self) -> None:
        """Write what is held (the merge is now trusted, or the run is over)."""
        if self.pieces:
            self.out.write_all(self.pieces)
        self.pieces, self.size, self.passed = [], 0, True

    def drop(self, disorder: Disorder) -> None:
        """Take back everything the merge wrote."""
        if not self.passed:
            self.pieces, self.size = [], 0
        elif self.out.rewindable:
            self.out.rewind(0)
            self.passed = False
        else:
            raise InputError(
                f"{disorder.path} is sorted by case id up to line {disorder.line:,} but not "
                f"there, after {HOLD_BYTES >> 20} MiB of pairs were written to {self.out.path}, "
                "which cannot be rewritten (standard output, a pipe or a compressed file): "
                "sort both files by id (then they are read in step), or write the pairs to a "
                "plain file (then they are paired again with an index).")


class _Pairing:
    """One attempt at pairing the two files: the checks, records and counts of its pairs."""

    def __init__(self, opts: Options, rubric_set: RubricSet, out: _Held, a: _Side, b: _Side,
                 on_progress: Progress | None, total: int | None) -> None:
        checker = checker_for(opts, rubric_set)
        assert checker is not None
        self.checker = checker
        self.opts, self.out, self.a, self.b = opts, out, a, b
        self.encoder = RecordEncoder()
        self.pairs = self.mismatched = 0
        self.mismatches: list[Mismatched] = []
        self.pending: list[bytes] = []
        self.size = 0
        self.on_progress, self.total = on_progress, total
        self._encode = msgspec.json.Encoder().encode

    # -- what a pair becomes ---------------------------------------------------------------------
    def pair(self, a: Any, line_a: int, b: Any, line_b: int) -> None:
        differ = self.checker.mismatch(a, b)
        if differ:
            self.mismatched += 1
            if len(self.mismatches) < MAX_LISTED:
                self.mismatches.append(Mismatched(a.id, line_a, line_b, differ))
            return
        self.pairs += 1
        first, second = self.checker.check_pair(a, b, line_a)
        self.size += self.encoder.add_pair(a.id, first, second, [len(a.output), len(b.output)],
                                           self.pending)
        if self.size >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.out.write_all(self.pending)
        self.pending, self.size = [], 0  # the writer may still hold the list: never reuse it

    # -- reading ---------------------------------------------------------------------------------
    def cases(self, side: _Side, in_order: bool = False, index: IdIndex | None = None,
              ) -> Iterator[tuple[int, int, bytes, Any]]:
        """The cases of one file in line order, its rejects spooled; with ``in_order``,
        ``Disorder`` at the first id below the one before it. ``index``: the duplicate-id
        index to read with, which then holds each accepted case's id and line."""
        opts = self.opts
        side.reader = reader = RecordReader(
            case_kind(opts.allow_unknown_fields, index if index is not None else IdIndex()),
            opts.max_line_bytes)
        stream = side.held.open()
        try:
            chunks: Any = read_chunks(stream, opts.max_line_bytes)
            if self.on_progress is not None:
                chunks = self._progress(chunks, side)
            previous: str | None = None
            for item in reader.read(chunks):
                if type(item) is Reject:
                    side.rejects.write(escape_line_breaks(self._encode(
                        FileReject.of(side.path, item))) + b"\n")
                    continue
                if in_order:
                    case_id = item[3].id  # type: ignore[index]
                    if previous is not None and case_id < previous:
                        raise Disorder(side.path, item[0])  # type: ignore[index]
                    previous = case_id
                yield item  # type: ignore[misc]
        finally:
            stream.close()

    def _progress(self, chunks: Any, side: _Side) -> Any:
        """``chunks`` of one file, telling ``on_progress`` the bytes of both files read."""
        on_progress, a, b = self.on_progress, self.a, self.b
        assert on_progress is not None

        def done(n: int, _: int | None) -> None:
            side.done = n
            on_progress(a.done + b.done, self.total)

        return progress(chunks, done, None)

    def in_step(self) -> None:
        """Merge the two files, both sorted by id (``Disorder`` otherwise)."""
        a_cases, b_cases = self.cases(self.a, in_order=True), self.cases(self.b, in_order=True)
        a, b = next(a_cases, None), next(b_cases, None)
        while a is not None or b is not None:
            if a is not None and b is not None and a[3].id == b[3].id:
                self.pair(a[3], a[0], b[3], b[0])
                a, b = next(a_cases, None), next(b_cases, None)
            elif b is None or (a is not None and a[3].id < b[3].id):
                self.a.unpaired(a[0], a[3].id)  # type: ignore[index]
                a = next(a_cases, None)
            else:
                self.b.unpaired(b[0], b[3].id)
                b = next(b_cases, None)

    def indexed(self) -> None:
        """Index run B's ids, then read run A in order and each partner by its offset."""
        opts, b = self.opts, self.b
        lines, offsets = array("Q"), array("Q")
        # The duplicate-id index of the reading: each accepted case's id and line (a repeat
        # is rejected, never indexed), the one index of run B.
        index = IdIndex()
        # Offsets in a compressed file are of its decompressed bytes: read from a copy.
        copy = _copy_file() if b.path.endswith((".gz", ".zst")) else None
        try:
            for line, offset, raw, _ in self.cases(b, index=index):
                lines.append(line)
                if copy is not None:
                    offsets.append(copy.tell())
                    copy.write(raw + b"\n")
                else:
                    offsets.append(offset)
            if copy is not None:
                copy.flush()
            source = copy.fileno() if copy is not None else b.held.fd
            matched = bytearray(len(lines))
            decode = schema.decoder(opts.allow_unknown_fields).decode
            limit = opts.max_line_bytes + 1
            for line_a, _, _, case in self.cases(self.a):
                line_b = index.get(case.id)
                if not line_b:
                    self.a.unpaired(line_a, case.id)
                    continue
                at = bisect_left(lines, line_b)
                matched[at] = 1
                self.pair(case, line_a, decode(read_line_at(source, offsets[at], limit)),
                          line_b)
            at = matched.find(0)
            while at >= 0:
                if len(b.listed) < MAX_LISTED:
                    found = decode(read_line_at(source, offsets[at], limit))
                    b.unpaired(lines[at], found.id)
                else:
                    b.only += 1
                at = matched.find(0, at + 1)
        finally:
            if copy is not None:
                copy.close()


def _copy_file() -> IO[bytes]:
    """A temporary file for a decompressed copy of run B, removed as soon as it is opened."""
    fd, path = temp_file(tempfile.gettempdir(), "evalstream-pair-", ".jsonl")
    os.unlink(path)
    return os.fdopen(fd, "w+b")


# -- the run ---------------------------------------------------------------------------------------
def check(opts: Options, rubric_set: RubricSet | None) -> list[str]:
    """Raise UsageError for what ``--pair-with`` cannot do; warnings for what it ignores."""
    assert opts.pair_with is not None
    if opts.engine == "dask":
        raise UsageError("--pair-with reads two files in step (or one with an index) in one "
                         "process; drop --engine dask.")
    if opts.inputs and len(opts.inputs) > 1:
        raise UsageError("--pair-with pairs one file of cases with another; give run A as one "
                         "input (join its files first).")
    if any(needs_resolving(p) for p in (opts.input, opts.pair_with)):
        raise UsageError("--pair-with reads two local files (or one of them from stdin), not "
                         "globs or URLs: give each run as one file.")
    if opts.input == "-" and opts.pair_with == "-":
        raise UsageError("the input and --pair-with are both - (stdin): only one of the two "
                         "runs can be read from stdin; give the other as a file.")
    assert rubric_set is not None
    if not opts.rubric_files:
        raise UsageError("--pair-with builds pairwise rubrics (kind = \"pairwise\" in a "
                         "rubric file); the built-in rubrics are judged one case at a time: "
                         "give --rubrics FILE.")
    pointwise = [r.id for r in rubric_set.rubrics if not r.pairwise]
    if pointwise:
        raise UsageError(f"--pair-with builds pairwise rubrics only (kind = \"pairwise\"); "
                         f"{_named(pointwise)} {'is' if len(pointwise) == 1 else 'are'} "
                         "judged one case at a time: build them over each run alone, from a "
                         "rubric file of their own.")
    return ["--workers: --pair-with reads two files in one process; ran in one process."] \
        if opts.workers > 1 else []


def run(opts: Options, rubric_set: RubricSet, outputs: Transaction, warnings: list[str],
        started: float, on_progress: Progress | None) -> tuple[RunReport, list[Reject]]:
    """Build the pairwise states of run A (``opts.input``) and run B (``opts.pair_with``)
    into the run's targets; the report (a ``PairRunReport``) and the first rejects."""
    assert opts.pair_with is not None
    with HeldInput(opts.input) as held_a, HeldInput(opts.pair_with) as held_b, \
            tempfile.TemporaryFile() as rejects_a, tempfile.TemporaryFile() as rejects_b:
        for held in (held_a, held_b):
            check_cases_head(held.head(HEAD_BYTES), held.path)
        sizes = [input_size(p) if p != "-" else None for p in (opts.input, opts.pair_with)]
        total = None if None in sizes else sum(s for s in sizes if s is not None)
        with outputs:
            out, rej_out, report_out = (outputs.open(role) if outputs.path(role) else None
                                        for role in ("output", "rejects", "report"))
            assert out is not None
            held_out = _Held(out)
            read, attempt, stopped = IN_STEP, None, False
            try:
                while True:
                    a, b = (_Side("a", held_a, rejects_a), _Side("b", held_b, rejects_b))
                    for spool in (rejects_a, rejects_b):
                        spool.seek(0)
                        spool.truncate()
                    attempt = _Pairing(opts, rubric_set, held_out, a, b, on_progress, total)
                    try:
                        attempt.in_step() if read == IN_STEP else attempt.indexed()
                    except Disorder as found:
                        held_out.drop(found)
                        read = INDEXED
                        continue
                    attempt.flush()
                    held_out.release()
                    break
            except ReaderGone:
                stopped = True  # `build ... - | head`: the counts are of the lines read
            assert attempt is not None
            if stopped:
                outputs.leave_out("output")
            lines = LineCounts()
            lines.merge(a.counts)
            lines.merge(b.counts)
            if rej_out is not None:
                for spool in (rejects_a, rejects_b):
                    spool.seek(0)
                    while piece := spool.read(1 << 20):
                        rej_out.write(piece)
            if not lines.rejected:
                outputs.empty("rejects")
            tally = attempt.checker.tally
            pairs = PairCounts(
                a=_file(a), b=_file(b), pairs=attempt.pairs,
                mismatched=attempt.mismatched,
                must_be_equal=list(attempt.checker.must_be_equal), read=read,
                unpaired=a.listed + b.listed, mismatches=attempt.mismatches)
            warnings += pair_warnings(pairs)
            first = [*a.reader.first_rejects, *b.reader.first_rejects] if a.reader and \
                b.reader else []
            outcome = Outcome(lines, tally, first, stopped)
            base = report_of(outcome, opts, "build", rubric_set, outputs.path("rejects"),
                             outputs.path("report"), started, warnings)
            report = PairRunReport(**msgspec.structs.asdict(base), pairs=pairs)
            if report_out is not None:
                report_out.write(encode_report(report))
    return report, outcome.first_rejects


def _file(side: _Side) -> PairFile:
    c = side.counts
    return PairFile(side.path, c.lines, c.blank, c.records, c.rejected, side.only)


def pair_warnings(pairs: PairCounts) -> list[str]:
    """What the report says of the cases that were not judged, and of no pair at all."""
    warnings = []
    for side, run in ((pairs.a, "A"), (pairs.b, "B")):
        if side.only:
            other = pairs.b.path if side is pairs.a else pairs.a.path
            warnings.append(f"{side.only:,} {'case' if side.only == 1 else 'cases'} of run "
                            f"{run} ({side.path}) {'has' if side.only == 1 else 'have'} no case "
                            f"of the same id in {other}: not judged (the first are listed in "
                            "the report's pairs.unpaired).")
    if pairs.mismatched:
        fields = ", ".join(f"`{f}`" for f in pairs.must_be_equal)
        differ = "pair differs" if pairs.mismatched == 1 else "pairs differ"
        warnings.append(f"{pairs.mismatched:,} {differ} in a field the two cases of a pair must "
                        f"share ({fields}): not judged (listed in the report's "
                        "pairs.mismatches).")
    if not pairs.pairs and (pairs.a.cases or pairs.b.cases):
        warnings.append("no case id of one run has a case of the same id in the other, with "
                        "the same shared fields: nothing to judge.")
    return warnings


def skipped_pairwise(rubric_set: RubricSet) -> list[str]:
    """The warning of a build without --pair-with whose rubric set has pairwise rubrics."""
    pairwise = [r.id for r in rubric_set.rubrics if r.pairwise]
    if not pairwise:
        return []
    what = "is a pairwise rubric" if len(pairwise) == 1 else "are pairwise rubrics"
    return [f"{_named(pairwise)} {what}: it compares two runs' responses "
            "(`evalstream build RUN_A OUT --pair-with RUN_B`), so every case on its own "
            "skipped it."]


def _named(ids: list[str]) -> str:
    """The first five rubric ids, quoted, and ``...`` when there are more."""
    return ", ".join(f"`{r}`" for r in ids[:5]) + (", ..." if len(ids) > 5 else "")
