"""The one verdict maker: a judge state's key fields and its stored answer (or why it got
none) -> the verdict line. The live judge and ``batch collect`` both write through here, so a
verdict made from a batch result and one made from a live answer differ only where the
answers do (usage, request id)."""

from __future__ import annotations

import msgspec

from evalstream._judge.answer import NA_NOT_ALLOWED, Parsed, excerpt
from evalstream._judge.providers.base import Provider
from evalstream._judge.store import Failure, Stored
from evalstream._verdicts.records import JudgeInfo, JudgeVerdict, VerdictError


def answered(info: JudgeInfo, api: Provider, stored: Stored, case_id: str, rubric_id: str,
             rubric_hash: str, state_hash: str, exposure: msgspec.Raw,
             allows_na: bool = True) -> tuple[JudgeVerdict, Parsed]:
    """The verdict from a stored answer: its status and reason, or ``unscored`` with the
    cause the answer parser found (``api``: the provider it came from); and the answer as
    read (what the run's counts take from it). An ``na`` for a rubric that does not allow it
    (``allows_na`` false) is unscored (``na_not_allowed``), whatever asked for the answer: a
    server may ignore the schema that left ``na`` out."""
    parsed = api.parse(stored.body)
    status, reason = parsed.status, parsed.reason
    error = None if parsed.cause is None else VerdictError(parsed.cause, parsed.detail or "")
    if status == "na" and not allows_na:
        error = VerdictError(NA_NOT_ALLOWED, "the judge answered na, which this rubric does "
                             "not allow (allows_na = false): " + excerpt(reason or ""))
        status, reason = "unscored", None
    return JudgeVerdict(case_id, rubric_id, status, reason, info, parsed.usage,
                        stored.request_id, rubric_hash, state_hash, exposure, error), parsed


def unanswered(info: JudgeInfo, failure: Failure, case_id: str, rubric_id: str,
               rubric_hash: str, state_hash: str, exposure: msgspec.Raw) -> JudgeVerdict:
    """The ``unscored`` verdict of a request that got no answer, with why."""
    return JudgeVerdict(case_id, rubric_id, "unscored", None, info, None, None, rubric_hash,
                        state_hash, exposure, VerdictError(failure.cause, failure.detail))
