"""Exact rubrics: each condition form, evidence, and how missing things evaluate."""

from __future__ import annotations

from typing import Any

import pytest

from evalstream._cases import schema
from evalstream._checks import exact

DECODE = schema.decoder(False).decode


def events(*specs: dict[str, Any]) -> list[Any]:
    import json

    line = json.dumps({"id": "c", "input": "", "output": "", "toolEvents": [
        {"id": f"t{i}", **spec} for i, spec in enumerate(specs, 1)]})
    return DECODE(line.encode()).tool_events


BOOK_FAIL = events({"name": "check", "status": "success", "output": {"slots": ["14:00"]}},
                   {"name": "book", "status": "success", "input": {"slot": "13:00"}},
                   {"name": "book", "status": "failure", "input": {"slot": "14:00"},
                    "error": "SLOT_UNAVAILABLE"})


@pytest.mark.parametrize(("spec", "ok", "evidence"), [
    ({"called": "book"}, True, ["t2", "t3"]),
    ({"called": "cancel"}, False, []),
    ({"last_call": "book", "status": "success"}, False, ["t3"]),
    ({"last_call": "book", "status": "failure"}, True, ["t3"]),
    ({"last_call": "cancel", "status": "failure"}, False, []),
    ({"no_failed_calls": True}, False, ["t1", "t2", "t3"]),
    ({"last_call": "book", "field": "input.slot", "equals": "14:00"}, True, ["t3"]),
    ({"last_call": "book", "field": "input.slot", "equals": "13:00"}, False, ["t3"]),
    ({"last_call": "book", "field": "input.missing", "equals": "x"}, False, ["t3"]),
    ({"last_call": "book", "field": "error", "matches": "^SLOT_"}, True, ["t3"]),
    ({"last_call": "check", "field": "output.slots", "equals": ["14:00"]}, True, ["t1"]),
    ({"last_call": "check", "field": "output.slots", "matches": "14"}, False, ["t1"]),  # not a string
    ({"not": {"called": "book"}}, False, ["t2", "t3"]),
    ({"all": [{"called": "book"}, {"last_call": "book", "status": "success"}]}, False, ["t2", "t3"]),
    ({"any": [{"called": "cancel"}, {"last_call": "check", "status": "success"}]}, True, ["t1"]),
])
def test_conditions(spec: dict[str, Any], ok: bool, evidence: list[str]) -> None:
    result, read = exact.parse(spec).evaluate(BOOK_FAIL)
    assert result is ok
    assert exact.evidence_ids(BOOK_FAIL, read) == evidence


def test_no_events() -> None:
    assert exact.parse({"no_failed_calls": True}).evaluate([]) == (True, frozenset())
    assert exact.parse({"called": "x"}).evaluate([])[0] is False


def test_booleans_do_not_equal_numbers() -> None:
    evs = events({"name": "n", "status": "success", "output": {"ok": 1}})
    assert exact.parse({"last_call": "n", "field": "output.ok", "equals": True}).evaluate(evs)[0] is False
    assert exact.parse({"last_call": "n", "field": "output.ok", "equals": 1}).evaluate(evs)[0] is True


@pytest.mark.parametrize(("pattern", "text"), [
    ("x.*y", "x" * 200_000),  # Python's re: 34.6 s within the caps
    ("^(a+)+$", "a" * 199_999 + "b"),  # Python's re: time triples every 2 characters
    ("(x+x+)+y", "x" * 200_000),
])
def test_matches_take_linear_time_on_any_data(pattern: str, text: str) -> None:
    import time

    condition = exact.parse({"last_call": "t", "field": "output", "matches": pattern})
    data = events({"name": "t", "status": "success", "output": text})
    started = time.perf_counter()
    ok, read = condition.evaluate(data)
    seconds = time.perf_counter() - started
    assert (ok, sorted(read)) == (False, [0])
    assert seconds < 1.0, seconds  # measured 0.1-1 ms


@pytest.mark.parametrize(("pattern", "message"), [
    (r"(a)\1", r"`check.matches` uses what RE2 cannot run: invalid escape sequence: \\1"),
    ("(?<!a)b", r"uses what RE2 cannot run: invalid perl operator: \(\?<"),
    ("a{1001}", r"uses what RE2 cannot run: invalid repetition size: \{1001\}"),
    ("(", r"`check.matches` is not a valid regular expression: missing \)"),
    (5, r"`check.matches` must be a regular expression \(a string\)"),
])
def test_patterns_re2_cannot_run_are_refused(pattern: Any, message: str,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(exact.ConditionError, match=message):
        exact.parse({"last_call": "t", "field": "error", "matches": pattern}, "check")
    assert capfd.readouterr().err == ""  # RE2's own log stays quiet: the error says it once


def test_re2_search_matches_as_re_search_on_plain_patterns() -> None:
    data = events({"name": "t", "status": "failure", "error": "SLOT_UNAVAILABLE: taken\nlater"})
    for pattern, expected in [("^SLOT_", True), ("taken$", False), ("later$", True),
                              (r"\bUNAVAIL", False), (r"_UNAVAILABLE\b", True), ("(?i)slot", True),
                              ("é", False), ("", True)]:
        import re

        condition = exact.parse({"last_call": "t", "field": "error", "matches": pattern})
        assert condition.evaluate(data)[0] is expected, pattern
        assert (re.search(pattern, "SLOT_UNAVAILABLE: taken\nlater") is not None) is expected
