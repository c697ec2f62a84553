"""``--from promptfoo-grades``: promptfoo's ``llm-rubric`` grades as evalstream verdicts.

``promptfoo eval -o results.json`` writes one JSON object: ``results.results`` holds a result
a (test, prompt, provider), its ``gradingResult.componentResults`` one result an assertion.
Each ``llm-rubric`` component is a judge's verdict and becomes one. The array is streamed
element by element (``depth``), one result in memory at a time; ``config`` is not needed
(each result's ``testCase.options.provider`` names its grader).

promptfoo reads its grader's answer open (``pass = parsed.pass ?? true``): an answer without
``pass`` is a pass, and a failed grader call (an HTTP 500, an answer without JSON) is a
fail. Neither is a verdict here (docs/convert.md, the ``promptfoo-grades`` table): a
component promptfoo marks ``graderError`` is ``unscored`` with cause ``peer_error`` (its
reason, promptfoo's message, in the detail); a pass with score 0, which is what promptfoo
writes for an answer without ``pass`` that gave score 0, is ``unscored`` with cause
``peer_fail_open``. An answer with neither ``pass`` nor ``score`` is written by promptfoo
exactly as a pass with score 1: no reader of the file can tell them apart (said in the docs).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, BinaryIO

from evalstream._cases import schema
from evalstream._convert import depth
from evalstream._convert.formats.base import Format, Given, Source
from evalstream._convert.rows import Built, CasePath, Notes, Row, RowProblem
from evalstream.errors import InputError

PROVIDER = "promptfoo"
RUBRIC = "llm-rubric"  # the assertion type read, and a verdict's rubric id without a metric
PEER_ERROR = "peer_error"
PEER_FAIL_OPEN = "peer_fail_open"


def _open(given: Given) -> Source:
    rows = read(given.stream(), given.path)
    given.stack.callback(rows.close)
    if given.id_from is not None:  # the run makes each id from the result, as for any source
        return Source(rows, lambda v, n: build(v, n, with_id=False), None, given.ids_from)
    return Source(rows, build, None, "the test's `vars.id`", own_ids=True)


FORMAT = Format(
    "promptfoo-grades", "a promptfoo results file (promptfoo eval -o results.json): its "
    "llm-rubric grades as verdicts, one an assertion", _open, writes="verdicts",
    options=("id_from",),
    refuses={"mapping": "promptfoo-grades has its own fixed mapping (see docs/convert.md)",
             "tool_failure_when": "promptfoo-grades writes verdicts, which have no tool events"},
    stream=True, kinds=("promptfoo-results",), magic="a promptfoo results file")


def read(stream: BinaryIO, path: str) -> Generator[Row, None, None]:
    """The results of ``results.results`` in ``stream`` (the file ``path``, or ``-``), in the
    file's order, as rows."""
    import ijson

    name = "stdin" if path == "-" else path

    def rows() -> Generator[Row, None, None]:
        number = 0
        try:
            events = iter(ijson.basic_parse(stream, use_float=True))
            next(events)  # the file's start_map
            for opens in ("start_map", "start_array"):  # results, then results.results
                if depth.find_key(events, "results") != (opens, None):
                    raise InputError(f"{name} has no `results.results` array: not a "
                                     "promptfoo results file (`promptfoo eval -o "
                                     "results.json` writes one).")
            for value in depth.elements(events):
                number += 1
                where = f"results.results[{number - 1}]"
                if isinstance(value, depth.Deep):
                    yield Row(number, None, depth.too_deep("The result", where, value.path))
                elif not isinstance(value, dict):
                    yield Row(number, None, RowProblem(
                        f"`{where}` is not an object: not a promptfoo result.", where, "$",
                        kind="bad result"))
                else:
                    yield Row(number, value)
        except (OSError, ijson.JSONError, StopIteration) as exc:
            raise InputError(f"cannot read {name} after result {number}: {exc}") from exc

    return rows()


def case_id(values: dict[str, Any]) -> str:
    """A result's case id without ``--id-from``: its test's ``vars.id``, or a RowProblem that
    says how to make ids (a test without one, or one that is not a valid id)."""
    variables = values.get("vars")
    given = variables.get("id") if isinstance(variables, dict) else None
    text = str(given) if isinstance(given, (str, int)) and not isinstance(given, bool) else None
    if text is None or not schema.is_id(text):
        shown = "no `vars.id`" if given is None else f"`vars.id` {str(given)[:80]!r}, which is " \
                                                     f"not a valid case id ({schema.ID_RULE})"
        raise RowProblem(f"The test has {shown}; give each test a `vars.id` (the id of its "
                         "case), or --id-from a template of the result's fields, e.g. "
                         "'pf.{testIdx}' or '{vars.question_id}' ('.{promptIdx}' too when "
                         "several prompts ran).", "vars.id", "$.case_id", kind="invalid id")
    return text


def build(values: dict[str, Any], notes: Notes, with_id: bool = True) -> Built:
    """A result's verdicts (one an ``llm-rubric`` assertion), with the case id unless the run
    makes ids (``--id-from``)."""
    cid = case_id(values) if with_id else None
    grading = values.get("gradingResult")
    components = grading.get("componentResults") if isinstance(grading, dict) else None
    if not isinstance(components, list) or not components:
        error = values.get("error")
        why = f" (its error: {str(error)[:200]})" if error else ""
        raise RowProblem(f"The result has no grading{why}: promptfoo graded nothing of it.",
                         "gradingResult", "$.status", kind="no grade", case_id=cid)
    verdicts = []
    seen: dict[str, int] = {}
    for i, component in enumerate(components):
        assertion = component.get("assertion") if isinstance(component, dict) else None
        kind = assertion.get("type") if isinstance(assertion, dict) else None
        if kind != RUBRIC:
            notes.unmapped_score(str(kind or "untyped"), "not model-graded")
            continue
        assert isinstance(assertion, dict)
        metric = assertion.get("metric")
        rubric = metric if isinstance(metric, str) and metric else RUBRIC
        if rubric in seen:
            raise RowProblem(
                f"The test has two llm-rubric assertions named `{rubric}` (components "
                f"{seen[rubric]} and {i}); give each a `metric` of its own, which is the "
                "verdict's rubric id.", f"gradingResult.componentResults[{i}].assertion",
                "$.rubric_id", kind="duplicate rubric", case_id=cid)
        seen[rubric] = i
        verdicts.append(verdict(rubric, component, values, notes))
    if not verdicts:
        raise RowProblem("The result has no llm-rubric assertion: no judge graded it.",
                         "gradingResult", "$.status", kind="no grade", case_id=cid)
    origin: dict[CasePath, str] = {("id",): "vars.id"} if with_id else {}
    return Built({"id": cid} if with_id else {}, origin, verdicts)


def verdict(rubric: str, component: dict[str, Any], values: dict[str, Any],
            notes: Notes) -> dict[str, Any]:
    """One llm-rubric component as a verdict (without its case id)."""
    passed, score, reason = component.get("pass"), component.get("score"), component.get("reason")
    metadata = component.get("metadata")
    failed = isinstance(metadata, dict) and bool(metadata.get("graderError"))
    error = None
    if failed or not isinstance(passed, bool):
        status = "unscored"
        error = {"cause": PEER_ERROR, "detail": "promptfoo marks the grader's call failed "
                                                "(`graderError`; its message is the rationale)"}
    elif passed and isinstance(score, (int, float)) and not isinstance(score, bool) \
            and score <= 0:
        status = "unscored"
        error = {"cause": PEER_FAIL_OPEN,
                 "detail": f"promptfoo says pass with score {score}, as it writes a grader's "
                           "answer without `pass`, which it reads as a pass"}
    else:
        status = "pass" if passed else "fail"
    out: dict[str, Any] = {
        "rubric_id": rubric, "status": status,
        "rationale": reason if isinstance(reason, str) else None,
        "judge": {"model": _grader(values), "provider": PROVIDER, "assertion": RUBRIC}}
    if error is not None:
        out["error"] = error
    notes.verdict(rubric, status, error["cause"] if error is not None else None)
    return out


def _grader(values: dict[str, Any]) -> str:
    """The grading provider as the result's test names it (promptfoo's default otherwise)."""
    test = values.get("testCase")
    options = test.get("options") if isinstance(test, dict) else None
    provider = options.get("provider") if isinstance(options, dict) else None
    if isinstance(provider, dict):
        provider = provider.get("id")
    return provider if isinstance(provider, str) and provider else "promptfoo default grader"
