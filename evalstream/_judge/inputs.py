"""Reading ``build``'s output for ``judge``, through the one read loop
(``cases.reading.RecordReader``): each line is a judge state (judged), an exact verdict
(passed through unchanged), blank (counted), or a reject (line, JSON path, sentence).

A judge state must be what ``build`` wrote: ``case_id``, ``rubric_id``, a ``question`` that
opens with evalstream's untrusted-data preamble, a ``state`` object whose xxh3-128 is its
``state_hash`` (so a hand-edited state is caught, not judged under another state's hash), an
``exposure`` with ``shown``, and a ``rubric_hash``. Other fields are ignored. A pairwise
state (``build --pair-with``) also has its ``pair`` (key, order, the responses' lengths) and
a question that opens with the pairwise preamble; ``judge.pairs`` puts its two orders
together.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, NamedTuple

import msgspec
import xxhash
from msgspec import Struct

from evalstream._cases import rejects
from evalstream._cases.reading import LineCounts, Problem, RecordKind, RecordReader
from evalstream._cases.rejects import Reject, raw_text
from evalstream._cases.schema import CaseId
from evalstream._checks.state import PAIR_PREAMBLE, PREAMBLE
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES, HeldInput, LongLine, chunks_of
from evalstream._verdicts.records import EXPOSURE_FIELDS, RubricId

JUDGE_STATE_FIELDS = ("case_id", "rubric_id", "question", "state", "exposure", "rubric_hash",
                      "state_hash")
NOT_A_STATE = "not a judge state"
SHAPE = rejects.Shape(
    noun="judge state",
    required=JUDGE_STATE_FIELDS,
    fields={"$": (*JUDGE_STATE_FIELDS, "kind", "status", "evidence", "allows_na", "pair"),
            "$.exposure": EXPOSURE_FIELDS, "$.pair": ("key", "order", "chars")},
    allowed={"$.status": "pass, fail, na, unscored", "$.pair.order": "ab, ba"},
    ids={"$.case_id": "Case id", "$.rubric_id": "Rubric id"},
    id_field="case_id",
    too_long="raise --max-line-bytes to judge it",
)


class Pair(Struct, gc=False):
    """A pairwise state's ``pair``: the key both orders share, this one's order (``ab``: run
    A's response is response_1), and A's and B's responses' lengths in characters."""

    key: str
    order: Literal["ab", "ba"]
    chars: tuple[int, int]


class _Line(Struct, gc=False):
    case_id: CaseId
    rubric_id: RubricId
    question: str | None = None
    state: msgspec.Raw = msgspec.Raw()
    exposure: msgspec.Raw = msgspec.Raw()
    rubric_hash: str | None = None
    state_hash: str | None = None
    kind: str | None = None
    status: Literal["pass", "fail", "unscored", "na"] | None = None
    allows_na: bool = True
    pair: Pair | None = None


class _Exposure(Struct, gc=False):
    shown: list[str]


class JudgeState(NamedTuple):
    """A judge state to judge: where it is, its key, what is sent, what the verdict copies."""

    line: int
    case_id: str
    rubric_id: str
    question: str
    state: str  # the state's JSON text, as build wrote it
    exposure: msgspec.Raw
    rubric_hash: str
    state_hash: str
    offset: int = 0  # the line's first byte in the input
    allows_na: bool = True  # false: its rubric does not allow `na` (build writes it so)
    pair: Pair | None = None  # a pairwise state's (build --pair-with)


class Exact(NamedTuple):
    """An exact-rubric verdict written by build: copied to the output unchanged."""

    line: int
    raw: bytes


_exposure = msgspec.json.Decoder(_Exposure).decode


def _reject(line_no: int, offset: int, line: bytes, exc: BaseException) -> Problem:
    return (rejects.reject(line_no, offset, line, exc, SHAPE),
            rejects.reject_kind(exc, line, SHAPE))


def _too_long(item: LongLine, limit: int) -> Reject:
    return rejects.long_line_reject(item, limit, SHAPE)


def _problem(v: _Line, line_no: int, line: bytes, path: str, error: str, kind: str) -> Problem:
    return Reject(line_no, 0, v.case_id, path, error, raw_text(line)), kind


def _fields() -> str:
    return ", ".join(f"`{f}`" for f in JUDGE_STATE_FIELDS)


def check(v: _Line, line_no: int, line: bytes) -> Problem | None:
    """Why a decoded line is neither a judge state nor an exact verdict; None when it is one."""
    if v.status is not None:
        if v.kind == "exact":
            return None
        return _problem(v, line_no, line, "$.status", (
            f"This line is already a verdict (`status` is {v.status!r}); judge reads build's "
            "output: judge states (with `question` and `state`) and exact verdicts."),
            NOT_A_STATE)
    if v.question is None or not v.state:
        missing = "question" if v.question is None else "state"
        return _problem(v, line_no, line, f"$.{missing}", (
            f"Required field `{missing}` is missing; a judge state needs {_fields()} (as "
            "`evalstream build` writes them)."), "missing field")
    if v.rubric_hash is None or v.state_hash is None or not v.exposure:
        missing = ("rubric_hash" if v.rubric_hash is None else
                   "state_hash" if v.state_hash is None else "exposure")
        return _problem(v, line_no, line, f"$.{missing}", (
            f"Required field `{missing}` is missing; a judge state needs {_fields()}: the "
            "verdict copies them so that compare can tell what the judge saw."),
            "missing field")
    state = bytes(v.state)
    if not state.startswith(b"{"):
        return _problem(v, line_no, line, "$.state", "`$.state` must be an object (the judge "
                        "state's fields).", "invalid value")
    if xxhash.xxh3_128_hexdigest(state) != v.state_hash:
        return _problem(v, line_no, line, "$.state_hash", (
            "`$.state_hash` is not the xxh3-128 of `$.state`: the state was changed after "
            "build wrote it. Rebuild the states rather than editing them."), "invalid value")
    if not v.question.startswith(PREAMBLE if v.pair is None else PAIR_PREAMBLE):
        kind = "untrusted-data" if v.pair is None else "pairwise untrusted-data"
        return _problem(v, line_no, line, "$.question", (
            f"`$.question` does not begin with evalstream's {kind} preamble; judge "
            "sends only questions written by `evalstream build` (rebuild the states)."),
            "invalid value")
    try:
        _exposure(v.exposure)
    except msgspec.DecodeError as exc:
        what, _, at = str(exc).partition(" - at `$")
        path = "$.exposure" + at.rstrip("`")
        return _problem(v, line_no, line, path, (
            f"`$.exposure` is not an exposure record as build writes it ({what} at `{path}`); "
            "it needs `shown`, the list of judge-state names the judge was shown."),
            "invalid value")
    return None


KIND: RecordKind[_Line] = RecordKind(decode=msgspec.json.Decoder(_Line).decode,
                                     reject=_reject, too_long=_too_long, check=check)


class Reader:
    """Reads a build output into judge states, exact verdicts and rejects, counting lines."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._reader = RecordReader(KIND, max_line_bytes)

    @property
    def counts(self) -> LineCounts:
        """Lines read so far: ``lines == blank + records + rejected``."""
        return self._reader.counts

    def read(self, path: str) -> Iterator[JudgeState | Exact | Reject]:
        """The file's items in line order (blank lines are only counted)."""
        return self._items(self._reader.read_file(path))

    def read_held(self, source: HeldInput) -> Iterator[JudgeState | Exact | Reject]:
        """The items of an input held open (read again from its first byte each time)."""
        return self._items(self._reader.read_stream(source.open()))

    def read_lines(self, lines: list[bytes]) -> Iterator[JudgeState | Exact | Reject]:
        """The items of lines given one by one (tests)."""
        return self._items(self._reader.read(chunks_of(lines, self._reader.max_line_bytes)))

    @staticmethod
    def _items(records: Iterator[tuple[int, int, bytes, _Line] | Reject],
               ) -> Iterator[JudgeState | Exact | Reject]:
        for item in records:
            if type(item) is Reject:
                yield item
                continue
            line_no, offset, raw, v = item  # type: ignore[misc]
            if v.status is not None:
                yield Exact(line_no, raw)
                continue
            assert v.question is not None and v.rubric_hash and v.state_hash  # checked
            yield JudgeState(line_no, v.case_id, v.rubric_id, v.question,
                             bytes(v.state).decode(), v.exposure, v.rubric_hash, v.state_hash,
                             offset, v.allows_na, v.pair)


def read(path: str, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
         ) -> Iterator[JudgeState | Exact | Reject]:
    """The items of a build output, in order (blank lines skipped)."""
    return Reader(max_line_bytes).read(path)
