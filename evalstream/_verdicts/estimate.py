"""The true pass rate of a rubric, corrected with labels: prediction-powered inference (PPI++).

A judge's raw pass rate is biased in both directions; the labelled subset's pass rate is
unbiased but wide. Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan,
Zrnic, "Prediction-powered inference", Science 382, 2023) takes the judge's verdicts on every
case and corrects them with the labelled ones; PPI++ (Angelopoulos, Duchi, Zrnic, "PPI++:
Efficient Prediction-Powered Inference", arXiv:2311.01453, 2023) weighs the judge by a
power-tuning parameter lambda so that a poor judge costs nothing (lambda near 0: the labelled
rate) and a good one narrows the interval. For a mean, with n labelled checks (label Y,
judge f) and N unlabelled ones (judge f~):

    theta   = lambda * mean(f~) + mean(Y - lambda * f)
    se^2    = var(lambda * f~) / N + var(Y - lambda * f) / n          (variances with 1/n)
    lambda  = cov(Y, f) / ((1 + n/N) * var(f over all n + N))          (clipped to [0, 1])
    interval = theta +- z * se                                          (clipped to [0, 1])

exactly as the authors' ``ppi_py.ppi_mean_ci`` computes them (``tests/verdicts/plain.py``
holds a plain transcription the tests compare against). Y is 1 for a ``pass`` label and 0
for ``fail``; f is 1 for a ``pass`` verdict and 0 for ``fail``: the rate is the pass rate over
checks the judge scored pass or fail (``na`` and ``unscored`` verdicts, ``na`` labels are left
out and counted by agree). Everything is computed from running sums, so memory is a few
numbers a rubric and group.

The label budget reads the same formula backwards: holding lambda, the variances seen and N,
how many labelled checks n' make the interval ``target_width`` wide (``var_r / ((w / 2z)^2 -
var_imputed / N)``); none when the judge's own term is already wider (more labels alone
cannot get there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from msgspec import Struct

DEFAULT_TARGET_WIDTH = 0.05
# Below this many labelled checks no interval is given (as agree's kappa): the normal
# approximation behind it means nothing there.
MIN_LABELS = 10


@dataclass
class Sums:
    """Running sums of labelled (label, judge) and unlabelled (judge) values in [0, 1]."""

    n: int = 0
    y: float = 0.0
    f: float = 0.0
    yy: float = 0.0
    yf: float = 0.0
    ff: float = 0.0
    big_n: int = 0
    fu: float = 0.0
    fufu: float = 0.0

    def labelled(self, y: float, f: float, count: int = 1) -> None:
        """``count`` labelled checks with label ``y`` and judge ``f``."""
        self.n += count
        self.y += y * count
        self.f += f * count
        self.yy += y * y * count
        self.yf += y * f * count
        self.ff += f * f * count

    def unlabelled(self, f: float, count: int = 1) -> None:
        """``count`` checks the judge scored that carry no label."""
        self.big_n += count
        self.fu += f * count
        self.fufu += f * f * count


class Estimate(Struct):
    """The pass rate of one rubric (and group): the judge's raw rate over every scored check,
    the labelled subset's rate, and the prediction-powered estimate with its interval and
    power-tuning parameter (null below MIN_LABELS labels); ``more_labels``: how many more
    labelled checks would bring the interval to ``target_width`` (null: labels alone cannot)."""

    labelled: int
    unlabelled: int
    judge_rate: float | None
    labelled_rate: float | None
    estimate: float | None
    low: float | None
    high: float | None
    power_tuning: float | None
    target_width: float
    more_labels: int | None


def _var(total: float, squares: float, n: int) -> float:
    """The variance with 1/n of values whose sum and sum of squares are given."""
    mean = total / n
    return max(squares / n - mean * mean, 0.0)


def power_tuning(s: Sums) -> float:
    """PPI++'s lambda for a mean: cov(Y, f) over the labelled checks (1/n) divided by (1 +
    n/N) times the variance of f over all checks (1/(n + N - 1)), clipped to [0, 1]; 0 without
    unlabelled checks or when the judge never varies."""
    n, big_n = s.n, s.big_n
    if big_n == 0 or n + big_n < 2:
        return 0.0
    cov = s.yf / n - (s.y / n) * (s.f / n)
    total, squares = s.f + s.fu, s.ff + s.fufu
    var_all = max((squares - total * total / (n + big_n)) / (n + big_n - 1), 0.0)
    if var_all == 0.0:
        return 0.0
    return min(max(cov / ((1 + n / big_n) * var_all), 0.0), 1.0)


def estimate(s: Sums, confidence: float = 0.95,
             target_width: float = DEFAULT_TARGET_WIDTH) -> Estimate:
    """The prediction-powered pass rate of ``s`` with its ``confidence`` interval (see the
    module's docstring), and the labels that would make it ``target_width`` wide."""
    n, big_n = s.n, s.big_n
    scored = n + big_n
    judge_rate = (s.f + s.fu) / scored if scored else None
    labelled_rate = s.y / n if n else None
    if n < MIN_LABELS:
        return Estimate(n, big_n, judge_rate, labelled_rate, None, None, None, None,
                        target_width, None)
    lam = power_tuning(s)
    theta = (lam * s.fu / big_n if big_n else 0.0) + (s.y - lam * s.f) / n
    var_imputed = lam * lam * _var(s.fu, s.fufu, big_n) if big_n else 0.0
    # The rectifier Y - lambda f: its sum and sum of squares from the running sums.
    r, rr = s.y - lam * s.f, s.yy - 2 * lam * s.yf + lam * lam * s.ff
    var_rectifier = _var(r, rr, n)
    imputed_term = var_imputed / big_n if big_n else 0.0
    se = math.sqrt(imputed_term + var_rectifier / n)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    low, high = max(theta - z * se, 0.0), min(theta + z * se, 1.0)
    return Estimate(n, big_n, judge_rate, labelled_rate, theta, low, high, lam, target_width,
                    more_labels(n, var_rectifier, imputed_term, z, target_width))


def more_labels(n: int, var_rectifier: float, imputed_term: float, z: float,
                target_width: float) -> int | None:
    """How many more labelled checks bring ``2 z se`` to ``target_width``, holding the
    variances seen (0: already there; None: the judge's term alone is wider)."""
    room = (target_width / (2 * z)) ** 2 - imputed_term
    if room <= 0:
        return None
    return max(math.ceil(var_rectifier / room) - n, 0)
