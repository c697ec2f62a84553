"""What ``validate`` prints: the first problems as a table, then the totals."""

from __future__ import annotations

from typing import TextIO

from evalstream._cases.rejects import Reject
from evalstream._checks.report import RunReport


def print_problems(report: RunReport, first: list[Reject], file: TextIO,
                   width: int | None = None) -> None:
    """The first rejects (line, id, path, message) as a rich table, and the counts."""
    c = report.counts
    totals = f"{c.lines:,} lines: {c.cases:,} cases, {c.rejected:,} rejected, {c.blank:,} blank."
    if not first and not c.rejected:
        # A clean run shows one short line: no table, so rich (~20 ms of CPU to import) is
        # not loaded for it.
        file.write(totals + "\n")
        return
    from rich.table import Table

    from evalstream._render.console import terminal
    from evalstream._render.tables import literal

    console = terminal(file, width=width, highlight=False)
    if first:
        table = Table(title=f"First {len(first)} of {c.rejected:,} problems", title_justify="left")
        table.add_column("line", justify="right", no_wrap=True)
        table.add_column("id", overflow="fold", max_width=24)
        table.add_column("path", overflow="fold", max_width=28)
        table.add_column("problem", overflow="fold", ratio=1)
        for r in first:
            table.add_row(str(r.line), literal(r.id or ""), literal(r.path or ""), literal(r.error))
        console.print(table)
    console.print(totals)
    if c.rejected:
        kinds = ", ".join(f"{k} {v:,}" for k, v in report.rejected_by_kind.items())
        where = (f"All rejects: {report.rejects}." if report.rejects
                 else "Give --rejects FILE (or --format json) for every rejected line.")
        console.print(literal(f"Rejected by kind: {kinds}. {where}"))
