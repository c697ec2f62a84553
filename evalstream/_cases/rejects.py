"""Decoding one line into a Case or a Reject, and the sentences that explain a reject.

The hot path is a single typed ``Decoder.decode``. Everything else here runs only
for lines that failed, so it may re-read the line to say precisely what is wrong.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import msgspec

from evalstream._cases import schema
from evalstream._files.lines import BOM, HEAD_BYTES, LongLine

RAW_CHARS = 2_000


class Reject(msgspec.Struct, gc=False):
    """One input line that did not become a case, and why."""

    line: int
    offset: int
    id: str | None
    path: str | None
    error: str
    raw: str


class FileReject(msgspec.Struct, gc=False):
    """A reject record with the file it came from (a command that reads two files: agree,
    compare, build --pair-with, batch collect): ``file``, then ``Reject``'s fields, made from
    a ``Reject`` by ``of`` only.

    The fields are written again rather than inherited: msgspec encodes a subclass's own
    fields after its base's, which would move ``file`` from the head of every line of a
    rejects file to its end; an optional ``file`` in ``Reject`` would have to come first,
    with a default, and ``Reject`` is made positionally in every read loop.
    tests/cases/test_rejects.py holds the fields to ``Reject``'s."""

    file: str
    line: int
    offset: int
    id: str | None
    path: str | None
    error: str
    raw: str

    @classmethod
    def of(cls, file: str, reject: Reject) -> FileReject:
        """``reject``, a line of ``file``."""
        return cls(file, *msgspec.structs.astuple(reject))


_ERROR_AT = re.compile(r"^(?P<what>.*?)(?: - at `(?P<path>\$[^`]*)`)?$", re.S)
# A high surrogate escape not followed by a low one, or a low one not preceded by a high one.
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_KEY_ERROR = re.compile(r"^(?P<what>.*) - at `key` in `(?P<path>\$[^`]*)`$", re.S)
_PATH_PART = re.compile(r'\.([^.\[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')
_OUT_OF_RANGE = ("Number out of range", "Integer value out of range")
# Longer integer literals are refused by Python's int() (sys.get_int_max_str_digits) and msgspec.
_MAX_INT_DIGITS = 4_300



@dataclass(frozen=True)
class Shape:
    """What one kind of record looks like, for the sentences that explain its rejects.

    Paths in the tables are patterns: ``[]`` for any array index, ``{}`` for any key of an
    object whose keys are data (listed in ``maps``), e.g. ``$.expected{}.status``.
    """

    noun: str  # "case", "verdict"
    required: tuple[str, ...]  # the top-level fields every record needs
    fields: dict[str, tuple[str, ...]]  # known fields by parent pattern
    allowed: dict[str, str]  # allowed values by field pattern
    maps: tuple[str, ...] = ()  # patterns of objects whose keys are data
    unlisted: frozenset[str] = frozenset()  # known fields not named in sentences
    ids: dict[str, str] = field(default_factory=dict)  # id paths that must be slugs -> label
    keys: dict[str, str] = field(default_factory=dict)  # maps whose keys are ids -> what they name
    id_field: str = "id"  # the top-level field a reject's `id` is read from
    too_long: str = "split the case or raise --max-line-bytes"  # the fix for a long line

    def pattern(self, path: str) -> str:
        """``$.messages[3].role`` -> ``$.messages[].role``; keys of ``maps`` -> ``{}``."""
        out = "$"
        for name, index, key in _PATH_PART.findall(path):
            if out in self.maps:
                out += "{}"
            elif index:
                out += "[]"
            else:
                out += f".{name}" if name else f"[{key}]"
        return out

    def needs(self) -> str:
        """``id``, ``input`` and ``output``: the required fields as a sentence names them."""
        names = [f"`{n}`" for n in self.required]
        return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


CASE = Shape(
    noun="case",
    required=("id", "input", "output"),
    fields={"$": schema.CASE_FIELDS, "$.messages[]": schema.MESSAGE_FIELDS,
            "$.context[]": schema.PASSAGE_FIELDS, "$.toolEvents[]": schema.TOOL_EVENT_FIELDS,
            "$.expected{}": schema.LABEL_FIELDS},
    allowed={"$.messages[].role": "system, user, assistant, tool",
             "$.toolEvents[].status": "success, failure",
             "$.expected{}.status": "pass, fail, na",
             "$.expected{}.source": "synthetic, human, imported"},
    maps=("$.expected",),
    ids={"$.id": "Case id"},
    keys={"$.expected": "rubric id"},
)
_TYPE_WORDS = {
    "str": "a string", "int": "an integer", "float": "a number", "object": "an object",
    "array": "an array", "null": "null", "bool": "true or false",
}


def raw_text(line: bytes) -> str:
    """The first 2,000 characters of a line, with undecodable bytes shown as U+FFFD."""
    return line[:HEAD_BYTES].decode("utf-8", "replace")[:RAW_CHARS]


def case_id_of(line: bytes, key: str = "id") -> str | None:
    """The line's record id (``key``: ``id`` for a case) when it can be read, even if the
    rest of the record is invalid."""
    try:
        value = getattr(_probe(key).decode(line), key)
    except (msgspec.DecodeError, RecursionError):
        # Lone surrogates, NaN or a stray BOM stop msgspec but not the stdlib parser.
        loaded = _lenient_load(line.removeprefix(BOM))
        value = loaded.get(key) if isinstance(loaded, dict) else None
        if loaded is None:
            # A line cut short still names its record when the id comes first.
            first = _leading(key).match(line.removeprefix(BOM))
            value = _lenient_load(first[1]) if first else None
    return value if isinstance(value, str) else None


@cache
def _probe(key: str) -> msgspec.json.Decoder[Any]:
    # A Struct of the one field: every other value is skipped, never built.
    return msgspec.json.Decoder(msgspec.defstruct(f"Probe_{key}", [(key, Any, None)]))


@cache
def _leading(key: str) -> re.Pattern[bytes]:
    return re.compile(rb'\s*\{\s*"' + re.escape(key.encode()) +
                      rb'"\s*:\s*("(?:[^"\\]|\\.){0,2048}")')


def reject(line_no: int, offset: int, line: bytes, exc: BaseException,
           shape: Shape = CASE) -> Reject:
    """A reject for a line that failed to decode, with a sentence a person can act on."""
    path, error = explain(exc, line, shape)
    case_id = case_id_of(line, shape.id_field)
    # A lone surrogate read by the lenient parser cannot be written as UTF-8: show it escaped.
    return Reject(line_no, offset, case_id and _printable(case_id), path and _printable(path),
                  _printable(error), raw_text(line))


def _printable(text: str) -> str:
    """``text`` with any lone surrogate written as its escape (``\\ud800``), so it encodes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _syntax_error(line: bytes) -> BaseException | None:
    """Why ``line`` is not well-formed JSON at all, or None when it is (error path only)."""
    try:
        msgspec.json.decode(line)
    except msgspec.ValidationError:
        return None
    except (msgspec.DecodeError, RecursionError) as exc:
        return exc
    return None


def reject_kind(exc: BaseException, line: bytes | None = None, shape: Shape | None = None) -> str:
    """A short name for the kind of decode failure, for the report's counts.

    Given the ``line``, a type error on a line that is not even well-formed JSON counts
    as malformed, as ``explain`` reports it.
    """
    if line is not None and isinstance(exc, msgspec.ValidationError):
        exc = _syntax_error(line) or exc
    if isinstance(exc, RecursionError):
        return "too deep"
    what = str(exc)
    if not isinstance(exc, msgspec.ValidationError):
        return "invalid UTF-8" if what.startswith("Invalid UTF-8") else "malformed JSON"
    if what.startswith("Object contains unknown field"):
        return "unknown field"
    if what.startswith("Object missing required field"):
        return "missing field"
    if _KEY_ERROR.match(what):
        return "invalid id"
    at = what.rsplit(" - at `", 1)[-1].rstrip("`") if " - at `" in what else "$"
    if "matching regex" in what or "length" in what and at in (shape or CASE).ids:
        return "invalid id"
    if re.match(r"Expected `(str|array|object)` of length <=", what):
        return "over a cap"
    if " - at `" not in what:
        return "not an object"
    return "invalid value"


def long_text_reject(line_no: int, line: bytes, case_id: str, path: str, length: int,
                     is_key: bool) -> Reject:
    """A reject for a string (or key) nested in free-form JSON over the text cap."""
    return Reject(line_no, 0, case_id, path, long_text_sentence(path, length, is_key),
                  raw_text(line))


def long_text_sentence(path: str, length: int, is_key: bool) -> str:
    """Why a string (or key) nested in free-form JSON is refused: over the text cap."""
    limit = schema.MAX_TEXT_CHARS
    if is_key:
        return (f"`{path}` has a key of {length:,} characters; keys, as every text, allow at "
                f"most {limit:,} characters.")
    return (f"`{path}` is {length:,} characters long; text fields allow at most "
            f"{limit:,} characters, at any depth.")


def long_line_reject(item: LongLine, max_line_bytes: int, shape: Shape | None = None) -> Reject:
    """A reject for a line over ``--max-line-bytes``, built from its head only (which names
    the record when its id comes first)."""
    shape = shape or CASE
    error = (f"The line is {item.size:,} bytes, over the limit of {max_line_bytes:,} bytes; "
             f"{shape.too_long}.")
    record_id = case_id_of(item.head, shape.id_field)
    return Reject(item.line, item.offset, record_id and _printable(record_id), None, error,
                  raw_text(item.head))


def whitespace_reject(line_no: int, offset: int, line: bytes) -> Reject:
    """A reject for a line of whitespace that JSON does not count as such (form feed,
    vertical tab): only spaces, tabs and carriage returns make a blank line."""
    odd = next(f"U+{c:04X}" for c in line if c not in b" \t\r")
    return Reject(line_no, offset, None, "$", (
        f"The line holds only whitespace, but {odd} (a form feed or vertical tab) is not "
        "whitespace in JSON; a blank line may hold only spaces, tabs and carriage returns. "
        "Remove the line."), raw_text(line))


def explain(exc: BaseException, line: bytes, shape: Shape = CASE) -> tuple[str | None, str]:
    """The JSON path and the sentence for a decode failure of ``line``, a record of
    ``shape``. msgspec says what failed in English: this is the one place that reads it."""
    if isinstance(exc, RecursionError):
        return "$", ("The JSON is nested too deeply to read (msgspec stops near 1,000 levels); "
                     "flatten the nested value.")
    if isinstance(exc, msgspec.ValidationError):
        # msgspec checks types while it parses, so a broken line can fail on a field first;
        # a line that is not JSON at all must say so, not send the reader to rename a field.
        malformed = _syntax_error(line)
        if malformed is not None:
            return explain(malformed, line, shape)
    message = str(exc)
    at_key = _KEY_ERROR.match(message)
    if at_key is not None and isinstance(exc, msgspec.ValidationError):
        return _explain_key(at_key["path"], line, shape)
    m = _ERROR_AT.match(message)
    assert m is not None  # the pattern matches any string
    what, path = m["what"], m["path"] or "$"
    if "[...]" in path:
        path = _name_label(line, path)
    if "[...]" in path and what in _OUT_OF_RANGE:
        path = _out_of_range_path(line) or path
    if "[...]" in path:  # a key we could not name: point at the object that holds it
        path = path.split("[...]")[0]
    if isinstance(exc, msgspec.ValidationError):
        repeated = _repeated_key(line, path)
        if repeated is not None:
            return path, repeated
        return _explain_invalid(what, path, line, shape)
    return _explain_malformed(what, line, shape)


def _explain_malformed(what: str, line: bytes, shape: Shape) -> tuple[str | None, str]:
    lone = _LONE_SURROGATE.search(line)
    if lone:
        # msgspec reports these as truncated or malformed input; the stdlib parser can find them
        # (unless the line is also nested too deeply for it: then the byte offset must do).
        escape = lone[0].decode()
        return _surrogate_path(line) or "$", (
            f"A string holds a lone UTF-16 surrogate escape ({escape} at byte {lone.start()}), "
            "which is not a Unicode character; remove it or pair it with its other half.")
    if what == "Input data was truncated":
        return "$", ("The JSON ends before the object is closed (an unclosed string, object or "
                     f"array); each {shape.noun} must be one complete JSON object on one line.")
    if what == "Invalid UTF-8 encoded string":
        try:
            line.decode("utf-8")
            where = ""
        except UnicodeDecodeError as err:
            where = f" at byte {err.start}"
        return "$", f"The line is not valid UTF-8{where}; datasets must be UTF-8 text."
    byte = re.search(r"\(byte (\d+)\)", what)
    pos = int(byte[1]) if byte else 0
    if "trailing characters" in what:
        # msgspec counts this position one past the first unexpected byte.
        pos = max(pos - 1, 0)
        near = line[pos:pos + 20].decode("utf-8", "replace")
        return "$", (f"Unexpected text after the JSON object at byte {pos} ({near!r}); "
                     "each line must hold exactly one JSON object.")
    near = line[pos:pos + 20].decode("utf-8", "replace")
    if line.startswith(BOM) and pos == 0:
        return "$", ("The line starts with a UTF-8 byte order mark (BOM); only the start of the "
                     "file may have one. Remove it.")
    if line.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in line[:4]:
        return "$", ("The line looks like UTF-16 text (it has a UTF-16 byte order mark or NUL "
                     "bytes between characters); datasets must be UTF-8. Convert the file, "
                     "e.g. with `iconv -f UTF-16 -t UTF-8`.")
    bad_utf8 = _utf8_error_at(line)
    if bad_utf8 is not None and bad_utf8 <= pos:
        return "$", f"The line is not valid UTF-8 at byte {bad_utf8}; datasets must be UTF-8 text."
    if near and near[0] < " ":
        return _control_path(line, pos), (
            f"The line holds a raw control character U+{ord(near[0]):04X} at byte {pos}; JSON "
            f"strings must write it escaped (\\u{ord(near[0]):04x}) and it may not appear "
            "outside strings.")
    nonfinite = re.match(r"-?(NaN|Infinity)", near)
    before = line[:pos].rstrip()
    if nonfinite and before.endswith(b"-"):  # msgspec points past the minus sign
        pos, before, value = pos - 1, before[:-1].rstrip(), f"-{nonfinite[0]}"
    elif nonfinite:
        value = nonfinite[0]
    # Only where a value belongs: `{"a"-NaN}` is a missing colon, not a bad number.
    if nonfinite and before[-1:] in (b":", b",", b"["):
        return _nonfinite_path(line), (
            f"The value {value} is not valid JSON (byte {pos}); write null or a string "
            "instead.")
    return "$", (f"The line is not valid JSON: unexpected character at byte {pos}, near "
                 f"{near!r}.")


def _explain_invalid(what: str, path: str, line: bytes,
                     shape: Shape) -> tuple[str | None, str]:
    if what.startswith("Object contains unknown field"):
        name = what.split("`")[1]
        return _key_path(path, name), _unknown_field(name, path, shape)
    if what.startswith("Object missing required field"):
        name = what.split("`")[1]
        if path == "$":
            return f"$.{name}", (f"Required field `{name}` is missing; every {shape.noun} needs "
                                 f"{shape.needs()}.")
        return f"{path}.{name}", f"`{path}` is missing its required field `{name}`."
    if what.startswith("Invalid enum value"):
        value = what[len("Invalid enum value "):]
        allowed = shape.allowed.get(shape.pattern(path), "see docs/formats.md")
        return path, f"`{path}` is {value}; allowed values are: {allowed}."
    if what in _OUT_OF_RANGE:
        return path, (f"The number at `{path}` is out of range; integers must fit in 64 bits and "
                      "floats must be finite. Write very large numbers as strings.")
    length = re.match(r"Expected `(str|array|object)` of length ([<>]=) (\d+)", what)
    if length:
        return path, _length_error(path, length[1], length[2], int(length[3]), line,
                                   path.endswith(".id") or path in shape.ids)
    if what.startswith("Expected `str` matching regex"):
        label = shape.ids.get(path, "The id")
        return path, (f"{label} {_value_at(line, path)!r} is not a slug: ids must be "
                      f"{schema.ID_RULE}.")
    got = re.match(r"Expected `([^`]+)`, got `([^`]+)`", what)
    if got:
        if path == "$":
            return path, (f"The line is {_type_word(got[2])}, not a {shape.noun}; each line must "
                          f"be one JSON object with {shape.needs()}.")
        wanted = " or ".join(_type_word(t) for t in got[1].split(" | "))
        if got[2] == "null":
            return path, f"`{path}` is null, but it is required and must be {wanted}."
        return path, f"`{path}` must be {wanted}, not {_type_word(got[2])}."
    return path, f"`{path}`: {what}."


def _explain_key(path: str, line: bytes, shape: Shape) -> tuple[str | None, str]:
    """A key of the object at ``path`` breaks the id rule (a label's rubric id)."""
    what = shape.keys.get(shape.pattern(path), "key")
    obj = _value_at(line, path)
    keys = list(obj) if isinstance(obj, dict) else []
    bad = next((k for k in keys if not schema.is_id(k)), None)
    rule = f"{what}s must be {schema.ID_RULE}"
    if bad is None:
        return path, f"`{path}` has a key that is not a valid {what}: {rule}."
    if len(bad) > schema.MAX_ID_CHARS:
        return path, (f"`{path}` has a {what} (a key) of {len(bad):,} characters "
                      f"({shown_name(bad[:40])!r}...); {rule}.")
    if not bad:
        return _key_path(path, bad), f"`{path}` has an empty {what} (a key); {rule}."
    return _key_path(path, bad), (f"`{path}` has the {what} {shown_name(bad)!r} (a key), which is "
                                  f"not a slug: {rule}.")


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name ``name`` most likely stands for (case, ``_`` and ``-`` ignored first,
    then the closest spelling), or None: for the "did you mean" of every sentence."""
    known = list(known)
    normal = {k.lower().replace("_", "").replace("-", ""): k for k in known}
    found = normal.get(name.lower().replace("_", "").replace("-", ""))
    return found or next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.6)), None)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` Did you mean `x`?`` for the nearest known name, or nothing."""
    found = nearest(name, known)
    return f" Did you mean `{found}`?" if found and found != name else ""


def _unknown_field(name: str, parent: str, shape: Shape) -> str:
    known = shape.fields.get(shape.pattern(parent), ())
    hint = did_you_mean(name, known)
    listed = ", ".join(f"`{k}`" for k in known if k not in shape.unlisted)
    where = f"the {shape.noun}" if parent == "$" else f"`{parent}`"
    return (f"Unknown field `{shown_name(name)}` in {where}.{hint} Known fields: {listed}. "
            "Use --allow-unknown-fields to ignore unknown fields.")


def shown_name(name: str, limit: int = 80) -> str:
    """A name from the data as a sentence may show it: control characters (a terminal would
    obey them) escaped, and a very long name cut, saying how long it is."""
    if not name.isprintable():
        name = json.dumps(name, ensure_ascii=False)[1:-1]
    if len(name) > limit:
        name = f"{name[:limit]}... ({len(name):,} characters)"
    return name


def _length_error(path: str, kind: str, op: str, limit: int, line: bytes, is_id: bool) -> str:
    value = _value_at(line, path)
    size = len(value) if isinstance(value, (str, list, dict)) else None
    if is_id:
        if op == ">=":
            return f"The id at `{path}` is empty; ids must be non-empty."
        return f"The id at `{path}` is {size:,} characters; ids allow at most {limit:,}."
    if kind == "str":
        return (f"`{path}` is {size:,} characters long; text fields allow at most {limit:,} "
                "characters.")
    return f"`{path}` has {size:,} items; at most {limit:,} are allowed."


def _type_word(name: str) -> str:
    return _TYPE_WORDS.get(name, f"`{name}`")


def _utf8_error_at(line: bytes) -> int | None:
    try:
        line.decode("utf-8")
        return None
    except UnicodeDecodeError as err:
        return err.start


def _walk(value: Any, path: str) -> Any:
    for name, index, key in _PATH_PART.findall(path):
        try:
            value = value[name] if name else value[json.loads(key)] if key else value[int(index)]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _value_at(line: bytes, path: str) -> Any:
    """The value at ``path`` read without the case's type or caps (error path only)."""
    try:
        return _walk(msgspec.json.decode(line), path)
    except (msgspec.DecodeError, RecursionError):
        return None


def _lenient_load(line: bytes, **options: Any) -> Any:
    # The stdlib parser accepts lone surrogates and NaN (and, with strict=False, raw control
    # characters in strings), which lets us point at the field.
    try:
        return json.loads(line.decode("utf-8", "surrogatepass"), **options)
    except (ValueError, RecursionError):
        return None


_key_path = schema.key_path


def _find(value: Any, test: Any) -> str | None:
    """The JSON path of the first value or key (depth first, in document order) passing ``test``.

    Iterative: a value nested just under the parser's limit must not exhaust the stack here.
    """
    todo: list[tuple[Any, str]] = [(value, "$")]
    while todo:
        item, path = todo.pop()
        if test(item):
            return path
        if isinstance(item, dict):
            children = []
            for key, child in item.items():
                if test(key):
                    children.append((key, _key_path(path, key)))
                    break
                children.append((child, _key_path(path, key)))
            todo.extend(reversed(children))
        elif isinstance(item, list):
            todo.extend((item[i], f"{path}[{i}]") for i in range(len(item) - 1, -1, -1))
    return None


def _surrogate_path(line: bytes) -> str | None:
    def has_surrogate(v: Any) -> bool:
        return isinstance(v, str) and any("\ud800" <= c <= "\udfff" for c in v)

    return _find(_lenient_load(line), has_surrogate)


class _OutOfRange:
    """Marks a number msgspec cannot hold (a float overflow, an integer of thousands of digits)."""


def _out_of_range_path(line: bytes) -> str | None:
    marker = _OutOfRange()

    def parse_float(text: str) -> Any:
        return marker if math.isinf(float(text)) else 0.0

    def parse_int(text: str) -> Any:
        return marker if len(text) > _MAX_INT_DIGITS else 0

    return _find(_lenient_load(line, parse_float=parse_float, parse_int=parse_int),
                 lambda v: v is marker)


def _control_path(line: bytes, pos: int) -> str:
    """The path of the string holding the raw control character at byte ``pos``."""
    # The same character may also appear escaped elsewhere: mark this very byte instead.
    # Any private-use character the line lacks will do (hypothesis found a line holding
    # the four this once tried): the search ends unless the line holds all 131,068.
    marker = next((c for c in map(chr, range(0x10FFFD, 0xEFFFF, -1)) if c.encode() not in line),
                  None)
    if marker is None:
        return "$"
    marked = line[:pos] + marker.encode() + line[pos + 1:]
    return _find(_lenient_load(marked, strict=False),
                 lambda v: isinstance(v, str) and marker in v) or "$"


class _Pairs(dict[str, Any]):
    """A JSON object that remembers which keys it was given more than once."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.repeated: set[str] = set()
        if len(self) < len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                (self.repeated if key in seen else seen).add(key)


def _repeated_key(line: bytes, path: str) -> str | None:
    """A sentence for a field given twice in its object (JSON readers disagree on which wins)."""
    if path == "$" or "[...]" in path:
        return None
    parent, last = _split_path(path)
    if last is None:
        return None
    obj = _walk(_lenient_load(line, object_pairs_hook=_Pairs), parent)
    if isinstance(obj, _Pairs) and last in obj.repeated:
        return (f"`{path}` is given more than once in the same object; give each field once "
                "(JSON readers disagree on which copy counts).")
    return None


def _split_path(path: str) -> tuple[str, str | None]:
    parts = list(re.finditer(_PATH_PART, path))
    if not parts:
        return path, None
    last = parts[-1]
    name = last[1] or (json.loads(last[3]) if last[3] else None)
    return path[:last.start()], name


def _nonfinite_path(line: bytes) -> str:
    def nonfinite(v: Any) -> bool:
        return isinstance(v, float) and (v != v or v in (float("inf"), float("-inf")))

    return _find(_lenient_load(line), nonfinite) or "$"


def _name_label(line: bytes, path: str) -> str:
    """Replace msgspec's ``[...]`` for a dict key with the key of the first invalid label."""
    if not path.startswith("$.expected[...]"):
        return path
    labels = _value_at(line, "$.expected")
    if isinstance(labels, dict):
        label_type = schema.Label
        for key, value in labels.items():
            try:
                msgspec.convert(value, label_type)
            except msgspec.ValidationError:
                return path.replace("[...]", f"[{json.dumps(key, ensure_ascii=False)}]", 1)
    return path
