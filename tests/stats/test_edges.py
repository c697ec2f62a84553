"""Edge cases: empty input, blank and over-long lines, labels that can never be compared,
group keys no case has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstream._stats.stats import MISSING, StatsOptions, collect, parse_by
from evalstream.errors import UsageError


def _case(i: int, **fields: object) -> str:
    return json.dumps({"id": f"c{i}", "input": "q" * i, "output": "a", **fields})


def test_empty_input(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    s = collect(StatsOptions(input=str(path)))
    assert (s.overview.lines, s.overview.cases, s.overview.groups) == (0, 0, 0)
    assert s.groups == [] and s.total.cases == 0 and s.total.input_chars.median is None
    assert all(c.applies == 0 for c in s.checks) and s.metadata.keys == []
    # An empty dataset is not a clean one: said, and exit 1 (as build).
    assert s.warnings == ["no line of the input is a case: the input is empty, or every line "
                          "was rejected or blank."] and s.exit_code == 1


def test_blank_rejected_and_long_lines_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    lines = [_case(1), "", "   ", "{not json", _case(2, metadata={"scenario": "x" * 50}),
             _case(1)]
    path.write_text("\n".join(lines) + "\n")
    s = collect(StatsOptions(input=str(path), max_line_bytes=100))
    o = s.overview
    assert (o.lines, o.cases, o.rejected, o.blank) == (6, 1, 3, 2)
    assert o.rejected_by_kind == {"duplicate id": 1, "line too long": 1, "malformed JSON": 1}
    assert [r.line for r in s.first_rejects] == [4, 5, 6]
    assert s.exit_code == 1


def test_labels_that_can_never_be_compared(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    label = {"status": "pass", "source": "human"}
    path.write_text("\n".join([
        # claim-support requires context: this label is on a case where it does not apply.
        _case(1, expected={"claim-support": label}),
        _case(2, context=[{"id": "p1", "text": "t"}], expected={"claim-support": label}),
        _case(3, expected={"no-such-rubric": label}),
    ]) + "\n")
    s = collect(StatsOptions(input=str(path)))
    by_rubric = {r.rubric: r for r in s.labels}
    support = by_rubric["claim-support"].total
    assert (support.labels, support.applies, support.labelled, support.not_applicable) == \
        (2, 1, 1, 1)
    assert support.coverage == 1.0
    unknown = by_rubric["no-such-rubric"]
    assert not unknown.in_rubrics and unknown.total.not_applicable == 1
    assert unknown.total.applies == 0 and unknown.total.coverage is None
    assert any("not in the rubric set (no-such-rubric)" in w for w in s.warnings)
    assert any("1 label is on cases where their rubric does not apply" in w
               for w in s.warnings)


def test_a_by_key_no_case_has_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(_case(1, metadata={"scenario": "a"}) + "\n")
    s = collect(StatsOptions(input=str(path), by=["tenant"]))
    assert [g.key for g in s.groups] == [{"tenant": MISSING}]
    assert s.overview.by["tenant"].missing == 1
    assert any("no case has metadata key `tenant` (--by)" in w for w in s.warnings)


@pytest.mark.parametrize(("text", "keys"), [
    ("scenario", ["scenario"]), ("metadata.scenario,split", ["scenario", "split"]),
    (" source.kind , split ", ["source.kind", "split"]),
])
def test_parse_by(text: str, keys: list[str]) -> None:
    assert parse_by(text) == keys


def test_parse_by_rejects_empty_keys() -> None:
    with pytest.raises(UsageError, match="give metadata keys separated by commas"):
        parse_by("scenario,")
