"""What a dry run expects a judge run to cost, beside its worst case: the output tokens of the
answers already in the store, per rubric.

The worst case takes every answer at ``--max-output-tokens``; answers are usually far
shorter (a status and a reason of one to three sentences). The expected figures take, for
each rubric, the p50 and p95 of the output tokens of its answers already stored for the
same model (the states of the input whose answer is stored: their requests name the model
and hold the rubric's question), times the requests of that rubric still to send. A rubric
with no stored answer takes those of every answer of the model in the store, and says so;
with none at all, only the worst case is known, and the dry run says that.

Counts are kept as histograms (an answer's output tokens take few distinct values), so
memory does not grow with the number of states or answers.
"""

from __future__ import annotations

from collections import Counter

from msgspec import Struct

from evalstream._verdicts.percentiles import percentile

RUBRIC, MODEL, NONE = "rubric", "model", "none"  # where a rubric's figures come from


class RubricOutput(Struct):
    """One rubric's expected output tokens per request: ``p50`` and ``p95`` (nearest rank)
    of ``answers`` stored answers (``source``: this rubric's, else every answer of the model
    in the store; ``none``: no answer to go by), and the ``requests`` still to send."""

    rubric: str
    requests: int
    answers: int
    source: str
    p50: int | None
    p95: int | None


class Expected(Struct):
    """The expected output tokens of the requests to send: the sum over rubrics of requests
    times p50 (and p95); None when a rubric with requests has no answer to go by."""

    by_rubric: list[RubricOutput]
    output_tokens_p50: int | None
    output_tokens_p95: int | None


class Sample:
    """The output tokens of the stored answers a dry run meets, and the requests it would
    send, by rubric."""

    def __init__(self) -> None:
        self.stored: dict[str, Counter[int]] = {}
        self.to_send: Counter[str] = Counter()

    def answered(self, rubric: str, output_tokens: int | None) -> None:
        """A state of ``rubric`` whose answer is stored (its output tokens, when known)."""
        counts = self.stored.setdefault(rubric, Counter())
        if output_tokens is not None:
            counts[output_tokens] += 1

    def sending(self, rubric: str) -> None:
        """A request of ``rubric`` the run would send."""
        self.to_send[rubric] += 1

    def expected(self, model_answers: Counter[int]) -> Expected:
        """The expected output tokens, each rubric from its own answers, else from
        ``model_answers`` (every answer of the model in the store, as a histogram)."""
        rows = []
        p50_total: int | None = 0
        p95_total: int | None = 0
        for rubric in sorted(set(self.stored) | set(self.to_send)):
            own = self.stored.get(rubric, Counter())
            counts, source = (own, RUBRIC) if own else (
                (model_answers, MODEL) if model_answers else (Counter(), NONE))
            p50, p95 = percentile(counts, 50), percentile(counts, 95)
            requests = self.to_send[rubric]
            rows.append(RubricOutput(rubric, requests, sum(counts.values()), source, p50, p95))
            if requests:
                p50_total = None if p50 is None or p50_total is None else p50_total + p50 * \
                    requests
                p95_total = None if p95 is None or p95_total is None else p95_total + p95 * \
                    requests
        return Expected(rows, p50_total, p95_total)
