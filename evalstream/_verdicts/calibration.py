"""How well a judge's confidence matches how often it agrees with the labels (issue 29).

A verdict's confidence is the probability it gave its own status (``confidence`` on the
verdict: from the status token's log probabilities, or the share of a panel's votes). Over the
pairs (a pass/fail label, a pass/fail verdict with a confidence), the reliability table puts
each pair in one of ``BINS`` equal bins of that probability and sets, per bin, the mean
confidence against the share of pairs where the judge agreed with the label; the expected
calibration error is the pairs-weighted mean gap between the two (Naeini, Cooper, Hauskrecht,
AAAI 2015; Guo et al., ICML 2017): 0 for a judge whose 0.8 is right 8 times in 10.

Memory: four numbers a bin, per rubric and label source.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from msgspec import Struct

BINS = 10


class Bin(Struct):
    """One bin of confidence, [low, high) (the last includes 1): its pairs, their mean
    confidence and the share where the judge agreed with the label."""

    low: float
    high: float
    pairs: int
    confidence: float
    agreement: float


class Reliability(Struct):
    """The reliability table of one rubric (and label source) and its expected calibration
    error, over ``pairs`` pairs whose verdict carried a confidence."""

    pairs: int
    bins: list[Bin]  # the bins that hold a pair, in order
    ece: float | None


@dataclass
class Bins:
    """Running counts of (confidence, agreed) pairs, bin by bin."""

    pairs: list[int] = field(default_factory=lambda: [0] * BINS)
    confidence: list[float] = field(default_factory=lambda: [0.0] * BINS)
    agreed: list[int] = field(default_factory=lambda: [0] * BINS)

    def add(self, confidence: float, agreed: bool) -> None:
        """One pair: the probability the judge gave its status, and whether the label agrees."""
        b = min(int(confidence * BINS), BINS - 1)
        self.pairs[b] += 1
        self.confidence[b] += confidence
        self.agreed[b] += agreed

    def table(self) -> Reliability:
        """The reliability table and the expected calibration error (null without pairs)."""
        total = sum(self.pairs)
        bins, gap = [], 0.0
        for b, count in enumerate(self.pairs):
            if not count:
                continue
            conf, agree = self.confidence[b] / count, self.agreed[b] / count
            bins.append(Bin(b / BINS, (b + 1) / BINS, count, conf, agree))
            gap += count * abs(agree - conf)
        return Reliability(total, bins, gap / total if total else None)
