"""The run report: counts that add up, skipped checks with reasons, exposure per rubric."""

from __future__ import annotations

from typing import Any

import msgspec

from evalstream._cases.reading import LineCounts
from evalstream._checks.checker import CheckTally, OverBudget
from evalstream._version import __version__

NAMES_LISTED = 20  # rubric ids named in a warning


class Counts(msgspec.Struct):
    """Every input line is blank, a case or rejected: ``lines == blank + cases + rejected``."""

    lines: int = 0
    blank: int = 0
    cases: int = 0
    rejected: int = 0
    checks: int = 0
    skipped: int = 0


class RubricInfo(msgspec.Struct):
    ids: list[str]
    hash: str
    sources: list[str]


class RunReport(msgspec.Struct):
    """The machine-readable summary of one ``build`` or ``validate`` run."""

    command: str
    evalstream: str
    input: str
    output: str | None
    rejects: str | None  # None: not written (nothing rejected, or validate not asked)
    rubrics: RubricInfo | None
    tokenizer: str | None
    budget: int | None
    counts: Counts
    rejected_by_kind: dict[str, int]
    checks_by_rubric: dict[str, int]
    skipped: dict[str, dict[str, int]]
    over_budget: list[OverBudget]
    over_budget_listed: int
    exposure: dict[str, dict[str, int]]
    warnings: list[str]
    seconds: float
    exit_code: int = 0
    report: str | None = None  # where this report was written (None: nowhere)


def run_report(lines: LineCounts, checks: CheckTally | None, rubric_ids: list[str],
               **fields: Any) -> RunReport:
    """The report of a run from its line counts and check tally, with the run's settings
    given as keyword fields."""
    checks = checks or CheckTally()
    skipped = {r: dict(sorted((+checks.skipped_by_rubric[r]).items()))
               for r in rubric_ids if +checks.skipped_by_rubric[r]}
    exposure = {r: dict(+checks.exposure[r]) for r in rubric_ids if +checks.exposure[r]}
    return RunReport(
        evalstream=__version__,
        counts=Counts(lines.lines, lines.blank, lines.records, lines.rejected, checks.checks,
                      checks.skipped),
        rejected_by_kind=dict(sorted((+lines.rejected_by_kind).items())),
        checks_by_rubric={r: checks.checks_by_rubric.get(r, 0) for r in rubric_ids},
        skipped=skipped,
        over_budget=checks.over_budget,
        over_budget_listed=len(checks.over_budget),
        exposure=exposure,
        **fields,
    )


def encode(report: RunReport) -> bytes:
    """The report as indented JSON with a final newline."""
    from evalstream._files.outputs import escape_line_breaks

    return escape_line_breaks(msgspec.json.format(msgspec.json.encode(report), indent=2)) + b"\n"


def label_warnings(outside: dict[str, int], not_applicable: int, name_ids: bool,
                   unlisted: int = 0) -> list[str]:
    """Warnings about labels no judge of the rubric set can ever be compared with: labels for
    rubric ids outside the set (``outside``: id -> labels; named only with ``name_ids``:
    build's report holds no harness data; ``unlisted``: labels of ids past the cap on ids
    kept), and labels on cases where their rubric does not apply."""
    warnings = []
    n = sum(outside.values()) + unlisted
    if n:
        which = "label names a rubric that is" if n == 1 else "labels name rubrics that are"
        ids = sorted(outside)
        shown = ", ".join(ids[:NAMES_LISTED]) + (", ..." if len(ids) > NAMES_LISTED or unlisted
                                                 else "")
        named = f" ({shown})" if name_ids else ""
        warnings.append(f"{n:,} {which} not in the rubric set{named}: no judge of this set "
                        "can be compared with them.")
    if not_applicable:
        warnings.append(f"{not_applicable:,} {'label is' if not_applicable == 1 else 'labels are'}"
                        " on cases where their rubric does not apply: no judge will ever see "
                        "those checks, so the labels cannot be compared.")
    return warnings
