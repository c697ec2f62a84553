"""Records read again on demand, by the byte offset the index kept: a case, a verdict, a
judge state, a reject's sentence. Each is decoded by the same typed decoder the index pass
used, so a page shows exactly what was indexed.

A file that changed after it was indexed (its size or modification time differ) is never
read at a stale offset: ``FileChanged`` says so and asks for a restart.
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import msgspec

from evalstream._cases import schema
from evalstream._cases.reading import RecordKind, case_kind, duplicate_case
from evalstream._cases.rejects import Reject
from evalstream._checks.checker import Check, Checker
from evalstream._files.lines import HEAD_BYTES, LongLine, read_line_at
from evalstream._verdicts.records import decoder as verdict_decoder
from evalstream._verdicts.records import verdict_kind
from evalstream._view.index import CASES, COMPARE_CASES, ROLES, Index, Run
from evalstream.errors import InputError


class FileChanged(InputError):
    """An indexed file changed on disk: its offsets no longer hold the indexed records."""


class _IdOnly(msgspec.Struct, gc=False):
    id: str


class _CaseIdOnly(msgspec.Struct, gc=False):
    case_id: str


@dataclass
class StateRecord:
    """A judge state as build wrote it (``--states``), or rebuilt from the case."""

    question: str | None
    state: bytes | None  # the state's JSON bytes, as sent
    exposure: dict[str, Any] | None
    rubric_hash: str | None
    state_hash: str | None
    line: int | None  # its line in the states file (None: rebuilt)
    kind: str  # "judge state" or "exact verdict"
    raw: dict[str, Any]  # the whole record


class Source:
    """The indexed files, open for reading by offset from any thread."""

    def __init__(self, index: Index) -> None:
        self.index = index
        opts = index.options
        self._fds: dict[str, int] = {}
        # Several files read as one (the cases): each part open, found by its first offset.
        self._parts: dict[str, tuple[list[int], list[int]]] = {}
        for role, summary in index.files.items():
            try:
                if summary.parts:
                    fds = [os.open(part.path, os.O_RDONLY) for part in summary.parts]
                    self._parts[role] = ([part.start for part in summary.parts], fds)
                else:
                    self._fds[role] = os.open(summary.path, os.O_RDONLY)
            except OSError as exc:
                self.close()
                raise InputError(f"cannot read {summary.path}: {exc.strerror or exc}") from exc
        self._case = schema.decoder(opts.allow_unknown_fields).decode
        self._verdict = verdict_decoder(opts.allow_unknown_fields).decode
        self._case_id = msgspec.json.Decoder(_IdOnly).decode
        self._verdict_case_id = msgspec.json.Decoder(_CaseIdOnly).decode
        self._checker: Checker | None = None
        self._lock = threading.Lock()  # the Checker keeps per-plan state

    def close(self) -> None:
        for fd in [*self._fds.values(), *(fd for _, fds in self._parts.values() for fd in fds)]:
            os.close(fd)
        self._fds, self._parts = {}, {}

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lines -----------------------------------------------------------------------------
    def line(self, role: str, offset: int, size: int | None = None) -> bytes:
        """The line at ``offset`` of the ``role`` file (``size`` bytes when known); of
        several files read as one, the line at that offset of the whole."""
        summary = self.index.files[role]
        path, size_was, mtime_was = summary.path, summary.size, summary.mtime_ns
        if role in self._parts:
            starts, fds = self._parts[role]
            at = bisect_right(starts, offset) - 1
            part, fd = summary.parts[at], fds[at]
            path, size_was, mtime_was = part.path, part.size, part.mtime_ns
            offset -= part.start
        else:
            fd = self._fds[role]
        info = os.fstat(fd)
        if info.st_size != size_was or info.st_mtime_ns != mtime_was:
            raise FileChanged(f"{path} changed after view indexed it (size or "
                              "modification time); start view again to index it anew.")
        limit = size if size is not None else self.index.options.max_line_bytes + 1
        return read_line_at(fd, offset, limit)

    # -- records ---------------------------------------------------------------------------
    def case(self, row: int) -> tuple[int, schema.Case, int]:
        """The case of a row: its line number, the decoded case and the line's size."""
        line = self.line(CASES, int(self.index.case_offset[row]))
        return int(self.index.case_line[row]), self._case(line), len(line)

    def paired_case(self, case_id: str) -> schema.Case | None:
        """Run B's case of this id (``--compare-cases``), or None."""
        offset = self.index.paired_offset_of(case_id)
        return None if offset is None else self._case(self.line(COMPARE_CASES, offset))

    def case_id(self, row: int) -> str:
        """The case id of a row: from the cases file, or the first record naming it."""
        ix = self.index
        if row < ix.n_cases:
            return self._case_id(self.line(CASES, int(ix.case_offset[row]))).id
        role, offset = ix.unknown_where[row - ix.n_cases]
        return self._verdict_case_id(self.line(role, offset)).case_id

    def verdict(self, run: Run, position: int, role: str) -> tuple[Any, dict[str, Any]]:
        """A verdict (typed, as the index read it) and its whole record as plain JSON."""
        line = self.line(role, int(run.offset[position]))
        return self._verdict(line), msgspec.json.decode(line)

    def state(self, position: int) -> StateRecord:
        """The record of the states file at a position of ``Index.state_key``."""
        ix = self.index
        line = self.line("states", int(ix.state_offset[position]))
        return self._state_record(line, int(ix.state_line[position]))

    def pending_state(self, role: str, offset: int) -> StateRecord:
        """A judge state that has no verdict, where the index found it."""
        return self._state_record(self.line(role, offset), None)

    def _state_record(self, line: bytes, line_no: int | None) -> StateRecord:
        v = self._verdict(line)
        raw = msgspec.json.decode(line)
        question = msgspec.json.decode(v.question) if v.question else None
        return StateRecord(
            question=question if isinstance(question, str) else None,
            state=bytes(v.state) if v.state else None,
            exposure=raw.get("exposure") if isinstance(raw.get("exposure"), dict) else None,
            rubric_hash=v.rubric_hash, state_hash=v.state_hash, line=line_no,
            kind="exact verdict" if v.status is not None else "judge state", raw=raw)

    def rebuilt(self, case: schema.Case, line_no: int, rubric: int) -> tuple[Check, Any]:
        """The check ``build`` makes for this case and rubric with the index's rubric set:
        its state, figures and exposure (the Checker, with states kept)."""
        with self._lock:
            checker = self._rebuilding()
            check = checker.check(case, line_no)[rubric]
            return check, checker.exposure(check)

    def rebuilt_pair(self, a: schema.Case, b: schema.Case, line_no: int,
                     rubric: int) -> tuple[Check, Any]:
        """The order ``ab`` (run A's response first) of the pairwise check ``build
        --pair-with`` makes of these two cases, as ``rebuilt`` makes a case's."""
        with self._lock:
            checker = self._rebuilding()
            check = checker.check_pair(a, b, line_no)[0][rubric]
            return check, checker.exposure(check)

    def _rebuilding(self) -> Checker:
        """The one Checker of ``rebuilt`` and ``rebuilt_pair`` (made at the first, under the
        lock), with the budget the index was built with: whichever page asks first."""
        if self._checker is None:
            opts = self.index.options
            self._checker = Checker(self.index.rubrics, opts.max_tokens, keep_states=True,
                                    tokenizer=opts.tokenizer,
                                    max_output_tokens=opts.max_output_tokens)
        return self._checker

    # -- rejects ---------------------------------------------------------------------------
    def reject(self, i: int) -> tuple[str, Reject]:
        """The ``i``-th reject's file role and the reject, explained again from its line
        exactly as the read loop explained it."""
        log, opts = self.index.rejects, self.index.options
        role = ROLES[log.role[i]]
        kind_name = log.kinds.names[log.kind[i]]
        line_no, offset, size = log.line[i], log.offset[i], log.size[i]
        kind: RecordKind[Any] = (case_kind(opts.allow_unknown_fields)
                                 if role in (CASES, COMPARE_CASES)
                                 else verdict_kind(opts.allow_unknown_fields))
        if kind_name == "line too long":
            head = self.line(role, offset, min(HEAD_BYTES, size))
            after = os.pread(self._fds[role], 1, offset + size)
            return role, kind.too_long(LongLine(line_no, offset, size, head, after == b"\n"),
                                       opts.max_line_bytes)
        line = self.line(role, offset, size)
        if log.first[i]:
            case_id = self._case_id(line).id
            return role, duplicate_case(case_id, line_no, offset, log.first[i], line)
        try:
            record = kind.decode(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            return role, kind.reject(line_no, offset, line, exc)[0]
        problem = None if kind.check is None else kind.check(record, line_no, line)
        if problem is None:
            raise FileChanged(f"{self.index.files[role].path}: line {line_no} no longer holds "
                              "the line view rejected; start view again.")
        problem[0].offset = offset
        return role, problem[0]
