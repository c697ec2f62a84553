"""evalstream's one rule for a percentile it computes itself: the nearest rank.

The ``p`` percentile of ``n`` values is the smallest value whose rank in sorted order is at
least ceil(p / 100 * n): always one of the values (numpy's ``inverted_cdf``). A dry run's
expected output tokens (p50, p95), judge's latency (p50, p95, of its 1% buckets) and agree's
response-length quintiles all take it. ``stats``' medians and p95 are another rule on
purpose: Polars' linear interpolation, exact over every row (docs/stats.md).
"""

from __future__ import annotations

from collections.abc import Mapping


def percentile(counts: Mapping[int, int], percent: int) -> int | None:
    """The nearest-rank ``percent`` percentile of a histogram (value -> how many), or None
    when it counts nothing."""
    total = sum(counts.values())
    if not total:
        return None
    rank = max(1, -(-percent * total // 100))  # ceil(percent / 100 * total), in integers
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= rank:
            return value
    return max(counts)
