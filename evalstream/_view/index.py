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
and 32-64 of the id index; per verdict 61 (offset, line, key, status, cause, pair code, its
place in key order, its three hashes and whether it is stale); per label 10; per skipped
check 10 (build skips every rubric that does not apply, so up to cases x rubrics); per check
build makes today 16, while the files are read (its key and state hash, for stale verdicts:
``_verdicts.stale``); per reject 35; per case of ``--compare-cases`` (run B of pairwise
verdicts) 12 and 32-64 of its id index. Nothing grows with the text of a record.

Two processes (issue 31): with two CPUs and big files, the run's verdict file is read in a
worker process (``_engines.local.map_ordered``, forked) while this one reads the cases; the
worker's columns, rejects and codes are then taken in as if it had read the file after the
cases (``_Builder.take_run``), so the index is byte for byte one process's (the worker is
forked: Python's string hashes of ``_hash`` are this process's). Reading cases and verdicts
is about half the index pass each; small files, one CPU, or a process that has loaded Polars
(whose workers would be spawned) read them one after the other (``_apart``).

Stale verdicts: the states build makes of each case today are rebuilt as the cases are read
(the same ``Checker``, states kept) and hashed, or read from ``--states``; each verdict of the
run gets its code by the one rule of ``_verdicts.stale.rule`` (Polars, on the index's
arrays: loaded once, when the files are indexed).
"""

from __future__ import annotations

import os
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING, Any, NamedTuple

import xxhash

from evalstream._cases.ids import IdIndex, id_hash
from evalstream._cases.reading import RecordReader, case_kind
from evalstream._cases.rejects import Reject
from evalstream._cases.schema import group_value
from evalstream._checks.checker import OVER_BUDGET, PAIRWISE, Checker
from evalstream._checks.encodings import DEFAULT as DEFAULT_TOKENIZER
from evalstream._checks.rubrics import RubricSet
from evalstream._checks.tokens import DEFAULT_BUDGET, DEFAULT_OUTPUT
from evalstream._engines.local import WorkerDied, default_workers, map_ordered, start_method
from evalstream._files.lines import (
    DEFAULT_MAX_LINE_BYTES,
    open_input,
    progress,
    read_chunks,
    read_files,
)
from evalstream._verdicts.records import LABEL_SOURCES as SOURCES
from evalstream._verdicts.records import (
    LABEL_STATUSES,
    STATUSES,
    DuplicateKeyError,
    exposure_key,
    verdict_kind,
)
from evalstream._view.pairs import pair_code
from evalstream._view.panel_index import PanelIndex
from evalstream.errors import InputError, UsageError

if TYPE_CHECKING:
    import numpy as np

CASES, VERDICTS, COMPARE, STATES = "cases", "verdicts", "compare", "states"
COMPARE_CASES = "compare-cases"  # run B's cases of pairwise verdicts (issue 28)
ROLES = (CASES, VERDICTS, COMPARE, STATES, COMPARE_CASES)
NONE = 0xFFFFFFFF  # no row, group or code
_MASK64 = (1 << 64) - 1
MAX_LINE_NUMBER = NONE - 1
MAX_GROUPS = 10_000  # distinct --by values named; the rest are counted as one
OTHER_GROUPS = "(other values)"
MISSING_GROUP = "(missing)"
NO_CASE_GROUP = "(not in the cases file)"
MAX_CAUSES = 1_000
NOT_JUDGED = "not judged"
NO_VERDICT = "labelled, no verdict"
# Both the cases and the verdicts at least this big to read them in two processes: below,
# the fork and the columns sent back cost about what they save.
APART_BYTES = 8 << 20
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
    stale: np.ndarray | None = None  # u8: each verdict's ``_verdicts.stale`` code (the run's)
    pair: np.ndarray | None = None  # u8: view.pairs' code of each verdict's pair

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The position of each key in this run, -1 where it has no verdict."""
        return _find(self.sorted_key, self.order, keys)

    @property
    def nbytes(self) -> int:
        arrays = [self.offset, self.line, self.key, self.status, self.cause, self.order,
                  self.sorted_key]
        return sum(a.nbytes for a in arrays) + sum(
            0 if a is None else a.nbytes for a in (self.hashes, self.stale, self.pair))


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
    max_output_tokens: int = DEFAULT_OUTPUT  # the judge's bound, held back in the budget
    tokenizer: str = DEFAULT_TOKENIZER  # build's, as its records name it (view.run)
    by: str = "scenario"
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    allow_unknown_fields: bool = False
    compare_cases: str | None = None  # run B's cases: a pairwise verdict's other response
    keep_index: bool = False  # keep the index beside the verdicts, reuse it (view.kept)
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
    # --compare-cases (run B): its ids (id -> line), and each case's line and offset
    paired_ids: IdIndex | None = None
    paired_line: np.ndarray | None = None  # u32, sorted
    paired_offset: np.ndarray | None = None  # u64
    kept: str | None = None  # with --keep-index: what became of the kept index, and why
    reused: bool = False  # read from the kept index (``seconds``: its indexing, then)
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
        if self.paired_ids is not None and self.paired_line is not None \
                and self.paired_offset is not None:
            arrays += [self.paired_line, self.paired_offset]
        return (sum(a.nbytes for a in arrays) + self.run.nbytes
                + (self.paired_ids.nbytes if self.paired_ids is not None else 0)
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

    def paired_offset_of(self, case_id: str) -> int | None:
        """The offset of run B's case of this id in ``--compare-cases``, or None."""
        import numpy as np

        if self.paired_ids is None or self.paired_line is None or self.paired_offset is None:
            return None
        line = self.paired_ids.get(case_id)
        if not line:
            return None
        return int(self.paired_offset[int(np.searchsorted(self.paired_line, line))])

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
        # Each record read for a case id (verdicts, states): the id's hash, its file, its
        # offset, until ``rows`` finds the rows of all (16-25 bytes a record, then freed).
        self.ref_lo, self.ref_hi = array("Q"), array("Q")
        self.ref_role, self.ref_offset = array("B"), array("Q")
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
        # The checks build makes today (key, state hash; 0: an exact rubric's), for stale
        # verdicts: rebuilt from the cases unless --states gives build's output.
        self.made_key, self.made_state = array("Q"), array("q")
        self.panels = PanelIndex()

    # -- reading ---------------------------------------------------------------------------
    def _reader(self, kind: Any, role: str, ids: IdIndex | None = None) -> RecordReader[Any]:
        rejects, role_code = self.rejects, ROLES.index(role)
        ids = ids if ids is not None else self.ids

        def note(rej: Reject, kind_name: str, size: int) -> None:
            first = 0
            if role in (CASES, COMPARE_CASES) and kind_name == "duplicate id" \
                    and rej.path == "$.id" and rej.id:
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

    def _refer(self, role: str) -> Callable[[str, int], int]:
        """A function of (case id, offset) for the records of ``role``: the record's place
        among every record read for a case id, whose row ``rows`` finds once all are read.
        Only the id's hash is kept here (a lookup a record measured ~1.5 us more)."""
        lo, hi, where, offsets = self.ref_lo, self.ref_hi, self.ref_role, self.ref_offset
        code = ROLES.index(role)

        def refer(case_id: str, offset: int) -> int:
            h = id_hash(case_id)
            lo.append(h & _MASK64 | 1)
            hi.append(h >> 64)
            where.append(code)
            offsets.append(offset)
            return len(lo) - 1

        return refer

    def rows(self) -> np.ndarray:
        """The row of each record read for a case id (``_refer``), in one pass of numpy: the
        case's row, or for an id no case has, a row after the cases', in the order ids are
        first named (``unknown_ids``, ``unknown_where``)."""
        import numpy as np

        # Views of the arrays, not copies (they are dropped below and never grow again).
        lo = np.frombuffer(self.ref_lo, np.uint64) if self.ref_lo else np.zeros(0, np.uint64)
        hi = np.frombuffer(self.ref_hi, np.uint64) if self.ref_hi else np.zeros(0, np.uint64)
        lines = _lines_of(self.ids, lo, hi)
        rows = np.searchsorted(np.frombuffer(self.case_line, np.uint32), lines).astype(np.uint64)
        unknown = np.flatnonzero(lines == 0)
        if len(unknown):
            pairs = np.stack([hi[unknown], lo[unknown]], axis=1)
            _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")  # ids in the order first named
            place = np.empty(len(order), np.uint64)
            place[order] = np.arange(len(order), dtype=np.uint64)
            rows[unknown] = len(self.case_line) + place[inverse.reshape(-1)]
            firsts = unknown[first[order]]
            self.unknown_ids.add(lo[firsts].tolist(), hi[firsts].tolist(),
                                 range(1, len(firsts) + 1))
            self.unknown_where = [(ROLES[self.ref_role[i]], self.ref_offset[i])
                                  for i in firsts.tolist()]
        self.ref_lo, self.ref_hi = array("Q"), array("Q")
        self.ref_role, self.ref_offset = array("B"), array("Q")
        return rows

    def _rubric_code(self) -> Callable[[str, str | None], int]:
        """The code of a record's rubric; a rubric the set lacks, or a hash other than the
        set's, is counted (a function with its lookups bound: one a record)."""
        expected_of, codes, code_of = (self.rubric_hash, self.rubric_names.of,
                                       self.rubric_names.code)
        unknown, mismatch = self.unknown_rubrics, self.hash_mismatch

        def code(rubric_id: str, rubric_hash: str | None) -> int:
            expected = expected_of.get(rubric_id)
            if expected is None:
                unknown[rubric_id] = unknown.get(rubric_id, 0) + 1
            elif rubric_hash is not None and rubric_hash != expected:
                mismatch[rubric_id] = mismatch.get(rubric_id, 0) + 1
            found = codes.get(rubric_id)
            return code_of(rubric_id) if found is None else found

        return code

    # -- cases -----------------------------------------------------------------------------
    def read_cases(self) -> None:
        opts = self.opts
        reader = self._reader(case_kind(opts.allow_unknown_fields, self.ids), CASES)
        rebuild = opts.states is None  # else build's output says what it made
        checker = Checker(self.rubrics, opts.max_tokens, keep_states=rebuild,
                          tokenizer=opts.tokenizer, max_output_tokens=opts.max_output_tokens)
        made_key, made_state, digest = self.made_key, self.made_state, xxhash.xxh3_128_hexdigest
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
        # Codes already given, looked up in C before the methods that give new ones: a
        # million cases of five rubrics make millions of lookups.
        rubric_codes, group_codes, reason_codes = (self.rubric_names.of, self.groups.of,
                                                   self.reasons.of)
        missing = self.missing_group
        # --by one key whose value is text (the usual case): looked up here, not by a call
        key = path[0] if len(path) == 1 else None
        for row, (line_no, offset, _, case) in enumerate(
                self._records(reader, CASES, opts.cases, self.case_files)):
            lines.append(line_no)
            offsets.append(offset)
            metadata = case.metadata
            value = metadata.get(key) if key is not None and metadata is not None else None
            if type(value) is not str:
                value = group_value(metadata, path)
            if value is None:
                groups.append(missing)
            else:
                code = group_codes.get(value)
                groups.append(group_code(value) if code is None else code)
            if case.expected:
                for rubric_id, label in case.expected.items():
                    code = rubric_codes.get(rubric_id)
                    label_key.append(row << 32 | (rubric_code(rubric_id) if code is None
                                                  else code))
                    label_status.append(status_code[label.status])
                    label_source.append(source_code[label.source])
            for rubric, check in enumerate(checker.check(case, line_no)):
                reason = check.reason
                if rebuild and (reason is None or reason == OVER_BUDGET):
                    made_key.append(row << 32 | rubric)  # in key order: rows, then rubrics
                    state = check.state
                    # (``_hash`` written out: a call a check measured ~0.1 us)
                    made_state.append(0 if state is None else hash(digest(state)) | 1)
                if reason is None or reason == PAIRWISE:
                    continue  # (a pairwise rubric's check is a pair's, not a skip of the case)
                skip_key.append(row << 32 | rubric)
                code = reason_codes.get(reason)
                skip_reason.append(reason_code(reason) if code is None else code)
                if reason == OVER_BUDGET and check.tokens is not None:
                    over_key.append(row << 32 | rubric)
                    counted = check.tokens.exact
                    # Counting stops once a state is over the budget: then all that is
                    # known is that it is over it (at least the budget and one token).
                    total = counted.total if counted is not None else check.tokens.budget + 1
                    over_tokens.append(min(total, NONE))
                    over_exact.append(counted is not None)

    # -- verdicts --------------------------------------------------------------------------
    def read_run(self, role: str, path: str, with_hashes: bool) -> tuple[Any, ...]:
        """A verdict file's columns: (offsets, lines, refs, rubrics, statuses, causes,
        hashes, not judged, pair codes), a record's key to be made of its ref's row and its
        rubric."""
        reader = self._reader(verdict_kind(self.opts.allow_unknown_fields), role)
        offsets, lines, refs, rubrics = array("Q"), array("I"), array("Q"), array("I")
        statuses, causes, pair_codes = array("B"), array("H"), array("B")
        hashes = array("q")
        with_hashes = with_hashes or role == VERDICTS  # the run's: for stale verdicts
        # judge states written by build, not judged yet: (ref, rubric, offset)
        not_judged: tuple[array[int], ...] = (array("Q"), array("I"), array("Q"))
        status_code = {s: i for i, s in enumerate(STATUSES)}
        cause_code = self.causes.code
        refer, rubric_code = self._refer(role), self._rubric_code()
        for line_no, offset, _, v in self._records(reader, role, path):
            ref, rubric = refer(v.case_id, offset), rubric_code(v.rubric_id, v.rubric_hash)
            if v.status is None:
                not_judged[0].append(ref)
                not_judged[1].append(rubric)
                not_judged[2].append(offset)
                continue
            offsets.append(offset)
            lines.append(line_no)
            refs.append(ref)
            rubrics.append(rubric)
            statuses.append(status_code[v.status])
            causes.append(0 if v.error is None else 1 + cause_code(v.error.cause))
            pair_codes.append(pair_code(v.pair))
            if v.votes and role == VERDICTS:  # a panel's verdict: is it split?
                self.panels.add(len(offsets) - 1, v.votes)  # its place; its key once known
            if with_hashes:
                hashes.extend((_hash(v.rubric_hash), _hash(v.state_hash),
                               0 if v.exposure is None else exposure_key(v.exposure.shown) | 1))
        self.files[role].judge_states = len(not_judged[0])
        return offsets, lines, refs, rubrics, statuses, causes, \
            hashes if with_hashes else None, not_judged, pair_codes

    def take_run(self, read: _RunRead) -> tuple[Any, ...]:
        """The run's verdict file as a worker read it (``_read_apart``), taken in after the
        cases as if this builder had read it then: its rejects after the cases', rubric ids
        and reject kinds the cases did not name coded after theirs, its summary, causes,
        refs, counts and split panels (the cases set none of them). Returns ``read_run``'s
        columns."""
        parts, summary, rejects, names, causes, refs, unknown, mismatch, panels = read
        ours = self.rubric_names
        if len(names) > len(self.rubrics.rubrics):  # rubric ids outside the set: recode
            recode = array("I", [ours.code(name) for name in names])
            for column in (parts[3], parts[7][1]):
                column[:] = array("I", [recode[c] for c in column])
        kinds = array("H", [self.rejects.kinds.code(k) for k in rejects.kinds.names])
        log = self.rejects
        log.role += rejects.role
        log.kind += array("H", [kinds[k] for k in rejects.kind])
        log.line += rejects.line
        log.offset += rejects.offset
        log.size += rejects.size
        log.first += rejects.first
        self.files[VERDICTS] = summary
        self.causes, self.panels = causes, panels
        self.ref_lo, self.ref_hi, self.ref_role, self.ref_offset = refs
        self.unknown_rubrics, self.hash_mismatch = unknown, mismatch
        return parts

    def read_compare_cases(self, path: str) -> tuple[IdIndex, array[int], array[int]]:
        """Run B's cases (``--compare-cases``): their ids, lines and offsets."""
        ids = IdIndex()
        reader = self._reader(case_kind(self.opts.allow_unknown_fields, ids), COMPARE_CASES,
                              ids)
        lines, offsets = array("I"), array("Q")
        for line_no, offset, _, _ in self._records(reader, COMPARE_CASES, path):
            lines.append(line_no)
            offsets.append(offset)
        return ids, lines, offsets

    def read_states(self, path: str) -> tuple[Any, ...]:
        """The states file's columns: (refs, rubrics, offsets, is a judge state, lines,
        hashes: rubric_hash and state_hash of each record)."""
        reader = self._reader(verdict_kind(self.opts.allow_unknown_fields), STATES)
        refs, rubrics = array("Q"), array("I")
        offsets, judge, lines = array("Q"), array("B"), array("I")
        hashes = array("q")  # rubric_hash, state_hash of each record (0: absent)
        refer, rubric_code = self._refer(STATES), self._rubric_code()
        for line_no, offset, _, v in self._records(reader, STATES, path):
            refs.append(refer(v.case_id, offset))
            rubrics.append(rubric_code(v.rubric_id, v.rubric_hash))
            offsets.append(offset)
            judge.append(v.status is None)
            lines.append(line_no)
            hashes.extend((_hash(v.rubric_hash), _hash(v.state_hash)))
        self.files[STATES].judge_states = sum(judge)
        return refs, rubrics, offsets, judge, lines, hashes


class _RunRead(NamedTuple):
    """What a worker sends back of the run's verdict file (``_Builder.take_run``)."""

    parts: tuple[Any, ...]  # read_run's columns
    summary: FileSummary
    rejects: RejectLog
    rubric_names: list[str]  # the worker's codes: the rubric set's, then others in order
    causes: Names
    refs: tuple[array[int], ...]  # ref_lo, ref_hi, ref_role, ref_offset
    unknown_rubrics: dict[str, int]
    hash_mismatch: dict[str, int]
    panels: PanelIndex


class _Stopped(Exception):
    """The parent stopped the worker (its own reading failed or was interrupted)."""


def _apart(opts: Options, case_files: list[str]) -> bool:
    """Whether the run's verdicts are read in a worker while the cases are read here."""
    if default_workers() < 2 or start_method() != "fork":
        return False  # one CPU; or spawned workers, whose string hashes would be others
    try:
        cases = sum(os.stat(path).st_size for path in case_files)
        verdicts = os.stat(opts.verdicts).st_size
    except OSError:
        return False  # (said by the reading, in its words)
    return min(cases, verdicts) >= APART_BYTES


def _init_apart(settings: tuple[Options, RubricSet, Any]) -> tuple[Options, RubricSet, Any]:
    settings[2][2] = 1  # forked: the parent may go on
    return settings


def _read_apart(settings: tuple[Options, RubricSet, Any], path: str) -> _RunRead:
    """In the worker: the run's verdict file read as ``_Builder.read_run`` reads it, its
    bytes done written to ``shared[0]`` for the parent's progress bar; ``shared[1]`` set by
    the parent stops it."""
    opts, rubrics, shared = settings

    def on_progress(role: str, done: int, size: int | None) -> None:
        shared[0] = done
        if shared[1]:
            raise _Stopped

    b = _Builder(opts, rubrics, on_progress)
    parts = b.read_run(VERDICTS, path, opts.compare is not None)
    return _RunRead(parts, b.files[VERDICTS], b.rejects, b.rubric_names.names, b.causes,
                    (b.ref_lo, b.ref_hi, b.ref_role, b.ref_offset), b.unknown_rubrics,
                    b.hash_mismatch, b.panels)


class _Apart:
    """The run's verdict file read by one worker process while the parent reads the cases.

    ``map_ordered`` waits for its result in a thread of the parent; the worker is forked
    before the parent reads on (the thread forks it; the parent waits for the worker's
    ``_init_apart``), so no lock of the parent's reading is held in the fork."""

    def __init__(self, opts: Options, rubrics: RubricSet,
                 on_progress: ProgressFn | None) -> None:
        import multiprocessing

        # bytes done, stop, started: shared memory, written by one side each
        self.shared: Any = multiprocessing.get_context("fork").RawArray("q", 3)
        self.size, self.on_progress = os.stat(opts.verdicts).st_size, on_progress
        self.result: _RunRead | None = None
        self.error: BaseException | None = None
        settings = (opts, rubrics, self.shared)

        def wait_for_it() -> None:
            try:
                (self.result,) = map_ordered(_init_apart, _read_apart, settings,
                                             [opts.verdicts], 1, describe=str)
            except BaseException as exc:  # raised in the parent by ``taken``
                self.error = exc

        self.thread = threading.Thread(target=wait_for_it, name="view: verdicts",
                                       daemon=True)
        self.thread.start()
        try:
            while not self.shared[2] and self.thread.is_alive():
                time.sleep(0.001)
        except BaseException:  # (Ctrl-C while it forks) build's own stop is not set up yet
            self.stop()
            raise

    def progress(self) -> None:
        """The worker's bytes done, to the progress bar (called by the parent's thread)."""
        if self.on_progress is not None and self.shared[0]:
            self.on_progress(VERDICTS, self.shared[0], self.size)

    def stop(self) -> None:
        """Stop the worker at its next chunk, and wait for it to end."""
        self.shared[1] = 1
        self.thread.join()

    def taken(self) -> _RunRead | None:
        """The worker's result, once it has one (its error raised here); None when the
        worker died (killed, out of memory): the parent then reads the file itself, which
        needs less memory than the worker and its columns sent back."""
        while self.thread.is_alive():
            self.thread.join(0.1)
            self.progress()
        if isinstance(self.error, WorkerDied):
            return None
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def _hash(text: str | None) -> int:
    # Python's string hash, with 0 for an absent field: only compared with each other (a
    # kept index holds both runs' hashes, made in the one process that indexed them).
    return 0 if text is None else hash(text) | 1


def _keys(rows: np.ndarray, refs: array[int], rubrics: array[int]) -> np.ndarray:
    """The keys (row << 32 | rubric) of records by their refs (``_Builder.rows``)."""
    import numpy as np

    return rows[_np(refs, np.uint64)] << np.uint64(32) | _np(rubrics, np.uint32)


def _lines_of(ids: IdIndex, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The line ``ids`` holds for each hash (0 where it holds none), found for all at once
    as ``IdIndex.get`` finds one: linear probing from ``lo & mask`` to the hash or a free
    slot, one step for all hashes not found yet."""
    import numpy as np

    keys, his, lines = (np.frombuffer(column, np.uint64) for column in ids.columns())
    mask = np.uint64(len(keys) - 1)
    out = np.zeros(len(lo), np.uint64)
    todo = np.arange(len(lo))
    slot = lo & mask
    while len(todo):
        here = keys[slot]
        hit = (here == lo[todo]) & (his[slot] == hi[todo])
        out[todo[hit]] = lines[slot[hit]]
        going = (here != 0) & ~hit
        todo, slot = todo[going], (slot[going] + np.uint64(1)) & mask
    return out


def _run(parts: tuple[Any, ...], key: np.ndarray, path: str, rubric_names: list[str]) -> Run:
    import numpy as np

    offsets, lines, _, _, statuses, causes, hashes, _, pair_codes = parts
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
        order=order.astype(np.uint32) if len(key) < NONE else order, sorted_key=sorted_key,
        pair=_np(pair_codes, np.uint8))


def _stale(b: _Builder, run: Run, rubrics: RubricSet,
           states: tuple[np.ndarray, array[int]] | None) -> np.ndarray:
    """Each verdict of the run's stale code (``_verdicts.stale.rule``): against the checks
    rebuilt from the cases, or build's output (``--states``: each record's key, and its
    rubric and state hashes)."""
    import numpy as np
    import polars as pl

    from evalstream._verdicts.stale import rule

    n_cases = len(b.case_line)
    rows, rubric = run.key >> np.uint64(32), run.key & np.uint64(NONE)
    assert run.hashes is not None
    if states is None:
        made = _np(b.made_key, np.uint64)  # in key order already
        x_state_all = _np(b.made_state, np.int64)
        per_rubric = np.array([_hash(r.hash) for r in rubrics.rubrics] + [0], dtype=np.int64)
        x_rubric_all = per_rubric[np.minimum(made & np.uint64(NONE),
                                             len(rubrics.rubrics)).astype(np.int64)]
        # A pairwise rubric's state is a pair's (two runs' cases): not rebuilt from one run.
        pairwise = np.array([r.pairwise for r in rubrics.rubrics] + [True], dtype=bool)
        checkable = (rows < n_cases) & ~pairwise[np.minimum(rubric, len(rubrics.rubrics))
                                                 .astype(np.int64)]
    else:
        made = states[0]
        pairs = _np(states[1], np.int64).reshape(-1, 2)
        order = np.argsort(made, kind="stable")
        made, x_rubric_all, x_state_all = made[order], pairs[order, 0], pairs[order, 1]
        checkable = np.isin(rows, made >> np.uint64(32)) & np.isin(rubric,
                                                                    made & np.uint64(NONE))
    at = np.minimum(np.searchsorted(made, run.key), max(len(made) - 1, 0))
    found = (made[at] == run.key) if len(made) else np.zeros(len(run.key), bool)
    pick = np.where(found, at, 0)
    x_rubric = np.where(found, x_rubric_all[pick] if len(made) else 0, 0)
    x_state = np.where(found, x_state_all[pick] if len(made) else 0, 0)
    columns = {"v_rubric": run.hashes[:, 0], "v_state": run.hashes[:, 1], "found": found,
               "x_rubric": x_rubric.astype(np.int64), "x_state": x_state.astype(np.int64),
               "checkable": checkable}
    return pl.DataFrame(columns).select(rule())["stale"].to_numpy()


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
    from evalstream._files.store import needs_resolving

    started = time.perf_counter()
    case_files = opts.case_files()
    if opts.compare_cases is not None and needs_resolving(opts.compare_cases):
        # Run B of pairwise verdicts is one file, as build --pair-with RUN_B reads it (pairs
        # are made of one file of each run): several, a glob or a URL is no such file.
        raise UsageError(f"--compare-cases takes one file of run B's cases, as build "
                         f"--pair-with RUN_B reads it; {opts.compare_cases} is a glob or URL. "
                         "Give the file build paired with (--cases takes several files or a "
                         "glob; run B's cases do not).")
    paths = [*((CASES, c) for c in case_files), (VERDICTS, opts.verdicts),
             (COMPARE, opts.compare), (STATES, opts.states), (COMPARE_CASES, opts.compare_cases)]
    for role, path in paths:
        if path is not None:
            plain_file(path, role)
    for path in case_files:
        check_cases_input(path)
    if opts.compare_cases is not None:
        check_cases_input(opts.compare_cases)
    usage = "; usage: evalstream view VERDICTS --cases CASES"
    for path in (opts.verdicts, opts.compare):
        if path is not None:
            check_input(path, "verdicts", usage)
    if opts.states is not None:
        check_input(opts.states, "judge states", "; --states takes build's output")
    rubrics = opts.rubrics or builtin()
    if _apart(opts, case_files):
        apart = _Apart(opts, rubrics, on_progress)
        shown = on_progress

        def both(role: str, done: int, size: int | None) -> None:
            if shown is not None:
                shown(role, done, size)
            apart.progress()

        b = _Builder(opts, rubrics, both)
        b.case_files = case_files
        try:
            b.read_cases()
            b.on_progress = on_progress
            read = apart.taken()
            run_parts = b.take_run(read) if read is not None else \
                b.read_run(VERDICTS, opts.verdicts, opts.compare is not None)
        except BaseException:  # (Ctrl-C among them) the worker stops at its next chunk
            apart.stop()
            raise
    else:
        b = _Builder(opts, rubrics, on_progress)
        b.case_files = case_files
        b.read_cases()
        run_parts = b.read_run(VERDICTS, opts.verdicts, opts.compare is not None)
    other_parts = b.read_run(COMPARE, opts.compare, True) if opts.compare is not None else None
    state_parts = b.read_states(opts.states) if opts.states is not None else None
    paired = b.read_compare_cases(opts.compare_cases) if opts.compare_cases is not None \
        else None
    rows = b.rows()
    names = b.rubric_names.names
    run = _run(run_parts, _keys(rows, run_parts[2], run_parts[3]), opts.verdicts, names)
    b.panels.keyed(run.key)  # the split panels' places in the run, as their keys
    other = None if other_parts is None else \
        _run(other_parts, _keys(rows, other_parts[2], other_parts[3]), str(opts.compare), names)

    label_key = _np(b.label_key, np.uint64)
    order = np.argsort(label_key, kind="stable")
    label_key = label_key[order]
    skip_key, skip_reason = _np(b.skip_key, np.uint64), _np(b.skip_reason, np.uint16)
    by_build = np.sort(skip_key)
    # Judge states with no verdict in the run: from --states, and judge-state lines in the
    # verdict file itself (a run stopped early, or a file that mixes both), each key once.
    nj_refs, nj_rubrics, nj_offsets = run_parts[7]
    keys = [_keys(rows, nj_refs, nj_rubrics)]
    roles = [np.full(len(nj_refs), ROLES.index(VERDICTS), np.uint8)]
    pending_offsets = [_np(nj_offsets, np.uint64)]
    if state_parts is not None:
        judge = _np(state_parts[3], np.uint8).astype(bool)
        keys.append(_keys(rows, state_parts[0], state_parts[1])[judge])
        roles.append(np.full(int(judge.sum()), ROLES.index(STATES), np.uint8))
        pending_offsets.append(_np(state_parts[2], np.uint64)[judge])
    all_keys = np.concatenate(keys)
    first = np.unique(all_keys, return_index=True)[1]
    # A check build skips (with the rubric set) is listed once, with build's reason.
    first = first[~_member(all_keys[first], run.sorted_key) & ~_member(all_keys[first], by_build)]
    pending_key = all_keys[first]  # sorted, as np.unique gives them
    pending_role = np.concatenate(roles)[first]
    pending_offset = np.concatenate(pending_offsets)[first]
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
    made_states = None
    if state_parts is not None:
        s_key = _keys(rows, state_parts[0], state_parts[1])
        made_states = (s_key, state_parts[5])
        s_order = np.argsort(s_key, kind="stable")
        state_key, state_offset = s_key[s_order], _np(state_parts[2], np.uint64)[s_order]
        state_is_judge = _np(state_parts[3], np.uint8)[s_order].astype(bool)
        state_line = _np(state_parts[4], np.uint32)[s_order]
    else:
        state_key, state_offset = np.zeros(0, np.uint64), np.zeros(0, np.uint64)
        state_is_judge, state_line = np.zeros(0, bool), np.zeros(0, np.uint32)
    run.stale = _stale(b, run, rubrics, made_states)
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
        seconds=round(time.perf_counter() - started, 3),
        paired_ids=None if paired is None else paired[0],
        paired_line=None if paired is None else _np(paired[1], np.uint32),
        paired_offset=None if paired is None else _np(paired[2], np.uint64),
        panels=b.panels)
