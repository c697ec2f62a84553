"""Generated valid cases and the damage done to them.

Invariants: an accepted case round-trips exactly into its judge state (compared with the
standard library's reading of the same line); a damaged line is rejected naming its line
and the field; nothing else is written (one record per accepted case and rubric, one
reject per rejected line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evalstream._cases import schema
from evalstream._checks.state import FIELD_OF, STATE_NAMES

from . import strategies as gen
from .support import assert_actionable, assert_counts_add_up, examples, run_on, run_or_diagnosis

pytestmark = pytest.mark.slow  # see pyproject.toml: `-m "not slow"` skips it

WIRE = {"input": "input", "output": "output", "messages": "messages", "context": "context",
        "policy": "policy", "tool_events": "toolEvents"}


def slow(n: int) -> settings:
    """``n`` examples (scaled by the profile), no deadline: each example is a whole build."""
    return settings(max_examples=examples(n), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


def _rubric_all(tmp_path: Path) -> str:
    path = tmp_path / "all.toml"
    path.write_text(f'[[rubric]]\nid = "all"\nquestion = "Judge."\nshows = {list(STATE_NAMES)!r}\n'
                    .replace("'", '"'))
    return str(path)


def expected_state(case: dict[str, Any]) -> dict[str, Any]:
    """The judge state the stdlib's reading of a case gives for a rubric that shows all."""
    state = {}
    for name in STATE_NAMES:
        value = case.get(WIRE[FIELD_OF[name]])
        if value is None:
            continue
        if name == "tool_events":  # absent (null) optional tool-event fields are left out
            value = [{k: v for k, v in ev.items() if v is not None} for ev in value]
        state[name] = value
    return state


def _build_all(tmp_path: Path, lines: list[bytes], **options: Any) -> Any:
    return run_on(tmp_path, b"\n".join(lines) + b"\n", rubric_files=[_rubric_all(tmp_path)],
                  max_tokens=10**9, **options)


def _assert_round_trip(result: Any, lines: list[bytes]) -> None:
    """Accepted lines are exactly the ones with records, and each state is the line's data."""
    rejected = {r["line"] for r in result.rejects}
    accepted = [n for n in range(1, len(lines) + 1) if n not in rejected and lines[n - 1].strip()]
    assert len(result.records) == len(accepted) == result.report.counts.cases
    for record, n in zip(result.records, accepted, strict=True):
        case = json.loads(lines[n - 1])
        assert record["case_id"] == case["id"]
        assert record["state"] == expected_state(case)
        assert set(record) == {"case_id", "rubric_id", "question", "state", "exposure",
                               "rubric_hash", "state_hash"}


@slow(300)
@given(batch=st.lists(gen.cases(), min_size=1, max_size=6), ascii_only=st.booleans())
def test_valid_cases_round_trip_exactly(tmp_path: Path, batch: list[dict[str, Any]],
                                        ascii_only: bool) -> None:
    lines = [gen.dumps(c, ascii_only) for c in gen.unique_ids(batch)]
    result = _build_all(tmp_path, lines)
    assert result.rejects == []
    _assert_round_trip(result, lines)


PLACE = "\ue000place\ue000"  # a marker generated text (almost surely) never holds


@st.composite
def damaged(draw: st.DrawFn) -> tuple[bytes, str | None]:
    """A damaged case line and the JSON path its reject must name (None: any path)."""
    case = dict(draw(gen.cases()), id="victim")
    line = gen.dumps(case)
    kind = draw(st.sampled_from(["type", "enum", "surrogate", "nul", "nonfinite", "huge",
                                 "deep", "truncate", "unknown", "missing"]))
    if kind == "type":
        return draw(gen.type_damage(case))
    if kind == "enum":
        return draw(gen.enum_damage(case))
    if kind in ("surrogate", "nul"):
        # A lone surrogate escape, or a raw NUL byte, at the start of a top-level text field.
        field = draw(st.sampled_from(["input", "output", "policy"]))
        insert = (draw(st.sampled_from([b"\\ud800", b"\\udfff", b"\\uDBFF", b"\\udc00x"]))
                  if kind == "surrogate" else b"\x00")
        marked = gen.dumps(dict(case, **{field: PLACE + (case.get(field) or "")}))
        return marked.replace(PLACE.encode(), insert), f"$.{field}"
    if kind == "nonfinite":
        value = draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-2e400"]))
        return line[:-1] + b',"metadata2":0,"policy":' + value + b"}", None
    if kind == "huge":
        return line[:-1] + b',"metadata":{"big":1e999}}', "$.metadata.big"
    if kind == "deep":
        # msgspec's limit follows Python's recursion limit (hypothesis raises it while a
        # test runs), so "too deep" is tested well above any limit in use.
        depth = draw(st.integers(20_000, 100_000))
        return line[:-1] + b',"metadata":{"x":' + b"[" * depth + b"]" * depth + b"}}", "$"
    if kind == "truncate":
        return line[: draw(st.integers(1, len(line) - 1))], "$"
    if kind == "unknown":
        return line[:-1] + b',"Input ":1}', '$["Input "]'
    field = draw(st.sampled_from(["input", "output"]))
    return gen.dumps({k: v for k, v in case.items() if k != field}), f"$.{field}"


@slow(300)
@given(batch=st.lists(gen.cases(), min_size=1, max_size=4), bad=damaged(),
       at=st.integers(0, 4))
def test_damage_is_rejected_naming_line_and_field(tmp_path: Path, batch: list[dict[str, Any]],
                                                   bad: tuple[bytes, str | None],
                                                   at: int) -> None:
    lines = [gen.dumps(c) for c in gen.unique_ids(batch)]
    at = min(at, len(lines))
    line, path = bad
    lines.insert(at, line)
    result = _build_all(tmp_path, lines)
    assert_counts_add_up(result.report)
    assert [r["line"] for r in result.rejects] == [at + 1]
    reject = result.rejects[0]
    assert_actionable(reject)
    if path is not None:
        assert reject["path"] == path, reject
    _assert_round_trip(result, lines)


@slow(300)
@given(case=gen.cases(), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 7)),
                                       min_size=1, max_size=3))
def test_byte_flips_are_rejected_or_read_exactly(tmp_path: Path, case: dict[str, Any],
                                                 flips: list[tuple[int, int]]) -> None:
    line = bytearray(gen.dumps(case))
    for where, bit in flips:
        line[where % len(line)] ^= 1 << bit
    mutated = bytes(line)
    assume(b"\n" not in mutated)
    result = run_or_diagnosis(tmp_path, mutated + b"\n", rubric_files=[_rubric_all(tmp_path)],
                              max_tokens=10**9)
    if result is None:
        return  # the damage made the file plainly not JSONL (e.g. UTF-16): exit 4, checked
    assert_counts_add_up(result.report)
    for reject in result.rejects:
        assert_actionable(reject)
    if result.records:
        # Whatever was accepted is exactly what the damaged line says (stdlib reading).
        _assert_round_trip(result, [mutated])


@pytest.mark.parametrize("char", ["a", "é", "€", "\U0001F600"], ids=["1B", "2B", "3B", "4B"])
@pytest.mark.parametrize("field", ["input", "output", "policy"])
def test_text_cap_at_and_over_the_limit(tmp_path: Path, char: str, field: str) -> None:
    case = {"id": "cap", "input": "x", "output": "y"}
    lines = [gen.over_cap(case, field, char, 0),
             gen.over_cap(dict(case, id="cap2"), field, char, 1)]
    result = _build_all(tmp_path, lines)
    assert [r["line"] for r in result.rejects] == [2]
    assert result.rejects[0]["path"] == f"$.{field}"
    assert "200,001 characters" in result.rejects[0]["error"]
    _assert_round_trip(result, lines)


@pytest.mark.parametrize("field", ["messages", "context", "toolEvents"])
def test_item_cap_at_and_over_the_limit(tmp_path: Path, field: str) -> None:
    item = {"messages": {"role": "user", "content": "c"}, "context": {"text": "t"},
            "toolEvents": {"name": "n", "status": "success"}}[field]
    lines = []
    for n in (schema.MAX_ITEMS, schema.MAX_ITEMS + 1):
        items = [dict(item, id=f"i{k}") for k in range(n)]
        lines.append(gen.dumps({"id": f"c{n}", "input": "x", "output": "y", field: items}))
    result = _build_all(tmp_path, lines)
    assert [(r["line"], r["path"]) for r in result.rejects] == [(2, f"$.{field}")]
    assert "501 items" in result.rejects[0]["error"]
    _assert_round_trip(result, lines)


@slow(80)
@given(batch=st.lists(gen.cases(), min_size=2, max_size=6), data=st.data())
def test_duplicate_case_ids_name_the_first_line(tmp_path: Path, batch: list[dict[str, Any]],
                                                 data: st.DataObject) -> None:
    batch = gen.unique_ids(batch)
    first, later = sorted(data.draw(st.lists(st.integers(0, len(batch) - 1), min_size=2,
                                             max_size=2, unique=True)))
    batch[later]["id"] = batch[first]["id"]
    lines = [gen.dumps(c) for c in batch]
    result = _build_all(tmp_path, lines)
    assert [(r["line"], r["path"]) for r in result.rejects] == [(later + 1, "$.id")]
    assert f"already used on line {first + 1}" in result.rejects[0]["error"]
    _assert_round_trip(result, lines)


@pytest.mark.parametrize("field", ["messages", "context", "toolEvents"])
def test_duplicate_item_ids_are_rejected(tmp_path: Path, field: str) -> None:
    item = {"messages": {"role": "user", "content": "c"}, "context": {"text": "t"},
            "toolEvents": {"name": "n", "status": "success"}}[field]
    items = [dict(item, id="same"), dict(item, id="other"), dict(item, id="same")]
    lines = [gen.dumps({"id": "c", "input": "x", "output": "y", field: items})]
    result = _build_all(tmp_path, lines)
    assert [r["path"] for r in result.rejects] == [f"$.{field}[2].id"]
    assert_actionable(result.rejects[0])


def test_escaped_nul_and_every_plane_are_data(tmp_path: Path) -> None:
    text = "\x00 \u0085 \u2028 \ufeff \uffff \U00010000 \U0001F600 \U0010FFFF"
    lines = [gen.dumps({"id": "planes", "input": text, "output": text}, ascii_only=a)
             for a in (False, True)]
    lines[1] = lines[1].replace(b'"planes"', b'"planes-2"')
    result = _build_all(tmp_path, lines)
    assert result.rejects == []
    _assert_round_trip(result, lines)


def test_huge_integers_round_trip_and_huge_floats_are_rejected(tmp_path: Path) -> None:
    big = 10**30
    lines = [
        b'{"id":"a","input":"x","output":"y","toolEvents":[{"id":"t","name":"n",'
        b'"status":"success","input":%d,"output":{"n":-%d}}]}' % (big, big),
        b'{"id":"b","input":"x","output":"y","metadata":{"deep":{"n":[1,2e999]}}}',
    ]
    result = _build_all(tmp_path, lines)
    assert [(r["line"], r["path"]) for r in result.rejects] == [(2, "$.metadata.deep.n[1]")]
    _assert_round_trip(result, lines)
