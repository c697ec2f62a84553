"""The text views of ``compare``: blocks built from a ``CompareReport``."""

from __future__ import annotations

from evalstream._render.agree import cut, page_link, reject_blocks, unlisted_line, unscored_line
from evalstream._render.tables import Block, Column, Heading, Paragraph, Table, p_value
from evalstream._verdicts.compare import CompareReport, RubricComparison


# -- the text views --------------------------------------------------------------------------------
def comparability_line(report: CompareReport) -> str:
    """One sentence on how many pairs could be compared, and why the others could not."""
    s = report.summary
    if not s.paired:
        return "No key is in both runs: no pair could be compared."
    unchecked = ""
    if s.unchecked:
        missing = ", ".join(f"{n:,} without {h.replace('_', ' ')}"
                            for h, n in s.absent_on_both.items() if n)
        unchecked = (f" Comparability unchecked for {s.unchecked:,} of {s.paired:,} pairs: "
                     f"neither run records what the judge saw ({missing}), so they are compared "
                     "as if it were the same.")
    if not s.not_comparable:
        if not s.unchecked:
            return f"All {s.paired:,} pairs are comparable (same rubric, state and exposure)."
        return (f"{s.checked:,} of {s.paired:,} pairs are checked comparable (same rubric, "
                f"state and exposure).{unchecked}")
    reasons = ", ".join(f"{n:,} {h.replace('_', ' ')}" for h, n in s.differs.items() if n)
    verb = ("included anyway (--include-incomparable)" if report.include_incomparable
            else "left out of the statistics (use --include-incomparable to include them)")
    return (f"{s.not_comparable:,} of {s.paired:,} pairs are not comparable: the judge did not "
            f"see the same thing (differs: {reasons}); {verb}.{unchecked}")


def blocks(report: CompareReport, base: str | None = None) -> list[Block]:
    """What the table and markdown styles show: the summary, then one section per rubric;
    example ids link to their view pages (relative to ``base``) when the report has them."""

    out: list[Block] = [Heading("evalstream compare", 1), *summary_blocks(report)]
    for r in report.rubrics:
        out += rubric_blocks(r, base=base)
    return out


def summary_blocks(report: CompareReport) -> list[Block]:
    """The runs read, their rejects, comparability, and one line of figures per rubric."""

    a, b, s = report.run_a, report.run_b, report.summary
    out: list[Block] = [
        Paragraph(f"run A = {a.path}: {a.verdicts:,} verdicts ({a.rejected:,} lines rejected). "
                  f"run B = {b.path}: {b.verdicts:,} verdicts ({b.rejected:,} lines rejected)."),
        Paragraph(f"{s.keys:,} keys: {s.paired:,} in both runs, {s.only_a:,} only in A, "
                  f"{s.only_b:,} only in B. " + comparability_line(report)
                  + unlisted_line([a.unlisted_rubric, b.unlisted_rubric],
                                  ["verdicts of run A", "verdicts of run B"])),
    ]
    for run in (a, b):
        rate = unscored_line(run, report.max_unscored_rate)
        if rate:
            out.append(Paragraph(rate))
    out += stale_blocks(report)
    out += reject_blocks([(a.path, a.first_rejects, a.rejected),
                          (b.path, b.first_rejects, b.rejected)], report.rejects)
    if not report.rubrics:
        out.append(Paragraph("Neither run holds a verdict: nothing to compare."))
        return out
    table = Table([Column("rubric"), Column("compared", "count"), Column("pass A", "share"),
                   Column("pass B", "share"), Column("B - A", "share"),
                   Column("pass->fail", "count"), Column("fail->pass", "count"),
                   Column("McNemar p", "number"), Column("test"),
                   Column("not comparable", "count"), Column("only A", "count"),
                   Column("only B", "count")],
                  title="Per rubric (pass rates over pairs scored in both runs)")
    for r in report.rubrics:
        c = r.counts
        table.add(r.rubric, c.compared, r.pass_rate_a, r.pass_rate_b, r.difference,
                  c.transitions["pass->fail"], c.transitions["fail->pass"],
                  None if r.mcnemar is None else p_value(r.mcnemar.p_value),
                  None if r.mcnemar is None else r.mcnemar.method, c.not_comparable,
                  c.only_a, c.only_b)
    out.append(table)
    return out


def stale_blocks(report: CompareReport) -> list[Block]:
    """What the stale check found in each run, or how to ask for it."""
    from evalstream._render.coverage import stale_counts

    if report.stale_a is None or report.stale_b is None:
        return [Paragraph("Stale verdicts not checked: give --cases (the states are rebuilt "
                          "from them) or --states (build's output).")]
    text = " ".join(stale_counts(check.counts, run.path) for check, run in (
        (report.stale_a, report.run_a), (report.stale_b, report.run_b)))
    stale = report.stale_a.counts.stale + report.stale_b.counts.stale
    if stale:
        text += (" Both runs are compared as they are (pairs whose judges saw different "
                 "things are not comparable): judge build's current output again to compare "
                 "fresh verdicts." + (" --fail-on-stale: exit 1." if report.fail_on_stale
                                      else ""))
    return [Paragraph(text + f" Checked against {report.stale_a.against}.")]


def rubric_blocks(r: RubricComparison, heading: bool = True, base: str | None = None,
                  ) -> list[Block]:
    """One rubric's section: what was compared, what could not be checked, the ids."""

    c = r.counts
    t = c.transitions
    unscored = sum(n for k, n in t.items() if "unscored" in k)
    na = sum(n for k, n in t.items() if "na" in k.split("->") and "unscored" not in k)
    out: list[Block] = [Heading(r.rubric, 2)] if heading else []
    out.append(Paragraph(
        f"{c.compared:,} pairs compared ({c.scored:,} scored in both runs, {unscored:,} with an "
        f"unscored side: {t['pass->unscored'] + t['fail->unscored']:,} became unscored, "
        f"{t['unscored->pass'] + t['unscored->fail']:,} became scored; {na:,} with an na side "
        "and none unscored)."))
    absent = ", ".join(f"{h.replace('_', ' ')} {n:,}" for h, n in c.absent_on_both.items() if n)
    if absent:
        out.append(Paragraph(f"Compared without a field on either side (it could not be "
                             f"checked): {absent}."))
    ex, why, pages = r.examples, r.rationales, r.pages
    for kind, name, total in (("pass -> fail", "pass_to_fail", t["pass->fail"]),
                              ("fail -> pass", "fail_to_pass", t["fail->pass"]),
                              ("not comparable", "not_comparable", c.not_comparable),
                              ("only in A", "only_a", c.only_a),
                              ("only in B", "only_b", c.only_b),
                              ("stale in A or B (judged on another state or rubric than build "
                               "makes today)", "stale", c.stale)):
        if not total:
            continue
        ids = getattr(ex, name)
        more = f" (first {len(ids):,} of {total:,})" if len(ids) < total else ""
        links = getattr(pages, name) if pages is not None else [None] * len(ids)
        rationales = getattr(why, name)
        if not any(r.a or r.b for r in rationales) and not any(links):  # ids only: one line
            out.append(Paragraph(f"{kind}{more}: {', '.join(ids) if ids else '-'}"))
            continue
        table = Table([Column("case"), Column("rationale A"), Column("rationale B")],
                      title=f"{kind}{more}")
        for case_id, rationale, page in zip(ids, rationales, links, strict=True):
            table.add(page_link(case_id, page, base), cut(rationale.a), cut(rationale.b))
        out.append(table)
    return out
