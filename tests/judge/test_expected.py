"""The expected output tokens of a dry run: nearest-rank percentiles of the stored answers'
output tokens (checked against numpy's), per rubric, else of every answer of the model."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from evalstream._judge.expected import MODEL, NONE, RUBRIC, Sample, percentile


@given(st.lists(st.integers(0, 2_000), min_size=1, max_size=300), st.sampled_from([50, 95]))
def test_percentile_is_the_nearest_rank(values: list[int], percent: int) -> None:
    expected = np.percentile(values, percent, method="inverted_cdf")
    assert percentile(Counter(values), percent) == int(expected)


def test_each_rubric_from_its_own_answers_else_the_models() -> None:
    sample = Sample()
    for n in (10, 20, 30, 40):
        sample.answered("a", n)
    sample.answered("a", None)  # an answer without a count: not in the figures
    for _ in range(3):
        sample.sending("a")
    sample.sending("b")  # no answer of its own
    e = sample.expected(Counter({5: 1, 7: 1}))
    rows = {r.rubric: r for r in e.by_rubric}
    assert (rows["a"].source, rows["a"].answers, rows["a"].p50, rows["a"].p95) == (
        RUBRIC, 4, 20, 40)
    assert (rows["b"].source, rows["b"].answers, rows["b"].p50, rows["b"].p95) == (MODEL, 2, 5, 7)
    assert (e.output_tokens_p50, e.output_tokens_p95) == (3 * 20 + 5, 3 * 40 + 7)
    # No answer of the model at all: a rubric with requests leaves the total unknown.
    e = sample.expected(Counter())
    assert {r.rubric: r.source for r in e.by_rubric} == {"a": RUBRIC, "b": NONE}
    assert e.output_tokens_p50 is None and e.output_tokens_p95 is None
