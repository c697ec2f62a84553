"""Agreement among a panel's votes (issue 26): Fleiss' kappa and Krippendorff's alpha, each
with a bootstrap interval over judge states. Pure functions of vote counts; numpy only.

A judge state is a *unit*; its votes are its ratings, in three nominal categories (``pass``,
``fail``, ``na``); an unscored vote is a missing rating.

- Fleiss' kappa (Fleiss 1971, "Measuring nominal scale agreement among many raters")
  needs the same number of ratings on every unit: it is computed over the units whose every
  vote is scored (those with the panel's usual number of votes), and says how many.
- Krippendorff's alpha, nominal (Krippendorff 2011, "Computing Krippendorff's
  alpha-reliability"), allows missing ratings: every unit with at least two scored votes
  counts. With ``n_uc`` the votes of category c on unit u, ``m_u`` its scored votes,
  ``n_c`` the votes of c over pairable units and ``n`` all of them:
  ``alpha = 1 - (n - 1) * sum_u (m_u^2 - sum_c n_uc^2) / (m_u - 1) / (n^2 - sum_c n_c^2)``.

Both are sums over units of a few numbers, so a bootstrap resample of units needs only how
many times each distinct *pattern* of votes is drawn: the units are grouped by pattern (a few
dozen at most), and each of the ``resamples`` draws is a multinomial over the patterns with
the observed frequencies (the same distribution as drawing units with replacement). The
interval is the percentile interval of the resampled values, undefined draws left out;
draws use a fixed seed, so a report is the same bytes every time. Tests check both
statistics against statsmodels' ``fleiss_kappa`` and the ``krippendorff`` package to 1e-6.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from evalstream._verdicts.records import LABEL_STATUSES
from evalstream._verdicts.rules import Tally

if TYPE_CHECKING:
    import numpy as np

CATEGORIES = LABEL_STATUSES  # a scored vote's statuses
DEFAULT_RESAMPLES = 1000
SEED = 26  # the bootstrap's seed: the same report bytes every run


# A unit's votes, how many ``pass``, ``fail``, ``na`` and unscored: a panel's tally, as the
# jury rules count it.
Pattern = Tally


class Estimate(NamedTuple):
    """A statistic, its bootstrap interval (None where too few draws were defined), and the
    units it was computed over."""

    value: float
    low: float | None
    high: float | None
    units: int


def fleiss_kappa(counts: np.ndarray, weights: np.ndarray | None = None) -> float | None:
    """Fleiss' kappa of a units x categories table whose rows all sum to the same number of
    raters (at least 2), each row counted ``weights`` times (default once); None when it is
    undefined (no unit, or every rating in one category)."""
    import numpy as np

    counts = np.asarray(counts, dtype=np.float64)
    w = np.ones(len(counts)) if weights is None else np.asarray(weights, dtype=np.float64)
    total = w.sum()
    if not len(counts) or total == 0:
        return None
    m = counts[0].sum()
    agreement = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1))
    p_bar = (w * agreement).sum() / total
    shares = (w[:, None] * counts).sum(axis=0) / (total * m)
    p_e = (shares ** 2).sum()
    if p_e >= 1.0:
        return None
    return float((p_bar - p_e) / (1 - p_e))


def krippendorff_alpha(counts: np.ndarray, weights: np.ndarray | None = None) -> float | None:
    """Krippendorff's nominal alpha of a units x categories table of ratings (rows may hold
    any number: a unit with fewer than 2 is not pairable and is left out), each row counted
    ``weights`` times; None when undefined (fewer than two pairable values, or all of one
    category)."""
    import numpy as np

    counts = np.asarray(counts, dtype=np.float64)
    w = np.ones(len(counts)) if weights is None else np.asarray(weights, dtype=np.float64)
    m = counts.sum(axis=1) if len(counts) else np.zeros(0)
    pairable = m >= 2
    counts, w, m = counts[pairable], w[pairable], m[pairable]
    if not len(counts):
        return None
    disagreement = (w * (m ** 2 - (counts ** 2).sum(axis=1)) / (m - 1)).sum()
    per_category = (w[:, None] * counts).sum(axis=0)
    n = per_category.sum()
    expected = n ** 2 - (per_category ** 2).sum()
    if n < 2 or expected <= 0:
        return None
    return float(1 - (n - 1) * disagreement / expected)


def among(patterns: Iterable[Pattern] | Mapping[Pattern, int], confidence: float,
          resamples: int = DEFAULT_RESAMPLES) -> tuple[Estimate | None, Estimate | None]:
    """Fleiss' kappa and Krippendorff's alpha of the units whose votes have these patterns
    (one a unit, or a count of units by pattern), each with its ``confidence`` bootstrap
    interval (``resamples`` draws of the units)."""
    seen = Counter(patterns)
    full = _votes_of_most(seen)
    fleiss = Counter({p: n for p, n in seen.items() if not p.unscored and p.scored == full})
    alpha = Counter({p: n for p, n in seen.items() if p.scored >= 2})
    return (_estimate(fleiss, fleiss_kappa, confidence, resamples),
            _estimate(alpha, krippendorff_alpha, confidence, resamples))


def _votes_of_most(seen: Counter[Pattern]) -> int:
    """The number of votes most units have (a panel's usual size)."""
    sizes: Counter[int] = Counter()
    for p, n in seen.items():
        sizes[p.scored + p.unscored] += n
    return max(sizes, key=lambda k: (sizes[k], k)) if sizes else 0


def _estimate(grouped: Counter[Pattern], statistic: object, confidence: float,
              resamples: int) -> Estimate | None:
    import numpy as np

    if not grouped:
        return None
    order = sorted(grouped)
    table = np.array([p[:3] for p in order], dtype=np.float64)
    frequency = np.array([grouped[p] for p in order], dtype=np.float64)
    assert callable(statistic)
    value = statistic(table, frequency)
    if value is None:
        return None
    units = int(frequency.sum())
    rng = np.random.default_rng(SEED)
    draws = rng.multinomial(units, frequency / units, size=resamples)
    found = [v for v in (statistic(table, d) for d in draws) if v is not None]
    if len(found) < resamples / 2:  # most draws undefined: no honest interval
        return Estimate(value, None, None, units)
    low, high = np.quantile(found, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(value, float(low), float(high), units)
