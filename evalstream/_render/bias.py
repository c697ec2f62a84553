"""The bias audit of ``agree`` (``verdicts.bias``) as blocks (terminal, markdown, HTML) and
the HTML page's chart of pass rates by response length.

A share prints with its count and Wilson interval, ``71.4% [66.9%, 75.5%] 299/419``, so no
figure is read without the number it is a share of.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from evalstream._render.html import PALETTE, ROW_HEIGHT
from evalstream._render.tables import Block, Column, Heading, Paragraph, Table

if TYPE_CHECKING:
    from evalstream._verdicts.bias import LengthAudit, RubricBias, Share

JUDGE_COLOR, LABEL_COLOR = PALETTE[0], PALETTE[9]


def shown(s: Share) -> str:
    """``71.4% [66.9%, 75.5%] 299/419``, or ``- 0/0``."""
    if s.share is None or s.low is None or s.high is None:
        return f"- {s.k:,}/{s.n:,}"
    return f"{s.share:.1%} [{s.low:.1%}, {s.high:.1%}] {s.k:,}/{s.n:,}"


def blocks(audits: list[RubricBias], confidence: float) -> list[Block]:
    """The audit's section: one table of the pairwise rubrics, one of each other rubric's
    pass rate by response length."""
    if not audits:
        return []
    out: list[Block] = [Heading("Bias audit", 2), Paragraph(
        f"Shares with their {confidence:.0%} Wilson interval and count. Pairwise: position "
        "consistency is the share of pairs whose two orders named the same response; the "
        "first slot, of the inconsistent pairs where both orders named a response, the share "
        "that named the one shown first (50% is no preference for a place); a pair whose "
        "orders disagree is a tie. Pointwise: pass and fail verdicts by the length of the "
        "case's response, in five bins of equal count.")]
    pairwise = [a for a in audits if a.pairwise is not None]
    if pairwise:
        table = Table([Column("rubric"), Column("pairs", "count"), Column("consistent"),
                       Column("first slot"), Column("ties"), Column("agree (consistent)"),
                       Column("agree (all)"), Column("judge: longer"),
                       Column("labels: longer")], title="Pairwise: position and length")
        for a in pairwise:
            p = a.pairwise
            assert p is not None
            table.add(a.rubric, p.pairs, shown(p.consistency), shown(p.first_slot),
                      shown(p.ties), shown(p.agreement_consistent), shown(p.agreement_all),
                      shown(p.judge_longer), shown(p.labels_longer))
        unscored = sum(p.pairs - p.scored for a in pairwise if (p := a.pairwise))
        stale = sum(p.stale for a in pairwise if (p := a.pairwise))
        table.note = ("agree: the pair decided as its label (run A's `expected`: pass, A's "
                      "response is the better); judge: longer, of pairs decided for one "
                      "response of unequal lengths, the share decided for the longer; labels: "
                      f"longer, the same for the labels. Unscored pairs are left out "
                      f"({unscored:,}), and stale ones ({stale:,}, not in pairs), and so are "
                      "pairs with an `na` or no label from the agreement.")
        out.append(table)
    for a in audits:
        if a.length is not None and a.length.quintiles:
            out.append(length_table(a.rubric, a.length))
        elif a.length is not None:  # every verdict left out: said, never silently dropped
            out.append(Paragraph(f"{a.rubric}: no pass or fail verdict to bin by response "
                                 f"length ({left_out(a.length)})."))
    return out


def length_table(rubric: str, audit: LengthAudit) -> Table:
    """A pointwise rubric's pass rates by length quintile."""
    table = Table([Column("quintile", "count"), Column("response chars"),
                   Column("pass rate (judge)"), Column("pass rate (labels)"),
                   Column("agreement")],
                  title=f"{rubric}: by response length ({audit.verdicts:,} pass and fail "
                        f"verdicts; {left_out(audit)})")
    for q in audit.quintiles:
        table.add(q.bin, f"{q.chars_min:,}-{q.chars_max:,}", shown(q.pass_rate),
                  shown(q.label_pass_rate), shown(q.agreement))
    table.note = "A judge's pass rate that climbs with length while the labels' stays level " \
        "follows length, not the rubric."
    return table


def left_out(audit: LengthAudit) -> str:
    """What a length audit leaves out of the rubric's verdicts, said before its figures."""
    if not audit.left_out:
        return "none left out"
    parts = [(audit.na, "na"), (audit.unscored, "unscored"), (audit.stale, "stale"),
             (audit.not_in_cases, "of cases not in the cases file")]
    return "left out: " + ", ".join(f"{n:,} {what}" for n, what in parts if n)


def length_chart(rubric: str, audit: LengthAudit) -> str:
    """Per length quintile, the judge's pass rate and the labels' (dots, with their
    intervals as lines) on one 0-100% axis."""
    margin, top, width, right = 120, 44, 760, 20
    room = width - margin - right

    def x(share: float) -> float:
        return margin + share * room

    rows = audit.quintiles
    bottom = top + len(rows) * ROW_HEIGHT * 2
    title = f"{rubric}: pass rate by response length"
    body = [f'<g class="legend"><circle cx="{margin + 5}" cy="{top - 17}" r="4.5" '
            f'fill="{JUDGE_COLOR}"/><text x="{margin + 14}" y="{top - 13}">judge</text>'
            f'<circle cx="{margin + 80}" cy="{top - 17}" r="4.5" fill="{LABEL_COLOR}"/>'
            f'<text x="{margin + 89}" y="{top - 13}">labels</text></g>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<line class="axis" x1="{x(tick):.1f}" y1="{top}" x2="{x(tick):.1f}" '
                    f'y2="{bottom}" stroke-dasharray="3 3"/><text class="muted" '
                    f'x="{x(tick):.1f}" y="{bottom + 12}" text-anchor="middle" '
                    f'font-size="10">{tick:.0%}</text>')
    for i, q in enumerate(rows):
        y = top + i * ROW_HEIGHT * 2
        body.append(f'<text x="{margin - 8}" y="{y + ROW_HEIGHT}" text-anchor="end">'
                    f"{q.chars_min:,}-{q.chars_max:,}</text>")
        for j, (who, s, color) in enumerate((("judge", q.pass_rate, JUDGE_COLOR),
                                            ("labels", q.label_pass_rate, LABEL_COLOR))):
            if s.share is None or s.low is None or s.high is None:
                continue
            mid = y + ROW_HEIGHT * (0.6 + 0.8 * j)
            tip = (f"{who}, {q.chars_min:,}-{q.chars_max:,} characters: pass rate "
                   f"{shown(s)}")
            body.append(f'<g class="rate {who}"><title>{escape(tip)}</title>'
                        f'<line x1="{x(s.low):.1f}" y1="{mid:.1f}" x2="{x(s.high):.1f}" '
                        f'y2="{mid:.1f}" stroke="{color}" stroke-width="2"/>'
                        f'<circle cx="{x(s.share):.1f}" cy="{mid:.1f}" r="4.5" '
                        f'fill="{color}"/></g>')
    return (f'<svg class="chart chart-length" xmlns="http://www.w3.org/2000/svg" role="img" '
            f'aria-label="{escape(title)}" viewBox="0 0 {width} {bottom + 20}" '
            f'width="{width}" height="{bottom + 20}"><title>{escape(title)}</title>'
            f'<text x="0" y="14" font-weight="600">{escape(title)}</text>' + "".join(body)
            + "</svg>")
