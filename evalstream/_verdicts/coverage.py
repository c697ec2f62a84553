"""Coverage first: over how many labels each figure of ``agree`` is computed, and what it
leaves out (issue 25: a judge answering ``na`` on every fail label read 100% accuracy, and
"missed 0", on every rubric).

The scored-only statistics (accuracy, kappa, precision and recall of fail) are computed over
the pairs: a pass or fail label with a pass or fail verdict. Every pass or fail label that
has none of those is left out of them, by kind: an ``na`` verdict (the judge says the rubric
does not apply where the label says it does: a disagreement of its own kind), an
``unscored`` verdict, a stale verdict, no verdict at all. ``Coverage`` says how many labels
there were, how many were scored, and the accuracy over all of them, where every label
left out counts as not agreeing: the figure that cannot be raised by answering ``na`` or
nothing.

A rubric's headline is *bad* when its scored pairs cover less than ``COVERAGE_FLOOR`` of its
pass/fail labels: the one-screen summary then leads with it (``_render.coverage``).
"""

from __future__ import annotations

from msgspec import Struct

COVERAGE_FLOOR = 0.9  # below this share of labels scored, a headline leads with what it left out


class Coverage(Struct):
    """Over how many labels a cell's figures are computed: ``labels`` pass/fail labels, of
    which ``scored`` have a pass/fail verdict (the pairs) and ``agreed`` agree with it;
    ``scored_share`` = scored / labels; ``accuracy_all_labels`` = agreed / labels (a label
    left out counts as not agreeing); null when there is no pass/fail label."""

    labels: int
    scored: int
    agreed: int
    scored_share: float | None
    accuracy_all_labels: float | None
    left_out: dict[str, int]  # by kind: na_verdicts, unscored, stale, no_verdict


def coverage(pairs: int, agreed: int, na_verdicts: int, unscored: int, stale: int,
             no_verdict: int) -> Coverage:
    """The coverage of a cell from its counts (each a number of pass/fail labels)."""
    left_out = {"na_verdicts": na_verdicts, "unscored": unscored, "stale": stale,
                "no_verdict": no_verdict}
    labels = pairs + sum(left_out.values())
    return Coverage(labels=labels, scored=pairs, agreed=agreed,
                    scored_share=pairs / labels if labels else None,
                    accuracy_all_labels=agreed / labels if labels else None,
                    left_out=left_out)


def is_bad(c: Coverage, floor: float = COVERAGE_FLOOR) -> bool:
    """Whether the scored figures leave out so many labels that they should not lead."""
    return c.scored_share is not None and c.scored_share < floor


def worst_first(covered: list[tuple[str, Coverage]],
                floor: float = COVERAGE_FLOOR) -> list[tuple[str, Coverage]]:
    """The (name, coverage) whose headline is bad, the lowest accuracy over all labels first
    (then the lowest scored share, then by name)."""
    bad = [(name, c) for name, c in covered if is_bad(c, floor)]
    return sorted(bad, key=lambda item: (item[1].accuracy_all_labels or 0.0,
                                         item[1].scored_share or 0.0, item[0]))
