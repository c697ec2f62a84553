"""The statistics: kappa and its interval, McNemar, precision and recall, against hand-worked
examples and against statsmodels and scipy (test-only references), including degenerate
tables."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest, norm
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from evalstream._verdicts.agreement import (
    MIN_PAIRS,
    Confusion,
    accuracy,
    fail_precision,
    fail_recall,
    kappa,
    mcnemar,
    z_value,
)


def reference_kappa(c: Confusion, confidence: float = 0.95,
                    ) -> tuple[float, float, float, float]:
    """statsmodels' kappa, standard error and Wald interval for the same 2x2 table.

    statsmodels' own interval is the 95% one; other levels use its standard error with
    scipy's normal quantile.
    """
    table = np.array([[c.pass_pass, c.pass_fail], [c.fail_pass, c.fail_fail]], dtype=float)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # statsmodels also tests kappa = 0, which divides by zero when a rater is constant.
        warnings.simplefilter("ignore", RuntimeWarning)
        res = cohens_kappa(table)
    se = res["std_kappa"]
    if math.isnan(se) and abs(res["var_kappa"]) < 1e-15:
        # Rounding left the variance at -1e-17 (a constant rater): statsmodels' sqrt gives
        # NaN where the standard error is 0.
        se = 0.0
    if confidence == 0.95 and se == res["std_kappa"]:
        return res["kappa"], se, res["kappa_low"], res["kappa_upp"]
    delta = norm.isf((1 - confidence) / 2) * se
    return res["kappa"], se, res["kappa"] - delta, res["kappa"] + delta


def reference_interval(c: Confusion, confidence: float = 0.95) -> tuple[float, float]:
    """The interval evalstream promises, from the references: the wider of statsmodels' Wald
    interval and statsmodels' Wilson interval of the observed agreement mapped to kappa with
    the chance agreement fixed, clipped to [-1, 1]."""
    k, _, wald_low, wald_high = reference_kappa(c, confidence)
    n = c.pairs
    rows = ((c.pass_pass + c.pass_fail) / n, (c.fail_pass + c.fail_fail) / n)
    cols = ((c.pass_pass + c.fail_pass) / n, (c.pass_fail + c.fail_fail) / n)
    chance = rows[0] * cols[0] + rows[1] * cols[1]
    low_o, high_o = proportion_confint(c.agreements, n, alpha=1 - confidence, method="wilson")
    low = min(wald_low, (low_o - chance) / (1 - chance))
    high = max(wald_high, (high_o - chance) / (1 - chance))
    return max(-1.0, low), min(1.0, high)


# -- kappa, hand-worked --------------------------------------------------------------------------
def test_kappa_hand_worked() -> None:
    # 50 pairs: 20 both pass, 5 label pass/judge fail, 10 label fail/judge pass, 15 both fail.
    # p_o = 35/50 = 0.7; label marginals 0.5/0.5, judge 0.6/0.4: p_e = 0.3 + 0.2 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    k = kappa(Confusion(20, 5, 10, 15))
    assert k is not None
    assert k.value == pytest.approx(0.4)
    # Fleiss-Cohen-Everitt by hand (p = cell share, rows = label, cols = judge):
    #   A = 0.4 (1 - (0.5 + 0.6) 0.6)^2 + 0.3 (1 - (0.5 + 0.4) 0.6)^2 = 0.4*0.1156 + 0.3*0.2116
    #   B = 0.6^2 (0.1 (0.6 + 0.5)^2 + 0.2 (0.4 + 0.5)^2) = 0.36 (0.121 + 0.162)
    #   C = (0.4 - 0.5 * 0.6)^2 = 0.01;  var = (A + B - C) / (0.5^2 * 50)
    a = 0.4 * 0.1156 + 0.3 * 0.2116
    b = 0.36 * (0.1 * 1.1 ** 2 + 0.2 * 0.9 ** 2)
    se = math.sqrt((a + b - 0.01) / (0.25 * 50))
    assert k.se == pytest.approx(se)
    assert k.se == pytest.approx(0.12700, abs=5e-6)  # sqrt(0.2016 / 12.5)
    # The interval is at least the Wald one, 0.4 -+ 1.96 se: its upper end here; the lower
    # end comes from the Wilson interval of 35/50 agreements (0.5625 to 0.8093), mapped with
    # chance agreement 0.5: (0.5625 - 0.5) / 0.5 = 0.125.
    assert k.high == pytest.approx(0.4 + 1.959964 * se)
    assert k.low == pytest.approx(0.125, abs=5e-4) and k.low < 0.4 - 1.959964 * se
    assert (k.low, k.high) == pytest.approx(reference_interval(Confusion(20, 5, 10, 15)))


@pytest.mark.parametrize("table", [
    (20, 5, 10, 15), (40, 9, 6, 45), (3, 1, 2, 4), (100, 1, 1, 3), (7, 0, 0, 1), (0, 5, 5, 0),
    (10, 10, 10, 10), (1, 9, 9, 1), (500, 30, 70, 400), (2, 0, 1, 0),
])
def test_kappa_matches_statsmodels(table: tuple[int, int, int, int]) -> None:
    c = Confusion(*table)
    k = kappa(c)
    assert k is not None
    ref = reference_kappa(c)
    assert k.value == pytest.approx(ref[0], abs=1e-12)
    assert k.se == pytest.approx(ref[1], abs=1e-12)
    if c.pairs < MIN_PAIRS:
        assert (k.low, k.high) == (None, None)  # too few pairs to estimate
        return
    assert (k.low, k.high) == pytest.approx(reference_interval(c), abs=1e-12)
    # Never narrower than the Wald interval (ours is clipped to [-1, 1]; statsmodels' is not).
    assert k.low <= max(-1.0, ref[2]) + 1e-12 and k.high >= min(1.0, ref[3]) - 1e-12


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.99])
def test_kappa_interval_other_confidence(confidence: float) -> None:
    c = Confusion(40, 9, 6, 45)
    k = kappa(c, confidence)
    assert k is not None
    assert (k.low, k.high) == pytest.approx(reference_interval(c, confidence), abs=1e-12)
    assert z_value(confidence) == pytest.approx(
        {0.8: 1.2815516, 0.9: 1.6448536, 0.99: 2.5758293}[confidence], abs=1e-6)


@given(st.tuples(*[st.integers(0, 300)] * 4))
def test_kappa_matches_statsmodels_on_any_table(table: tuple[int, int, int, int]) -> None:
    c = Confusion(*table)
    n = sum(table)
    rows = (table[0] + table[1], table[2] + table[3])
    cols = (table[0] + table[2], table[1] + table[3])
    k = kappa(c)
    if n == 0 or rows[0] * cols[0] + rows[1] * cols[1] == n * n:
        assert k is None  # no pairs, or both raters used one and the same class only
        return
    assert k is not None
    ref = reference_kappa(c)
    assert k.value == pytest.approx(ref[0], abs=1e-9)
    assert k.se == pytest.approx(ref[1], abs=1e-9)
    if n < MIN_PAIRS:
        assert k.low is None and k.high is None
    else:
        assert k.low is not None and k.high is not None
        assert -1 <= k.low <= k.value <= k.high <= 1
        assert (k.low, k.high) == pytest.approx(reference_interval(c), abs=1e-9)


# -- degenerate tables ---------------------------------------------------------------------------
def test_perfect_agreement() -> None:
    # The Wald interval is [1, 1] whatever n: 20 pairs do not make agreement certain.
    k = kappa(Confusion(12, 0, 0, 8))
    assert k is not None and k.low is not None
    assert (k.value, k.se, k.high) == (1.0, 0.0, 1.0)
    assert 0.5 < k.low < 0.95
    assert (k.low, k.high) == pytest.approx(reference_interval(Confusion(12, 0, 0, 8)))
    assert accuracy(Confusion(12, 0, 0, 8)) == 1.0


def test_too_few_pairs_get_no_interval() -> None:
    k = kappa(Confusion(5, 0, 0, 3))  # 8 pairs
    assert k is not None and k.value == 1.0 and (k.low, k.high) == (None, None)


@pytest.mark.parametrize("table", [(9, 0, 0, 0), (0, 0, 0, 4), (0, 0, 0, 0)])
def test_one_shared_class_or_nothing_is_undefined(table: tuple[int, int, int, int]) -> None:
    assert kappa(Confusion(*table)) is None
    if sum(table):
        # statsmodels divides 0 by 0 here: the same answer, without a number.
        assert math.isnan(reference_kappa(Confusion(*table))[0])


def test_one_rater_constant_gives_zero() -> None:
    # Labels all pass, judge mixed: observed agreement equals chance agreement.
    k = kappa(Confusion(6, 4, 0, 0))
    assert k is not None
    assert k.value == pytest.approx(0.0)
    assert k.value == pytest.approx(reference_kappa(Confusion(6, 4, 0, 0))[0])


def test_complete_disagreement() -> None:
    k = kappa(Confusion(0, 5, 5, 0))
    assert k is not None
    assert k.value == pytest.approx(-1.0)
    assert k.low == -1.0 and k.high is not None and k.high > -1.0


def test_precision_and_recall_of_fail() -> None:
    c = Confusion(pass_pass=50, pass_fail=5, fail_pass=10, fail_fail=35)
    assert fail_precision(c) == pytest.approx(35 / 40)
    assert fail_recall(c) == pytest.approx(35 / 45)
    assert accuracy(c) == pytest.approx(85 / 100)
    assert fail_precision(Confusion(3, 0, 2, 0)) is None  # the judge never said fail
    assert fail_recall(Confusion(3, 1, 0, 0)) is None  # no label is fail
    assert accuracy(Confusion()) is None


def test_confusion_plus() -> None:
    assert Confusion(1, 2, 3, 4).plus(Confusion(10, 20, 30, 40)) == Confusion(11, 22, 33, 44)
    assert Confusion(1, 2, 3, 4).pairs == 10


# -- McNemar -------------------------------------------------------------------------------------
def test_mcnemar_exact_hand_worked() -> None:
    # b = 10, c = 2: p = 2 * P(X <= 2), X ~ Binomial(12, 1/2) = 2 * (1 + 12 + 66) / 4096.
    m = mcnemar(10, 2)
    assert m.method == "exact"
    assert m.statistic == 2
    assert m.p_value == pytest.approx(158 / 4096)


def test_mcnemar_chi2_hand_worked() -> None:
    # b = 30, c = 15: chi2 = (|30 - 15| - 1)^2 / 45 = 196 / 45; p = P(chi2_1 > 4.3556).
    m = mcnemar(30, 15)
    assert m.method == "chi2-cc"
    assert m.statistic == pytest.approx(196 / 45)
    assert m.p_value == pytest.approx(0.036888, abs=1e-6)


@pytest.mark.parametrize(("b", "c"), [
    (0, 0), (1, 0), (0, 5), (3, 3), (12, 12), (24, 0), (20, 4), (13, 11),  # exact: b + c < 25
    (25, 0), (13, 12), (12, 13), (40, 10), (100, 100), (101, 99), (500, 430),  # chi-square
])
def test_mcnemar_matches_statsmodels(b: int, c: int) -> None:
    m = mcnemar(b, c)
    exact = b + c < 25
    assert m.method == ("exact" if exact else "chi2-cc")
    ref = sm_mcnemar(np.array([[7, b], [c, 9]]), exact=exact, correction=True)
    assert m.p_value == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-15)
    assert m.statistic == pytest.approx(float(ref.statistic), rel=1e-12)
    if exact and b + c:
        assert m.p_value == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue, rel=1e-9)


@given(st.integers(0, 60), st.integers(0, 60))
def test_mcnemar_any_counts(b: int, c: int) -> None:
    m = mcnemar(b, c)
    exact = b + c < 25
    ref = sm_mcnemar(np.array([[0, b], [c, 0]]), exact=exact, correction=True)
    assert m.p_value == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-15)
    assert 0 <= m.p_value <= 1
    assert mcnemar(c, b).p_value == pytest.approx(m.p_value)  # symmetric


def test_mcnemar_no_discordant_pairs_is_p_one() -> None:
    m = mcnemar(0, 0)
    assert (m.p_value, m.method) == (1.0, "exact")


def test_z_value_rejects_impossible_confidence() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        z_value(1.0)
