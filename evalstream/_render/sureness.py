"""How sure the judge was, in ``agree`` (issue 29): the calibration of the verdicts'
confidence, the corrected pass rates and the checks chosen for labelling; as blocks (table,
markdown) after agree's and the panel's, and as a section of agree's HTML page with a
reliability diagram per rubric."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from evalstream._render import panel as panel_render
from evalstream._render.agree_html import AGREE_COLOR, MISS_COLOR, _svg, agree_page
from evalstream._render.html import Page
from evalstream._render.tables import Block, Column, Heading, Paragraph, Table
from evalstream._render.tables import Cell as TableCell
from evalstream._verdicts.agree import AgreeReport
from evalstream._verdicts.calibration import Reliability
from evalstream._verdicts.estimate import Estimate
from evalstream._verdicts.sureness import Sureness


def blocks(report: AgreeReport, base: str | None = None) -> list[Block]:
    """agree's blocks (and a panel's), then the sureness section where there is one."""
    out = panel_render.blocks(report, base)
    sure: Sureness | None = getattr(report, "sureness", None)
    if sure is not None:
        out += sureness_blocks(report, sure)
    return out


def page(report: AgreeReport, base: str | None = None) -> str:
    """agree's HTML page with the panel's section and this one, where there are."""
    panel = getattr(report, "panel", None)
    sure: Sureness | None = getattr(report, "sureness", None)
    parts: list[Callable[[Page], None]] = []
    if panel is not None:
        parts.append(panel_render._section(report, panel))
    if sure is not None:
        parts.append(_section(report, sure))

    def more(p: Page) -> None:
        for part in parts:
            part(p)
    return agree_page(report, base, more=more if parts else None)


def _rate(value: float | None) -> str | None:
    return None if value is None else f"{value:.1%}"


def _three(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f}"


def sureness_blocks(report: AgreeReport, sure: Sureness) -> list[Block]:
    """Calibration, the estimates and the checks to label, each where there is one."""
    out: list[Block] = [Paragraph(left_out_sentence(sure))]
    if sure.calibration is not None:
        out += calibration_blocks(sure)
    elif sure.estimates is not None or sure.to_label is not None:
        out.append(Paragraph("No verdict carries a confidence (judge --confidence): no "
                             "calibration to show."))
    if sure.estimates is not None:
        out += estimate_blocks(report, sure)
    if sure.to_label is not None:
        out += to_label_blocks(report, sure)
    return out


def left_out_sentence(sure: Sureness) -> str:
    """Over how many verdicts the calibration and the estimates are computed, and what they
    leave out (coverage first, as agree's figures)."""
    gone = sure.left_out
    parts = [f"{n:,} {what}" for n, what in (
        (gone.stale, "stale (out of the checks to label too)"), (gone.unscored, "unscored"),
        (gone.na, "na"), (gone.pairwise, "a pair's (a pairwise rubric: no pass rate, no "
                                         "confidence)")) if n]
    kept = gone.verdicts - gone.stale - gone.unscored - gone.na - gone.pairwise
    return (f"How sure the judge was: over {kept:,} of {gone.verdicts:,} verdicts (fresh, scored "
            "pass or fail)" + (f"; left out: {', '.join(parts)}." if parts else "."))


def calibration_blocks(sure: Sureness) -> list[Block]:
    """Each rubric's expected calibration error (all pairs, per label source) and its
    reliability table."""
    assert sure.calibration is not None
    sources = ", ".join(f"{n:,} from {s}" for s, n in sure.confidence_sources.items() if n)
    out: list[Block] = [
        Heading("How sure the judge was: calibration", 2),
        Paragraph(f"{sure.with_confidence:,} verdicts carry a confidence ({sources}). Over the "
                  "pairs (a pass/fail label and a pass/fail verdict), the probability the judge "
                  "gave its status against how often the label agreed; the expected calibration "
                  "error (ECE) is the pairs-weighted gap (0: its 0.8 is right 8 times in 10).")]
    summary = Table([Column("rubric"), Column("keys"), Column("pairs", "count"),
                     Column("ECE")], title="Expected calibration error")
    for r in sure.calibration:
        summary.add(r.rubric, "all", r.all.pairs, _three(r.all.ece))
        for source, rel in r.by_source.items():
            summary.add(r.rubric, f"source {source}", rel.pairs, _three(rel.ece))
    out.append(summary)
    for r in sure.calibration:
        table = Table([Column("confidence"), Column("pairs", "count"),
                       Column("mean confidence", "share"), Column("agreement", "share")],
                      title=f"{r.rubric}: reliability")
        for b in r.all.bins:
            table.add(f"{b.low:.1f}-{b.high:.1f}", b.pairs, b.confidence, b.agreement)
        out.append(table)
    return out


def _estimate_cells(name: str, e: Estimate) -> list[TableCell]:
    interval = None if e.low is None or e.high is None else f"[{e.low:.1%}, {e.high:.1%}]"
    more: TableCell = ("out of reach" if e.estimate is not None and e.more_labels is None
            else e.more_labels)
    return [name, e.labelled, e.unlabelled, _rate(e.judge_rate), _rate(e.labelled_rate),
            _rate(e.estimate), interval, _three(e.power_tuning), more]


def estimate_blocks(report: AgreeReport, sure: Sureness) -> list[Block]:
    """Per rubric and group: the raw, labelled and corrected pass rates side by side."""
    assert sure.estimates is not None
    width = sure.estimates[0].all.target_width if sure.estimates else 0.05
    out: list[Block] = [
        Heading("Corrected pass rates", 2),
        Paragraph(f"The pass rate over checks scored pass or fail: the judge's raw rate, the "
                  f"labelled checks' rate, and the prediction-powered estimate (PPI++: the "
                  f"judge's verdicts on every check corrected by the labelled ones, lambda its "
                  f"power-tuning weight) with its {sure.interval:.0%} interval (none below 10 "
                  f"labels). More labels: how many more labelled checks, at random, would make "
                  f"the interval {width:g} wide, from the variance seen (out of reach: the "
                  f"judge's own term is wider). The interval assumes the labelled checks are a "
                  f"random sample of the checks.")]
    table = Table([Column("rubric"), Column("keys"), Column("labelled", "count"),
                   Column("unlabelled", "count"), Column("judge"), Column("labelled rate"),
                   Column("estimate"), Column(f"{sure.interval:.0%} CI"),
                   Column("lambda"), Column("more labels")],
                  title="Pass rates: raw, labelled, corrected")
    for r in sure.estimates:
        table.add(r.rubric, *_estimate_cells("all", r.all))
        for g in r.by_group:
            keys = f"{report.by} = {g.group}" if g.group is not None else f"{report.by} missing"
            table.add(r.rubric, *_estimate_cells(keys, g.estimate))
    out.append(table)
    return out


def to_label_blocks(report: AgreeReport, sure: Sureness) -> list[Block]:
    """How many checks were chosen per rubric and group, and the first with why."""
    t = sure.to_label
    assert t is not None
    out: list[Block] = [
        Heading("Checks to label next", 2),
        Paragraph(f"{t.chosen:,} of {t.requested:,} checks asked for were chosen "
                  f"({t.cases:,} cases, written to {t.output}): checks without a label, one "
                  "rubric and group at a time (those with the fewest labels first), the most "
                  "doubtful verdict of each first.")]
    strata = Table([Column("rubric"), Column(report.by or "group"),
                    Column("labelled", "count"), Column("unlabelled", "count"),
                    Column("chosen", "count")], title="Chosen per rubric and group")
    for s in t.strata:
        strata.add(s.rubric, s.group if report.by else "all", s.labelled, s.candidates,
                   s.chosen)
    out.append(strata)
    first = Table([Column("case"), Column("rubric"), Column("why")],
                  title=f"The first {len(t.first)} chosen")
    for c in t.first:
        first.add(c.case_id, c.rubric, c.why)
    out.append(first)
    return out


def reliability_chart(title: str, rel: Reliability) -> str:
    """The reliability diagram: each bin's mean confidence (x) against its agreement (y),
    a dot sized by its pairs, beside the diagonal of a calibrated judge."""
    size, left, top = 260, 44, 34
    body = [f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" '
            'stroke="#d1d9e0"/>',
            f'<line class="axis" x1="{left}" y1="{top + size}" x2="{left + size}" y2="{top}" '
            'stroke-dasharray="3 3"/>',
            f'<text class="muted" x="{left + size / 2}" y="{top + size + 28}" '
            'text-anchor="middle" font-size="11">confidence</text>',
            f'<text class="muted" x="{left - 30}" y="{top + size / 2}" font-size="11" '
            f'transform="rotate(-90 {left - 30} {top + size / 2})" text-anchor="middle">'
            "agreement</text>"]
    for tick in (0.0, 0.5, 1.0):
        body.append(f'<text class="muted" x="{left + tick * size}" y="{top + size + 14}" '
                    f'text-anchor="middle" font-size="10">{tick:g}</text>'
                    f'<text class="muted" x="{left - 6}" y="{top + (1 - tick) * size + 4}" '
                    f'text-anchor="end" font-size="10">{tick:g}</text>')
    peak = max((b.pairs for b in rel.bins), default=1)
    for b in rel.bins:
        x, y = left + b.confidence * size, top + (1 - b.agreement) * size
        tip = (f"confidence {b.low:.1f}-{b.high:.1f}: {b.pairs:,} pairs, mean confidence "
               f"{b.confidence:.3f}, agreement {b.agreement:.3f}")
        color = AGREE_COLOR if b.agreement >= b.confidence else MISS_COLOR
        body.append(f'<g class="bin" data-pairs="{b.pairs}"><title>{escape(tip)}</title>'
                    f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{3 + 7 * (b.pairs / peak) ** 0.5:.1f}"'
                    f' fill="{color}" fill-opacity="0.75"/></g>')
    return _svg("reliability", title, left + size + 20, top + size + 40, body)


def _section(report: AgreeReport, sure: Sureness) -> Callable[[Page], None]:
    """What this adds to agree's page: a reliability diagram per rubric, then the blocks."""
    def add(p: Page) -> None:
        for r in sure.calibration or []:
            ece = "-" if r.all.ece is None else f"{r.all.ece:.3f}"
            p.figure(reliability_chart(f"{r.rubric}: reliability (ECE {ece})", r.all),
                     "Below the diagonal: the judge is surer than it is right.")
        p.blocks(sureness_blocks(report, sure), shift=0)
    return add
