"""The one verdict maker: a judge state's key fields and its stored answer (or why it got
none) -> the verdict line. The live judge and ``batch collect`` both write through here, so a
verdict made from a batch result and one made from a live answer differ only where the
answers do (usage, request id). A panel's verdict (a jury, or several samples) is made here
too, from its votes, each read as a single verdict's answer is."""

from __future__ import annotations

import msgspec

from evalstream._judge.answer import Parsed
from evalstream._judge.logprobs import from_votes
from evalstream._judge.providers.base import Provider
from evalstream._judge.store import Failure, Stored
from evalstream._verdicts import rules
from evalstream._verdicts.records import (
    JudgeInfo,
    JudgeVerdict,
    Panel,
    TokenUsage,
    VerdictError,
    Vote,
)


def answered(info: JudgeInfo, api: Provider, stored: Stored, case_id: str, rubric_id: str,
             rubric_hash: str, state_hash: str,
             exposure: msgspec.Raw) -> tuple[JudgeVerdict, Parsed]:
    """The verdict from a stored answer: its status and reason, or ``unscored`` with the
    cause the answer parser found (``api``: the provider it came from); and the answer as
    read (what the run's counts take from it)."""
    parsed = api.parse(stored.body)
    error = None if parsed.cause is None else VerdictError(parsed.cause, parsed.detail or "")
    return JudgeVerdict(case_id, rubric_id, parsed.status, parsed.reason, info, parsed.usage,
                        stored.request_id, rubric_hash, state_hash, exposure, error,
                        confidence=parsed.confidence), parsed


def unanswered(info: JudgeInfo, failure: Failure, case_id: str, rubric_id: str,
               rubric_hash: str, state_hash: str, exposure: msgspec.Raw) -> JudgeVerdict:
    """The ``unscored`` verdict of a request that got no answer, with why."""
    return JudgeVerdict(case_id, rubric_id, "unscored", None, info, None, None, rubric_hash,
                        state_hash, exposure, VerdictError(failure.cause, failure.detail))


# -- a panel's verdict (issue 26) ------------------------------------------------------------------
def vote(judge: str, model: str, sample: int, api: Provider, stored: Stored | None,
         failure: Failure | None) -> tuple[Vote, Parsed | None]:
    """One juror's vote on one sample, from its stored answer (or why it got none); and the
    answer as read (None without one). Read by the same parser as a single verdict."""
    if stored is not None:
        parsed = api.parse(stored.body)
        error = None if parsed.cause is None else VerdictError(parsed.cause, parsed.detail or "")
        return Vote(judge, model, sample, parsed.status, parsed.reason, parsed.usage,
                    stored.request_id, error), parsed
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
                        added_usage(votes), None, rubric_hash, state_hash, exposure, error,
                        votes, Panel(rule, t.votes, t.scored, rules.agreed(decision, t)),
                        from_votes([v.status for v in deciding or votes])
                        if confidence and decision.status != "unscored" else None)


def added_usage(votes: list[Vote]) -> TokenUsage | None:
    """The tokens of every vote that says them (None when none does)."""
    counted = [v.usage for v in votes if v.usage is not None]
    if not counted:
        return None
    reasoning = sum(u.reasoning_tokens or 0 for u in counted)
    return TokenUsage(sum(u.input_tokens for u in counted), sum(u.output_tokens for u in counted),
                      reasoning or None)
