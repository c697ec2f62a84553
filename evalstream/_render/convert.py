"""The short summary ``convert`` prints on stderr."""

from __future__ import annotations

from typing import TextIO

from evalstream._convert.report import ConvertReport


def render_summary(report: ConvertReport, file: TextIO) -> None:
    """A few plain lines for stderr: the counts, what conversion did, where rejects went."""
    c = report.counts
    how = f"inferred from {report.inferred}" if report.inferred else "--from"
    cases = f"{c.cases:,} cases"
    if report.writes == "verdicts":  # a peer's judge: each case its verdicts
        cases = f"{c.cases:,} judged cases ({c.verdicts:,} verdicts)"
    lines = [f"convert: {c.rows:,} rows = {cases} + {c.rejected:,} rejected + "
             f"{c.blank:,} blank (from {report.format}: {how})"]
    for rubric, statuses in report.verdicts.items():
        lines.append(f"verdicts of {rubric}: " + ", ".join(f"{k}: {v:,}" for k, v in
                                                          statuses.items()))
    if report.unscored:
        lines.append("unscored, by cause: " + ", ".join(f"{k}: {v:,}" for k, v in
                                                        report.unscored.items()))
    if report.placeholders:
        named = ", ".join(f"{k}: {v:,}" for k, v in sorted(report.placeholders.items()))
        lines.append(f"non-text content parts named by placeholders: {named}")
    if report.tool_events:
        lines.append("tool events: " + ", ".join(f"{k}: {v:,}" for k, v in
                                                 sorted(report.tool_events.items())))
    if report.rejected_by_kind:
        lines.append("rejected: " + ", ".join(f"{k}: {v:,}" for k, v in
                                              report.rejected_by_kind.items()))
    if c.rejected and report.rejects is None:
        lines.append("rejects: not written (give --rejects FILE)")
    elif c.rejected and report.rejects != "-":
        lines.append(f"rejects written to {report.rejects}")
    lines += [f"warning: {w}" for w in report.warnings]
    file.write("".join(_printable(line) + "\n" for line in lines))


def _printable(text: str) -> str:
    # Column names and values come from the data: no control characters reach a terminal.
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)
