"""The HTML pages of ``agree`` and ``compare``, and their own charts.

Pages are built with ``evalstream.html.Page`` (self-contained, no script, a CSP that loads
nothing) from the same blocks the table and markdown styles print. The charts drawn here:
``confusion_chart`` (a heatmap of label against verdict: pass, fail, and the verdicts left
out of the scored figures: na, unscored, stale, none), ``kappa_chart`` (kappa with
its interval per label source and group, on a fixed -1..1 axis) and ``flips_chart``
(pass->fail to the left, fail->pass to the right, per rubric). Each mark has a class and a
``<title>`` tooltip that states its figures; every text is escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING

from evalstream._render.html import CHAR_WIDTH, PALETTE, ROW_HEIGHT, Page, stacked_bar_chart
from evalstream._render.tables import p_value

if TYPE_CHECKING:
    from evalstream._verdicts.agree import (
        AgreeReport,
        Cell,
        ConfusionOut,
        KappaOut,
        RubricAgreement,
    )
    from evalstream._verdicts.compare import CompareReport

AGREE_COLOR = PALETTE[0]
MISS_COLOR = PALETTE[3]
GAIN_COLOR = PALETTE[2]
LEFT_OUT_COLOR = PALETTE[9]  # verdicts left out of the scored figures
WIDTH = 760


def _svg(kind: str, title: str, width: int, height: int, body: list[str]) -> str:
    return (f'<svg class="chart chart-{kind}" xmlns="http://www.w3.org/2000/svg" role="img" '
            f'aria-label="{escape(title)}" viewBox="0 0 {width} {height}" width="{width}" '
            # The page's CSS stretches charts to 760px; a small chart keeps its own width.
            f'height="{height}" style="max-width:{width}px"><title>{escape(title)}</title>'
            f'<text x="0" y="14" font-weight="600">{escape(title)}</text>' + "".join(body) +
            "</svg>")


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def confusion_chart(title: str, c: ConfusionOut, stale: bool = False) -> str:
    """A heatmap: rows are the label (pass, fail), columns the verdict: pass and fail (the
    pairs), then what the scored figures leave out (na, unscored, stale when checked, no
    verdict); darker means more labels.

    Agreement cells are blue, disagreement cells red, left-out cells grey; each shows its
    count and its share of the row (of the label's pass/fail labels: coverage first).
    """
    cell_w, cell_h, left, top = 110, 62, 96, 44
    left_out = [("na", c.pass_na, c.fail_na, "na verdict"),
                ("unscored", c.pass_unscored, c.fail_unscored, "unscored"),
                *([("stale", c.pass_stale, c.fail_stale, "stale")] if stale else []),
                ("no verdict", c.pass_no_verdict, c.fail_no_verdict, "no verdict")]
    cells = ((("pass", "pass", c.pass_pass, "agree"),
              ("pass", "fail", c.pass_fail, "false alarm"),
              *(("pass", name, p, kind) for name, p, _, kind in left_out)),
             (("fail", "pass", c.fail_pass, "missed"), ("fail", "fail", c.fail_fail, "agree"),
              *(("fail", name, f, kind) for name, _, f, kind in left_out)))
    columns = len(cells[0])
    peak = max(n for row in cells for _, _, n, _ in row) or 1
    body = [f'<text class="muted" x="{left + columns * cell_w / 2}" y="{top - 8}" '
            'text-anchor="middle">judge</text>']
    for j, (_, verdict, _, _) in enumerate(cells[0]):
        body.append(f'<text x="{left + j * cell_w + cell_w / 2}" y="{top + 10}" '
                    f'text-anchor="middle">{escape(verdict)}</text>')
    for i, row in enumerate(cells):
        y = top + 18 + i * cell_h
        row_total = sum(n for _, _, n, _ in row)
        body.append(f'<text x="{left - 10}" y="{y + cell_h / 2 + 4}" text-anchor="end">'
                    f'label {row[0][0]}</text>')
        for j, (label, verdict, n, kind) in enumerate(row):
            x = left + j * cell_w
            role = "agree" if kind == "agree" else "disagree" if j < 2 else "left-out"
            strength = n / peak
            opacity = 0.08 + 0.82 * strength if n else 0.0
            ink = "#fff" if opacity > 0.55 else "#1f2328"
            tip = (f"label {label}, judge {verdict} ({kind}): {n:,} labels, "
                   f"{_share(n, row_total)} of label {label}")
            colour = {"agree": AGREE_COLOR, "disagree": MISS_COLOR}.get(role, LEFT_OUT_COLOR)
            body.append(
                f'<g class="cell {role}" data-count="{n}">'
                f"<title>{escape(tip)}</title>"
                f'<rect x="{x + 1}" y="{y + 1}" width="{cell_w - 2}" height="{cell_h - 2}" '
                f'fill="{colour}" fill-opacity="{opacity:.3f}" stroke="#d1d9e0"/>'
                f'<text x="{x + cell_w / 2}" y="{y + cell_h / 2 - 2}" text-anchor="middle" '
                f'font-weight="600" style="fill:{ink}">{n:,}</text>'
                f'<text x="{x + cell_w / 2}" y="{y + cell_h / 2 + 15}" text-anchor="middle" '
                f'font-size="11" style="fill:{ink}">{escape(kind)} · '
                f"{_share(n, row_total)}</text></g>")
    return _svg("confusion", title, left + columns * cell_w + 10, top + 18 + 2 * cell_h + 8,
                body)


def kappa_chart(title: str, rows: Sequence[tuple[str, KappaOut | None, int]]) -> str:
    """Kappa (dot) and its interval (line) per row of (label, kappa, pairs), on -1..1."""
    margin = min(32, max((len(label) for label, _, _ in rows), default=4)) * CHAR_WIDTH + 16
    top, right = 40, 190
    room = WIDTH - margin - right

    def x(value: float) -> float:
        return margin + (value + 1) / 2 * room

    bottom = top + len(rows) * ROW_HEIGHT
    body = []
    for tick in (-1.0, -0.5, 0.0, 0.5, 1.0):
        dash = ' stroke-dasharray="3 3"' if tick else ""
        body.append(f'<line class="axis" x1="{x(tick):.1f}" y1="{top - 6}" x2="{x(tick):.1f}" '
                    f'y2="{bottom}"{dash}/><text class="muted" x="{x(tick):.1f}" y="{top - 10}" '
                    f'text-anchor="middle" font-size="10">{tick:g}</text>')
    for i, (label, k, pairs) in enumerate(rows):
        y = top + i * ROW_HEIGHT
        mid = y + ROW_HEIGHT / 2
        short = label if len(label) <= 32 else label[:31] + "…"
        body.append(f'<text x="{margin - 8}" y="{y + 15}" text-anchor="end">'
                    f"{escape(short)}</text>")
        if k is None:
            body.append(f'<text class="muted" x="{x(-1):.1f}" y="{y + 15}">undefined '
                        f"({pairs:,} pair{'' if pairs == 1 else 's'})</text>")
            continue
        if k.low is None or k.high is None:  # too few pairs for an interval: the point only
            tip = f"{label}: kappa {k.value:.3f}, {pairs:,} pairs: too few for an interval"
            line, shown = "", f"{k.value:.2f} (too few pairs) n={pairs:,}"
        else:
            tip = (f"{label}: kappa {k.value:.3f}, interval {k.low:.3f} to {k.high:.3f}, "
                   f"{pairs:,} pairs")
            line = (f'<line x1="{x(k.low):.1f}" y1="{mid}" x2="{x(k.high):.1f}" y2="{mid}" '
                    f'stroke="{AGREE_COLOR}" stroke-width="2"/>')
            shown = f"{k.value:.2f} [{k.low:.2f}, {k.high:.2f}] n={pairs:,}"
        body.append(
            f'<g class="kappa"><title>{escape(tip)}</title>{line}'
            f'<circle cx="{x(k.value):.1f}" cy="{mid}" r="4.5" fill="{AGREE_COLOR}"/></g>'
            f'<text class="muted" x="{x(1) + 10:.1f}" y="{y + 15}">{escape(shown)}</text>')
    return _svg("kappa", title, WIDTH, bottom + 8, body)


def flips_chart(title: str, rows: Sequence[tuple[str, int, int]]) -> str:
    """Per rubric (label, pass->fail, fail->pass): losses drawn left, gains right of a centre
    line, on one scale."""
    margin = min(32, max((len(label) for label, _, _ in rows), default=4)) * CHAR_WIDTH + 16
    top = 44
    half = (WIDTH - margin - 20) / 2
    centre = margin + half
    peak = max((max(a, b) for _, a, b in rows), default=0) or 1
    room = half - 50
    body = [f'<g class="legend"><rect x="{margin}" y="{top - 22}" width="11" height="11" '
            f'fill="{MISS_COLOR}"/><text x="{margin + 15}" y="{top - 12}">pass -&gt; fail</text>'
            f'<rect x="{centre + 10}" y="{top - 22}" width="11" height="11" fill="{GAIN_COLOR}"/>'
            f'<text x="{centre + 25}" y="{top - 12}">fail -&gt; pass</text></g>',
            f'<line class="axis" x1="{centre}" y1="{top}" x2="{centre}" '
            f'y2="{top + len(rows) * ROW_HEIGHT}"/>']
    for i, (label, lost, gained) in enumerate(rows):
        y = top + i * ROW_HEIGHT
        short = label if len(label) <= 32 else label[:31] + "…"
        w_lost, w_gained = lost / peak * room, gained / peak * room
        body.append(
            f'<text x="{margin - 8}" y="{y + 15}" text-anchor="end">{escape(short)}</text>'
            f'<rect class="flip pass-to-fail" x="{centre - w_lost:.1f}" y="{y + 3}" '
            f'width="{w_lost:.1f}" height="{ROW_HEIGHT - 6}" fill="{MISS_COLOR}">'
            f"<title>{escape(label)}: {lost:,} pass -&gt; fail</title></rect>"
            f'<text class="muted" x="{centre - w_lost - 6:.1f}" y="{y + 15}" '
            f'text-anchor="end">{lost:,}</text>'
            f'<rect class="flip fail-to-pass" x="{centre}" y="{y + 3}" width="{w_gained:.1f}" '
            f'height="{ROW_HEIGHT - 6}" fill="{GAIN_COLOR}">'
            f"<title>{escape(label)}: {gained:,} fail -&gt; pass</title></rect>"
            f'<text class="muted" x="{centre + w_gained + 6:.1f}" y="{y + 15}">{gained:,}</text>')
    return _svg("flips", title, WIDTH, top + len(rows) * ROW_HEIGHT + 8, body)


# -- pages -----------------------------------------------------------------------------------------
def _fmt(value: float | None, pattern: str = "{:.1%}") -> str:
    return "-" if value is None else pattern.format(value)


def _kappa_rows(r: RubricAgreement, by: str | None) -> list[tuple[str, KappaOut | None, int]]:
    rows: list[tuple[str, KappaOut | None, int]] = [("all labels", r.all.kappa, r.all.pairs)]
    rows += [(f"source {s}", cell.kappa, cell.pairs) for s, cell in r.by_source.items()]
    if by is not None:
        rows += [(f"{by} = {g.group}" if g.group is not None else f"{by} missing", g.kappa,
                  g.pairs) for g in r.by_group]
    return rows


def _buckets(c: Cell) -> list[float]:
    k = c.confusion
    return [k.pass_pass + k.fail_fail, k.fail_pass, k.pass_fail, c.na_verdicts, c.unscored,
            c.stale, c.labels_without_verdict, c.na_labels, c.verdicts_without_label]


def agree_page(report: AgreeReport, base: str | None = None,
               more: Callable[[Page], None] | None = None) -> str:
    """The agree result as one self-contained HTML page (example ids link to their view
    pages relative to ``base``, the page's folder); ``more`` adds a section at its end (a
    panel's jurors: ``_render.panel``)."""
    from evalstream._render.agree import rubric_blocks, summary_blocks

    page = Page("evalstream agree", f"{report.verdicts.path} against the labels of "
                                    f"{report.cases.path}")
    pairs = sum(r.all.pairs for r in report.rubrics)
    labelled = sum(r.all.coverage.labels for r in report.rubrics if r.all.coverage)
    cards = [(f"{len(report.rubrics):,}", "rubrics"),
             (f"{pairs:,} of {labelled:,}", "pass/fail labels scored"),
             (f"{report.verdicts.verdicts:,}", "verdicts"),
             (f"{report.cases.labels:,}", "labels"),
             (f"{report.verdicts.rejected + report.cases.rejected:,}", "lines rejected")]
    if report.stale is not None:
        cards.append((f"{report.stale.counts.stale:,}", "stale verdicts"))
    page.cards(cards)
    page.heading("Summary")
    page.blocks(summary_blocks(report))
    if report.rubrics:
        page.figure(stacked_bar_chart(
            [r.rubric for r in report.rubrics],
            ["agree", "missed", "false alarm", "na verdict", "unscored", "stale", "no verdict",
             "na label", "no label"],
            [_buckets(r.all) for r in report.rubrics], title="Where every key went",
            colors=(AGREE_COLOR, MISS_COLOR, PALETTE[1], PALETTE[8], PALETTE[5], PALETTE[7],
                    PALETTE[9], PALETTE[4], PALETTE[6])),
            "Keys per rubric: agreeing and disagreeing pairs (missed: label fail, judge pass; "
            "false alarm: label pass, judge fail), the pass/fail labels left out of the "
            "scored figures (na verdict, unscored, stale, no verdict), then the keys outside "
            "the agreement (na label, no label).")
    for r in report.rubrics:
        c = r.all
        page.heading(r.rubric)
        if c.kappa is None:
            kappa = "-"
        elif c.kappa.low is None or c.kappa.high is None:
            kappa = f"{c.kappa.value:.3f} (too few pairs)"
        else:
            kappa = f"{c.kappa.value:.3f} [{c.kappa.low:.2f}, {c.kappa.high:.2f}]"
        cov = c.coverage
        page.cards([(f"{c.pairs:,} of {cov.labels:,}" if cov else f"{c.pairs:,}",
                     "pairs of the pass/fail labels"),
                    (_fmt(c.accuracy), "accuracy (scored)"),
                    (_fmt(cov.accuracy_all_labels if cov else None), "over all labels"),
                    (kappa, f"kappa ({report.confidence:.0%} CI)"),
                    (_fmt(c.fail_precision), "fail precision"),
                    (_fmt(c.fail_recall), "fail recall")])
        if cov is not None and cov.labels:
            page.figure(confusion_chart(f"{r.rubric}: label against judge", c.confusion,
                                        report.stale is not None))
            page.figure(kappa_chart(
                f"{r.rubric}: Cohen's kappa ({report.confidence:.0%} interval)",
                _kappa_rows(r, report.by)),
                "Undefined where there are no pairs, or judge and labels used one and the same "
                "class only.")
        else:
            page.paragraph("No pass/fail label: nothing to compare the verdicts with.")
        page.blocks(rubric_blocks(r, report, heading=False, base=base))
    _bias(page, report)
    if more is not None:
        more(page)
    return page.html()


def _bias(page: Page, report: AgreeReport) -> None:
    """The bias audit's section (``render.bias``), with a chart of each length audit."""
    from evalstream._render import bias

    page.blocks(bias.blocks(report.bias, report.confidence))
    for audit in report.bias:
        if audit.length is not None and audit.length.quintiles:
            page.figure(bias.length_chart(audit.rubric, audit.length),
                        "The judge's pass rate and the labels' in each length quintile, with "
                        f"their {report.confidence:.0%} intervals.")


def compare_page(report: CompareReport, base: str | None = None) -> str:
    """The compare result as one self-contained HTML page (example ids link to their view
    pages relative to ``base``, the page's folder)."""
    from evalstream._render.compare import rubric_blocks, summary_blocks

    s = report.summary
    page = Page("evalstream compare", f"run A = {report.run_a.path}, run B = {report.run_b.path}")
    page.cards([(f"{s.paired:,}", "pairs in both runs"), (f"{s.compared:,}", "compared"),
                (f"{s.not_comparable:,}", "not comparable"),
                (f"{s.transitions['pass->fail']:,}", "pass -> fail"),
                (f"{s.transitions['fail->pass']:,}", "fail -> pass")])
    page.heading("Summary")
    page.blocks(summary_blocks(report))
    if report.rubrics:
        names = [r.rubric for r in report.rubrics]
        page.figure(flips_chart("Flips per rubric", [
            (r.rubric, r.counts.transitions["pass->fail"], r.counts.transitions["fail->pass"])
            for r in report.rubrics]),
            "Pairs whose verdict changed between run A and run B (compared pairs only).")
        page.figure(stacked_bar_chart(
            names, ["comparable", "not comparable", "only in A", "only in B"],
            [[r.counts.comparable, r.counts.not_comparable, r.counts.only_a, r.counts.only_b]
             for r in report.rubrics], title="Keys per rubric",
            colors=(AGREE_COLOR, MISS_COLOR, PALETTE[9], PALETTE[4])))
    for r in report.rubrics:
        page.heading(r.rubric)
        page.cards([(f"{r.counts.compared:,}", "compared"), (_fmt(r.pass_rate_a), "pass rate A"),
                    (_fmt(r.pass_rate_b), "pass rate B"),
                    (_fmt(r.difference, "{:+.1%}"), "B - A"),
                    ("-" if r.mcnemar is None else p_value(r.mcnemar.p_value),
                     "McNemar p" + ("" if r.mcnemar is None else f" ({r.mcnemar.method})"))])
        page.blocks(rubric_blocks(r, heading=False, base=base))
    return page.html()
