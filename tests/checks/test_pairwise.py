"""Pairwise rubrics (kind = "pairwise") and the Checker's pairs (issue 28): what a pairwise
state holds, in both orders, checked against a plain dict built from the wire format."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._cases.schema import Case
from evalstream._checks import rubrics
from evalstream._checks.checker import NOT_PAIRWISE, OVER_BUDGET, PAIRWISE, Checker
from evalstream._checks.state import PAIR_PREAMBLE, PREAMBLE, question_text
from evalstream.errors import RubricError

PAIRWISE_TOML = """
[[rubric]]
id = "better"
kind = "pairwise"
question = "Which response answers user_input better?"
shows = ["user_input", "assistant_response", "reference_material"]
"""
POINTWISE_TOML = """
[[rubric]]
id = "helpful"
question = "Is assistant_response helpful?"
shows = ["user_input", "assistant_response"]
"""


def case(**fields: Any) -> Case:
    wire = {"id": "c1", "input": "question?", "output": "an answer", **fields}
    return msgspec.json.decode(json.dumps(wire), type=Case)


def test_a_pairwise_rubric_shows_both_responses_under_fixed_names() -> None:
    [rubric] = rubrics.parse(PAIRWISE_TOML, "p.toml")
    assert rubric.kind == "pairwise" and rubric.pairwise and rubric.judged
    assert rubric.shows == ("user_input", "response_1", "response_2", "reference_material")
    assert rubric.asked == f"{PAIR_PREAMBLE}\n\n{rubric.question}"
    [pointwise] = rubrics.parse(POINTWISE_TOML, "p.toml")
    assert pointwise.asked == question_text(pointwise.question) and \
        pointwise.asked.startswith(PREAMBLE)


def test_the_kind_is_part_of_the_rubric_hash_and_the_set_hash_of_pointwise_sets_stays() -> None:
    [pairwise] = rubrics.parse(PAIRWISE_TOML, "p.toml")
    [judge] = rubrics.parse(PAIRWISE_TOML.replace('kind = "pairwise"\n', ""), "p.toml")
    assert pairwise.hash != judge.hash
    # The set hash of a set without a pairwise rubric is the one it had before issue 28.
    import xxhash
    expected = xxhash.xxh3_128(PREAMBLE.encode())
    expected.update(judge.hash.encode())
    assert rubrics.RubricSet(*rubrics._finish([judge], ("x",))).hash == expected.hexdigest()


@pytest.mark.parametrize(("toml", "message"), [
    (PAIRWISE_TOML.replace('"reference_material"]', '"tool_events"]'),
     r"`shows` names `tool_events`: each run has its own"),
    (PAIRWISE_TOML.replace('shows = ["user_input", "assistant_response", "reference_material"]',
                           'shows = ["user_input"]'),
     r"must name `assistant_response`"),
    (PAIRWISE_TOML + 'requires = ["tool_events"]\n', r"`requires` names `tool_events`"),
    (PAIRWISE_TOML.replace('"pairwise"', '"pair"'),
     r"`kind` is 'pair'; allowed: \"judge\" \(default\), \"exact\", \"pairwise\""),
    (PAIRWISE_TOML + 'check = "x"\n', r"unknown key\(s\) `check`; a pairwise rubric takes"),
])
def test_what_a_pairwise_rubric_cannot_say(toml: str, message: str) -> None:
    with pytest.raises(RubricError, match=message):
        rubrics.parse(toml, "p.toml")


def _set(*tomls: str) -> rubrics.RubricSet:
    return rubrics.RubricSet(*rubrics._finish(
        [r for t in tomls for r in rubrics.parse(t, "x.toml")], ("x.toml",)))


def test_a_case_alone_skips_a_pairwise_rubric_and_its_label_is_not_lost() -> None:
    checker = Checker(_set(PAIRWISE_TOML, POINTWISE_TOML))
    checks = checker.check(case(expected={"better": {"status": "pass", "source": "human"}}), 1)
    assert [c.reason for c in checks] == [PAIRWISE, None]
    tally = checker.tally
    assert tally.skipped_by_rubric["better"][PAIRWISE] == 1
    assert tally.labels_not_applicable == 0  # the pair's label, on run A's case


def plain_state(a: dict[str, Any], b: dict[str, Any], first: str, shows: list[str]) -> dict:
    """The state of order ``first`` ("ab" or "ba") from the wire format, as issue 28 says it."""
    one, two = (a, b) if first == "ab" else (b, a)
    names = {"user_input": a.get("input"), "response_1": one["output"],
             "response_2": two["output"], "conversation": a.get("messages"),
             "reference_material": a.get("context"), "policy": a.get("policy")}
    return {n: v for n, v in names.items() if n in shows and v is not None}


texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@settings(max_examples=60, deadline=None)
@given(out_a=texts, out_b=texts, context=st.none() | st.lists(texts, max_size=2),
       policy=st.none() | texts, metadata=st.none() | st.dictionaries(texts, texts, max_size=2),
       tools=st.booleans())
def test_both_orders_hold_the_shared_fields_once_and_the_responses_swapped(
        out_a: str, out_b: str, context: list[str] | None, policy: str | None,
        metadata: dict[str, str] | None, tools: bool) -> None:
    shared: dict[str, Any] = {"input": "the same request"}
    if context is not None:
        shared["context"] = [{"id": f"p{i}", "text": t} for i, t in enumerate(context)]
    if policy is not None:
        shared["policy"] = policy
    wire_a = {"id": "x", **shared, "output": out_a,
              "expected": {"better": {"status": "pass", "source": "human"}}}
    wire_b = {"id": "x", **shared, "output": out_b, "metadata": metadata or {"m": "MARK"}}
    if tools:
        wire_b["toolEvents"] = [{"id": "t", "name": "lookup", "status": "success"}]
    a, b = (msgspec.json.decode(json.dumps(w), type=Case) for w in (wire_a, wire_b))
    checker = Checker(_set(PAIRWISE_TOML))
    assert checker.mismatch(a, b) == []
    [ab], [ba] = checker.check_pair(a, b, 7)
    shows = ["user_input", "response_1", "response_2", "reference_material"]
    for check, first in ((ab, "ab"), (ba, "ba")):
        assert check.reason is None and check.state is not None
        assert json.loads(check.state) == plain_state(wire_a, wire_b, first, shows)
        assert list(json.loads(check.state)) == [n for n in
                                                  ("user_input", "response_1", "response_2",
                                                   "reference_material")
                                                  if n in json.loads(check.state)]
        assert b"MARK" not in check.state and b"expected" not in check.state
        exposure = checker.exposure(check)
        assert exposure.shown == list(json.loads(check.state))
        assert set(exposure.never_shown) == {"expected", "metadata"}
        assert ("tool_events" in exposure.withheld) == tools
        assert ("policy" in exposure.withheld) == (policy is not None)
    tally = checker.tally
    assert tally.checks == 2 and tally.checks_by_rubric["better"] == 2


def test_which_fields_two_cases_must_share() -> None:
    checker = Checker(_set(PAIRWISE_TOML))  # shows reference_material, not policy
    assert checker.must_be_equal == ("input", "context")
    a = case(context=[{"id": "p", "text": "x"}], policy="one")
    assert checker.mismatch(a, case(context=[{"id": "p", "text": "x"}], policy="two")) == []
    assert checker.mismatch(a, case(context=[{"id": "p", "text": "y"}], policy="one")) == \
        ["context"]
    assert checker.mismatch(a, case(input="other", context=None)) == ["input", "context"]


def test_a_pair_over_budget_is_over_in_both_orders_and_listed_once() -> None:
    checker = Checker(_set(PAIRWISE_TOML), max_tokens=400)
    [ab], [ba] = checker.check_pair(case(output="word " * 500), case(output="short"), 3)
    assert ab.reason == ba.reason == OVER_BUDGET
    tally = checker.tally
    assert tally.skipped_by_rubric["better"][OVER_BUDGET] == 2
    assert [o.line for o in tally.over_budget] == [3]


def test_a_pair_skips_what_is_not_pairwise_and_what_it_requires() -> None:
    checker = Checker(_set(PAIRWISE_TOML + 'requires = ["policy"]\n', POINTWISE_TOML))
    first, second = checker.check_pair(case(), case(), 1)
    assert [c.reason for c in first] == [c.reason for c in second] == \
        ["requires policy", NOT_PAIRWISE]


@pytest.mark.parametrize("value", ["true", "false"])
def test_a_pairwise_rubric_takes_no_allows_na_and_never_allows_na(value: str) -> None:
    # Issue 25 met issue 28: a pairwise answer has no `na` (a tie is "tie"), so the key is
    # refused with a sentence, the rubric does not allow `na`, and the system text build's
    # budget counts is the pairwise instruction (never the pointwise one, with or without na).
    from evalstream._checks.state import ANSWER_INSTRUCTION, PAIR_ANSWER_INSTRUCTION

    with pytest.raises(RubricError, match=r"\(`better`\): a pairwise rubric takes no "
                                          r"`allows_na`: .* never na; remove the key"):
        rubrics.parse(PAIRWISE_TOML + f"allows_na = {value}\n", "p.toml")
    [rubric] = rubrics.parse(PAIRWISE_TOML, "p.toml")
    assert rubric.allows_na is False
    assert rubric.system == f"{rubric.asked}\n\n{PAIR_ANSWER_INSTRUCTION}"
    assert ANSWER_INSTRUCTION not in rubric.system
    # its hash is issue 28's: allows_na enters only a judge rubric's hash
    [judge] = rubrics.parse(POINTWISE_TOML + "allows_na = false\n", "p.toml")
    [plain] = rubrics.parse(POINTWISE_TOML, "p.toml")
    assert judge.hash != plain.hash and not judge.allows_na
