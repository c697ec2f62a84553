"""Check that the baselines agree, with each other and with evalstream.

``python -m benchmarks check [IN.jsonl ...]``

1. Edge cases: every baseline runs on each line of a built-in list of valid and invalid cases
   (caps at the limit and one past it, case ids with each whitespace character, bad enums,
   unknown keys, free-form metadata, tool values of every JSON type, numbers out of range,
   nulls, escapes...) and must give the expected verdict (written, rejected or skipped) and
   the same output as msgspec, up to number spelling. A few (baseline, case) pairs are known
   to differ and are listed with the reason instead (jq stops at a line that is not JSON and
   holds numbers as doubles; pydantic's parser stops at depth 200).
2. Each ``IN.jsonl`` given: every baseline runs on the whole file; none may reject anything,
   and the outputs must be byte-identical to msgspec's (jq: equal up to number format).

``python -m benchmarks check-evalstream [IN.jsonl ...]``

Runs ``python -m evalstream build IN OUT --rubrics benchmarks/all_fields.toml`` (with a token
budget no state reaches, so that nothing is skipped) and the msgspec baseline on the edge
cases, then on each ``IN``, and compares the ``state`` of each record, byte for byte and in
order. It first compares ``benchmarks.spec`` with ``evalstream.schema``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

import msgspec

from benchmarks import spec
from benchmarks.baselines import BASELINES
from benchmarks.compare import classify, compare

CHECKED = ("msgspec", "json", "pydantic", "jq")
REFERENCE = "msgspec"
# What each baseline's output may differ by from msgspec's, beyond being identical.
ALLOWED = {
    "json": {"same-value"},
    "pydantic": {"same-value"},
    "jq": {"same-value", "number-format"},
}
ROOT = Path(__file__).resolve().parent.parent
ALL_FIELDS = ROOT / "benchmarks" / "all_fields.toml"
NO_BUDGET = 10**9  # tokens: more than any state holds, so evalstream skips nothing

_OK = {"id": "minimal", "input": "hi", "output": "yo"}
_TOOL = {"id": "t1", "name": "n", "status": "success"}
_LABEL = {"status": "pass", "source": "human"}
# Every character Python's `\s` (and so evalstream's case-id pattern) counts as whitespace.
WHITESPACE = [c for c in map(chr, range(0x110000)) if c.isspace()]
# Characters that look like space but are not whitespace to Python.
NOT_WHITESPACE = ("\u200b", "\u180e", "\ufeff", "\u00ad", "\x1b", "\x7f", "\x00")

_NOT_JSON = "not JSON: jq reads a stream of JSON values and stops here (exit 2)"
_JQ_BAD_UTF8 = "jq replaces invalid UTF-8 with U+FFFD instead of failing"
_JQ_DOUBLES = "jq holds every number as a double: big integers lose digits or overflow"
_JQ_DEPTH = "jq 1.6 stops (exit 2) at a nesting depth over 256"
_PYDANTIC_DEPTH = "pydantic's JSON parser stops at a nesting depth of 200 (msgspec: ~1,000)"


@dataclass(frozen=True)
class Edge:
    """One edge case: its line and the verdict every baseline must give (ok, reject, skip).

    ``skip`` names baselines that are not run on it and ``loose`` ones whose verdict or output
    may differ from msgspec's, each with the reason.
    """

    name: str
    verdict: str
    line: bytes
    skip: dict[str, str] = field(default_factory=dict)
    loose: dict[str, str] = field(default_factory=dict)


def _case(name: str, /, **fields: Any) -> bytes:
    """Return the minimal valid case, named ``name``, with ``fields`` replaced (``...``
    removes a field). The id is the name unless given, so ids are unique across the edge
    cases (evalstream rejects a repeated id)."""
    case = {**_OK, "id": name, **fields}
    return json.dumps({k: v for k, v in case.items() if v is not ...}, ensure_ascii=False).encode()


def _messages(n: int, **fields: Any) -> list[dict[str, Any]]:
    """``n`` valid messages with distinct ids (evalstream rejects repeated item ids)."""
    return [{"id": f"m{i}", "role": "user", "content": "x", **fields} for i in range(n)]


def _tool(name: str, /, **fields: Any) -> bytes:
    """A case named ``name`` whose one tool event has ``fields`` replaced."""
    return _case(name, toolEvents=[{**_TOOL, **fields}])


def _deep(depth: int) -> bytes:
    """Empty arrays nested ``depth`` deep, as JSON (too deep for ``json.dumps``)."""
    return b"[" * depth + b"]" * depth


def _edges() -> Iterator[Edge]:
    """Every edge case, in a fixed order."""
    def e(name: str, verdict: str, line: bytes | None = None, /, **fields: Any) -> Edge:
        return Edge(name, verdict, _case(name, **fields) if line is None else line)

    yield e("minimal", "ok")
    yield e("no-output", "reject", output=...)
    yield e("no-id", "reject", id=...)
    yield e("input-number", "reject", input=5)
    yield e("input-bool", "reject", input=True)
    yield e("input-null", "reject", input=None)
    yield e("unknown-key", "reject", extra=1)
    yield e("unknown-key-null", "reject", extra=None)
    yield e("snake-case-tool-events", "reject", tool_events=[_TOOL])
    # Case ids: 1-512 characters, no whitespace, no '/'.
    yield e("id-empty", "reject", id="")
    yield e("id-number", "reject", id=5)
    yield e("id-slash", "reject", id="a/b")
    yield e("id-leading-dash", "ok", id="-a.b:c@d")
    yield e("id-non-ascii", "ok", id="café-予約-😀")
    yield e("id-512", "ok", id="i" * 512)
    yield e("id-513", "reject", id="i" * 513)
    yield e("id-512-4-byte", "ok", id="😀" * 512)
    yield e("id-513-4-byte", "reject", id="😀" * 513)
    yield e("id-trailing-newline", "reject", id="abc\n")
    for c in WHITESPACE:
        yield e(f"id-whitespace-U+{ord(c):04X}", "reject", id=f"a{c}b")
    for c in NOT_WHITESPACE:
        yield e(f"id-not-whitespace-U+{ord(c):04X}", "ok", id=f"a{c}b-{ord(c):x}")
    # Item ids: 1-512 characters, anything else goes.
    yield e("message-id-space-slash", "ok", messages=_messages(1, id="m 1/\n"))
    yield e("message-id-empty", "reject", messages=_messages(1, id=""))
    yield e("message-id-512", "ok", messages=_messages(1, id="m" * 512))
    yield e("message-id-513", "reject", messages=_messages(1, id="m" * 513))
    yield e("message-id-number", "reject", messages=_messages(1, id=1))
    yield e("passage-id-empty", "reject", context=[{"id": "", "text": "t"}])
    yield e("passage-id-513", "reject", context=[{"id": "p" * 513, "text": "t"}])
    yield e("tool-id-empty", "reject", _tool("tool-id-empty", id=""))
    yield e("tool-id-513", "reject", _tool("tool-id-513", id="t" * 513))
    # Messages and passages.
    yield e("role-unknown", "reject", messages=_messages(1, role="bot"))
    yield e("message-no-content", "reject", messages=[{"id": "m1", "role": "user"}])
    yield e("message-content-null", "reject", messages=_messages(1, content=None))
    yield e("message-extra-key", "reject", messages=_messages(1, name="x"))
    yield e("messages-object", "reject", messages={"a": 1})
    yield e("messages-501", "reject", messages=_messages(501))
    yield e("messages-500", "ok", messages=_messages(500))
    yield e("messages-empty", "ok", messages=[])
    yield e("messages-null", "ok", messages=None)
    yield e("message-content-200001", "reject", messages=_messages(1, content="c" * 200_001))
    yield e("passage-text-number", "reject", context=[{"id": "p", "text": 1}])
    yield e("passage-text-200001", "reject", context=[{"id": "p", "text": "t" * 200_001}])
    yield e("passage-keys-reordered", "ok", context=[{"text": "t", "id": "p"}])
    yield e("context-501", "reject", context=[{"id": f"p{i}", "text": "t"} for i in range(501)])
    # Text fields: 200,000 characters (code points), whatever their UTF-8 size.
    yield e("input-200001", "reject", input="a" * 200_001)
    yield e("input-200000-2-byte", "ok", input="é" * 200_000)
    yield e("input-200000-4-byte", "ok", input="😀" * 200_000)
    yield e("input-200001-4-byte", "reject", input="😀" * 200_001)
    yield e("policy-null", "ok", policy=None)
    yield e("policy-number", "reject", policy=1)
    yield e("policy-200001", "reject", policy="p" * 200_001)
    # Tool events: any JSON input/output; a string there is a text field, nested ones are not.
    yield e("tool-nulls", "ok", toolEvents=[
        {**_TOOL, "input": {"a": None, "b": [None, 1]}, "output": None, "error": None}])
    yield e("tool-values", "ok", toolEvents=[
        {**_TOOL, "input": [1, "a", {"x": {"y": [True, False]}}], "output": "s"},
        {**_TOOL, "id": "t2", "output": 0, "error": "e", "status": "failure"},
        {**_TOOL, "id": "t3", "output": False, "input": -7},
        {**_TOOL, "id": "t4", "input": "", "output": 2.5}])
    yield e("tool-input-200000", "ok", _tool("tool-input-200000", input="😀" * 200_000))
    yield e("tool-input-200001", "reject", _tool("tool-input-200001", input="i" * 200_001))
    yield e("tool-output-200001", "reject", _tool("tool-output-200001", output="o" * 200_001))
    yield e("tool-nested-string-200001", "ok",
            _tool("tool-nested-string-200001", input={"q": "i" * 200_001}, output=["o" * 200_001]))
    yield e("tool-name-empty", "ok", _tool("tool-name-empty", name=""))
    yield e("tool-name-200001", "reject", _tool("tool-name-200001", name="n" * 200_001))
    yield e("tool-name-null", "reject", _tool("tool-name-null", name=None))
    yield e("tool-error-200001", "reject", _tool("tool-error-200001", error="e" * 200_001))
    yield e("tool-error-number", "reject", _tool("tool-error-number", error=5))
    yield e("tool-status-unknown", "reject", _tool("tool-status-unknown", status="ok"))
    yield e("tool-extra-key", "reject", _tool("tool-extra-key", foo=1))
    yield e("tool-no-id", "reject", toolEvents=[{"name": "n", "status": "success"}])
    yield e("tool-events-501", "reject",
            toolEvents=[{**_TOOL, "id": f"t{i}"} for i in range(501)])
    # Metadata: any JSON object.
    yield e("metadata-free-form", "ok",
            metadata={"scenario": 5, "x": {"y": [1, None, "z" * 200_001]}, "split": None})
    yield e("metadata-empty", "ok", metadata={})
    yield e("metadata-null", "ok", metadata=None)
    yield e("metadata-list", "reject", metadata=[1])
    yield e("metadata-string", "reject", metadata="dev")
    # Expected: rubric id (any string) -> {status, source}, both required enums.
    yield e("expected-empty", "ok", expected={})
    yield e("expected-key-200001", "ok", expected={"r" * 200_001: _LABEL, "": _LABEL})
    yield e("label-status-unknown", "reject", expected={"r": {**_LABEL, "status": "ok"}})
    yield e("label-source-unknown", "reject", expected={"r": {**_LABEL, "source": "llm"}})
    yield e("label-no-source", "reject", expected={"r": {"status": "pass"}})
    yield e("label-no-status", "reject", expected={"r": {"source": "human"}})
    yield e("label-extra-key", "reject", expected={"r": {**_LABEL, "note": "x"}})
    yield e("label-null", "reject", expected={"r": None})
    yield e("expected-list", "reject", expected=[1])
    # Numbers: finite doubles, integers up to 4,300 digits (Python's limit; msgspec's too).
    tool_input = b'{"id":"%s","input":"i","output":"o","toolEvents":[{"id":"t","name":"n",' \
                 b'"status":"success","input":%s}]}'
    yield e("floats", "ok", tool_input % (b"floats", b"[1.5e3,0.1,1E2,-0.0,1e-7,1e-400,-0]"))
    yield e("number-out-of-range", "reject", tool_input % (b"number-out-of-range", b"[1e400]"))
    yield e("number-out-of-range-metadata", "reject",
            b'{"id":"number-out-of-range-metadata","input":"i","output":"o",'
            b'"metadata":{"x":{"y":-1e400}}}')
    yield e("nan-literal", "reject", tool_input % (b"nan-literal", b"NaN"))
    yield e("infinity-literal-metadata", "reject",
            b'{"id":"infinity-literal-metadata","input":"i","output":"o","metadata":{"x":[Infinity]}}')
    yield Edge("int-30-digits", "ok", tool_input % (b"int-30-digits", b"9" * 30),
               loose={"jq": _JQ_DOUBLES})
    yield Edge("int-4300-digits", "ok", tool_input % (b"int-4300-digits", b"9" * 4300),
               loose={"jq": _JQ_DOUBLES})
    yield e("int-4301-digits", "reject", tool_input % (b"int-4301-digits", b"9" * 4301))
    yield e("nesting-150", "ok", tool_input % (b"nesting-150", _deep(150)))
    yield Edge("nesting-250", "ok", tool_input % (b"nesting-250", _deep(250)),
               loose={"pydantic": _PYDANTIC_DEPTH})
    yield Edge("nesting-5000", "reject", tool_input % (b"nesting-5000", _deep(5000)),
               skip={"jq": _JQ_DEPTH})
    # Lines.
    yield e("escapes", "ok", input='\t\n"\\\x01\x7f\u2028😀\x00', output="</script>")
    yield e("top-level-array", "reject", b"[1,2]")
    yield e("top-level-null", "reject", b"null")
    yield e("top-level-string", "reject", b'"minimal"')
    yield e("blank", "skip", b"")
    yield e("whitespace", "skip", b"  \t")
    yield e("escaped-surrogate-pair", "ok",
            b'{"id":"escaped-surrogate-pair","input":"\\ud83d\\ude00","output":"o"}')
    yield e("duplicate-key", "ok", b'{"id":"duplicate-key","input":"a","input":"b","output":"o"}')
    yield e("duplicate-key-in-tool-input", "ok",
            tool_input % (b"duplicate-key-in-tool-input", b'{"a":1,"b":2,"a":3}'))
    yield e("crlf", "ok", b'{"id":"crlf","input":"i","output":"o"}\r')
    yield Edge("not-json", "reject", b'{"id": x}', skip={"jq": _NOT_JSON})
    yield Edge("lone-surrogate", "reject",
               b'{"id":"lone-surrogate","input":"\\ud800","output":"o"}', skip={"jq": _NOT_JSON})
    yield Edge("invalid-utf8", "reject", b'{"id":"invalid-utf8","input":"\xff","output":"o"}',
               skip={"jq": _JQ_BAD_UTF8})


def edge_cases() -> list[Edge]:
    """Return every edge case (names are unique, and so are the ids of the valid ones)."""
    return list(_edges())


def _verdict(baseline: str, line: bytes, tmp: Path) -> tuple[str, bytes]:
    """Run ``baseline`` on the one-line file ``line``; return its verdict and output."""
    src, dst = tmp / "in.jsonl", tmp / "out.jsonl"
    src.write_bytes(line + b"\n")
    stats = BASELINES[baseline](src, dst)
    output = dst.read_bytes()
    return ("reject" if stats.rejects else "ok" if output else "skip"), output


def check_edge_cases(tmp: Path, say: Callable[[str], None]) -> bool:
    """Run every checked baseline on every edge case; report and return whether all agree."""
    good = True
    edges = edge_cases()
    known: list[str] = []
    for edge in edges:
        reference: bytes | None = None
        for baseline in CHECKED:
            if baseline in edge.skip:
                known.append(f"{edge.name}: {baseline} not run ({edge.skip[baseline]})")
                continue
            verdict, output = _verdict(baseline, edge.line, tmp)
            if baseline == REFERENCE:
                reference = output
            same = verdict == edge.verdict and (
                baseline == REFERENCE
                or classify(reference, output) in {"identical", *ALLOWED[baseline]})
            if baseline in edge.loose:
                if not same:
                    how = "output differs" if verdict == edge.verdict else f"says {verdict}"
                    known.append(f"{edge.name}: {baseline} {how} ({edge.loose[baseline]})")
            elif verdict != edge.verdict:
                say(f"edge case {edge.name}: {baseline} says {verdict}, expected {edge.verdict}")
                good = False
            elif not same:
                say(f"edge case {edge.name}: {baseline} output differs from {REFERENCE}'s")
                good = False
    for line in known:
        say(f"known difference: {line}")
    say(
        f"edge cases: {len(edges)} x {len(CHECKED)} baselines, {len(known)} known differences, "
        f"{'all others as expected' if good else 'MISMATCHES above'}"
    )
    return good


def check_file(path: Path, tmp: Path, say: Callable[[str], None]) -> bool:
    """Run every checked baseline on ``path``; return True if none rejects anything and every
    output matches msgspec's (within ``ALLOWED``)."""
    good = True
    outputs = {}
    for baseline in CHECKED:
        outputs[baseline] = tmp / f"{baseline}.jsonl"
        stats = BASELINES[baseline](path, outputs[baseline])
        say(f"{path.name}: {baseline}: cases={stats.cases} rejects={stats.rejects}")
        good &= stats.rejects == 0
    for baseline in CHECKED:
        if baseline == REFERENCE:
            continue
        result = compare(outputs[REFERENCE], outputs[baseline])
        kinds = ", ".join(f"{k}={n}" for k, n in sorted(result.counts.items()))
        allowed = {"identical", *ALLOWED[baseline]}
        ok = set(result.counts) <= allowed
        say(f"{path.name}: {REFERENCE} vs {baseline}: {kinds}{'' if ok else '  <-- NOT OK'}")
        good &= ok
    return good


def main(inputs: list[Path]) -> int:
    """Run the edge-case check and the check of each input; return 0 if all pass."""
    with tempfile.TemporaryDirectory(prefix="benchmarks-check-") as tmp:
        good = check_edge_cases(Path(tmp), print)
        for path in inputs:
            good &= check_file(path, Path(tmp), print)
    return 0 if good else 1


# --- against evalstream ------------------------------------------------------------------------

# Edge cases where evalstream itself departs from the rule it states (see spec.CASE_ID_PY).
EVALSTREAM_KNOWN = {
    "id-trailing-newline": "evalstream's ID_PATTERN ends in `$`, which msgspec's re.search lets "
    "match before a final newline; `\\Z` (or `\\A...\\Z`) would reject it",
}


class BuildFailed(Exception):
    """evalstream's ``build`` could not run (exit status other than 0 or 1)."""


class _Record(msgspec.Struct):
    """The part of an output line compared: a baseline's line or an evalstream check record."""

    case_id: str
    state: msgspec.Raw


def _records(path: Path) -> Iterator[tuple[str, bytes]]:
    """(case id, state bytes exactly as written) for each line of ``path``."""
    decode = msgspec.json.Decoder(_Record).decode
    with open(path, "rb") as lines:
        for line in lines:
            record = decode(line)
            yield record.case_id, bytes(record.state)


def spec_differences() -> list[str]:
    """Where ``benchmarks.spec`` says something other than ``evalstream.schema`` does."""
    from typing import get_args

    from evalstream._cases import schema
    from evalstream._checks import state

    pairs: list[tuple[str, object, object]] = [
        ("TEXT_CAP", spec.TEXT_CAP, schema.MAX_TEXT_CHARS),
        ("LIST_CAP", spec.LIST_CAP, schema.MAX_ITEMS),
        ("ID_CAP", spec.ID_CAP, schema.MAX_ID_CHARS),
        ("ROLES", spec.ROLES, get_args(schema.Role)),
        ("TOOL_STATUSES", spec.TOOL_STATUSES, get_args(schema.ToolStatus)),
        ("LABEL_STATUSES", spec.LABEL_STATUSES, get_args(schema.LabelStatus)),
        ("LABEL_SOURCES", spec.LABEL_SOURCES, get_args(schema.LabelSource)),
        ("CASE_KEYS", spec.CASE_KEYS, schema.CASE_FIELDS),
        ("MESSAGE_KEYS", spec.MESSAGE_KEYS, schema.MESSAGE_FIELDS),
        ("PASSAGE_KEYS", spec.PASSAGE_KEYS, schema.PASSAGE_FIELDS),
        ("TOOL_EVENT_KEYS", spec.TOOL_EVENT_KEYS, schema.TOOL_EVENT_FIELDS),
        ("LABEL_KEYS", spec.LABEL_KEYS, schema.LABEL_FIELDS),
        ("STATE_NAMES", tuple(spec.STATE_NAMES.values()), tuple(state.STATE_NAMES)),
    ]
    return [f"{name}: benchmarks {ours!r}, evalstream {theirs!r}"
            for name, ours, theirs in pairs if ours != theirs]


def _build(src: Path, dst: Path) -> dict[str, Any]:
    """Run evalstream's ``build`` with the all-fields rubric; return its report."""
    report = dst.with_suffix(".report.json")
    argv = [sys.executable, "-m", "evalstream", "build", str(src), str(dst),
            "--rubrics", str(ALL_FIELDS), "--max-tokens", str(NO_BUDGET), "--quiet",
            "--report", str(report), "--rejects", str(dst.with_suffix(".rejects.jsonl"))]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
    if proc.returncode not in (0, 1):
        raise BuildFailed(f"evalstream build failed ({proc.returncode}): "
                           f"{proc.stderr[-2000:].decode(errors='replace')}")
    result: dict[str, Any] = json.loads(report.read_bytes())
    return result


@dataclass
class StateComparison:
    """How evalstream's states compared with the msgspec baseline's, record by record."""

    same: int = 0
    different: list[str] = field(default_factory=list)  # case ids, in order
    misaligned: str | None = None  # the first record where the case ids part ways

    @property
    def ok(self) -> bool:
        return not self.different and self.misaligned is None


def compare_states(ours: Path, theirs: Path) -> StateComparison:
    """Compare the (case id, state) records of two outputs in order; stop where ids part."""
    result = StateComparison()
    for n, (a, b) in enumerate(zip_longest(_records(ours), _records(theirs)), 1):
        if a is None or b is None or a[0] != b[0]:
            result.misaligned = (f"record {n}: baseline {a[0] if a else 'ended'!r}, "
                                 f"evalstream {b[0] if b else 'ended'!r}")
            break
        if a[1] == b[1]:
            result.same += 1
        else:
            result.different.append(a[0])
    return result


def check_evalstream_edges(tmp: Path, say: Callable[[str], None]) -> bool:
    """Run evalstream and the msgspec baseline on every edge case, one file; compare by id."""
    src, ours, theirs = tmp / "edges.jsonl", tmp / "msgspec.jsonl", tmp / "evalstream.jsonl"
    edges = edge_cases()
    src.write_bytes(b"".join(edge.line + b"\n" for edge in edges))
    stats = BASELINES[REFERENCE](src, ours)
    report = _build(src, theirs)
    baseline_states = dict(_records(ours))
    evalstream_states = dict(_records(theirs))
    good = True
    for edge in edges:
        try:
            case_id = json.loads(edge.line)["id"]
        except (ValueError, TypeError, KeyError, RecursionError):
            case_id = None
        a, b = baseline_states.get(case_id), evalstream_states.get(case_id)
        if a == b:
            continue
        what = ("states differ" if a is not None and b is not None
                else f"baseline {'writes' if a is not None else 'rejects'}, "
                     f"evalstream {'writes' if b is not None else 'rejects'}")
        if edge.name in EVALSTREAM_KNOWN:
            say(f"known difference: edge case {edge.name}: {what} "
                f"({EVALSTREAM_KNOWN[edge.name]})")
        else:
            say(f"edge case {edge.name}: {what}")
            good = False
    if [k for k in baseline_states if k in evalstream_states] != [
            k for k in evalstream_states if k in baseline_states]:
        say("edge cases vs evalstream: the states come in a different order")
        good = False
    say(f"edge cases vs evalstream: {len(edges)} lines, baseline wrote {stats.cases} rejected "
        f"{stats.rejects}, evalstream wrote {len(evalstream_states)} rejected "
        f"{report['counts']['rejected']}; {'agree' if good else 'MISMATCHES above'}")
    return good


def check_evalstream_file(path: Path, tmp: Path, say: Callable[[str], None]) -> bool:
    """Run evalstream and the msgspec baseline on ``path``; compare the states in order."""
    ours, theirs = tmp / "msgspec.jsonl", tmp / "evalstream.jsonl"
    stats = BASELINES[REFERENCE](path, ours)
    report = _build(path, theirs)
    counts = report["counts"]
    say(f"{path.name}: baseline wrote {stats.cases} rejected {stats.rejects}; evalstream wrote "
        f"{counts['checks']} rejected {counts['rejected']} skipped {counts['skipped']}")
    result = compare_states(ours, theirs)
    say(f"{path.name}: states identical={result.same} different={len(result.different)}"
        + (f" (first: {result.different[0]!r})" if result.different else "")
        + (f"; misaligned at {result.misaligned}" if result.misaligned else ""))
    return result.ok and stats.rejects == counts["rejected"]


def main_evalstream(inputs: list[Path]) -> int:
    """Compare the spec with evalstream's schema, then states on the edge cases and inputs."""
    good = True
    for difference in spec_differences():
        print(f"spec differs from evalstream.schema: {difference}")
        good = False
    with tempfile.TemporaryDirectory(prefix="benchmarks-check-evalstream-") as tmp:
        try:
            good &= check_evalstream_edges(Path(tmp), print)
            for path in inputs:
                good &= check_evalstream_file(path, Path(tmp), print)
        except BuildFailed as exc:
            print(exc)
            return 2
    return 0 if good else 1
