"""What a ``convert`` run writes besides the cases: rejects and a report whose counts add up."""

from __future__ import annotations

import msgspec


class ConvertReject(msgspec.Struct):
    """A source row that did not become a case: its number, the source column (or JSON path
    in the row) and the case field involved, and a sentence that says what to do."""

    row: int
    column: str | None
    id: str | None
    path: str | None
    error: str
    raw: str


class ConvertCounts(msgspec.Struct):
    """Every source row is blank, a case or rejected: ``rows == blank + cases + rejected``.
    A format that writes verdicts reads a row as a judged case: ``verdicts`` are its lines."""

    rows: int = 0
    blank: int = 0
    cases: int = 0
    rejected: int = 0
    verdicts: int = 0


class ConvertReport(msgspec.Struct):
    """The machine-readable summary of one ``convert`` run."""

    command: str
    evalstream: str
    input: str
    output: str
    rejects: str | None  # None: not written (the cases went to stdout)
    format: str
    writes: str  # "cases", or "verdicts" (a peer's judge)
    inferred: str | None  # how the format was inferred; None when --from named it
    mapping: dict[str, str] | None
    ids: str
    columns: list[str] | None
    unmapped_columns: list[str]
    counts: ConvertCounts
    rejected_by_kind: dict[str, int]
    rejected_by_column: dict[str, int]
    placeholders: dict[str, int]
    generated_ids: dict[str, int]
    tool_events: dict[str, int]
    roles_renamed: dict[str, int]
    labels: dict[str, dict[str, int]]
    unmapped_scores: dict[str, dict[str, int]]
    verdicts: dict[str, dict[str, int]]  # rubric -> status -> verdicts written
    unscored: dict[str, int]  # the causes of the unscored verdicts written
    warnings: list[str]
    seconds: float
    exit_code: int = 0


def encode(report: ConvertReport) -> bytes:
    """The report as indented JSON with a final newline."""
    from evalstream._files.outputs import escape_line_breaks

    return escape_line_breaks(msgspec.json.format(msgspec.json.encode(report), indent=2)) + b"\n"
