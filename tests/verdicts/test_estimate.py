"""The prediction-powered pass rate, its interval and the label budget (issue 29), against a
plain transcription of the published formulas (``plain.plain_ppi_mean``) and by simulation;
the reliability table and ECE against numpy's digitize."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._verdicts import calibration
from evalstream._verdicts.estimate import MIN_LABELS, Sums, estimate, more_labels
from tests.verdicts.plain import plain_ece, plain_ppi_mean


def sums_of(y: list[int], f: list[float], fu: list[float]) -> Sums:
    s = Sums()
    for yi, fi in zip(y, f, strict=True):
        s.labelled(yi, fi)
    for fi in fu:
        s.unlabelled(fi)
    return s


def biased_judge(rng: np.random.Generator, rate: float, n: int, big_n: int,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A judge that passes 30% of true fails and fails 10% of true passes: labels and judge
    on n labelled checks, and the judge and the truth on N unlabelled ones."""
    truth = rng.random(n + big_n) < rate
    flip = np.where(truth, rng.random(n + big_n) < 0.10, rng.random(n + big_n) < 0.30)
    judge = (truth ^ flip).astype(float)
    return truth[:n].astype(float), judge[:n], judge[n:], truth


@pytest.mark.parametrize("seed", range(8))
def test_the_estimate_is_the_published_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, f, fu, _ = biased_judge(rng, 0.3 + 0.05 * seed, 40 + 20 * seed, 500 + 100 * seed)
    found = estimate(sums_of(list(y), list(f), list(fu)))
    theta, low, high, lam = plain_ppi_mean(y, f, fu)
    assert found.estimate == pytest.approx(theta, abs=1e-9)
    assert found.low == pytest.approx(low, abs=1e-9)
    assert found.high == pytest.approx(high, abs=1e-9)
    assert found.power_tuning == pytest.approx(lam, abs=1e-9)
    assert found.labelled == len(y) and found.unlabelled == len(fu)
    assert found.labelled_rate == pytest.approx(y.mean())
    assert found.judge_rate == pytest.approx(np.concatenate([f, fu]).mean())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.floats(0, 1)), min_size=MIN_LABELS,
                max_size=60),
       st.lists(st.floats(0, 1), min_size=2, max_size=80))
def test_any_values_match_the_formula(labelled: list[tuple[int, float]],
                                      unlabelled: list[float]) -> None:
    """Probabilities as the judge's values too (any f in [0, 1]), any sizes."""
    y, f = [a for a, _ in labelled], [b for _, b in labelled]
    if np.var(np.concatenate([f, unlabelled])) < 1e-12:
        return  # a constant judge: lambda is 0 by definition here, 0/0 in the plain version
    found = estimate(sums_of(y, f, unlabelled))
    theta, low, high, lam = plain_ppi_mean(y, f, unlabelled)
    assert found.power_tuning == pytest.approx(lam, abs=1e-7)
    assert found.estimate == pytest.approx(theta, abs=1e-7)
    assert found.low == pytest.approx(low, abs=1e-6)
    assert found.high == pytest.approx(high, abs=1e-6)


def test_too_few_labels_give_no_interval() -> None:
    found = estimate(sums_of([1] * (MIN_LABELS - 1), [1.0] * (MIN_LABELS - 1), [0.0, 1.0]))
    assert (found.estimate, found.low, found.high, found.more_labels) == (None,) * 4
    assert found.labelled_rate == 1.0 and found.judge_rate == pytest.approx(10 / 11)


def test_a_constant_judge_weighs_nothing_and_no_unlabelled_is_the_labelled_rate() -> None:
    y = [1, 0] * 10
    constant = estimate(sums_of(y, [1.0] * 20, [1.0] * 50))
    assert constant.power_tuning == 0.0 and constant.estimate == pytest.approx(0.5)
    alone = estimate(sums_of(y, [1.0, 0.0] * 10, []))
    assert alone.power_tuning == 0.0 and alone.estimate == pytest.approx(0.5)
    # The classical interval: 0.5 +- 1.96 * sqrt(0.25 / 20).
    assert alone.high - alone.low == pytest.approx(2 * 1.959964 * math.sqrt(0.25 / 20), 1e-5)


def test_the_label_budget_reaches_the_width_it_promises() -> None:
    """The labels it asks for, drawn from the same judge, give an interval that wide."""
    rng = np.random.default_rng(7)
    y, f, fu, _ = biased_judge(rng, 0.4, 200, 20_000)
    first = estimate(sums_of(list(y), list(f), list(fu)), target_width=0.05)
    assert first.more_labels is not None and first.more_labels > 0
    assert first.high - first.low > 0.05
    more = first.more_labels
    y2, f2, fu2, _ = biased_judge(rng, 0.4, 200 + more, 20_000)
    second = estimate(sums_of(list(y2), list(f2), list(fu2)), target_width=0.05)
    assert second.high - second.low == pytest.approx(0.05, abs=0.006)
    assert second.more_labels is not None and second.more_labels < 0.1 * more


def test_a_width_the_judge_alone_exceeds_is_out_of_reach() -> None:
    assert more_labels(100, 0.1, imputed_term=0.01, z=1.96, target_width=0.05) is None
    assert more_labels(100, 0.0, imputed_term=0.0, z=1.96, target_width=0.05) == 0


@pytest.mark.slow
def test_the_interval_covers_the_true_rate() -> None:
    """Over 1,000 synthetic datasets with a biased judge (passes 30% of fails, fails 10% of
    passes: its raw rate is off by about 0.1), the 95% interval covers the rate of the whole
    population at least 94% of the time; the judge's raw rate is off by 0.06 on average."""
    rng = np.random.default_rng(29)
    covered, raw_errors = 0, []
    for _ in range(1000):
        y, f, fu, truth = biased_judge(rng, 0.6, 300, 3000)
        s = Sums()
        for label, judge in ((1, 1), (1, 0), (0, 1), (0, 0)):
            s.labelled(label, judge, int(np.sum((y == label) & (f == judge))))
        s.unlabelled(1.0, int(fu.sum()))
        s.unlabelled(0.0, int(len(fu) - fu.sum()))
        found = estimate(s)
        assert found.low is not None and found.high is not None
        covered += found.low <= truth.mean() <= found.high
        raw_errors.append(found.judge_rate - truth.mean())
    assert covered >= 940, covered
    assert np.mean(raw_errors) == pytest.approx(0.06, abs=0.01)


@pytest.mark.parametrize("seed", range(5))
def test_the_reliability_table_is_numpys(seed: int) -> None:
    r = random.Random(seed)
    confidences = [r.choice([r.random(), 1.0, 0.5, 0.1 * r.randint(0, 10)]) for _ in range(300)]
    agreed = [r.random() < c for c in confidences]
    bins = calibration.Bins()
    for c, a in zip(confidences, agreed, strict=True):
        bins.add(c, a)
    table = bins.table()
    ece, plain = plain_ece(confidences, agreed)
    assert table.pairs == 300 and table.ece == pytest.approx(ece, abs=1e-12)
    assert [(b.pairs, b.confidence, b.agreement) for b in table.bins] == [
        (n, pytest.approx(c), pytest.approx(a)) for n, c, a in plain]


def test_a_perfectly_calibrated_judge_and_an_overconfident_one() -> None:
    sure, wrong = calibration.Bins(), calibration.Bins()
    for i in range(100):
        sure.add(0.8, i % 5 != 0)  # right 8 times in 10 at 0.8
        wrong.add(0.99, i % 2 == 0)  # right half the time at 0.99
    assert sure.table().ece == pytest.approx(0.0)
    assert wrong.table().ece == pytest.approx(0.49)
    assert calibration.Bins().table() == calibration.Reliability(0, [], None)
