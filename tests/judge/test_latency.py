"""Judge's latency figures (``report.Histogram``): nearest-rank percentiles, as every
percentile evalstream computes itself (``_verdicts.percentiles``), within the 1% of a bucket."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstream._judge.report import Histogram


def _histogram(latencies: list[float]) -> Histogram:
    h = Histogram()
    for ms in latencies:
        h.add(ms)
    return h


def test_p95_is_the_nearest_rank() -> None:
    # Ten latencies, one a bucket: the p95 is the 10th (rank ceil(9.5)), not the 9th.
    latency = _histogram([10.0 * k for k in range(1, 11)]).latency()
    assert (latency.p50, latency.p95, latency.max) == (
        pytest.approx(50, rel=0.01), pytest.approx(100, rel=0.01), 100.0)


@given(st.lists(st.floats(1, 60_000), min_size=1, max_size=200), st.sampled_from([50, 95]))
def test_percentiles_are_numpys_inverted_cdf_within_one_percent(
        latencies: list[float], percent: int) -> None:
    expected = float(np.percentile(latencies, percent, method="inverted_cdf"))
    assert _histogram(latencies).percentile(percent) == pytest.approx(expected, rel=0.0101)


def test_no_latency_no_figures() -> None:
    latency = Histogram().latency()
    assert (latency.p50, latency.p95, latency.max) == (None, None, None)
