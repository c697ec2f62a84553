"""The short summary a build or validate run prints on stderr."""

from __future__ import annotations

from typing import TextIO

from evalstream._checks.report import RunReport
from evalstream._render.tables import literal


def render_summary(report: RunReport, file: TextIO) -> None:
    """A short summary table of the run (rich), for stderr."""
    from rich.table import Table

    from evalstream._render.console import terminal

    console = terminal(file, highlight=False)
    c = report.counts
    head = (f"{report.command}: {c.lines:,} lines = {c.cases:,} cases + {c.rejected:,} rejected "
            f"+ {c.blank:,} blank")
    if report.rubrics is not None:
        head += f"; {c.checks:,} checks written, {c.skipped:,} skipped"
    console.print(literal(head))
    pairs = getattr(report, "pairs", None)  # build --pair-with (issue 28)
    if pairs is not None:
        console.print(literal(
            f"pairs: {pairs.pairs:,} ids in both runs, each judged in both orders; not judged: "
            f"{pairs.a.only:,} of run A and {pairs.b.only:,} of run B in one run only, "
            f"{pairs.mismatched:,} differing in {', '.join(pairs.must_be_equal)} "
            f"(the files were read {pairs.read})"), soft_wrap=True)
    for warning in report.warnings:  # first, where they are read
        console.print(literal(f"warning: {warning}"))
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
    went = [f"{what}: {path}" for what, path in (("output", report.output),
                                                  ("rejects", report.rejects),
                                                  ("report", report.report))
            if path is not None and path != "-"]
    if not report.rejects and c.rejected:
        went.append("rejects: not written (give --rejects FILE)")
    if went:
        console.print(literal("; ".join(went)), soft_wrap=True)
