"""The index of ``evalstream view``: one streaming pass over each file, keeping where each
record is and the few keys the lists need, in typed arrays. Records themselves are never
kept: a page reads the few it shows again by byte offset (``view.records``).

Every file is read by the one read loop (``cases.reading.RecordReader``) with the case and
verdict decoders, so every line is a record, a reject or a counted blank exactly as
``build``, ``agree`` and ``compare`` see it. Cases also go through the ``Checker`` (the
rubric set given, as ``build`` runs it), which says which checks ``build`` skipped and why.

A check is keyed by (case, rubric) in one unsigned 64-bit integer, ``row << 32 | rubric``:
``row`` is the case's place among the accepted cases of the cases file (ids named only by
verdicts or states get rows after them), ``rubric`` a code (the rubric set's rubrics first,
in order). A case id is found again through the duplicate-id index that reading cases
builds anyway (``cases.ids.IdIndex``: a 128-bit hash and the line, 24 bytes a slot).

What stays in memory (``Index.nbytes``): per case 16 bytes of columns (line, offset, group)
and 32-64 of the id index; per verdict 35 (offset, line, key, status, cause, and its place in
key order); per label 10; per skipped check 10 (build skips every rubric that does not apply,
so up to cases x rubrics); per reject 35. Nothing grows with the text of a record.
"""

from __future__ import annotations

import os
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from evalstream._cases.ids import IdIndex
from evalstream._cases.reading import RecordReader, case_kind
from evalstream._cases.rejects import Reject
from evalstream._cases.schema import group_value
from evalstream._checks.checker import OVER_BUDGET, Checker
from evalstream._checks.rubrics import RubricSet
from evalstream._checks.tokens import DEFAULT_BUDGET
from evalstream._files.lines import (
    DEFAULT_MAX_LINE_BYTES,
    open_input,
    progress,
    read_chunks,
    read_files,
)
from evalstream._verdicts.records import (
    STATUSES,
    DuplicateKeyError,
    exposure_key,
    verdict_kind,
)
from evalstream._view.panel_index import PanelIndex
from evalstream.errors import InputError, UsageError

if TYPE_CHECKING:
    import numpy as np

CASES, VERDICTS, COMPARE, STATES = "cases", "verdicts", "compare", "states"
ROLES = (CASES, VERDICTS, COMPARE, STATES)
LABEL_STATUSES = ("pass", "fail", "na")
SOURCES = ("synthetic", "human", "imported")
NONE = 0xFFFFFFFF  # no row, group or code
MAX_LINE_NUMBER = NONE - 1
MAX_GROUPS = 10_000  # distinct --by values named; the rest are counted as one
OTHER_GROUPS = "(other values)"
MISSING_GROUP = "(missing)"
NO_CASE_GROUP = "(not in the cases file)"
MAX_CAUSES = 1_000
NOT_JUDGED = "not judged"
NO_VERDICT = "labelled, no verdict"
ProgressFn = Callable[[str, int, int | None], None]  # (role, bytes done, bytes in all)


class Names:
    """Small integer codes for repeated strings (rubric ids, groups, causes), with a cap:
    past ``limit`` names every new one gets the code of ``other``."""

    def __init__(self, limit: int = NONE - 1, other: str = "") -> None:
        self.of: dict[str, int] = {}
        self.names: list[str] = []
        self.limit, self.other = limit, other
        self.other_code: int | None = None

    def code(self, name: str) -> int:
        found = self.of.get(name)
        if found is None:
            if len(self.names) >= self.limit:
                if self.other_code is None:
                    self.other_code = len(self.names)
                    self.names.append(self.other)
                return self.other_code
            found = self.of[name] = len(self.names)
            self.names.append(name)
        return found


@dataclass
class FileSummary:
    """What one file held: ``lines == blank + records + rejected``; for a verdict file,
    ``records == verdicts + judge_states`` (lines written by build, not yet judged)."""

    role: str
    path: str
    size: int
    mtime_ns: int
    lines: int = 0
    blank: int = 0
    records: int = 0
    rejected: int = 0
    rejected_by_kind: dict[str, int] = field(default_factory=dict)
    judge_states: int = 0
    seconds: float = 0.0
    # Several files read in order as one (the cases, issue 30): each part's path, its first
    # byte in the offsets of the whole, size and modification time; ``path`` then names
    # them all. Empty for one file.
    parts: list[FilePart] = field(default_factory=list)


@dataclass(frozen=True)
class FilePart:
    """One file of several read as one: offsets ``start`` to ``start + size`` are its own."""

    path: str
    start: int
    size: int
    mtime_ns: int


@dataclass
class Run:
    """The verdicts of one verdict file, in line order, and their keys sorted for lookups."""

    offset: np.ndarray  # u64: byte offset of the line
    line: np.ndarray  # u32
    key: np.ndarray  # u64: row << 32 | rubric
    status: np.ndarray  # u8: code in STATUSES
    cause: np.ndarray  # u16: 0 none, else 1 + code in Index.causes
    hashes: np.ndarray | None  # i64 (n, 3): rubric_hash, state_hash, exposure (0: absent)
    order: np.ndarray  # positions sorted by key
    sorted_key: np.ndarray

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The position of each key in this run, -1 where it has no verdict."""
        return _find(self.sorted_key, self.order, keys)

    @property
    def nbytes(self) -> int:
        arrays = [self.offset, self.line, self.key, self.status, self.cause, self.order,
                  self.sorted_key]
        return sum(a.nbytes for a in arrays) + (0 if self.hashes is None else self.hashes.nbytes)


def _find(sorted_key: np.ndarray, order: np.ndarray, keys: np.ndarray) -> np.ndarray:
    import numpy as np

    if not len(sorted_key):
        return np.full(len(keys), -1, dtype=np.int64)
    at = np.searchsorted(sorted_key, keys)
    at = np.minimum(at, len(sorted_key) - 1)
    hit = sorted_key[at] == keys
    return np.where(hit, order[at].astype(np.int64), -1)


@dataclass
class RejectLog:
    """Where each rejected line is, its kind, and what is needed to explain it again: its
    size, and for a repeated case id the line that used it first."""

    role: array[int] = field(default_factory=lambda: array("B"))
    kind: array[int] = field(default_factory=lambda: array("H"))
    line: array[int] = field(default_factory=lambda: array("Q"))
    offset: array[int] = field(default_factory=lambda: array("Q"))
    size: array[int] = field(default_factory=lambda: array("Q"))
    first: array[int] = field(default_factory=lambda: array("Q"))  # 0: not a repeated case id
    kinds: Names = field(default_factory=Names)

    def __len__(self) -> int:
        return len(self.line)

    @property
    def nbytes(self) -> int:
        return sum(a.itemsize * len(a) for a in (self.role, self.kind, self.line, self.offset,
                                                   self.size, self.first))


@dataclass
class Skip:
    """Why a check has no verdict: the reason, an over-budget check's tokens, and where an
    unjudged judge state is (file role, offset)."""

    reason: str
    tokens: int = 0
    exact: bool = False
    state: tuple[str, int] | None = None


@dataclass
class Options:
    """What to index (``evalstream.export_view`` and ``serve_view`` fill it)."""

    verdicts: str
    cases: str  # the cases' argument, or several joined by spaces
    states: str | None = None
    compare: str | None = None
    rubrics: RubricSet | None = None  # the built-in set when None
    max_tokens: int = DEFAULT_BUDGET
    by: str = "scenario"
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    allow_unknown_fields: bool = False
    # Several case files, globs or both, read in order as one, as build reads its inputs.
    case_inputs: list[str] = field(default_factory=list)

    def case_files(self) -> list[str]:
        """The files the cases' arguments name (a glob's matches in name order)."""
        from evalstream._files.store import input_paths

        return input_paths(self.case_inputs or [self.cases])


@dataclass
class Index:
    """Everything the lists and pages need, without the text of any record."""

    options: Options
    rubrics: RubricSet
    files: dict[str, FileSummary]
    ids: IdIndex  # case id -> line of the case in the cases file
    unknown_ids: IdIndex  # ids named only by verdicts or states -> 1 + their place
    unknown_where: list[tuple[str, int]]  # (role, offset) of the first record naming each
    case_line: np.ndarray  # u32, by row
    case_offset: np.ndarray  # u64
    case_group: np.ndarray  # u32 code in groups
    groups: Names
    rubric_names: Names
    causes: Names
    label_key: np.ndarray  # sorted
    label_status: np.ndarray  # u8: code in LABEL_STATUSES
    label_source: np.ndarray  # u8: code in SOURCES
    run: Run
    other: Run | None  # --compare
    state_key: np.ndarray  # sorted keys of the states file's records
    state_offset: np.ndarray
    state_is_judge: np.ndarray  # bool: a judge state (else an exact verdict)
    state_line: np.ndarray  # u32
    skipped_key: np.ndarray  # sorted: checks the Checker skipped, judge states not judged,
    # and labels with no verdict anywhere; each key once
    skipped_reason: np.ndarray  # u16 code in reasons
    over_key: np.ndarray  # sorted: the over-budget checks (few), with their figures
    over_tokens: np.ndarray  # u32: the total (exact, or a lower bound)
    over_exact: np.ndarray  # bool
    pending_key: np.ndarray  # sorted: judge states without a verdict, and where they are
    pending_role: np.ndarray  # u8: index in ROLES of the file
    pending_offset: np.ndarray  # u64
    reasons: Names
    rejects: RejectLog
    rubric_hash_mismatch: dict[str, int]  # rubric id -> records judged under another hash
    unknown_rubrics: dict[str, int]  # rubric ids not in the rubric set -> records naming them
    seconds: float = 0.0
    panels: PanelIndex = field(default_factory=PanelIndex)  # the run's split panels

    @property
    def n_cases(self) -> int:
        return len(self.case_line)

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files.values())

    @property
    def nbytes(self) -> int:
        """Bytes held by the index's columns (ids included), not counting Python's own."""
        arrays = [self.case_line, self.case_offset, self.case_group, self.label_key,
                  self.label_status, self.label_source, self.state_key, self.state_offset,
                  self.state_is_judge, self.state_line, self.skipped_key, self.skipped_reason,
                  self.over_key, self.over_tokens, self.over_exact, self.pending_key,
                  self.pending_role, self.pending_offset]
        return (sum(a.nbytes for a in arrays) + self.run.nbytes
                + (self.other.nbytes if self.other is not None else 0)
                + self.ids.nbytes + self.unknown_ids.nbytes + self.rejects.nbytes
                + self.panels.nbytes)

    # -- lookups ---------------------------------------------------------------------------
    def skip_of(self, key: int) -> Skip | None:
        """Why a check has no verdict (or is not written by build), or None."""
        import numpy as np

        at = int(np.searchsorted(self.skipped_key, np.uint64(key)))
        if at >= len(self.skipped_key) or int(self.skipped_key[at]) != key:
            return None
        skip = Skip(self.reasons.names[self.skipped_reason[at]])
        at = int(np.searchsorted(self.over_key, np.uint64(key)))
        if at < len(self.over_key) and int(self.over_key[at]) == key:
            skip.tokens, skip.exact = int(self.over_tokens[at]), bool(self.over_exact[at])
        at = int(np.searchsorted(self.pending_key, np.uint64(key)))
        if at < len(self.pending_key) and int(self.pending_key[at]) == key:
            skip.state = (ROLES[self.pending_role[at]], int(self.pending_offset[at]))
        return skip

    def row_of(self, case_id: str) -> int | None:
        """The row of a case id (a case of the cases file, or an id only verdicts name)."""
        line = self.ids.get(case_id)
        if line:
            import numpy as np

            return int(np.searchsorted(self.case_line, line))
        place = self.unknown_ids.get(case_id)
        return self.n_cases + place - 1 if place else None

    def label_of(self, keys: np.ndarray) -> np.ndarray:
        """The position of each key's label, -1 where the case has none for the rubric."""
        import numpy as np

        return _find(self.label_key, np.arange(len(self.label_key)), keys)

    def group_of(self, keys: np.ndarray) -> np.ndarray:
        """The --by group code of each key's case (NONE for an id not in the cases file)."""
        import numpy as np

        rows = (keys >> np.uint64(32)).astype(np.int64)
        known = rows < self.n_cases
        out = np.full(len(keys), NONE, dtype=np.uint32)
        out[known] = self.case_group[rows[known]]
        return out

    def keys_of_row(self, row: int) -> np.ndarray:
        """Every key of this case found in any file, sorted (rubric order)."""
        import numpy as np

        lo, hi = np.uint64(row << 32), np.uint64((row + 1) << 32)
        arrays = [self.label_key, self.run.sorted_key, self.state_key, self.skipped_key]
        if self.other is not None:
            arrays.append(self.other.sorted_key)
        parts = [a[np.searchsorted(a, lo):np.searchsorted(a, hi)] for a in arrays]
        return np.unique(np.concatenate(parts))


def key_of(row: int, rubric: int) -> int:
    return row << 32 | rubric


def split_key(key: int) -> tuple[int, int]:
    return key >> 32, key & NONE


# -- the passes ------------------------------------------------------------------------------------
def plain_file(path: str, role: str) -> os.stat_result:
    """The file's status; UsageError for what cannot be read by offset."""
    if path == "-":
        raise UsageError(f"view reads the {role} file by byte offset, so it needs a file, not "
                         "stdin (-); save it to a file first.")
    if path.endswith((".gz", ".zst")):
        tool = "gunzip -k" if path.endswith(".gz") else "zstd -d"
        raise UsageError(f"{path} is compressed; view reads records by their byte offset, which "
                         f"a compressed file cannot give: decompress it first (`{tool} {path}`).")
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not os.path.isfile(path):
        raise UsageError(f"{path} is not a regular file; view reads records by byte offset.")
    return info


class _Builder:
    """Reads the files one after the other into the index's columns."""

    def __init__(self, opts: Options, rubrics: RubricSet, on_progress: ProgressFn | None) -> None:
        self.opts, self.rubrics, self.on_progress = opts, rubrics, on_progress
        self.ids = IdIndex()
        self.unknown_ids = IdIndex(16)  # usually empty: ids of verdicts without a case
        self.unknown_where: list[tuple[str, int]] = []
        self.rubric_names = Names()
        for rubric in rubrics.rubrics:
            self.rubric_names.code(rubric.id)
        self.rubric_hash = {r.id: r.hash for r in rubrics.rubrics}
        self.groups = Names(MAX_GROUPS, OTHER_GROUPS)
        self.missing_group = self.groups.code(MISSING_GROUP)
        self.causes = Names(MAX_CAUSES, "(other causes)")
        self.reasons = Names()
        for reason in (OVER_BUDGET, NOT_JUDGED, NO_VERDICT):
            self.reasons.code(reason)
        self.rejects = RejectLog()
        self.files: dict[str, FileSummary] = {}
        self.case_files: list[str] = []  # the files the cases' arguments name
        self.case_line, self.case_offset, self.case_group = array("I"), array("Q"), array("I")
        self.label_key, self.label_status, self.label_source = array("Q"), array("B"), array("B")
        self.skip_key, self.skip_reason = array("Q"), array("H")
        self.over = (array("Q"), array("I"), array("B"))
        self.hash_mismatch: dict[str, int] = {}
        self.unknown_rubrics: dict[str, int] = {}
        self.panels = PanelIndex()

    # -- reading ---------------------------------------------------------------------------
    def _reader(self, kind: Any, role: str) -> RecordReader[Any]:
        rejects, role_code = self.rejects, ROLES.index(role)
        ids = self.ids

        def note(rej: Reject, kind_name: str, size: int) -> None:
            first = 0
            if role == CASES and kind_name == "duplicate id" and rej.path == "$.id" and rej.id:
                first = ids.get(rej.id)
            rejects.role.append(role_code)
            rejects.kind.append(rejects.kinds.code(kind_name))
            rejects.line.append(rej.line)
            rejects.offset.append(rej.offset)
            rejects.size.append(size)
            rejects.first.append(first)

        return RecordReader(kind, self.opts.max_line_bytes, on_reject=note)

    def _records(self, reader: RecordReader[Any], role: str, path: str,
                 parts: list[str] | None = None) -> Any:
        """The records of one file, or of ``parts`` read in order as one (offsets run on)."""
        if parts is not None and len(parts) > 1:
            infos = [(p, plain_file(p, role)) for p in parts]
            starts = list(accumulate((i.st_size for _, i in infos), initial=0))
            summary = self.files[role] = FileSummary(
                role, path, starts[-1], max(i.st_mtime_ns for _, i in infos),
                parts=[FilePart(p, start, i.st_size, i.st_mtime_ns)
                       for (p, i), start in zip(infos, starts, strict=False)])
            stream = None
        else:
            path = parts[0] if parts else path
            info = plain_file(path, role)
            summary = self.files[role] = FileSummary(role, path, info.st_size,
                                                     info.st_mtime_ns)
            stream = open_input(path)
        started = time.perf_counter()
        try:
            items = (read_chunks(stream, self.opts.max_line_bytes) if stream is not None
                     else read_files(parts or [], self.opts.max_line_bytes))
            if self.on_progress is not None:
                on_progress = self.on_progress
                items = progress(items, lambda done, size: on_progress(role, done, size),
                                 summary.size)
            for item in reader.read(items):
                if type(item) is not Reject:
                    if item[0] > MAX_LINE_NUMBER:  # type: ignore[index]
                        raise InputError(f"{path}: more than {MAX_LINE_NUMBER:,} lines; split "
                                         "the file.")
                    yield item
        finally:
            if stream is not None:
                stream.close()
        counts = reader.counts
        summary.lines, summary.blank = counts.lines, counts.blank
        summary.records, summary.rejected = counts.records, counts.rejected
        summary.rejected_by_kind = dict(sorted(counts.rejected_by_kind.items()))
        summary.seconds = round(time.perf_counter() - started, 3)

    def _row(self, case_id: str, role: str, offset: int) -> int:
        line = self.ids.get(case_id)
        if line:
            return bisect_left(self.case_line, line)
        place = self.unknown_ids.add_id(case_id, len(self.unknown_where) + 1)
        if place:
            return len(self.case_line) + place - 1
        self.unknown_where.append((role, offset))
        return len(self.case_line) + len(self.unknown_where) - 1

    def _rubric(self, rubric_id: str, rubric_hash: str | None) -> int:
        expected = self.rubric_hash.get(rubric_id)
        if expected is None:
            self.unknown_rubrics[rubric_id] = self.unknown_rubrics.get(rubric_id, 0) + 1
        elif rubric_hash is not None and rubric_hash != expected:
            self.hash_mismatch[rubric_id] = self.hash_mismatch.get(rubric_id, 0) + 1
        return self.rubric_names.code(rubric_id)

    # -- cases -----------------------------------------------------------------------------
    def read_cases(self) -> None:
        opts = self.opts
        reader = self._reader(case_kind(opts.allow_unknown_fields, self.ids), CASES)
        checker = Checker(self.rubrics, opts.max_tokens, keep_states=False)
        path = tuple(opts.by.split("."))
        lines, offsets, groups = self.case_line, self.case_offset, self.case_group
        label_key, label_status, label_source = self.label_key, self.label_status, \
            self.label_source
        skip_key, skip_reason = self.skip_key, self.skip_reason
        over_key, over_tokens, over_exact = self.over
        status_code = {s: i for i, s in enumerate(LABEL_STATUSES)}
        source_code = {s: i for i, s in enumerate(SOURCES)}
        rubric_code, group_code, reason_code = (self.rubric_names.code, self.groups.code,
                                                self.reasons.code)
        for line_no, offset, _, case in self._records(reader, CASES, opts.cases,
                                                      self.case_files):
            row = len(lines)
            lines.append(line_no)
            offsets.append(offset)
            value = group_value(case.metadata, path)
            groups.append(self.missing_group if value is None else group_code(value))
            if case.expected:
                for rubric_id, label in case.expected.items():
                    label_key.append(row << 32 | rubric_code(rubric_id))
                    label_status.append(status_code[label.status])
                    label_source.append(source_code[label.source])
            for rubric, check in enumerate(checker.check(case, line_no)):
                if check.reason is None:
                    continue
                skip_key.append(row << 32 | rubric)
                skip_reason.append(reason_code(check.reason))
                if check.reason == OVER_BUDGET and check.tokens is not None:
                    over_key.append(row << 32 | rubric)
                    counted = check.tokens.exact
                    # Counting stops once a state is over the budget: then all that is
                    # known is that it is over it (at least the budget and one token).
                    total = counted.total if counted is not None else check.tokens.budget + 1
                    over_tokens.append(min(total, NONE))
                    over_exact.append(counted is not None)

    # -- verdicts --------------------------------------------------------------------------
    def read_run(self, role: str, path: str, with_hashes: bool) -> tuple[Any, ...]:
        reader = self._reader(verdict_kind(self.opts.allow_unknown_fields), role)
        offsets, lines, keys, statuses = array("Q"), array("I"), array("Q"), array("B")
        causes = array("H")
        hashes = array("q")
        not_judged: list[tuple[int, int]] = []  # (key, offset) of judge states
        status_code = {s: i for i, s in enumerate(STATUSES)}
        cause_code = self.causes.code
        for line_no, offset, _, v in self._records(reader, role, path):
            key = self._row(v.case_id, role, offset) << 32 | self._rubric(v.rubric_id,
                                                                            v.rubric_hash)
            if v.status is None:  # a judge state written by build: not judged yet
                not_judged.append((key, offset))
                continue
            offsets.append(offset)
            lines.append(line_no)
            keys.append(key)
            statuses.append(status_code[v.status])
            causes.append(0 if v.error is None else 1 + cause_code(v.error.cause))
            if v.votes and role == VERDICTS:  # a panel's verdict: is it split?
                self.panels.add(key, v.votes)
            if with_hashes:
                hashes.extend((_hash(v.rubric_hash), _hash(v.state_hash),
                               0 if v.exposure is None else exposure_key(v.exposure.shown) | 1))
        self.files[role].judge_states = len(not_judged)
        return offsets, lines, keys, statuses, causes, hashes if with_hashes else None, \
            not_judged

    def read_states(self, path: str) -> tuple[Any, ...]:
        reader = self._reader(verdict_kind(self.opts.allow_unknown_fields), STATES)
        keys, offsets, judge, lines = array("Q"), array("Q"), array("B"), array("I")
        for line_no, offset, _, v in self._records(reader, STATES, path):
            keys.append(self._row(v.case_id, STATES, offset) << 32
                        | self._rubric(v.rubric_id, v.rubric_hash))
            offsets.append(offset)
            judge.append(v.status is None)
            lines.append(line_no)
        self.files[STATES].judge_states = sum(judge)
        return keys, offsets, judge, lines


def _hash(text: str | None) -> int:
    # Python's string hash, with 0 for an absent field: only compared within this process.
    return 0 if text is None else hash(text) | 1


def _run(parts: tuple[Any, ...], path: str, rubric_names: list[str]) -> Run:
    import numpy as np

    offsets, lines, keys, statuses, causes, hashes, _ = parts
    key = np.frombuffer(keys, dtype=np.uint64) if len(keys) else np.zeros(0, np.uint64)
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    line = np.frombuffer(lines, dtype=np.uint32) if len(lines) else np.zeros(0, np.uint32)
    repeated = np.flatnonzero(sorted_key[1:] == sorted_key[:-1])
    if len(repeated):
        first = repeated[np.argmin(line[order[repeated + 1]])]
        a, b = sorted((int(line[order[first]]), int(line[order[first + 1]])))
        rubric = rubric_names[int(sorted_key[first]) & NONE]
        more = f" ({len(np.unique(sorted_key[repeated])):,} keys are repeated in all)" \
            if len(repeated) > 1 else ""
        raise DuplicateKeyError(
            f"{path}: lines {a} and {b} are both verdicts for one case and rubric `{rubric}`"
            f"{more}. A file may hold one verdict per (case_id, rubric_id): which one to show "
            "is unknown. Keep one line per key (e.g. the last retry) and run again.")
    return Run(
        offset=_np(offsets, np.uint64), line=line, key=key,
        status=_np(statuses, np.uint8), cause=_np(causes, np.uint16),
        hashes=None if hashes is None else _np(hashes, np.int64).reshape(-1, 3),
        order=order.astype(np.uint32) if len(key) < NONE else order, sorted_key=sorted_key)


def _member(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Whether each key is in ``sorted_keys``."""
    import numpy as np

    if not len(sorted_keys):
        return np.zeros(len(keys), bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys


def _np(values: array[int], dtype: Any) -> np.ndarray:
    import numpy as np

    return np.frombuffer(values, dtype=dtype).copy() if len(values) else np.zeros(0, dtype)


def build(opts: Options, on_progress: ProgressFn | None = None) -> Index:
    """Read every file once and return the index; raises UsageError, InputError,
    WrongFileError (a cases file that is plainly not JSONL) or DuplicateKeyError."""
    import numpy as np

    from evalstream._checks.rubrics import builtin
    from evalstream._files.sniff import check_cases_input, check_input

    started = time.perf_counter()
    case_files = opts.case_files()
    paths = [*((CASES, c) for c in case_files), (VERDICTS, opts.verdicts),
             (COMPARE, opts.compare), (STATES, opts.states)]
    for role, path in paths:
        if path is not None:
            plain_file(path, role)
    for path in case_files:
        check_cases_input(path)
    usage = "; usage: evalstream view VERDICTS --cases CASES"
    for path in (opts.verdicts, opts.compare):
        if path is not None:
            check_input(path, "verdicts", usage)
    if opts.states is not None:
        check_input(opts.states, "judge states", "; --states takes build's output")
    rubrics = opts.rubrics or builtin()
    b = _Builder(opts, rubrics, on_progress)
    b.case_files = case_files
    b.read_cases()
    names = b.rubric_names.names
    run_parts = b.read_run(VERDICTS, opts.verdicts, opts.compare is not None)
    run = _run(run_parts, opts.verdicts, names)
    other = None
    if opts.compare is not None:
        other_parts = b.read_run(COMPARE, opts.compare, True)
        other = _run(other_parts, opts.compare, names)
    state_parts = b.read_states(opts.states) if opts.states is not None else None

    label_key = _np(b.label_key, np.uint64)
    order = np.argsort(label_key, kind="stable")
    label_key = label_key[order]
    skip_key, skip_reason = _np(b.skip_key, np.uint64), _np(b.skip_reason, np.uint16)
    by_build = np.sort(skip_key)
    # Judge states with no verdict in the run: from --states, and judge-state lines in the
    # verdict file itself (a run stopped early, or a file that mixes both), each key once.
    pending = [(key, ROLES.index(VERDICTS), offset) for key, offset in run_parts[6]]
    if state_parts is not None:
        pending += [(key, ROLES.index(STATES), offset)
                    for key, offset, is_judge, _ in zip(*state_parts, strict=True) if is_judge]
    keys = np.array([p[0] for p in pending], dtype=np.uint64)
    first = np.unique(keys, return_index=True)[1]
    # A check build skips (with the rubric set) is listed once, with build's reason.
    first = first[~_member(keys[first], run.sorted_key) & ~_member(keys[first], by_build)]
    pending_key = keys[first]  # sorted, as np.unique gives them
    pending_role = np.array([pending[i][1] for i in first], dtype=np.uint8)
    pending_offset = np.array([pending[i][2] for i in first], dtype=np.uint64)
    # A label whose check has a verdict nowhere, and was neither skipped nor left unjudged.
    lonely = label_key[~_member(label_key, run.sorted_key) & ~_member(label_key, by_build)
                       & ~_member(label_key, pending_key)]
    skip_key = np.concatenate([skip_key, pending_key, lonely])
    skip_reason = np.concatenate([
        skip_reason, np.full(len(pending_key), b.reasons.of[NOT_JUDGED], np.uint16),
        np.full(len(lonely), b.reasons.of[NO_VERDICT], np.uint16)])
    by_key = np.argsort(skip_key, kind="stable")
    over_key = _np(b.over[0], np.uint64)
    over_order = np.argsort(over_key, kind="stable")
    if state_parts is not None:
        s_key = _np(state_parts[0], np.uint64)
        s_order = np.argsort(s_key, kind="stable")
        state_key, state_offset = s_key[s_order], _np(state_parts[1], np.uint64)[s_order]
        state_is_judge = _np(state_parts[2], np.uint8)[s_order].astype(bool)
        state_line = _np(state_parts[3], np.uint32)[s_order]
    else:
        state_key, state_offset = np.zeros(0, np.uint64), np.zeros(0, np.uint64)
        state_is_judge, state_line = np.zeros(0, bool), np.zeros(0, np.uint32)
    return Index(
        options=opts, rubrics=rubrics, files=b.files, ids=b.ids, unknown_ids=b.unknown_ids,
        unknown_where=b.unknown_where, case_line=_np(b.case_line, np.uint32),
        case_offset=_np(b.case_offset, np.uint64), case_group=_np(b.case_group, np.uint32),
        groups=b.groups, rubric_names=b.rubric_names, causes=b.causes,
        label_key=label_key, label_status=_np(b.label_status, np.uint8)[order],
        label_source=_np(b.label_source, np.uint8)[order], run=run, other=other,
        state_key=state_key, state_offset=state_offset, state_is_judge=state_is_judge,
        state_line=state_line, skipped_key=skip_key[by_key], skipped_reason=skip_reason[by_key],
        over_key=over_key[over_order], over_tokens=_np(b.over[1], np.uint32)[over_order],
        over_exact=_np(b.over[2], np.uint8)[over_order].astype(bool),
        pending_key=pending_key, pending_role=pending_role, pending_offset=pending_offset,
        reasons=b.reasons,
        rejects=b.rejects, rubric_hash_mismatch=dict(sorted(b.hash_mismatch.items())),
        unknown_rubrics=dict(sorted(b.unknown_rubrics.items())),
        seconds=round(time.perf_counter() - started, 3), panels=b.panels)
