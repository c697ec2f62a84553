"""The run report: counts that add up, skipped checks with reasons, exposure per rubric."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, TextIO

import msgspec

from evalstream import __version__

MAX_OVER_BUDGET_LISTED = 1_000


class Counts(msgspec.Struct):
    """Every input line is blank, a case or rejected: ``lines == blank + cases + rejected``."""

    lines: int = 0
    blank: int = 0
    cases: int = 0
    rejected: int = 0
    checks: int = 0
    skipped: int = 0


class OverBudget(msgspec.Struct):
    """A check that was not emitted because state plus longest question exceed the budget.

    ``tokens`` is exact when ``exact`` is true; otherwise counting stopped once the state was
    over the budget and ``tokens`` is a lower bound.
    """

    line: int
    case_id: str
    rubric_id: str
    tokens: int
    exact: bool


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
    rejects: str | None
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


class Tally:
    """The mutable counters of a run (or of one worker's part of it); ``merge`` adds parts."""

    def __init__(self) -> None:
        self.counts = Counts()
        self.rejected_by_kind: Counter[str] = Counter()
        self.checks_by_rubric: Counter[str] = Counter()
        self.skipped: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.exposure: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.over_budget: list[OverBudget] = []
        self.when_keys_seen: set[str] = set()

    def over(self, item: OverBudget) -> None:
        if len(self.over_budget) < MAX_OVER_BUDGET_LISTED:
            self.over_budget.append(item)

    def merge(self, other: Tally) -> None:
        for f in Counts.__struct_fields__:
            setattr(self.counts, f, getattr(self.counts, f) + getattr(other.counts, f))
        self.rejected_by_kind.update(other.rejected_by_kind)
        self.checks_by_rubric.update(other.checks_by_rubric)
        for rubric, reasons in other.skipped.items():
            self.skipped[rubric].update(reasons)
        for rubric, fields in other.exposure.items():
            self.exposure[rubric].update(fields)
        for item in other.over_budget:
            self.over(item)
        self.when_keys_seen |= other.when_keys_seen

    def subtract(self, other: Tally) -> None:
        """Take back what ``other`` counted (a case found to be a duplicate after the fact)."""
        for f in Counts.__struct_fields__:
            setattr(self.counts, f, getattr(self.counts, f) - getattr(other.counts, f))
        self.checks_by_rubric.subtract(other.checks_by_rubric)
        for rubric, reasons in other.skipped.items():
            self.skipped[rubric].subtract(reasons)
        for rubric, fields in other.exposure.items():
            self.exposure[rubric].subtract(fields)

    def to_report(self, **fields: Any) -> RunReport:
        """The report of this tally, with the run's settings given as keyword fields."""
        rubric_ids: list[str] = fields.pop("rubric_ids", [])
        skipped = {r: dict(sorted((+self.skipped[r]).items()))
                   for r in rubric_ids if +self.skipped[r]}
        exposure = {r: dict(+self.exposure[r]) for r in rubric_ids if +self.exposure[r]}
        return RunReport(
            evalstream=__version__,
            counts=self.counts,
            rejected_by_kind=dict(sorted(self.rejected_by_kind.items())),
            checks_by_rubric={r: self.checks_by_rubric.get(r, 0) for r in rubric_ids},
            skipped=skipped,
            over_budget=self.over_budget,
            over_budget_listed=len(self.over_budget),
            exposure=exposure,
            **fields,
        )


def encode(report: RunReport) -> bytes:
    """The report as indented JSON with a final newline."""
    return msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n"


def render_summary(report: RunReport, file: TextIO) -> None:
    """A short summary table of the run (rich), for stderr."""
    from rich.console import Console
    from rich.table import Table

    from evalstream.render.tables import literal

    console = Console(file=file, highlight=False)
    c = report.counts
    head = (f"{report.command}: {c.lines:,} lines = {c.cases:,} cases + {c.rejected:,} rejected "
            f"+ {c.blank:,} blank")
    if report.rubrics is not None:
        head += f"; {c.checks:,} checks written, {c.skipped:,} skipped"
    console.print(literal(head))
    if report.rubrics is not None and report.rubrics.ids:
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("rubric")
        table.add_column("written", justify="right")
        table.add_column("skipped (reason: count)")
        for rid in report.rubrics.ids:
            reasons = report.skipped.get(rid, {})
            table.add_row(literal(rid), f"{report.checks_by_rubric.get(rid, 0):,}",
                          literal(", ".join(f"{k}: {v:,}" for k, v in reasons.items()) or "-"))
        console.print(table)
    if c.rejected and report.rejects != "-":
        console.print(literal(f"rejects written to {report.rejects}"), soft_wrap=True)
    for warning in report.warnings:
        console.print(literal(f"warning: {warning}"))
