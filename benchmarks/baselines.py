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
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Annotated, Any, Literal

import msgspec

from benchmarks.spec import (
    CASE_KEYS,
    LABEL_SOURCES,
    LABEL_STATUSES,
    LIST_CAP,
    ROLES,
    SLUG_ONIG,
    SLUG_PY,
    STR_CAP,
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

MStr = Annotated[str, msgspec.Meta(max_length=STR_CAP)]


class _Closed(msgspec.Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """Base of every struct: unknown keys are errors; ``None`` fields are not encoded."""


class Message(_Closed):
    id: MStr
    role: Literal["system", "user", "assistant", "tool"]
    content: MStr


class Passage(_Closed):
    id: MStr
    text: MStr


class ToolEvent(_Closed):
    id: MStr
    name: MStr
    status: Literal["success", "failure"]
    input: Any = None
    output: Any = None
    error: MStr | None = None


class Label(_Closed):
    status: Literal["pass", "fail", "na"]
    source: Literal["synthetic", "human", "imported"]


class Metadata(_Closed):
    scenario: MStr | None = None
    split: MStr | None = None


class Case(_Closed, rename="camel"):
    id: Annotated[str, msgspec.Meta(max_length=STR_CAP, pattern=SLUG_PY)]
    input: MStr
    output: MStr
    messages: Annotated[list[Message], msgspec.Meta(max_length=LIST_CAP)] | None = None
    context: Annotated[list[Passage], msgspec.Meta(max_length=LIST_CAP)] | None = None
    policy: MStr | None = None
    tool_events: Annotated[list[ToolEvent], msgspec.Meta(max_length=LIST_CAP)] | None = None
    metadata: Metadata | None = None
    expected: dict[MStr, Label] | None = None


def msgspec_state(case: Case) -> dict[str, Any]:
    """Return the judge state of a decoded case (structs are encoded as-is)."""
    state: dict[str, Any] = {"user_input": case.input, "assistant_response": case.output}
    if case.messages is not None:
        state["conversation"] = case.messages
    if case.context is not None:
        state["reference_material"] = case.context
    if case.policy is not None:
        state["policy"] = case.policy
    if case.tool_events is not None:
        state["tool_events"] = case.tool_events
    return state


def run_msgspec(src: Path, dst: Path) -> Stats:
    """The msgspec floor: typed decode with caps, a dict per state, one reused encoder."""
    decode = msgspec.json.Decoder(Case).decode
    encode = msgspec.json.Encoder().encode

    def convert(line: bytes) -> bytes:
        case = decode(line)
        return encode({"case_id": case.id, "state": msgspec_state(case)})

    return run_lines_through("msgspec", src, dst, convert, (msgspec.DecodeError,))


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


_SLUG = re.compile(SLUG_PY)
_CASE_KEYS = frozenset(CASE_KEYS)
_ROLES, _TOOL_STATUSES = frozenset(ROLES), frozenset(TOOL_STATUSES)
_LABEL_STATUSES, _LABEL_SOURCES = frozenset(LABEL_STATUSES), frozenset(LABEL_SOURCES)


def _str(value: object, where: str) -> str:
    """Return ``value`` if it is a string within the cap, else raise ``Invalid``."""
    if type(value) is not str or len(value) > STR_CAP:
        raise Invalid(f"{where}: expected a string of at most {STR_CAP} characters")
    return value


def _optional_str(value: object, where: str) -> str | None:
    """Return ``value`` if it is ``None`` or a string within the cap, else raise ``Invalid``."""
    return None if value is None else _str(value, where)


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


_MESSAGE_KEYS = frozenset(("id", "role", "content"))
_PASSAGE_KEYS = frozenset(("id", "text"))
_TOOL_KEYS = frozenset(("id", "name", "status", "input", "output", "error"))
_LABEL_KEYS = frozenset(("status", "source"))
_METADATA_KEYS = frozenset(("scenario", "split"))


def _message(value: object) -> dict[str, str]:
    """Validate a message; return it with its keys in schema order."""
    m = _object(value, _MESSAGE_KEYS, "message")
    return {
        "id": _str(m.get("id"), "message.id"),
        "role": _enum(m.get("role"), _ROLES, "message.role"),
        "content": _str(m.get("content"), "message.content"),
    }


def _passage(value: object) -> dict[str, str]:
    """Validate a context passage; return it with its keys in schema order."""
    p = _object(value, _PASSAGE_KEYS, "passage")
    return {"id": _str(p.get("id"), "passage.id"), "text": _str(p.get("text"), "passage.text")}


def _tool_event(value: object) -> dict[str, Any]:
    """Validate a tool event; return it in schema order without its null/absent fields."""
    t = _object(value, _TOOL_KEYS, "toolEvent")
    event = {
        "id": _str(t.get("id"), "toolEvent.id"),
        "name": _str(t.get("name"), "toolEvent.name"),
        "status": _enum(t.get("status"), _TOOL_STATUSES, "toolEvent.status"),
    }
    for key in ("input", "output"):
        if t.get(key) is not None:
            event[key] = t[key]
    if (error := _optional_str(t.get("error"), "toolEvent.error")) is not None:
        event["error"] = error
    return event


def _check_metadata(value: object) -> None:
    """Raise ``Invalid`` unless ``value`` is metadata with string scenario/split, if any."""
    m = _object(value, _METADATA_KEYS, "metadata")
    _optional_str(m.get("scenario"), "metadata.scenario")
    _optional_str(m.get("split"), "metadata.split")


def _check_expected(value: object) -> None:
    """Raise ``Invalid`` unless ``value`` maps capped rubric ids to valid labels."""
    if type(value) is not dict:
        raise Invalid("expected: expected an object")
    for rubric, label in value.items():
        _str(rubric, "expected key")
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
    case_id = _str(case.get("id"), "id")
    if not _SLUG.match(case_id):
        raise Invalid("id: expected a slug")
    state: dict[str, Any] = {
        "user_input": _str(case.get("input"), "input"),
        "assistant_response": _str(case.get("output"), "output"),
    }
    optional = {
        "conversation": _items(case, "messages", _message),
        "reference_material": _items(case, "context", _passage),
        "policy": _optional_str(case.get("policy"), "policy"),
        "tool_events": _items(case, "toolEvents", _tool_event),
    }
    state.update((name, value) for name, value in optional.items() if value is not None)
    if case.get("metadata") is not None:
        _check_metadata(case["metadata"])
    if case.get("expected") is not None:
        _check_expected(case["expected"])
    return case_id, state


def run_json(src: Path, dst: Path) -> Stats:
    """stdlib json: ``json.loads``, hand-written checks, ``json.dumps`` (UTF-8, compact)."""
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def convert(line: bytes) -> bytes:
        case_id, state = json_state(json.loads(line))
        return dumps({"case_id": case_id, "state": state}).encode()

    return run_lines_through("json", src, dst, convert, (ValueError, RecursionError))


# --- jq ------------------------------------------------------------------------------------

JQ_PROGRAM = r"""
def str: type == "string" and length <= $str_cap;
def optional(f): . == null or f;
def one_of($values): type == "string" and (. as $v | any($values[]; . == $v));
def closed($keys): type == "object" and ((keys_unsorted - $keys) | length) == 0;
def list(f): type == "array" and length <= $list_cap and all(.[]; f);
def message: closed(["id", "role", "content"])
  and (.id | str) and (.role | one_of($roles)) and (.content | str);
def passage: closed(["id", "text"]) and (.id | str) and (.text | str);
def tool_event: closed(["id", "name", "status", "input", "output", "error"])
  and (.id | str) and (.name | str) and (.status | one_of($tool_statuses))
  and (.error | optional(str));
def rubric_label: closed(["status", "source"])
  and (.status | one_of($label_statuses)) and (.source | one_of($label_sources));
def metadata: closed(["scenario", "split"])
  and (.scenario | optional(str)) and (.split | optional(str));
def expected: type == "object"
  and all(to_entries[]; (.key | length <= $str_cap) and (.value | rubric_label));
def valid_case: closed($case_keys)
  and (.id | str and test($slug))
  and (.input | str) and (.output | str)
  and (.messages | optional(list(message)))
  and (.context | optional(list(passage)))
  and (.policy | optional(str))
  and (.toolEvents | optional(list(tool_event)))
  and (.metadata | optional(metadata))
  and (.expected | optional(expected));
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
        "str_cap": STR_CAP,
        "list_cap": LIST_CAP,
        "roles": list(ROLES),
        "tool_statuses": list(TOOL_STATUSES),
        "label_statuses": list(LABEL_STATUSES),
        "label_sources": list(LABEL_SOURCES),
        "case_keys": list(CASE_KEYS),
    }
    argv = ["jq", "--compact-output", "--arg", "slug", SLUG_ONIG]
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
