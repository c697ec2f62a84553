"""Exact rubrics: each condition form, evidence, and how missing things evaluate."""

from __future__ import annotations

from typing import Any

import pytest

from evalstream.cases import schema
from evalstream.checks import exact

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
