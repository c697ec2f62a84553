"""The one loop from lines to records: every line ends as a record, a reject or a counted blank.

Cases (build, validate, stats, agree), verdicts (agree, compare) and judge-state records
(judge) are all read here, each with its own ``RecordKind``: a typed msgspec decoder, the
sentences for a line that fails, and the rules a decoder cannot express (ids unique within
a case, a case id unique in the dataset). Nothing else in evalstream walks lines.

``RecordReader.read`` yields, in line order, a ``(line, offset, raw, record)`` tuple for
each record and the ``Reject`` for each rejected line; blank lines are only counted. The
counts always add up: ``lines == blank + records + rejected``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Generic, TypeVar

import msgspec

from evalstream._cases import schema
from evalstream._cases.ids import IdIndex
from evalstream._cases.rejects import (
    Reject,
    long_line_reject,
    long_text_reject,
    raw_text,
    reject,
    reject_kind,
    whitespace_reject,
)
from evalstream._files.lines import (
    DEFAULT_MAX_LINE_BYTES,
    Chunk,
    LongLine,
    chunks_of,
    open_input,
    read_chunks,
    read_files,
)

T = TypeVar("T")
JSON_SPACE = b" \t\r"  # with the newline, all JSON counts as whitespace: a blank line
Record = tuple[int, int, bytes, T]  # line number, byte offset, the line, the decoded record
Problem = tuple[Reject, str]  # a reject and its kind, for the counts by kind
FIRST_REJECTS_KEPT = 20
_ITEM_KIND = {"messages": "message", "context": "passage", "toolEvents": "tool event"}


@dataclass
class LineCounts:
    """What became of the lines read: ``lines == blank + records + rejected``."""

    lines: int = 0
    blank: int = 0
    records: int = 0
    rejected: int = 0
    rejected_by_kind: Counter[str] = field(default_factory=Counter)

    def merge(self, other: LineCounts) -> None:
        """Add the counts of a later part of the same input."""
        self.lines += other.lines
        self.blank += other.blank
        self.records += other.records
        self.rejected += other.rejected
        self.rejected_by_kind.update(other.rejected_by_kind)


@dataclass(frozen=True)
class RecordKind(Generic[T]):
    """What differs between reading cases, verdicts and judge-state records."""

    decode: Callable[[bytes], T]
    # The reject and its kind for a line that failed to decode (line number, offset, line).
    reject: Callable[[int, int, bytes, BaseException], Problem]
    too_long: Callable[[LongLine, int], Reject]
    # Rules the decoder cannot express, checked on each decoded record; None when it passes.
    check: Callable[[T, int, bytes], Problem | None] | None = None


class RecordReader(Generic[T]):
    """Reads lines into records of one kind, counting every line and keeping the first rejects."""

    def __init__(self, kind: RecordKind[T], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                 on_reject: Callable[[Reject, str, int], None] | None = None) -> None:
        self.kind = kind
        self.max_line_bytes = max_line_bytes
        # Called with each reject, its kind and the line's size in bytes before the reject is
        # yielded: enough to read the line again and explain it again (view keeps only that).
        self.on_reject = on_reject
        self.counts = LineCounts()
        self.first_rejects: list[Reject] = []

    def read(self, items: Iterable[Chunk | LongLine]) -> Iterator[Record[T] | Reject]:
        """The records and rejects of ``items`` (from ``read_chunks``), in line order."""
        decode, check = self.kind.decode, self.kind.check
        counts = self.counts
        for item in items:
            if type(item) is LongLine:
                counts.lines += 1
                yield self._rejected(self.kind.too_long(item, self.max_line_bytes),
                                     "line too long", item.size)
                continue
            assert type(item) is Chunk
            line_no, offset = item.line, item.offset
            for line in item.lines:
                counts.lines += 1
                try:
                    record = decode(line)
                except (msgspec.DecodeError, RecursionError) as exc:
                    if not line.strip(JSON_SPACE):
                        counts.blank += 1
                    elif line.isspace():  # a form feed or vertical tab: not JSON whitespace
                        yield self._rejected(whitespace_reject(line_no, offset, line),
                                             "malformed JSON", len(line))
                    else:
                        yield self._rejected(*self.kind.reject(line_no, offset, line, exc),
                                             len(line))
                else:
                    problem = None if check is None else check(record, line_no, line)
                    if problem is None:
                        counts.records += 1
                        yield line_no, offset, line, record
                    else:
                        problem[0].offset = offset
                        yield self._rejected(*problem, len(line))
                offset += len(line) + 1
                line_no += 1

    def read_file(self, path: str) -> Iterator[Record[T] | Reject]:
        """``read`` over a whole file (``-`` for stdin, ``.gz``/``.zst`` decompressed)."""
        stream = open_input(path)
        try:
            yield from self.read(read_chunks(stream, self.max_line_bytes))
        finally:
            if path != "-":
                stream.close()

    def read_files(self, paths: list[str]) -> Iterator[Record[T] | Reject]:
        """``read`` over several files in order as one input, as build reads them
        (``lines.read_files``: line numbers and offsets run on from file to file, an id an
        earlier file used is a duplicate); one path as ``read_file``."""
        if len(paths) == 1:
            yield from self.read_file(paths[0])
            return
        yield from self.read(read_files(paths, self.max_line_bytes))

    def read_stream(self, stream: BinaryIO) -> Iterator[Record[T] | Reject]:
        """``read`` over a stream opened for this reading, closed at its end."""
        try:
            yield from self.read(read_chunks(stream, self.max_line_bytes))
        finally:
            stream.close()

    def _rejected(self, rej: Reject, kind: str, size: int) -> Reject:
        counts = self.counts
        counts.rejected += 1
        counts.rejected_by_kind[kind] += 1
        if self.on_reject is not None:
            self.on_reject(rej, kind, size)
        if len(self.first_rejects) < FIRST_REJECTS_KEPT:
            self.first_rejects.append(rej)
        return rej


# -- cases -----------------------------------------------------------------------------------------
def case_kind(allow_unknown_fields: bool = False, index: IdIndex | None = None) -> RecordKind[Any]:
    """How cases are read: the case decoder, build's sentences, item ids unique within a
    case and, with an ``index``, case ids unique across everything the index has seen."""
    decoder = schema.decoder(allow_unknown_fields)

    def check(case: Any, line_no: int, line: bytes) -> Problem | None:
        # A line that is not longer than the cap cannot hold a longer string: the walk
        # through free-form values costs nothing on the usual lines.
        if len(line) > schema.MAX_TEXT_CHARS:
            long = schema.long_nested_text(case)
            if long is not None:
                return long_text_reject(line_no, line, case.id, *long), "over a cap"
        dup = schema.duplicate_item_id(case)
        if dup is not None:
            path, value = dup
            kind = _ITEM_KIND[path[2:].split("[")[0]]
            return Reject(line_no, 0, case.id, path,
                          f"`{path}` repeats the {kind} id {value!r}; {kind} ids must be unique "
                          "within a case.", raw_text(line)), "duplicate id"
        if index is not None:
            first = index.add_id(case.id, line_no)
            if first:
                return duplicate_case(case.id, line_no, 0, first, line), "duplicate id"
        return None

    return RecordKind(decode=decoder.decode, reject=_case_reject, too_long=long_line_reject,
                      check=check)


def duplicate_case(case_id: str, line_no: int, offset: int, first: int, line: bytes) -> Reject:
    """The reject of a case whose id was already used on line ``first``."""
    return Reject(line_no, offset, case_id, "$.id", f"Case id {case_id!r} was already used on "
                  f"line {first}; case ids must be unique in a dataset.", raw_text(line))


def _case_reject(line_no: int, offset: int, line: bytes, exc: BaseException) -> Problem:
    return reject(line_no, offset, line, exc), reject_kind(exc, line)


def case_reader(allow_unknown_fields: bool = False,
                max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                check_duplicates: bool = True) -> RecordReader[Any]:
    """A reader of cases as build reads them (duplicate case ids rejected unless
    ``check_duplicates`` is false: a worker leaves them to the parent)."""
    index = IdIndex() if check_duplicates else None
    return RecordReader(case_kind(allow_unknown_fields, index), max_line_bytes)


def read_cases(source: str | os.PathLike[str] | Iterable[bytes | str], *,
               allow_unknown_fields: bool = False,
               max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[schema.Case | Reject]:
    """The cases of a JSONL file (a path, ``-`` for stdin, ``.gz``/``.zst``) or of lines given
    one by one, read exactly as ``build`` reads them: each line is a ``Case`` or a ``Reject``
    (line, offset, id, JSON path, a sentence); blank lines are skipped."""
    reader = case_reader(allow_unknown_fields, max_line_bytes)
    if isinstance(source, (str, os.PathLike)):
        items = reader.read_file(os.fspath(source))
    else:
        items = reader.read(chunks_of(source, max_line_bytes))
    for item in items:
        yield item if type(item) is Reject else item[3]  # type: ignore[index]
