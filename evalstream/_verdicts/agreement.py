"""Agreement statistics on pass/fail counts: pure functions, no I/O, no data frames.

``fail`` is the positive class throughout: a judge that passes a case the label fails is
the costly miss, so precision and recall are those of ``fail``.

Cohen's kappa carries the large-sample (Wald) interval with the standard error of
Fleiss, Cohen & Everitt (1969), "Large sample standard errors of kappa and weighted
kappa", Psychological Bulletin 72(5): the non-null variance, as statsmodels'
``cohens_kappa`` computes it. McNemar's test is the exact binomial test when there are
fewer than 25 discordant pairs, else the chi-square test with continuity correction.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple

DEFAULT_CONFIDENCE = 0.95
# Below this many discordant pairs the chi-square approximation is poor: use the exact test.
EXACT_BELOW = 25
# Below this many pairs kappa gets no interval: the group is too small to estimate.
MIN_PAIRS = 10


class Confusion(NamedTuple):
    """Counts of (label, verdict) pairs; the first word is the label, the second the verdict."""

    pass_pass: int = 0
    pass_fail: int = 0  # label pass, judge fail: a false alarm
    fail_pass: int = 0  # label fail, judge pass: a miss (the costly error)
    fail_fail: int = 0

    @property
    def pairs(self) -> int:
        return self.pass_pass + self.pass_fail + self.fail_pass + self.fail_fail

    @property
    def agreements(self) -> int:
        return self.pass_pass + self.fail_fail

    def plus(self, other: Confusion) -> Confusion:
        """The cell-by-cell sum of two tables."""
        return Confusion(*(a + b for a, b in zip(self, other, strict=True)))


class Kappa(NamedTuple):
    """Cohen's kappa with its standard error and two-sided interval (clipped to [-1, 1]);
    no interval (None) below MIN_PAIRS pairs, where none would mean anything."""

    value: float
    se: float
    low: float | None
    high: float | None


class McNemar(NamedTuple):
    """McNemar's test on the discordant pairs ``b`` (pass->fail) and ``c`` (fail->pass).

    ``statistic`` is min(b, c) for the exact test and the corrected chi-square otherwise.
    """

    b: int
    c: int
    statistic: float
    p_value: float
    method: str  # "exact" or "chi2-cc"


def z_value(confidence: float) -> float:
    """The standard normal quantile for a two-sided interval of this confidence."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def accuracy(c: Confusion) -> float | None:
    """The share of pairs where judge and label agree; None when there are no pairs."""
    return c.agreements / c.pairs if c.pairs else None


def fail_precision(c: Confusion) -> float | None:
    """Of the judge's fails, the share the label also fails; None when the judge never fails."""
    said_fail = c.pass_fail + c.fail_fail
    return c.fail_fail / said_fail if said_fail else None


def fail_recall(c: Confusion) -> float | None:
    """Of the label's fails, the share the judge caught; None when no label fails."""
    are_fail = c.fail_pass + c.fail_fail
    return c.fail_fail / are_fail if are_fail else None


def kappa(c: Confusion, confidence: float = DEFAULT_CONFIDENCE) -> Kappa | None:
    """Cohen's kappa with the Fleiss-Cohen-Everitt standard error and a Wald interval.

    None when kappa is undefined: no pairs, or chance agreement of 1 (judge and labels both
    used one and the same class only, so agreement beyond chance cannot be measured).
    """
    n = c.pairs
    if n == 0:
        return None
    table = ((c.pass_pass / n, c.pass_fail / n), (c.fail_pass / n, c.fail_fail / n))
    rows = (table[0][0] + table[0][1], table[1][0] + table[1][1])  # label marginals
    cols = (table[0][0] + table[1][0], table[0][1] + table[1][1])  # verdict marginals
    observed = table[0][0] + table[1][1]
    expected = rows[0] * cols[0] + rows[1] * cols[1]
    if expected >= 1.0:
        return None
    k = (observed - expected) / (1 - expected)
    # Fleiss, Cohen & Everitt (1969), equation 13: the variance when kappa is not 0.
    term_a = sum(table[i][i] * (1 - (rows[i] + cols[i]) * (1 - k)) ** 2 for i in (0, 1))
    term_b = (1 - k) ** 2 * sum(table[i][j] * (cols[i] + rows[j]) ** 2
                                for i in (0, 1) for j in (0, 1) if i != j)
    term_c = (k - expected * (1 - k)) ** 2
    variance = (term_a + term_b - term_c) / ((1 - expected) ** 2 * n)
    se = math.sqrt(max(variance, 0.0))  # rounding can leave -1e-17 at perfect agreement
    if n < MIN_PAIRS:
        return Kappa(k, se, None, None)
    z = z_value(confidence)
    # The Wald interval collapses at the edges (perfect agreement: se = 0, [1, 1] at any n)
    # and is too narrow in small samples. Take the wider of it and the Wilson score interval
    # of the observed agreement mapped to kappa with the chance agreement held fixed: the
    # Wilson bound never reaches 1 at a finite n, and the two agree in large samples.
    low_o, high_o = wilson(observed, n, z)
    low = min(k - z * se, (low_o - expected) / (1 - expected))
    high = max(k + z * se, (high_o - expected) / (1 - expected))
    return Kappa(k, se, max(-1.0, low), min(1.0, high))


def wilson(share: float, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``share`` observed over ``n`` trials."""
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar(b: int, c: int) -> McNemar:
    """McNemar's test of b pass->fail against c fail->pass flips (two-sided).

    Exact binomial (p = 1/2) when b + c < 25, else chi-square with continuity correction
    (1 degree of freedom). With no discordant pairs there is no evidence of change: p = 1.
    """
    n = b + c
    if n < EXACT_BELOW:
        low = min(b, c)
        tail = sum(math.comb(n, k) for k in range(low + 1)) / 2 ** n
        return McNemar(b, c, float(low), min(1.0, 2 * tail), "exact")
    statistic = (abs(b - c) - 1) ** 2 / n
    # The chi-square survival function with 1 degree of freedom is erfc(sqrt(x / 2)).
    return McNemar(b, c, statistic, math.erfc(math.sqrt(statistic / 2)), "chi2-cc")
