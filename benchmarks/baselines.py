"""Baseline pipelines: the same job done with msgspec, pydantic, stdlib json and jq.

``python -m benchmarks baseline NAME IN.jsonl OUT.jsonl``

Every baseline reads ``IN`` line by line (jq: as a stream of JSON values, see ``run_jq``),
validates each case against ``benchmarks.spec``, projects it onto the judge-state names (only
the fields present, in ``STATE_NAMES`` order, nested keys in schema order) and writes
``{"case_id": ..., "state": {...}}`` a line to ``OUT``.
Invalid lines are counted and left out. Each prints one JSON summary line
``{"baseline": ..., "cases": ..., "rejects": ...}`` on stderr and exits 1 if anything was
rejected, else 0. ``lines`` only counts lines (the I/O floor) and writes nothing.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Annotated, Any, Literal, NoReturn

import msgspec

from benchmarks.spec import (
    CASE_ID_ONIG,
    CASE_ID_PY,
    CASE_KEYS,
    ID_CAP,
    LABEL_KEYS,
    LABEL_SOURCES,
    LABEL_STATUSES,
    LIST_CAP,
    MESSAGE_KEYS,
    PASSAGE_KEYS,
    ROLES,
    STATE_NAMES,
    TEXT_CAP,
    TOOL_EVENT_KEYS,
    TOOL_STATUSES,
)

READ_BUFFER = 1 << 20
WRITE_CHUNK = 1 << 20
SHOWN_REJECTS = 5


@dataclass
class Stats:
    """What a baseline saw: valid cases written (``None`` if not counted) and lines rejected;
    blank lines are neither."""

    name: str
    cases: int | None = 0
    rejects: int = 0
    examples: list[str] = field(default_factory=list)

    def reject(self, line_number: int, reason: object) -> None:
        """Count a rejected line, keeping the first few reasons for the report."""
        self.rejects += 1
        if len(self.examples) < SHOWN_REJECTS:
            self.examples.append(f"line {line_number}: {str(reason)[:200]}")

    def report(self) -> int:
        """Print the summary (and first rejects) on stderr; return the exit status."""
        for example in self.examples:
            print(f"{self.name}: rejected {example}", file=sys.stderr)
        summary = {"baseline": self.name, "cases": self.cases, "rejects": self.rejects}
        print(json.dumps(summary), file=sys.stderr)
        return 1 if self.rejects else 0


class ChunkedWriter:
    """Collects output lines (without newline) and writes them in ~``WRITE_CHUNK`` pieces."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._lines: list[bytes] = []
        self._size = 0

    def add(self, line: bytes) -> None:
        """Queue one line; flushes once the queue holds about ``WRITE_CHUNK`` bytes."""
        self._lines.append(line)
        self._size += len(line)
        if self._size >= WRITE_CHUNK:
            self.flush()

    def flush(self) -> None:
        """Write every queued line, each followed by a newline."""
        if self._lines:
            self._lines.append(b"")
            self._out.write(b"\n".join(self._lines))
            self._lines, self._size = [], 0


Convert = Callable[[bytes], bytes]


def run_lines_through(
    name: str, src: Path, dst: Path, convert: Convert, errors: tuple[type[Exception], ...]
) -> Stats:
    """Apply ``convert`` to each line of ``src`` and write the results to ``dst``.

    A line whose conversion raises one of ``errors`` is rejected, unless it is blank.
    """
    stats = Stats(name)
    cases = 0
    with open(src, "rb", buffering=READ_BUFFER) as lines, open(dst, "wb") as out:
        writer = ChunkedWriter(out)
        for number, line in enumerate(lines, 1):
            try:
                writer.add(convert(line))
            except errors as exc:
                if not line.isspace():
                    stats.reject(number, exc)
            else:
                cases += 1
        writer.flush()
    stats.cases = cases
    return stats


# --- lines: the I/O floor ------------------------------------------------------------------


def run_lines(src: Path, dst: Path) -> Stats:
    """Count the lines of ``src`` (the time it takes is the floor of any line reader)."""
    with open(src, "rb", buffering=READ_BUFFER) as lines:
        count = sum(1 for _ in lines)
    return Stats("lines", cases=count)


# --- msgspec -------------------------------------------------------------------------------
# Declared as evalstream/schema.py declares its strict Structs (same caps, enums, defaults and
# options), except the case-id pattern: see ``spec.CASE_ID_PY``.

Text = Annotated[str, msgspec.Meta(max_length=TEXT_CAP)]
CaseId = Annotated[str, msgspec.Meta(min_length=1, max_length=ID_CAP, pattern=CASE_ID_PY)]
ItemId = Annotated[str, msgspec.Meta(min_length=1, max_length=ID_CAP)]
# Any JSON value; a string among them is still a text field.
ToolValue = Text | dict[str, Any] | list[Any] | int | float | bool | None
_OPTIONS: dict[str, Any] = {"forbid_unknown_fields": True, "gc": False, "omit_defaults": True}


class Message(msgspec.Struct, **_OPTIONS):
    id: ItemId
    role: Literal["system", "user", "assistant", "tool"]
    content: Text


class Passage(msgspec.Struct, **_OPTIONS):
    id: ItemId
    text: Text


class ToolEvent(msgspec.Struct, **_OPTIONS):
    id: ItemId
    name: Text
    status: Literal["success", "failure"]
    input: ToolValue = None
    output: ToolValue = None
    error: Text | None = None


class Label(msgspec.Struct, **_OPTIONS):
    status: Literal["pass", "fail", "na"]
    source: Literal["synthetic", "human", "imported"]


class Case(msgspec.Struct, rename={"tool_events": "toolEvents"}, **_OPTIONS):
    id: CaseId
    input: Text
    output: Text
    messages: Annotated[list[Message], msgspec.Meta(max_length=LIST_CAP)] | None = None
    context: Annotated[list[Passage], msgspec.Meta(max_length=LIST_CAP)] | None = None
    policy: Text | None = None
    tool_events: Annotated[list[ToolEvent], msgspec.Meta(max_length=LIST_CAP)] | None = None
    metadata: dict[str, Any] | None = None
    expected: dict[str, Label] | None = None


# Judge-state name -> Case attribute, in state order (as evalstream.state.FIELD_OF).
_STATE_ATTRS = tuple(
    (name, "tool_events" if field == "toolEvents" else field) for field, name in STATE_NAMES.items()
)


def msgspec_state(case: Case) -> dict[str, Any]:
    """Return the judge state of a decoded case, as evalstream builds it: the present fields
    by state name; the Structs are encoded as they are (``omit_defaults`` leaves out a tool
    event's absent ``input``/``output``/``error``)."""
    return {
        name: value for name, attr in _STATE_ATTRS if (value := getattr(case, attr)) is not None
    }


def run_msgspec(src: Path, dst: Path) -> Stats:
    """The msgspec floor: typed decode with caps, a dict per state, one reused encoder."""
    decode = msgspec.json.Decoder(Case).decode
    encode = msgspec.json.Encoder().encode

    def convert(line: bytes) -> bytes:
        case = decode(line)
        return encode({"case_id": case.id, "state": msgspec_state(case)})

    return run_lines_through("msgspec", src, dst, convert, (msgspec.DecodeError, RecursionError))


# --- pydantic ------------------------------------------------------------------------------


def run_pydantic(src: Path, dst: Path) -> Stats:
    """pydantic v2: ``model_validate_json`` a line, then ``model_dump_json`` of an output
    model holding the case (serialisation aliases give the state names)."""
    from benchmarks.pydantic_case import ROW_EXCLUDE, Case, Row

    validate = Case.model_validate_json

    def convert(line: bytes) -> bytes:
        case = validate(line)
        row = Row(case_id=case.id, state=case)
        return row.model_dump_json(by_alias=True, exclude_none=True, exclude=ROW_EXCLUDE).encode()

    return run_lines_through("pydantic", src, dst, convert, (ValueError,))


# --- stdlib json ---------------------------------------------------------------------------


class Invalid(ValueError):
    """A case that parsed as JSON but breaks a rule of ``benchmarks.spec``."""


_CASE_ID = re.compile(CASE_ID_PY)
_CASE_KEYS = frozenset(CASE_KEYS)
_ROLES, _TOOL_STATUSES = frozenset(ROLES), frozenset(TOOL_STATUSES)
_LABEL_STATUSES, _LABEL_SOURCES = frozenset(LABEL_STATUSES), frozenset(LABEL_SOURCES)
_MESSAGE_KEYS = frozenset(MESSAGE_KEYS)
_PASSAGE_KEYS = frozenset(PASSAGE_KEYS)
_TOOL_KEYS = frozenset(TOOL_EVENT_KEYS)
_LABEL_KEYS = frozenset(LABEL_KEYS)


def _text(value: object, where: str) -> str:
    """Return ``value`` if it is a string within the text cap, else raise ``Invalid``."""
    if type(value) is not str or len(value) > TEXT_CAP:
        raise Invalid(f"{where}: expected a string of at most {TEXT_CAP} characters")
    return value


def _optional_text(value: object, where: str) -> str | None:
    """Return ``value`` if it is ``None`` or a text field, else raise ``Invalid``."""
    return None if value is None else _text(value, where)


def _item_id(value: object, where: str) -> str:
    """Return ``value`` if it is a string of 1 to ``ID_CAP`` characters, else raise."""
    if type(value) is not str or not 0 < len(value) <= ID_CAP:
        raise Invalid(f"{where}: expected a string of 1 to {ID_CAP} characters")
    return value


def _enum(value: object, allowed: frozenset[str], where: str) -> str:
    """Return ``value`` if it is one of the ``allowed`` strings, else raise ``Invalid``."""
    if type(value) is not str or value not in allowed:
        raise Invalid(f"{where}: expected one of {sorted(allowed)}")
    return value


def _object(value: object, keys: frozenset[str], where: str) -> dict[str, Any]:
    """Return ``value`` if it is an object with no key outside ``keys``, else raise."""
    if type(value) is not dict:
        raise Invalid(f"{where}: expected an object")
    if not keys.issuperset(value):
        raise Invalid(f"{where}: unknown keys {sorted(set(value) - keys)}")
    return value


def _list(value: object, where: str) -> list[Any]:
    """Return ``value`` if it is a list within the item cap, else raise ``Invalid``."""
    if type(value) is not list or len(value) > LIST_CAP:
        raise Invalid(f"{where}: expected a list of at most {LIST_CAP} items")
    return value


def _message(value: object) -> dict[str, str]:
    """Validate a message; return it with its keys in schema order."""
    m = _object(value, _MESSAGE_KEYS, "message")
    return {
        "id": _item_id(m.get("id"), "message.id"),
        "role": _enum(m.get("role"), _ROLES, "message.role"),
        "content": _text(m.get("content"), "message.content"),
    }


def _passage(value: object) -> dict[str, str]:
    """Validate a context passage; return it with its keys in schema order."""
    p = _object(value, _PASSAGE_KEYS, "passage")
    return {"id": _item_id(p.get("id"), "passage.id"), "text": _text(p.get("text"), "passage.text")}


def _tool_event(value: object) -> dict[str, Any]:
    """Validate a tool event; return it in schema order without its null/absent fields."""
    t = _object(value, _TOOL_KEYS, "toolEvent")
    event = {
        "id": _item_id(t.get("id"), "toolEvent.id"),
        "name": _text(t.get("name"), "toolEvent.name"),
        "status": _enum(t.get("status"), _TOOL_STATUSES, "toolEvent.status"),
    }
    for key in ("input", "output"):
        # Any JSON value, but a string is a text field.
        if type(tool_value := t.get(key)) is str:
            event[key] = _text(tool_value, f"toolEvent.{key}")
        elif tool_value is not None:
            event[key] = tool_value
    if (error := _optional_text(t.get("error"), "toolEvent.error")) is not None:
        event["error"] = error
    return event


def _check_expected(value: object) -> None:
    """Raise ``Invalid`` unless ``value`` maps rubric ids to valid labels."""
    if type(value) is not dict:
        raise Invalid("expected: expected an object")
    for label in value.values():
        label = _object(label, _LABEL_KEYS, "expected label")
        _enum(label.get("status"), _LABEL_STATUSES, "expected.status")
        _enum(label.get("source"), _LABEL_SOURCES, "expected.source")


def _items(case: dict[str, Any], key: str, item: Callable[[object], Any]) -> list[Any] | None:
    """Validate the optional list ``case[key]`` item by item; ``None`` if absent or null."""
    value = case.get(key)
    return None if value is None else [item(v) for v in _list(value, key)]


def json_state(value: object) -> tuple[str, dict[str, Any]]:
    """Validate a parsed case; return its id and judge state, or raise ``Invalid``."""
    case = _object(value, _CASE_KEYS, "case")
    case_id = case.get("id")
    if type(case_id) is not str or len(case_id) > ID_CAP or not _CASE_ID.search(case_id):
        raise Invalid(f"id: expected 1 to {ID_CAP} characters, no whitespace and no '/'")
    state: dict[str, Any] = {
        "user_input": _text(case.get("input"), "input"),
        "assistant_response": _text(case.get("output"), "output"),
    }
    optional = {
        "conversation": _items(case, "messages", _message),
        "reference_material": _items(case, "context", _passage),
        "policy": _optional_text(case.get("policy"), "policy"),
        "tool_events": _items(case, "toolEvents", _tool_event),
    }
    state.update((name, value) for name, value in optional.items() if value is not None)
    if (metadata := case.get("metadata")) is not None and type(metadata) is not dict:
        raise Invalid("metadata: expected an object")
    if case.get("expected") is not None:
        _check_expected(case["expected"])
    return case_id, state


def _not_json(constant: str) -> NoReturn:
    """``parse_constant`` hook: ``NaN`` and ``Infinity`` are Python's extensions, not JSON."""
    raise Invalid(f"{constant} is not JSON")


def _finite(number: str) -> float:
    """``parse_float`` hook: reject a number too large for a double (msgspec does too)."""
    value = float(number)
    if math.isinf(value):
        raise Invalid(f"number out of range: {number[:20]}")
    return value


def run_json(src: Path, dst: Path) -> Stats:
    """stdlib json: strict parse (no ``NaN``/``Infinity``, no overflow to ``inf``), hand-written
    checks, ``json.dumps`` (UTF-8, compact)."""
    loads = json.JSONDecoder(parse_float=_finite, parse_constant=_not_json).decode
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def convert(line: bytes) -> bytes:
        case_id, state = json_state(loads(line.decode()))
        return dumps({"case_id": case_id, "state": state}).encode()

    return run_lines_through("json", src, dst, convert, (ValueError, RecursionError))


# --- jq ------------------------------------------------------------------------------------

JQ_PROGRAM = r"""
def text: type == "string" and length <= $text_cap;
def item_id: type == "string" and length > 0 and length <= $id_cap;
def optional(f): . == null or f;
def one_of($values): type == "string" and (. as $v | any($values[]; . == $v));
def closed($keys): type == "object" and ((keys_unsorted - $keys) | length) == 0;
def list(f): type == "array" and length <= $list_cap and all(.[]; f);
def finite: all(..; type != "number" or ((isinfinite or isnan) | not));
def tool_value: (type != "string" or length <= $text_cap) and finite;
def message: closed($message_keys)
  and (.id | item_id) and (.role | one_of($roles)) and (.content | text);
def passage: closed($passage_keys) and (.id | item_id) and (.text | text);
def tool_event: closed($tool_event_keys)
  and (.id | item_id) and (.name | text) and (.status | one_of($tool_statuses))
  and (.input | tool_value) and (.output | tool_value) and (.error | optional(text));
def rubric_label: closed($label_keys)
  and (.status | one_of($label_statuses)) and (.source | one_of($label_sources));
def valid_case: closed($case_keys)
  and (.id | type == "string" and length <= $id_cap and test($case_id))
  and (.input | text) and (.output | text)
  and (.messages | optional(list(message)))
  and (.context | optional(list(passage)))
  and (.policy | optional(text))
  and (.toolEvents | optional(list(tool_event)))
  and (.metadata | optional(type == "object" and finite))
  and (.expected | optional(type == "object" and all(.[]; rubric_label)));
def drop_nulls: with_entries(select(.value != null));
def each(f): if . == null then null else map(f) end;
def state: {
    user_input: .input,
    assistant_response: .output,
    conversation: (.messages | each({id, role, content})),
    reference_material: (.context | each({id, text})),
    policy: .policy,
    tool_events: (.toolEvents | each({id, name, status, input, output, error} | drop_nulls))
  } | drop_nulls;

if (try valid_case catch false)
then {case_id: .id, state: state}
else {reject: input_line_number} | stderr | empty
end
"""

REJECT_MARKER = b'{"reject":'


def jq_command(src: Path) -> list[str]:
    """Return the ``jq`` command line that validates and projects every line of ``src``."""
    args = {
        "text_cap": TEXT_CAP,
        "id_cap": ID_CAP,
        "list_cap": LIST_CAP,
        "roles": list(ROLES),
        "tool_statuses": list(TOOL_STATUSES),
        "label_statuses": list(LABEL_STATUSES),
        "label_sources": list(LABEL_SOURCES),
        "case_keys": list(CASE_KEYS),
        "message_keys": list(MESSAGE_KEYS),
        "passage_keys": list(PASSAGE_KEYS),
        "tool_event_keys": list(TOOL_EVENT_KEYS),
        "label_keys": list(LABEL_KEYS),
    }
    argv = ["jq", "--compact-output", "--arg", "case_id", CASE_ID_ONIG]
    for name, value in args.items():
        argv += ["--argjson", name, json.dumps(value)]
    return [*argv, JQ_PROGRAM, str(src)]


def run_jq(src: Path, dst: Path) -> Stats:
    """jq as a subprocess over ``src``; the wrapper only waits and counts the rejects.

    jq reads a stream of JSON values, not lines: a value may span lines, and a line that is
    not JSON stops jq (exit 2, reported as a failure) instead of being rejected. Reading raw
    lines (``-R`` + ``fromjson``) would fix that, but jq 1.6 then corrupts multi-byte UTF-8
    characters that straddle its 4 KiB read buffer (U+FFFD; jqlang/jq#2259).
    """
    stats = Stats("jq")
    with open(dst, "wb") as out:
        proc = subprocess.run(jq_command(src), stdout=out, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"jq failed ({proc.returncode}): {proc.stderr[-2000:].decode()}")
    stats.cases = None  # not counted: that would mean reading the output again
    stats.rejects = proc.stderr.count(REJECT_MARKER)
    return stats


BASELINES: dict[str, Callable[[Path, Path], Stats]] = {
    "lines": run_lines,
    "msgspec": run_msgspec,
    "pydantic": run_pydantic,
    "json": run_json,
    "jq": run_jq,
}


def main(name: str, src: Path, dst: Path) -> int:
    """Run baseline ``name`` on ``src`` → ``dst``; return 0, 1 if any line was rejected,
    or 2 if the baseline could not run (e.g. jq failed)."""
    try:
        stats = BASELINES[name](src, dst)
    except (OSError, RuntimeError) as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    return stats.report()
