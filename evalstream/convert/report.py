"""What a ``convert`` run writes besides the cases: rejects and a report whose counts add up."""

from __future__ import annotations

from typing import TextIO

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
    """Every source row is blank, a case or rejected: ``rows == blank + cases + rejected``."""

    rows: int = 0
    blank: int = 0
    cases: int = 0
    rejected: int = 0


class ConvertReport(msgspec.Struct):
    """The machine-readable summary of one ``convert`` run."""

    command: str
    evalstream: str
    input: str
    output: str
    rejects: str
    format: str
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
    warnings: list[str]
    seconds: float
    exit_code: int = 0


def encode(report: ConvertReport) -> bytes:
    """The report as indented JSON with a final newline."""
    return msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n"


def render_summary(report: ConvertReport, file: TextIO) -> None:
    """A few plain lines for stderr: the counts, what conversion did, where rejects went."""
    c = report.counts
    how = f"inferred from {report.inferred}" if report.inferred else "--from"
    lines = [f"convert: {c.rows:,} rows = {c.cases:,} cases + {c.rejected:,} rejected + "
             f"{c.blank:,} blank (from {report.format}: {how})"]
    if report.placeholders:
        named = ", ".join(f"{k}: {v:,}" for k, v in sorted(report.placeholders.items()))
        lines.append(f"non-text content parts named by placeholders: {named}")
    if report.tool_events:
        lines.append("tool events: " + ", ".join(f"{k}: {v:,}" for k, v in
                                                 sorted(report.tool_events.items())))
    if report.rejected_by_kind:
        lines.append("rejected: " + ", ".join(f"{k}: {v:,}" for k, v in
                                              report.rejected_by_kind.items()))
    if c.rejected and report.rejects != "-":
        lines.append(f"rejects written to {report.rejects}")
    lines += [f"warning: {w}" for w in report.warnings]
    file.write("".join(_printable(line) + "\n" for line in lines))


def _printable(text: str) -> str:
    # Column names and values come from the data: no control characters reach a terminal.
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)
