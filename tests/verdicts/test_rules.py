"""The jury rules (issue 26): each rule's decision against a plain reading of its sentence,
the quorum, and an unscored vote never counting as a pass."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstream._verdicts.rules import DEFAULT_RULE, RULES, agreed, decide, tally

STATUSES = ("pass", "fail", "na", "unscored")
votes_st = st.lists(st.sampled_from(STATUSES), min_size=1, max_size=12)


def plain(rule: str, votes: list[str]) -> tuple[str, str | None]:
    """The rule as the docs say it, written again without the module's helpers."""
    scored = [v for v in votes if v != "unscored"]
    if not len(scored) > len(votes) / 2:
        return "unscored", "no_quorum"
    n = Counter(scored)
    if rule == "unanimous-pass":
        if n["fail"]:
            return "fail", None
        return ("pass", None) if n["pass"] == len(scored) else ("na", None)
    if rule == "any-fail" and n["fail"]:
        return "fail", None
    # escalate: the majority of the votes the runner hands it (the deciding judge's).
    among = ["pass", "fail", "na"] if rule in ("majority", "escalate") else ["pass", "na"]
    best = max(n[s] for s in among)
    winners = [s for s in among if n[s] == best]
    return (winners[0], None) if len(winners) == 1 else ("unscored", "tie")


@pytest.mark.parametrize(("rule", "votes", "expected"), [
    ("majority", ["pass", "pass", "fail"], "pass"),
    ("majority", ["pass", "fail", "fail"], "fail"),
    ("majority", ["pass", "fail", "na"], "unscored"),  # a three-way tie
    ("majority", ["pass", "fail"], "unscored"),
    ("majority", ["na", "na", "pass"], "na"),
    ("majority", ["pass", "unscored", "unscored"], "unscored"),  # no quorum
    ("majority", ["pass", "pass", "unscored"], "pass"),
    ("majority", ["pass", "unscored"], "unscored"),  # half is not more than half
    ("unanimous-pass", ["pass", "pass", "pass"], "pass"),
    ("unanimous-pass", ["pass", "pass", "fail"], "fail"),
    ("unanimous-pass", ["pass", "pass", "na"], "na"),
    ("unanimous-pass", ["pass", "pass", "unscored"], "pass"),  # over the scored votes
    ("any-fail", ["pass", "pass", "fail"], "fail"),
    ("any-fail", ["pass", "pass", "na"], "pass"),
    ("any-fail", ["pass", "na"], "unscored"),
    ("any-fail", ["fail", "unscored", "unscored"], "unscored"),  # no quorum wins
])
def test_each_rule_decides_as_its_sentence_says(rule: str, votes: list[str],
                                                expected: str) -> None:
    assert decide(rule, tally(votes)).status == expected
    assert (decide(rule, tally(votes)).status, decide(rule, tally(votes)).cause) == \
        plain(rule, votes)


@given(st.sampled_from(sorted(RULES)), votes_st)
def test_every_rule_matches_its_plain_reading(rule: str, votes: list[str]) -> None:
    decision = decide(rule, tally(votes))
    assert (decision.status, decision.cause) == plain(rule, votes)
    t = tally(votes)
    assert agreed(decision, t) == (0 if decision.status == "unscored"
                                   else votes.count(decision.status))
    if decision.cause is not None:
        assert decision.detail and f"{t.unscored} unscored" in decision.detail


@given(st.sampled_from(sorted(RULES)), votes_st, st.integers(1, 5))
def test_an_unscored_vote_never_makes_a_pass(rule: str, votes: list[str], more: int) -> None:
    """Adding unscored votes never turns a decision into a pass: it can only take the quorum
    away; and a pass always has a pass vote behind it."""
    before = decide(rule, tally(votes)).status
    after = decide(rule, tally(votes + ["unscored"] * more)).status
    assert after in (before, "unscored")
    if after == "pass":
        assert "pass" in votes


def test_the_default_rule_is_majority_and_every_rule_is_documented() -> None:
    from tests.helpers import ROOT

    assert DEFAULT_RULE == "majority" == next(iter(RULES))
    docs = (ROOT / "docs" / "judge.md").read_text()
    for rule in RULES:
        assert f"`{rule}`" in docs, rule
