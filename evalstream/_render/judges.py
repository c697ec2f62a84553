"""The views of ``agree A B C --cases CASES`` (issue 26): per rubric, one row per judge run,
the best agreement with people first, with its unscored rate and its tokens and cost per
1,000 judge states; as blocks (table, markdown) and as an HTML page with a kappa chart."""

from __future__ import annotations

from evalstream._render.agree import reject_blocks, unscored_line
from evalstream._render.agree_html import kappa_chart
from evalstream._render.html import Page
from evalstream._render.tables import Block, Column, Heading, Paragraph, Table
from evalstream._verdicts.agree import KappaOut, nothing_scored
from evalstream._verdicts.judges import PER, JudgesReport, RubricJudges


def _kappa(k: KappaOut | None) -> str | None:
    return None if k is None else f"{k.value:.3f}"


def _interval(k: KappaOut | None) -> str:
    if k is None:
        return "-"
    if k.low is None or k.high is None:
        return "too few pairs"
    return f"[{k.low:.3f},\u00a0{k.high:.3f}]"  # no-break space: one line in a narrow column


def summary_blocks(report: JudgesReport) -> list[Block]:
    """The files read, the prices given, the rejects."""
    out: list[Block] = []
    for v in report.runs:
        out.append(Paragraph(
            f"{v.path}: {v.lines:,} lines = {v.verdicts:,} verdicts + {v.judge_states:,} judge "
            f"states + {v.rejected:,} rejected + {v.blank:,} blank; judged by "
            f"{', '.join(v.judges) or 'no judge named'}; {v.by_status['unscored']:,} "
            "unscored."))
        if nothing_scored(v):
            out.append(Paragraph(unscored_line(v, None) or ""))  # a run that measures nothing
    c = report.cases
    out.append(Paragraph(f"{c.path}: {c.lines:,} lines = {c.cases:,} cases + {c.rejected:,} "
                         f"rejected + {c.blank:,} blank; {c.labels:,} labels."))
    prices = ", ".join(f"{m} ${p.input:g} in, ${p.output:g} out" for m, p in
                       report.prices.items())
    out.append(Paragraph(
        "Prices (USD per million tokens): " + (prices or "none given (--price MODEL=IN,OUT)")
        + f". Tokens and cost are per {PER:,} judge states, from the verdicts' usage (a "
        "panel's: its votes'); a cost needs a price for every model a run used."))
    for v, check in zip(report.runs, report.stale, strict=False):
        if check.counts.stale:
            out.append(Paragraph(
                f"{v.path}: {check.counts.stale:,} stale verdicts (judged on another state or "
                f"rubric than {check.against}): counted in its rows and left out of their "
                "figures."))
    out += reject_blocks([(v.path, v.first_rejects, v.rejected) for v in report.runs]
                         + [(c.path, c.first_rejects, c.rejected)], report.rejects)
    return out


def rubric_table(r: RubricJudges, report: JudgesReport) -> Table:
    """One rubric: a row per run, the best agreement with people first."""
    # Coverage first, as agree's tables: over how many labels, and the accuracy over all.
    stale = bool(report.stale)
    table = Table([Column("run"), Column("judge"), Column("labels", "count"),
                   Column("pairs", "count"), Column("kappa", "number"),
                   Column(f"{report.confidence:.0%} CI"), Column("accuracy", "share"),
                   Column("over all labels", "share"), Column("fail recall", "share"),
                   Column("unscored", "share"),
                   *([Column("stale", "count")] if stale else []),
                   Column(f"tokens in / {PER:,}", "count"),
                   Column(f"tokens out / {PER:,}", "count"),
                   Column(f"USD / {PER:,}", "number", 4)],
                  title=f"{r.rubric}: which judge agrees best with the labels")
    for row in r.rows:
        cov = row.coverage
        table.add(row.run, row.judge, cov.labels if cov else None, row.pairs,
                  _kappa(row.kappa), _interval(row.kappa), row.accuracy,
                  cov.accuracy_all_labels if cov else None, row.fail_recall,
                  row.unscored_rate, *([row.stale] if stale else []),
                  row.input_tokens_per_1000, row.output_tokens_per_1000, row.cost_per_1000)
    unpriced = sorted({m for row in r.rows for m in row.unpriced})
    table.note = ("Sorted by Cohen's kappa with the labels (fail is the positive class), then "
                  "accuracy. labels: the pass/fail labels each row is computed over; over all "
                  "labels: its accuracy counting every label without a usable verdict (na, "
                  "unscored, stale, none) as not agreeing; unscored: the share of the run's "
                  "verdicts on the rubric (stale ones too, labelled or not) left unscored."
                  + (f" No price for {', '.join(unpriced)}: no cost shown for the runs that "
                     "used it." if unpriced else ""))
    return table


def blocks(report: JudgesReport, base: str | None = None) -> list[Block]:
    """What the table and markdown styles show."""
    out: list[Block] = [Heading("evalstream agree: judges side by side", 1),
                        *summary_blocks(report)]
    if not report.rubrics:
        out.append(Paragraph("No run holds a verdict: nothing to compare."))
    for r in report.rubrics:
        out.append(rubric_table(r, report))
    return out


def page(report: JudgesReport, base: str | None = None) -> str:
    """The report as one self-contained HTML page."""
    p = Page("evalstream agree: judges side by side",
             f"{len(report.runs)} runs against the labels of {report.cases.path}")
    p.cards([(f"{len(report.runs):,}", "runs"), (f"{len(report.rubrics):,}", "rubrics"),
             (f"{report.cases.labels:,}", "labels")])
    p.heading("Summary")
    p.blocks(summary_blocks(report))
    for r in report.rubrics:
        p.heading(r.rubric)
        p.figure(kappa_chart(f"{r.rubric}: each run against the labels (Cohen's kappa, "
                             f"{report.confidence:.0%} interval)",
                             [(f"{row.judge} ({row.run})", row.kappa, row.pairs)
                              for row in r.rows]),
                 "The best agreement with people first.")
        p.blocks([rubric_table(r, report)])
    return p.html()
