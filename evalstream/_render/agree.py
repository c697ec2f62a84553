"""The text views of ``agree``: headings, paragraphs and tables (``render.tables`` blocks)
built from an ``AgreeReport``; printed with rich, written as markdown, or laid out in HTML.

The listed example ids come with the judge's rationale (cut to ``RATIONALE_CHARS``; the
JSON keeps it whole) and, when the report names a view export, link to their pages there,
relative to ``base`` (the folder of the file the blocks are written to)."""

from __future__ import annotations

import os

from evalstream._cases.rejects import Reject
from evalstream._render import bias
from evalstream._render.tables import Block, Column, Heading, Link, Paragraph, Table
from evalstream._verdicts.agree import (
    AgreeReport,
    Cell,
    RubricAgreement,
    nothing_scored,
    over_unscored_rate,
)
from evalstream._verdicts.records import MAX_RUBRICS, VerdictFileSummary

# -- the text views --------------------------------------------------------------------------------
RATIONALE_CHARS = 160


def blocks(report: AgreeReport, base: str | None = None) -> list[Block]:
    """What the table and markdown styles show: totals, then one section per rubric."""

    out: list[Block] = [Heading("evalstream agree", 1), *summary_blocks(report)]
    for r in report.rubrics:
        out += rubric_blocks(r, report, base=base)
    return out + bias.blocks(report.bias, report.confidence)


def cut(text: str | None, size: int = RATIONALE_CHARS) -> str | None:
    """A rationale on one line, at most ``size`` characters."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[:size - 1] + "…"


def page_link(case_id: str, page: str | None, base: str | None) -> Link:
    """The case id, linking to its page in a view export (relative to ``base``)."""
    if page is None:
        return Link(case_id)
    # "." (stdout, or a file in the working folder): the path as the export was named.
    return Link(case_id, page if base in (None, ".") else os.path.relpath(page, base))


def summary_blocks(report: AgreeReport) -> list[Block]:
    """What leads when it is bad (coverage, stale verdicts), the files read, their rejects,
    and one line of figures per rubric."""
    from evalstream._render.coverage import headline_blocks, stale_line

    lead = headline_blocks(report)
    out: list[Block] = [*lead, Paragraph(files_line(report))]
    rate = unscored_line(report.verdicts, report.max_unscored_rate)
    if rate:
        out.append(Paragraph(rate))
    stale = stale_line(report)
    if stale and not (report.stale is not None and report.stale.counts.stale):
        out.append(Paragraph(stale))  # nothing stale: said once, after the files
    out += reject_blocks([(report.verdicts.path, report.verdicts.first_rejects,
                           report.verdicts.rejected),
                          (report.cases.path, report.cases.first_rejects, report.cases.rejected)],
                         report.rejects)
    if not report.rubrics:
        out.append(Paragraph("Neither file holds a verdict or a label: nothing to compare."))
        return out
    summary = Table([Column("rubric"), Column("labels", "count"), Column("pairs", "count"),
                     Column("accuracy", "share"), Column("over all labels", "share"),
                     Column("kappa", "number"), Column(f"{report.confidence:.0%} CI"),
                     Column("fail precision", "share"), Column("fail recall", "share"),
                     Column("missed", "count"), Column("false alarms", "count"),
                     Column("na verdict", "count"), Column("unscored", "count"),
                     *([Column("stale", "count")] if report.stale is not None else []),
                     Column("no verdict", "count"), Column("no label", "count"),
                     Column("na label", "count")],
                    title="Agreement per rubric (fail is the positive class)")
    for r in report.rubrics:
        c = r.all
        labels = c.coverage.labels if c.coverage else None
        over_all = c.coverage.accuracy_all_labels if c.coverage else None
        summary.add(r.rubric, labels, c.pairs, c.accuracy, over_all, _kappa(c), _interval(c),
                    c.fail_precision, c.fail_recall, c.confusion.fail_pass,
                    c.confusion.pass_fail, c.na_verdicts, c.unscored,
                    *([c.stale] if report.stale is not None else []),
                    c.labels_without_verdict, c.verdicts_without_label, c.na_labels)
    summary.note = ("labels: pass/fail labels; pairs: those with a pass/fail verdict, over which "
                    "accuracy, kappa, precision and recall are computed; over all labels: "
                    "the agreeing pairs over every pass/fail label (one left out counts as not "
                    "agreeing). missed: label fail, judge pass; false alarms: label pass, judge "
                    "fail; na verdict: judge na on a pass/fail label (a disagreement of its own "
                    "kind)"
                    + ("; stale: a verdict on another state or rubric than build makes today"
                       if report.stale is not None else "")
                    + "; no verdict: a pass/fail label without a verdict; no label: a verdict "
                    "without a label; na label: labels `na` (left out).")
    out.append(summary)
    return out


def files_line(report: AgreeReport) -> str:
    v, c = report.verdicts, report.cases
    text = (f"{v.path}: {v.lines:,} lines = {v.verdicts:,} verdicts + {v.judge_states:,} judge "
            f"states + {v.rejected:,} rejected + {v.blank:,} blank. {c.path}: {c.lines:,} lines "
            f"= {c.cases:,} cases + {c.rejected:,} rejected + {c.blank:,} blank; "
            f"{c.labels:,} labels.")
    if v.judge_states:
        text += (f" {v.judge_states:,} judge states (written by build, not yet judged) have no "
                 "verdict.")
    text += unlisted_line([v.unlisted_rubric, c.unlisted_rubric], ["verdicts", "labels"])
    return text


def unlisted_line(counts: list[int], kinds: list[str]) -> str:
    """What was counted but not analysed because of the cap on distinct rubric ids."""
    parts = [f"{n:,} {kind}" for n, kind in zip(counts, kinds, strict=True) if n]
    if not parts:
        return ""
    return (f" Only the first {MAX_RUBRICS:,} rubric ids are analysed: {' and '.join(parts)} "
            "of further rubric ids are counted here only.")


def unscored_line(summary: VerdictFileSummary, limit: float | None) -> str | None:
    """A sentence on the unscored rate when there are unscored verdicts or a limit; on a file
    with no scored verdict, whatever the limit (exit 1)."""
    if nothing_scored(summary):
        held = "no verdict" if not summary.verdicts else \
            f"{summary.verdicts:,} verdicts, every one unscored"
        return f"{summary.path}: {held}: nothing was judged to measure (exit 1)."
    if summary.unscored_rate is None or (not summary.by_status["unscored"] and limit is None):
        return None
    text = (f"{summary.path}: {summary.by_status['unscored']:,} of {summary.verdicts:,} verdicts "
            f"unscored ({summary.unscored_rate:.1%})")
    if limit is None:
        return text + "."
    verb = "above" if over_unscored_rate(summary, limit) else "within"
    return text + f", {verb} --max-unscored-rate {limit:g}" + (
        " (exit 1)." if verb == "above" else ".")


def reject_blocks(files: list[tuple[str, list[Reject], int]], rejects: str | None,
                  ) -> list[Block]:
    """The first rejects of each file (path, first rejects, total) as tables, and where the
    rest are."""

    out: list[Block] = []
    for path, first, total in files:
        if not total:
            continue
        table = Table([Column("line", "count"), Column("path"), Column("problem")],
                      title=f"{path}: {total:,} lines rejected (first {len(first)})")
        for r in first:
            table.add(r.line, r.path, r.error)
        out.append(table)
    if any(total for _, _, total in files):
        out.append(Paragraph(f"All rejects: {rejects}" if rejects
                             else "Give --rejects FILE to write every rejected line."))
    return out


def _kappa(c: Cell) -> str | None:
    # Text, so that a kappa of 1 prints as 1.000 like its neighbours (right-aligned still).
    return None if c.kappa is None else f"{c.kappa.value:.3f}"


def _interval(c: Cell) -> str:
    # A no-break space: a narrow column must not split the interval over two lines.
    if c.kappa is None:
        return "-"
    if c.kappa.low is None or c.kappa.high is None:
        return "too few pairs"
    return f"[{c.kappa.low:.3f},\u00a0{c.kappa.high:.3f}]"


def rubric_blocks(r: RubricAgreement, report: AgreeReport, heading: bool = True,
                  base: str | None = None) -> list[Block]:
    """One rubric's section: confusion matrix, what was left out, the breakdown, the ids."""

    from evalstream._render.coverage import sentence

    c = r.all
    out: list[Block] = [Heading(r.rubric, 2)] if heading else []
    stale = report.stale is not None
    matrix = Table([Column("label \\ judge"), Column("pass", "count"), Column("fail", "count"),
                    Column("na", "count"), Column("unscored", "count"),
                    *([Column("stale", "count")] if stale else []),
                    Column("no verdict", "count")],
                   title="Confusion matrix")
    m = c.confusion
    matrix.add("pass", m.pass_pass, m.pass_fail, m.pass_na, m.pass_unscored,
               *([m.pass_stale] if stale else []), m.pass_no_verdict)
    matrix.add("fail", m.fail_pass, m.fail_fail, m.fail_na, m.fail_unscored,
               *([m.fail_stale] if stale else []), m.fail_no_verdict)
    matrix.note = ("The pass and fail columns are the pairs of the scored figures; every column "
                   "counts in the accuracy over all labels.")
    out.append(matrix)
    if c.coverage is not None and c.coverage.labels:
        out.append(Paragraph(sentence("Coverage", c.accuracy, c.coverage)))
    stale_said = "" if r.stale is None else (
        f"; stale verdicts: {r.stale.stale:,} ({r.stale.state:,} on another state, "
        f"{r.stale.rubric:,} under another rubric; {c.stale:,} on a pass/fail label, left out), "
        f"{r.stale.not_checked:,} not checked")
    out.append(Paragraph(
        f"labels: {r.labels['pass']:,} pass, {r.labels['fail']:,} fail, {r.labels['na']:,} na; "
        f"verdicts: {r.verdicts['pass']:,} pass, {r.verdicts['fail']:,} fail, "
        f"{r.verdicts['na']:,} na, {r.verdicts['unscored']:,} unscored{stale_said}. Left out: "
        f"{c.unscored:,} unscored, {c.na_verdicts:,} na verdicts on a pass/fail label, "
        f"{c.labels_without_verdict:,} labels without a verdict, {c.na_labels:,} na labels "
        f"({c.na_with_verdict:,} with a verdict), {c.verdicts_without_label:,} verdicts without "
        f"a label ({c.unknown_case:,} for cases not in {report.cases.path})."))
    cells: list[tuple[str, Cell]] = [(f"source {s}", cell) for s, cell in r.by_source.items()]
    if report.by is not None:
        cells += [(f"{report.by} = {g.group}" if g.group is not None
                   else f"{report.by} missing", g) for g in r.by_group]
    if cells:
        table = Table([Column("keys"), Column("labels", "count"), Column("pairs", "count"),
                       Column("accuracy", "share"), Column("over all labels", "share"),
                       Column("kappa", "number"), Column(f"{report.confidence:.0%} CI"),
                       Column("fail precision", "share"), Column("fail recall", "share"),
                       Column("missed", "count"), Column("false alarms", "count"),
                       Column("na verdict", "count"), Column("unscored", "count"),
                       Column("no verdict", "count")],
                      title="By label source" + (f" and by {report.by}" if report.by else ""))
        for name, cell in cells:
            cov = cell.coverage
            table.add(name, cov.labels if cov else None, cell.pairs, cell.accuracy,
                      cov.accuracy_all_labels if cov else None, _kappa(cell), _interval(cell),
                      cell.fail_precision, cell.fail_recall, cell.confusion.fail_pass,
                      cell.confusion.pass_fail, cell.na_verdicts, cell.unscored,
                      cell.labels_without_verdict)
        out.append(table)
    ex, why = r.examples, r.rationales
    pages = r.pages
    for kind, name, total in (("missed (label fail, judge pass)", "missed", c.confusion.fail_pass),
                              ("false alarms (label pass, judge fail)", "false_alarms",
                               c.confusion.pass_fail),
                              ("na verdicts (label pass or fail, judge na)", "na_verdicts",
                               c.na_verdicts),
                              ("unscored", "unscored", c.unscored),
                              ("stale (judged on another state or rubric; left out)", "stale",
                               c.stale),
                              ("labels without a verdict", "labels_without_verdict",
                               c.labels_without_verdict),
                              ("verdicts without a label", "verdicts_without_label",
                               c.verdicts_without_label)):
        if not total:
            continue
        ids = getattr(ex, name)
        more = f" (first {len(ids):,} of {total:,})" if len(ids) < total else ""
        links = getattr(pages, name) if pages is not None else [None] * len(ids)
        rationales = getattr(why, name)
        if not any(rationales) and not any(links):  # nothing but ids: one line
            out.append(Paragraph(f"{kind}{more}: {', '.join(ids) if ids else '-'}"))
            continue
        table = Table([Column("case"), Column("rationale")], title=f"{kind}{more}")
        for case_id, rationale, page in zip(ids, rationales, links, strict=True):
            table.add(page_link(case_id, page, base), cut(rationale))
        out.append(table)
    return out
