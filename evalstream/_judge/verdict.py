"""The one verdict maker: a judge state's key fields and its stored answer (or why it got
none) -> the verdict line. The live judge and ``batch collect`` both write through here, so a
verdict made from a batch result and one made from a live answer differ only where the
answers do (usage, request id). A pairwise state's two orders make one verdict
(``pair_answered``). A panel's verdict (a jury, or several samples) is made here too, from its
votes, each read as a single verdict's answer is (``vote``, ``panel``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import msgspec

from evalstream._judge import inputs
from evalstream._judge.answer import Parsed, allowed
from evalstream._judge.logprobs import from_votes
from evalstream._judge.providers.base import Provider
from evalstream._judge.request import JudgeConfig
from evalstream._judge.store import Failure, Stored
from evalstream._verdicts import rules
from evalstream._verdicts.pairwise import STATUS_OF, decide
from evalstream._verdicts.records import (
    JudgeInfo,
    JudgeVerdict,
    OrderAnswer,
    PairVerdict,
    Panel,
    TokenUsage,
    VerdictError,
    Vote,
)


def answered(info: JudgeInfo, api: Provider, stored: Stored, case_id: str, rubric_id: str,
             rubric_hash: str, state_hash: str, exposure: msgspec.Raw,
             allows_na: bool = True) -> tuple[JudgeVerdict, Parsed]:
    """The verdict from a stored answer: its status and reason, or ``unscored`` with the
    cause the answer parser found (``api``: the provider it came from); and the answer as
    read (what the run's counts take from it). An ``na`` for a rubric that does not allow it
    (``allows_na`` false) is unscored (``na_not_allowed``), whatever asked for the answer: a
    server may ignore the schema that left ``na`` out; and the confidence is over pass and
    fail only (``answer.allowed``)."""
    parsed = _read(api, stored, allows_na)
    return JudgeVerdict(case_id, rubric_id, parsed.status, parsed.reason, info, parsed.usage,
                        stored.request_id, rubric_hash, state_hash, exposure, _error(parsed),
                        confidence=parsed.confidence), parsed


def _read(api: Provider, stored: Stored, allows_na: bool) -> Parsed:
    """A stored answer as a verdict (or a panel's vote) takes it: an ``na`` where the rubric
    does not allow it is unscored (``na_not_allowed``), a confidence over the statuses it
    allows (``answer.allowed``)."""
    return allowed(api.parse(stored.body), allows_na)


def _error(parsed: Parsed) -> VerdictError | None:
    return None if parsed.cause is None else VerdictError(parsed.cause, parsed.detail or "")


def unanswered(info: JudgeInfo, failure: Failure, case_id: str, rubric_id: str,
               rubric_hash: str, state_hash: str, exposure: msgspec.Raw) -> JudgeVerdict:
    """The ``unscored`` verdict of a request that got no answer, with why."""
    return JudgeVerdict(case_id, rubric_id, "unscored", None, info, None, None, rubric_hash,
                        state_hash, exposure, VerdictError(failure.cause, failure.detail))


# -- a pair's verdict (issue 28) -------------------------------------------------------------------
Answer = Stored | Failure  # what one order got: a stored answer, or why it got none


class Order(Protocol):
    """An order of a pairwise state, as the live judge reads it (``inputs.JudgeState``) or a
    batch manifest holds it (``batch.manifest.State``)."""

    @property
    def case_id(self) -> str: ...
    @property
    def rubric_id(self) -> str: ...
    @property
    def rubric_hash(self) -> str: ...
    @property
    def state_hash(self) -> str: ...
    @property
    def exposure(self) -> msgspec.Raw: ...
    @property
    def pair(self) -> inputs.Pair | None: ...


def pair_answered(info: JudgeInfo, config: JudgeConfig, ab: Order, ba: Order, first: Answer,
                  second: Answer) -> JudgeVerdict:
    """The one verdict of a pairwise state from its two orders' answers (``first``: order
    ``ab``'s), read in the pairwise form (``config``: the judge's pairwise config): the
    decision in A/B terms as ``pairwise.decide`` makes it, the status in run A's terms, both
    answers, and whether they agreed; ``unscored`` when either order is (with the cause of the
    first order that is)."""
    orders = [_order(config, state, answer) for state, answer in ((ab, first), (ba, second))]
    usage = summed(o.usage for o in orders)
    failed = next((o for o in orders if o.error is not None), None)
    decision = agreed = None
    if failed is not None:
        status, rationale = "unscored", None
        assert failed.error is not None
        error: VerdictError | None = VerdictError(
            failed.error.cause, f"{_SIDE[failed.order]}: {failed.error.detail}")
    else:
        assert orders[0].better is not None and orders[1].better is not None
        decision, agreed = decide(orders[0].better, orders[1].better)
        status, error = STATUS_OF[decision], None
        rationale = "\n".join(f"{_SIDE[o.order]} ({o.better}): {o.reason}" for o in orders)
    state = ab
    assert state.pair is not None
    return JudgeVerdict(state.case_id, state.rubric_id, status, rationale, info, usage, None,
                        state.rubric_hash, state.state_hash, state.exposure, error,
                        PairVerdict(state.pair.key, state.pair.chars, decision, agreed, orders))


_SIDE = {"ab": "A first", "ba": "B first"}


def _order(config: JudgeConfig, state: Order, answer: Answer) -> OrderAnswer:
    assert state.pair is not None
    order = state.pair.order
    if isinstance(answer, Failure):
        return OrderAnswer(order, None, None, None, None, state.state_hash,
                           VerdictError(answer.cause, answer.detail))
    parsed = config.parse(answer.body)
    error = _error(parsed)
    return OrderAnswer(order, parsed.status if error is None else None, parsed.reason,
                       parsed.usage, answer.request_id, state.state_hash, error)


# -- a panel's verdict (issue 26) ------------------------------------------------------------------
def vote(judge: str, model: str, sample: int, api: Provider, stored: Stored | None,
         failure: Failure | None, allows_na: bool = True) -> tuple[Vote, Parsed | None]:
    """One juror's vote on one sample, from its stored answer (or why it got none); and the
    answer as read (None without one). Read by the same parser as a single verdict, with the
    state's ``allows_na``: an ``na`` vote where the rubric does not allow it is an unscored
    vote (``na_not_allowed``), never a pass."""
    if stored is not None:
        parsed = _read(api, stored, allows_na)
        return Vote(judge, model, sample, parsed.status, parsed.reason, parsed.usage,
                    stored.request_id, _error(parsed)), parsed
    assert failure is not None
    return Vote(judge, model, sample, "unscored", None, None, None,
                VerdictError(failure.cause, failure.detail)), None


def panel(info: JudgeInfo, rule: str, votes: list[Vote], case_id: str, rubric_id: str,
          rubric_hash: str, state_hash: str, exposure: msgspec.Raw,
          confidence: bool = False, deciding: list[Vote] | None = None) -> JudgeVerdict:
    """The verdict of a panel's votes: the rule's decision over the scored votes, with its
    quorum (``_verdicts.rules``); the rationale of the first vote (in jury order) that agrees
    with it; the votes' tokens added up; every vote, and how the decision was taken; with
    ``confidence`` (--confidence), the share of the scored votes of each status.
    ``deciding``: the votes the rule decides over, where not all of them (escalation: the
    second judge's, where it was asked)."""
    t = rules.tally(v.status for v in votes)
    decision = rules.decide(rule, t if deciding is None else
                            rules.tally(v.status for v in deciding))
    rationale = next((v.rationale for v in votes if v.status == decision.status), None)
    error = None if decision.cause is None else VerdictError(decision.cause,
                                                             decision.detail or "")
    return JudgeVerdict(case_id, rubric_id, decision.status, rationale, info,
                        summed(v.usage for v in votes), None, rubric_hash, state_hash,
                        exposure, error, votes=votes,
                        panel=Panel(rule, t.votes, t.scored, rules.agreed(decision, t)),
                        confidence=from_votes([v.status for v in deciding or votes])
                        if confidence and decision.status != "unscored" else None)


def summed(usages: Iterable[TokenUsage | None]) -> TokenUsage | None:
    """The tokens of every answer that says them, added up (None when none does)."""
    counted = [u for u in usages if u is not None]
    if not counted:
        return None
    reasoning = sum(u.reasoning_tokens or 0 for u in counted)
    return TokenUsage(sum(u.input_tokens for u in counted), sum(u.output_tokens for u in counted),
                      reasoning or None)
