"""Check that the baselines agree: ``python -m benchmarks check [IN.jsonl ...]``.

1. Edge cases: every baseline runs on each line of a built-in list of valid and invalid cases
   (caps at the limit and one past it, bad enums, unknown keys, slugs with a trailing newline,
   nulls, escapes, floats...) and must give the expected verdict (written, rejected or
   skipped) and the same output as msgspec, up to the number spelling jq is known to use.
2. Each ``IN.jsonl`` given: every baseline runs on the whole file; none may reject anything,
   and the outputs must be byte-identical to msgspec's (jq: equal up to number format).

Lines that are not JSON at all are checked for the Python baselines only: jq stops there.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

_OK = {"id": "c1", "input": "hi", "output": "yo"}
_MSG = {"id": "m1", "role": "user", "content": "x"}
_TOOL = {"id": "t1", "name": "n", "status": "success"}
_LABEL = {"status": "pass", "source": "human"}


def _case(**fields: Any) -> bytes:
    """Return the minimal valid case with ``fields`` replaced (``...`` removes a field)."""
    case = {**_OK, **fields}
    return json.dumps({k: v for k, v in case.items() if v is not ...}, ensure_ascii=False).encode()


def edge_cases() -> list[tuple[str, str, bytes]]:
    """Return (name, expected verdict, line) triples; verdicts: ok, reject, skip."""
    cases = [
        ("minimal", "ok", _case()),
        ("no-output", "reject", _case(output=...)),
        ("input-number", "reject", _case(input=5)),
        ("input-bool", "reject", _case(input=True)),
        ("unknown-key", "reject", _case(extra=1)),
        ("id-trailing-newline", "reject", _case(id="abc\n")),
        ("id-space", "reject", _case(id="a b")),
        ("id-empty", "reject", _case(id="")),
        ("id-leading-dash", "reject", _case(id="-a")),
        ("id-non-ascii", "reject", _case(id="café")),
        ("role-unknown", "reject", _case(messages=[{**_MSG, "role": "bot"}])),
        ("message-no-content", "reject", _case(messages=[{"id": "m1", "role": "user"}])),
        ("message-extra-key", "reject", _case(messages=[{**_MSG, "name": "x"}])),
        ("messages-object", "reject", _case(messages={"a": 1})),
        ("messages-501", "reject", _case(messages=[_MSG] * 501)),
        ("messages-500", "ok", _case(messages=[_MSG] * 500)),
        ("messages-empty", "ok", _case(messages=[])),
        ("messages-null", "ok", _case(messages=None)),
        ("input-200001", "reject", _case(input="a" * 200_001)),
        ("input-200000-2-byte", "ok", _case(input="é" * 200_000)),
        ("input-200000-4-byte", "ok", _case(input="😀" * 200_000)),
        ("input-200001-4-byte", "reject", _case(input="😀" * 200_001)),
        ("policy-null", "ok", _case(policy=None)),
        (
            "tool-nulls",
            "ok",
            _case(
                toolEvents=[
                    {**_TOOL, "input": {"a": None, "b": [None, 1]}, "output": None, "error": None}
                ]
            ),
        ),
        (
            "tool-values",
            "ok",
            _case(
                toolEvents=[
                    {**_TOOL, "input": [1, "a", {"x": {"y": [True, False]}}], "output": "s"},
                    {**_TOOL, "id": "t2", "output": 0, "error": "e", "status": "failure"},
                    {**_TOOL, "id": "t3", "output": False},
                ]
            ),
        ),
        ("tool-error-number", "reject", _case(toolEvents=[{**_TOOL, "error": 5}])),
        ("tool-status-unknown", "reject", _case(toolEvents=[{**_TOOL, "status": "ok"}])),
        ("tool-extra-key", "reject", _case(toolEvents=[{**_TOOL, "foo": 1}])),
        ("tool-no-id", "reject", _case(toolEvents=[{"name": "n", "status": "success"}])),
        ("label-status-unknown", "reject", _case(expected={"r": {**_LABEL, "status": "ok"}})),
        ("label-no-source", "reject", _case(expected={"r": {"status": "pass"}})),
        ("label-key-200001", "reject", _case(expected={"r" * 200_001: _LABEL})),
        ("expected-list", "reject", _case(expected=[1])),
        ("metadata-extra-key", "reject", _case(metadata={"scenario": "a", "x": 1})),
        ("metadata-number", "reject", _case(metadata={"scenario": 5})),
        ("metadata-empty", "ok", _case(metadata={})),
        ("passage-text-number", "reject", _case(context=[{"id": "p", "text": 1}])),
        ("passage-keys-reordered", "ok", _case(context=[{"text": "t", "id": "p"}])),
        ("escapes", "ok", _case(input='\t\n"\\\x01\x7f\u2028😀\x00', output="</script>")),
        ("top-level-array", "reject", b"[1,2]"),
        ("top-level-null", "reject", b"null"),
        ("blank", "skip", b""),
        ("whitespace", "skip", b"  \t"),
        ("escaped-surrogate-pair", "ok", b'{"id":"c2","input":"\\ud83d\\ude00","output":"o"}'),
        (
            "floats",
            "ok",
            b'{"id":"c3","input":"i","output":"o","toolEvents":[{"id":"t",'
            b'"name":"n","status":"success","input":[1.5e3,0.1,1E2,-0.0,1e-7]}]}',
        ),
        ("duplicate-key", "ok", b'{"id":"c4","input":"a","input":"b","output":"o"}'),
        ("crlf", "ok", b'{"id":"c5","input":"i","output":"o"}\r'),
        # Not JSON (not checked with jq):
        ("not-json", "reject", b'{"id": x}'),
        ("lone-surrogate", "reject", b'{"id":"c6","input":"\\ud800","output":"o"}'),
    ]
    return cases


_NOT_JSON = frozenset({"not-json", "lone-surrogate"})


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
    for name, expected, line in edge_cases():
        reference: bytes | None = None
        for baseline in CHECKED:
            if baseline == "jq" and name in _NOT_JSON:
                continue
            verdict, output = _verdict(baseline, line, tmp)
            if verdict != expected:
                say(f"edge case {name}: {baseline} says {verdict}, expected {expected}")
                good = False
            if baseline == REFERENCE:
                reference = output
            elif classify(reference, output) not in {"identical", *ALLOWED[baseline]}:
                say(f"edge case {name}: {baseline} output differs from {REFERENCE}'s")
                good = False
    say(
        f"edge cases: {len(edge_cases())} x {len(CHECKED)} baselines, "
        f"{'all as expected' if good else 'MISMATCHES above'}"
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
