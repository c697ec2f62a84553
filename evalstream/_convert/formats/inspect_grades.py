"""``--from inspect-grades``: an inspect_ai log's model-graded scores as evalstream verdicts.

inspect_ai's ``model_graded_qa`` and ``model_graded_fact`` ask a grader model and keep its
exchange in the score's ``metadata.grading`` (the prompt, then the grader's message): such a
score is a judge's verdict, and becomes one, so that ``agree``, ``compare`` and ``view``
measure inspect's judge against labels and against an evalstream run on the same cases. The
log is read as ``--from inspect`` reads it (``inspect_log.read``: ``.eval`` or ``.json``,
``NaN`` included), and a sample's case id is the one ``--from inspect`` gives it (or
``--id-from``), so the verdicts line up with the cases converted from the same log.

A verdict (docs/convert.md, the ``inspect-grades`` table): ``rubric_id`` the scorer's name;
``status`` by the one rule of inspect's values (``inspect_log.label_of``: ``C`` pass, ``I``
fail, ``N`` na); ``rationale`` the score's ``explanation`` byte for byte (the grader's whole
answer); ``judge`` the grader's model as its message names it. What inspect did not score is
never a pass: ``NaN`` (``Score.unscored()``: a grader's answer without a grade) is
``unscored`` with cause ``peer_unscored``, and a value that is neither pass nor fail (``P``
for partial credit, 0.5) is ``unscored`` with cause ``not_a_verdict``. Scores without a
grader's exchange (``match``, ``includes``: no judge) are not verdicts; they are counted.
"""

from __future__ import annotations

from typing import Any

from evalstream._convert.formats import inspect_log
from evalstream._convert.formats.base import Format, Given, Source
from evalstream._convert.rows import Built, CasePath, Notes, RowProblem

PROVIDER = "inspect_ai"  # the judge's `provider`: who ran the grader
# The causes of an imported verdict that is unscored (docs/convert.md says them).
PEER_UNSCORED = "peer_unscored"
NOT_A_VERDICT = "not_a_verdict"


def _open(given: Given) -> Source:
    return inspect_log.open_samples(given, build)


FORMAT = Format(
    "inspect-grades", "an inspect_ai eval log's model-graded scores (model_graded_qa, "
    "model_graded_fact) as verdicts, one a score", _open, writes="verdicts",
    options=("id_from",),
    refuses={"mapping": "inspect-grades has its own fixed mapping (see docs/convert.md)",
             "tool_failure_when": "inspect-grades writes verdicts, which have no tool events"},
    kinds=("inspect-eval", "inspect-json"))


def graded(score: Any) -> bool:
    """Whether a score is a grader model's (it keeps the grader's exchange)."""
    metadata = score.get("metadata") if isinstance(score, dict) else None
    return isinstance(metadata, dict) and isinstance(metadata.get("grading"), list)


def build(values: dict[str, Any], notes: Notes, header: inspect_log.EvalHeader,
          with_id: bool = True) -> Built:
    """A sample's verdicts (``values``: the fields of ``inspect_log.Sample``), one a
    model-graded score, with the case id unless the run makes ids (``--id-from``)."""
    case_id = inspect_log.sample_case_id(values, header) if with_id else None
    if values.get("error"):
        raise RowProblem("The sample ended in an error; inspect_ai graded nothing of it.",
                         "error", "$", kind="sample error", case_id=case_id)
    scores = values.get("scores") or {}
    verdicts = []
    for scorer, score in scores.items():
        if not graded(score):
            notes.unmapped_score(scorer, "not model-graded")
            continue
        verdicts.append(verdict(scorer, score, header, notes))
    if not verdicts:
        names = ", ".join(f"`{s}`" for s in list(scores)[:8]) or "none"
        raise RowProblem(f"The sample has no model-graded score (its scores: {names}); a score "
                         "is a judge's verdict when it keeps the grader's exchange "
                         "(`metadata.grading`), as model_graded_qa and model_graded_fact "
                         "write it.", "scores", "$.status", kind="no grade", case_id=case_id)
    origin: dict[CasePath, str] = {("id",): "id"} if with_id else {}
    origin[("rubric_id",)] = "scores"
    return Built({"id": case_id} if with_id else {}, origin, verdicts)


def verdict(scorer: str, score: dict[str, Any], header: inspect_log.EvalHeader,
            notes: Notes) -> dict[str, Any]:
    """One model-graded score as a verdict (without its case id)."""
    value = score.get("value")
    status = inspect_log.label_of(value)
    error = None
    if status is None:
        shown = inspect_log.shown_value(value)
        if shown in ("NaN", "Infinity", "-Infinity"):
            reason = score.get("reason")
            error = {"cause": PEER_UNSCORED,
                     "detail": f"inspect_ai scored it {shown}"
                               + (f" ({reason})" if isinstance(reason, str) else "")}
        else:
            error = {"cause": NOT_A_VERDICT,
                     "detail": f"inspect_ai's grade {shown} is neither pass nor fail"}
        status = "unscored"
    explanation = score.get("explanation")
    out: dict[str, Any] = {
        "rubric_id": scorer, "status": status,
        "rationale": explanation if isinstance(explanation, str) else None,
        "judge": {"model": _grader(score, header), "provider": PROVIDER, "scorer": scorer}}
    if error is not None:
        out["error"] = error
    notes.verdict(scorer, status, error["cause"] if error is not None else None)
    return out


def _grader(score: dict[str, Any], header: inspect_log.EvalHeader) -> str:
    """The grader's model: as its message in the exchange names it, else the eval's model
    (model_graded_qa grades with the model under test unless given another)."""
    for message in reversed(score["metadata"]["grading"]):
        if isinstance(message, dict) and message.get("role") == "assistant" \
                and isinstance(message.get("model"), str) and message["model"]:
            return str(message["model"])
    return header.model or "unknown"
