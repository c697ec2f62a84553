"""The jury rules: how a panel's votes become one decision (issue 26).

A panel is a jury of judges, or several samples of one judge, or both; each of its votes is
``pass``, ``fail``, ``na`` or ``unscored``. The decision is taken over the scored votes
only, with a quorum: unless more than half of the votes are scored, it is ``unscored`` with
the cause ``no_quorum`` (an unscored vote never counts as a pass, and a panel whose jurors
mostly failed to answer decides nothing). Above the quorum, the rule decides; a rule that
cannot decide (a tie under ``majority``) gives ``unscored`` with the cause ``tie``.

A rule is one function of the scored votes' counts and one line of ``RULES``. The rules
live here, below both users: ``judge`` decides each state with the jury file's rule, and
``agree`` reads each juror's own decision over its samples with ``majority`` (the decision
``--samples K`` alone gives).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from evalstream._verdicts.records import LABEL_STATUSES as VOTED  # a scored vote's statuses
from evalstream._verdicts.records import VOTE_STATUSES

NO_QUORUM, TIE = "no_quorum", "tie"


class Tally(NamedTuple):
    """The votes of one judge state: how many of each scored status, and how many unscored."""

    passed: int = 0
    failed: int = 0
    na: int = 0
    unscored: int = 0

    @property
    def scored(self) -> int:
        return self.passed + self.failed + self.na

    @property
    def votes(self) -> int:
        return self.scored + self.unscored

    def of(self, status: str) -> int:
        """How many votes have this status."""
        return {"pass": self.passed, "fail": self.failed, "na": self.na,
                "unscored": self.unscored}[status]

    def said(self) -> str:
        """``2 pass, 1 fail, 0 na, 1 unscored``: the tally as a sentence names it."""
        return (f"{self.passed} pass, {self.failed} fail, {self.na} na, {self.unscored} "
                "unscored")


class Decision(NamedTuple):
    """A panel's decision: a status, and for ``unscored`` its cause and a detail."""

    status: str
    cause: str | None = None
    detail: str | None = None


def tally(statuses: Iterable[str]) -> Tally:
    """The tally of some votes' statuses."""
    counts = dict.fromkeys(VOTE_STATUSES, 0)
    for status in statuses:
        counts[status] += 1
    return Tally(counts["pass"], counts["fail"], counts["na"], counts["unscored"])


def _most(t: Tally, among: tuple[str, ...]) -> Decision:
    """The status of ``among`` with the most votes; a tie for the most is no decision."""
    ranked = sorted(among, key=t.of, reverse=True)
    if len(ranked) > 1 and t.of(ranked[0]) == t.of(ranked[1]):
        return Decision("unscored", TIE, f"{t.said()}: {' and '.join(ranked[:2])} are tied")
    return Decision(ranked[0])


def majority(t: Tally) -> Decision:
    """The status most scored votes have (pass, fail or na); a tie decides nothing."""
    return _most(t, VOTED)


def unanimous_pass(t: Tally) -> Decision:
    """The strict reading: a pass needs every scored vote to pass. Any fail is a fail;
    passes mixed with na (none failing) are na: not every juror found the rubric met."""
    if t.failed:
        return Decision("fail")
    return Decision("pass" if not t.na else "na")


def any_fail(t: Tally) -> Decision:
    """A fail from any juror fails the state; otherwise the majority of pass and na (a tie
    decides nothing)."""
    if t.failed:
        return Decision("fail")
    return _most(t, ("pass", "na"))


def escalate(t: Tally) -> Decision:
    """A first judge, and a stronger second only where the first is unsure (issue 29,
    ``_judge.escalation``): the runner hands the deciding judge's votes (the second's where it
    was asked), whose majority decides."""
    return majority(t)


Rule = Callable[[Tally], Decision]
# The one list of rules: the jury file's `rule` (its default first), the docs, the tests.
RULES: dict[str, Rule] = {
    "majority": majority,
    "unanimous-pass": unanimous_pass,
    "any-fail": any_fail,
    "escalate": escalate,
}
DEFAULT_RULE = "majority"


def decide(rule: str, t: Tally) -> Decision:
    """The decision of ``rule`` over a state's votes: ``unscored`` (``no_quorum``) unless
    more than half of them are scored, else the rule's."""
    if t.scored * 2 <= t.votes:
        return Decision("unscored", NO_QUORUM,
                        f"{t.scored} of {t.votes} votes scored ({t.said()}); a decision needs "
                        "more than half")
    return RULES[rule](t)


def agreed(decision: Decision, t: Tally) -> int:
    """How many votes agree with the decision (0 when it is unscored)."""
    return 0 if decision.status == "unscored" else t.of(decision.status)
