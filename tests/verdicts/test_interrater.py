"""Fleiss' kappa and Krippendorff's alpha against independent implementations (statsmodels'
``fleiss_kappa``, the ``krippendorff`` package) to 1e-6, on generated panels with missing
votes; the bootstrap over patterns against a plain bootstrap over units."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._verdicts.interrater import (
    Pattern,
    among,
    fleiss_kappa,
    krippendorff_alpha,
)

krippendorff = pytest.importorskip("krippendorff")
inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")


def table_st(raters: int | None = None) -> st.SearchStrategy[np.ndarray]:
    """Units x 3 categories; every row sums to ``raters`` (or to anything from 0 to 7)."""
    def row(m: int) -> st.SearchStrategy[list[int]]:
        return st.integers(0, m).flatmap(
            lambda a: st.integers(0, m - a).map(lambda b: [a, b, m - a - b]))

    rows = row(raters) if raters is not None else st.integers(0, 7).flatmap(row)
    return st.lists(rows, min_size=1, max_size=40).map(np.array)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.integers(2, 9).flatmap(table_st))
def test_fleiss_kappa_is_statsmodels(table: np.ndarray) -> None:
    ours = fleiss_kappa(table)
    with np.errstate(divide="ignore", invalid="ignore"):
        theirs = inter_rater.fleiss_kappa(table, method="fleiss")
    if ours is None:
        assert not math.isfinite(theirs) or (table.sum(axis=0) > 0).sum() == 1
    else:
        assert ours == pytest.approx(theirs, abs=1e-6)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(table_st())
def test_krippendorff_alpha_is_the_krippendorff_package(table: np.ndarray) -> None:
    ours = krippendorff_alpha(table)
    pairable = table[table.sum(axis=1) >= 2]
    defined = len(pairable) and (pairable.sum(axis=0) > 0).sum() > 1
    if not defined:
        assert ours is None
        return
    theirs = krippendorff.alpha(value_counts=table, level_of_measurement="nominal")
    assert ours == pytest.approx(theirs, abs=1e-6)


def test_reliability_data_with_missing_votes() -> None:
    """The package's own input shape (raters x units, NaN for a missing vote) read as votes."""
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 300)
    data = np.where(rng.random((4, 300)) < 0.8, truth, rng.integers(0, 3, (4, 300))).astype(float)
    data[rng.random((4, 300)) < 0.15] = np.nan  # unscored votes
    counts = np.stack([(data == c).sum(axis=0) for c in range(3)], axis=1)
    assert krippendorff_alpha(counts) == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-6)


def test_weights_count_a_row_as_often_as_they_say() -> None:
    table = np.array([[3, 0, 0], [2, 1, 0], [0, 2, 1], [1, 1, 1]])
    weights = np.array([5, 2, 1, 3])
    expanded = np.repeat(table, weights, axis=0)
    assert fleiss_kappa(table, weights) == pytest.approx(fleiss_kappa(expanded), abs=1e-12)
    assert krippendorff_alpha(table, weights) == pytest.approx(krippendorff_alpha(expanded),
                                                               abs=1e-12)


def test_among_a_panel_with_unscored_votes() -> None:
    rng = np.random.default_rng(11)
    patterns = []
    for _ in range(500):
        votes = rng.choice(["pass", "fail", "na", "unscored"], 3, p=[0.6, 0.25, 0.05, 0.1])
        patterns.append(Pattern(*(int((votes == s).sum()) for s in
                                  ("pass", "fail", "na", "unscored"))))
    fleiss, alpha = among(patterns, 0.95)
    assert fleiss is not None and alpha is not None
    complete = np.array([p[:3] for p in patterns if not p.unscored])
    assert fleiss.units == len(complete)
    assert fleiss.value == pytest.approx(inter_rater.fleiss_kappa(complete), abs=1e-6)
    pairable = np.array([p[:3] for p in patterns if p.scored >= 2])
    assert alpha.units == len(pairable)
    assert alpha.value == pytest.approx(
        krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal"), abs=1e-6)
    for e in (fleiss, alpha):
        assert e.low is not None and e.high is not None and e.low < e.value < e.high
    assert among(patterns, 0.95) == (fleiss, alpha)  # a fixed seed: the same bytes


def test_the_pattern_bootstrap_is_the_unit_bootstrap() -> None:
    """Drawing patterns by multinomial is drawing units with replacement: the intervals of
    the two agree within what 1,000 draws can tell apart."""
    rng = np.random.default_rng(5)
    patterns = [Pattern(*row, 0) for row in
                rng.multinomial(3, [0.55, 0.4, 0.05], size=400).tolist()]
    fleiss, _ = among(patterns, 0.9, resamples=1000)
    assert fleiss is not None and fleiss.low is not None and fleiss.high is not None
    table = np.array([p[:3] for p in patterns])
    plain = [fleiss_kappa(table[rng.integers(0, len(table), len(table))]) for _ in range(1000)]
    low, high = np.quantile([v for v in plain if v is not None], [0.05, 0.95])
    assert fleiss.low == pytest.approx(low, abs=0.02) and fleiss.high == pytest.approx(high,
                                                                                      abs=0.02)


def test_undefined_statistics_are_none() -> None:
    assert among([], 0.95) == (None, None)
    one_class = [Pattern(3, 0, 0)] * 20
    assert among(one_class, 0.95) == (None, None)
    lonely = [Pattern(1, 0, 0, 2)] * 5  # no unit has two scored votes
    assert among(lonely, 0.95)[1] is None


def test_a_units_pattern_is_the_jury_rules_tally() -> None:
    """One record of a panel's votes: the pattern agreement is computed over is the tally the
    jury rules decide on, so a verdict's tally goes in as it is."""
    from evalstream._verdicts.rules import Tally, tally

    assert Pattern is Tally
    assert tally(["pass", "fail", "pass", "unscored"]) == Pattern(2, 1, 0, 1)
