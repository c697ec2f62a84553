"""Reading ``build``'s output for ``judge``: each line is a judge state (judged), an exact
verdict (passed through unchanged), blank (counted), or a reject (line, JSON path, sentence).

A judge state must be what ``build`` wrote: ``case_id``, ``rubric_id``, a ``question`` that
opens with evalstream's untrusted-data preamble, a ``state`` object whose xxh3-128 is its
``state_hash`` (so a hand-edited state is caught, not judged under another state's hash), an
``exposure`` with ``shown``, and a ``rubric_hash``. Other fields are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple

import msgspec
import xxhash
from msgspec import Struct

from evalstream.cases import rejects
from evalstream.cases.rejects import Reject, raw_text
from evalstream.cases.schema import CaseId
from evalstream.checks.state import PREAMBLE
from evalstream.files.lines import Chunk, LongLine, open_input, read_chunks
from evalstream.verdicts.records import RubricId

JUDGE_STATE_FIELDS = ("case_id", "rubric_id", "question", "state", "exposure", "rubric_hash",
                      "state_hash")
NOT_A_STATE = "not a judge state"


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


class Exact(NamedTuple):
    """An exact-rubric verdict written by build: copied to the output unchanged."""

    line: int
    raw: bytes


class Rejected(NamedTuple):
    """A line that is neither, and its kind for the report's counts."""

    reject: Reject
    kind: str


class Blank(NamedTuple):
    line: int


Item = JudgeState | Exact | Rejected | Blank
_decode = msgspec.json.Decoder(_Line).decode
_exposure = msgspec.json.Decoder(_Exposure).decode
_ERROR_AT = re.compile(r"^(?P<what>.*?)(?: - at `(?P<path>\$[^`]*)`)?$", re.S)


def read(path: str, max_line_bytes: int) -> Iterator[Item]:
    """Every line of a build output, in order, as an Item."""
    stream = open_input(path)
    try:
        for chunk in read_chunks(stream, max_line_bytes):
            if isinstance(chunk, LongLine):
                yield Rejected(_long_line(chunk, max_line_bytes), "line too long")
                continue
            yield from _chunk_items(chunk)
    finally:
        if path != "-":
            stream.close()


def _chunk_items(chunk: Chunk) -> Iterator[Item]:
    offsets: list[int] | None = None
    for i, line in enumerate(chunk.lines):
        item = classify(chunk.line + i, line)
        if isinstance(item, Rejected):
            offsets = offsets or chunk.offsets()
            item.reject.offset = offsets[i]
        yield item


def classify(line_no: int, line: bytes) -> Item:
    """What one line is (a reject's offset is left 0 for the caller to set)."""
    try:
        v = _decode(line)
    except (msgspec.DecodeError, RecursionError) as exc:
        if not line or line.isspace():
            return Blank(line_no)
        path, error = _explain(exc, line)
        return _rejected(line_no, line, path, error, rejects.reject_kind(exc, line))
    if v.status is not None:
        if v.kind == "exact":
            return Exact(line_no, line)
        return _rejected(line_no, line, "$.status", (
            f"This line is already a verdict (`status` is {v.status!r}); judge reads build's "
            "output: judge states (with `question` and `state`) and exact verdicts."),
            NOT_A_STATE, v.case_id)
    if v.question is None or not v.state:
        missing = "question" if v.question is None else "state"
        return _rejected(line_no, line, f"$.{missing}", (
            f"Required field `{missing}` is missing; a judge state needs "
            f"{_fields()} (as `evalstream build` writes them)."), "missing field", v.case_id)
    if v.rubric_hash is None or v.state_hash is None or not v.exposure:
        missing = ("rubric_hash" if v.rubric_hash is None else
                   "state_hash" if v.state_hash is None else "exposure")
        return _rejected(line_no, line, f"$.{missing}", (
            f"Required field `{missing}` is missing; a judge state needs {_fields()}: the "
            "verdict copies them so that compare can tell what the judge saw."),
            "missing field", v.case_id)
    state = bytes(v.state)
    if not state.startswith(b"{"):
        return _rejected(line_no, line, "$.state", "`$.state` must be an object (the judge "
                         "state's fields).", "invalid value", v.case_id)
    if xxhash.xxh3_128_hexdigest(state) != v.state_hash:
        return _rejected(line_no, line, "$.state_hash", (
            "`$.state_hash` is not the xxh3-128 of `$.state`: the state was changed after "
            "build wrote it. Rebuild the states rather than editing them."), "invalid value",
            v.case_id)
    if not v.question.startswith(PREAMBLE):
        return _rejected(line_no, line, "$.question", (
            "`$.question` does not begin with evalstream's untrusted-data preamble; judge "
            "sends only questions written by `evalstream build` (rebuild the states)."),
            "invalid value", v.case_id)
    try:
        _exposure(v.exposure)
    except msgspec.DecodeError as exc:
        path, error = _explain(exc, bytes(v.exposure), "$.exposure")
        return _rejected(line_no, line, path, error, "invalid value", v.case_id)
    return JudgeState(line_no, v.case_id, v.rubric_id, v.question, state.decode(), v.exposure,
                      v.rubric_hash, v.state_hash)


def _fields() -> str:
    return ", ".join(f"`{f}`" for f in JUDGE_STATE_FIELDS)


def _rejected(line_no: int, line: bytes, path: str | None, error: str, kind: str,
              case_id: str | None = None) -> Rejected:
    if case_id is None:
        case_id = _case_id_of(line)
    return Rejected(Reject(line_no, 0, case_id, path, error, raw_text(line)), kind)


def _long_line(item: LongLine, max_line_bytes: int) -> Reject:
    error = (f"The line is {item.size:,} bytes, over the limit of {max_line_bytes:,} bytes; "
             "raise --max-line-bytes to judge it.")
    return Reject(item.line, item.offset, None, None, error, raw_text(item.head))


class _IdProbe(Struct):
    case_id: Any = None


_probe = msgspec.json.Decoder(_IdProbe).decode


def _case_id_of(line: bytes) -> str | None:
    try:
        value = _probe(line).case_id
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def _explain(exc: BaseException, line: bytes, prefix: str = "$") -> tuple[str | None, str]:
    """The JSON path and a sentence for a line (or the exposure) that failed to decode."""
    if not isinstance(exc, msgspec.ValidationError):
        path, error = rejects.explain(exc, line)
        return path, error.replace("each case must be", "each judge state must be")
    m = _ERROR_AT.match(str(exc))
    assert m is not None  # the pattern matches any string
    what, path = m["what"], prefix + (m["path"] or "$")[1:]
    if what.startswith("Object missing required field"):
        name = what.split("`")[1]
        return f"{path}.{name}", (f"`{path}` is missing its required field `{name}`; a judge "
                                  f"state needs {_fields()}.")
    if what.startswith("Invalid enum value"):
        return path, f"`{path}` is {what[len('Invalid enum value '):]}: not a verdict status."
    if what.startswith("Expected `str` matching regex") or re.match(
            r"Expected `str` of length [<>]=", what):
        return path, (f"`{path}` must be a slug: non-empty, at most 512 characters, without "
                      "whitespace or `/`.")
    got = re.match(r"Expected `([^`]+)`, got `([^`]+)`", what)
    if got and path == "$":
        return path, (f"The line is {_a(got[2])}, not a judge state; each line must be one JSON "
                      "object as `evalstream build` writes it.")
    if got:
        return path, f"`{path}` must be {' or '.join(map(_a, got[1].split(' | ')))}, not " \
                     f"{_a(got[2])}."
    return path, f"`{path}`: {what}."


_WORDS = {"str": "a string", "int": "an integer", "float": "a number", "object": "an object",
          "array": "an array", "null": "null", "bool": "true or false"}


def _a(name: str) -> str:
    return _WORDS.get(name, f"`{name}`")
