"""What ``evalstream rubrics --list`` shows of each rubric: one record a rubric.

A rubric's version is its hash (``rubric_hash``, which every judge state and verdict
carries): it changes exactly when what decides a verdict changes (the question, what the
judge is shown, when the rubric applies, an exact check), and a version number written by
hand could be forgotten. Two files holding the same rubric give it the same version.
"""

from __future__ import annotations

import msgspec

from evalstream._checks.rubrics import Rubric, RubricSet


class RubricEntry(msgspec.Struct, frozen=True):
    """One rubric as listed: id, kind, version (its hash), the case fields it reads (as
    judge-state names), those it requires, the metadata keys of its `when` rules, whether
    its judge may answer ``na``, and the first line of its question (an exact rubric's
    description)."""

    id: str
    kind: str
    version: str
    reads: tuple[str, ...]
    requires: tuple[str, ...]
    when: tuple[str, ...]
    allows_na: bool
    question: str


def entries(rubrics: RubricSet) -> list[RubricEntry]:
    """One entry per rubric of the set, in its order."""
    return [entry(r) for r in rubrics.rubrics]


def entry(rubric: Rubric) -> RubricEntry:
    """The entry of one rubric."""
    first = next((line for line in rubric.question.splitlines() if line.strip()), "")
    return RubricEntry(rubric.id, rubric.kind, rubric.hash, rubric.shows, rubric.requires,
                       tuple(key for key, _, _ in rubric.when), allows_na(rubric),
                       first.strip())


def allows_na(rubric: Rubric) -> bool:
    """Whether the rubric's judge may answer ``na``: an exact check is pass or fail, a
    pairwise judge answers which response is better; a judge rubric may unless its
    ``allows_na`` (issue 25) says false."""
    return rubric.kind == "judge" and rubric.allows_na
