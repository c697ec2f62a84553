"""Self-contained HTML pages with inline SVG charts.

A page is one file that works offline: styles are inlined, charts are SVG drawn here, and
there is no script at all. A Content-Security-Policy forbids loading anything, so a page
can neither fetch from a CDN nor run code that a dataset smuggled into a label. Every
text that reaches the page (group names, rubric ids, metadata values) is escaped.

Charts: ``bar_chart`` (one value per label), ``stacked_bar_chart`` (parts of a whole per
label, with a legend), ``column_chart`` (a histogram over labelled bins) and
``range_chart`` (median, p95 and max per label, a box summary). Each mark is an SVG
element with a class (``bar``, ``segment``, ``column``, ``range``) and a ``<title>``
tooltip that states its value, so the figures can be read, not only seen.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Callable, Sequence
from html import escape

from evalstream._render.names import cut_names
from evalstream._render.tables import Block, Column, Heading, Link, Paragraph, Table

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac")
CHART_WIDTH = 760
ROW_HEIGHT = 22
FONT = 12
CHAR_WIDTH = 7  # average width of a 12px sans-serif character, for layout
MAX_LABEL_CHARS = 32

_CSS = """
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--ink); background: #fff; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 8px; padding-bottom: 4px;
     border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 22px 0 6px; }
p { margin: 6px 0; }
.subtitle, .note, figcaption { color: var(--muted); }
.note { font-size: 12.5px; }
nav { margin: 8px 0 4px; font-size: 13px; }
nav a { color: #0969da; margin-right: 14px; text-decoration: none; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 13px; }
caption { text-align: left; font-style: italic; color: var(--muted); padding-bottom: 4px; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { text-align: left; font-weight: 600; border-bottom: 2px solid var(--line); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.scroll { overflow-x: auto; }
figure { margin: 14px 0 18px; }
svg.chart { display: block; width: 100%; max-width: 760px; height: auto; }
svg.chart text { font: 12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
                 fill: var(--ink); }
svg.chart .muted { fill: var(--muted); }
svg.chart .axis { stroke: var(--line); }
svg.chart rect:hover, svg.chart line.range:hover { opacity: .8; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 20px; font-variant-numeric: tabular-nums; }
.card span { color: var(--muted); font-size: 12.5px; }
"""
BASE_CSS = _CSS  # every page's styles; ``Page(css=...)`` adds to them
# Nothing may be loaded or run: styles and SVG are inline, there is no script.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def strict_csp(css: str) -> str:
    """A policy that allows the one style element with this CSS (by its SHA-256) and
    nothing else: no script, no style attribute, no image, no frame, no plugin, no fetch;
    forms may only go back to the page's own origin, and no <base> may move the links."""
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    return (f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; "
            "form-action 'self'")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "section"


class Page:
    """One HTML page built from blocks, figures and summary cards, in order.

    ``css`` is added to the page's styles; ``strict`` replaces the policy by ``strict_csp``
    (then no part may use a ``style`` attribute); ``top`` is HTML put above the title (a
    navigation bar), built and escaped by the caller like every ``fragment``.
    """

    def __init__(self, title: str, subtitle: str | None = None, *, css: str = "",
                 strict: bool = False, top: str = "") -> None:
        self.title = title
        self.subtitle = subtitle
        self.css = _CSS + css
        self.csp = strict_csp(self.css) if strict else _CSP
        self.top = top
        self._parts: list[str] = []
        self._sections: list[tuple[str, str]] = []  # (anchor, heading) of each h2

    def heading(self, text: str, level: int = 2) -> None:
        """A heading; level-2 headings are listed in the page's navigation."""
        anchor = ""
        if level == 2:
            slug = _slug(text)
            anchor = f' id="{slug}"'
            self._sections.append((slug, text))
        self._parts.append(f"<h{level}{anchor}>{escape(text)}</h{level}>")

    def fragment(self, html: str) -> None:
        """HTML built by the caller, who has escaped every text from data in it."""
        self._parts.append(html)

    def paragraph(self, text: str, note: bool = False) -> None:
        """A paragraph of plain text (``note``: smaller, muted)."""
        cls = ' class="note"' if note else ""
        self._parts.append(f"<p{cls}>{escape(text)}</p>")

    def cards(self, items: Sequence[tuple[str, str]]) -> None:
        """A row of headline figures: (value, label) pairs."""
        cards = "".join(f'<div class="card"><b>{escape(v)}</b><span>{escape(k)}</span></div>'
                        for v, k in items)
        self._parts.append(f'<div class="cards">{cards}</div>')

    def table(self, table: Table) -> None:
        """A table of the neutral model, formatted as its columns say."""
        head = "".join(f'<th{_num(c)}>{escape(c.name)}</th>' for c in table.columns)
        body = "".join(
            "<tr>" + "".join(f"<td{_num(c)}>{_cell(v, raw)}</td>"
                             for c, v, raw in zip(table.columns, row, cells, strict=True))
            + "</tr>"
            for row, cells in zip(table.formatted(), table.rows, strict=True))
        caption = f"<caption>{escape(table.title)}</caption>" if table.title else ""
        self._parts.append(f'<div class="scroll"><table>{caption}<thead><tr>{head}</tr></thead>'
                           f"<tbody>{body}</tbody></table></div>")
        if table.note:
            self.paragraph(table.note, note=True)

    def blocks(self, blocks: Sequence[Block], shift: int = 0) -> None:
        """Headings, paragraphs and tables of the neutral model (headings ``shift`` levels
        deeper, e.g. to nest a report's sections under one of the page's)."""
        for block in blocks:
            if isinstance(block, Heading):
                self.heading(block.text, min(block.level + shift, 6))
            elif isinstance(block, Paragraph):
                self.paragraph(block.text)
            else:
                self.table(block)

    def figure(self, svg: str, caption: str | None = None) -> None:
        """A chart (an SVG string from this module) with an optional caption."""
        cap = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
        self._parts.append(f"<figure>{svg}{cap}</figure>")

    def html(self) -> str:
        """The whole page as one HTML document."""
        nav = ""
        if len(self._sections) > 1:
            nav = "<nav>" + "".join(f'<a href="#{a}">{escape(t)}</a>'
                                    for a, t in self._sections) + "</nav>"
        subtitle = f'<p class="subtitle">{escape(self.subtitle)}</p>' if self.subtitle else ""
        return (
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{self.csp}">'
            '<meta name="referrer" content="no-referrer">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(self.title)}</title><style>{self.css}</style></head>\n<body>"
            f"{self.top}<main><h1>{escape(self.title)}</h1>{subtitle}{nav}\n"
            + "\n".join(self._parts) + "\n</main></body></html>\n")


def _num(column: Column) -> str:
    return ' class="num"' if column.numeric else ""


def _cell(text: str, value: object) -> str:
    """A cell's text, as a link when its value is a ``Link`` with a target."""
    if isinstance(value, Link) and value.href:
        return f'<a href="{escape(value.href)}">{escape(text)}</a>'
    return escape(text)


# -- charts --------------------------------------------------------------------------------------
def _labels(texts: Sequence[str]) -> dict[str, str]:
    """Labels short enough for the chart's margin, never two alike (``render.names``: cut at
    the end, numbered when cuts would read alike); the tooltips keep the full text."""
    return cut_names(texts, MAX_LABEL_CHARS)


def _margin(labels: Sequence[str]) -> int:
    longest = max((len(shown) for shown in _labels(labels).values()), default=4)
    return min(MAX_LABEL_CHARS, longest) * CHAR_WIDTH + 16


def _svg(kind: str, title: str, height: int, body: list[str]) -> str:
    return (f'<svg class="chart chart-{kind}" xmlns="http://www.w3.org/2000/svg" role="img" '
            f'aria-label="{escape(title)}" viewBox="0 0 {CHART_WIDTH} {height}" '
            f'width="{CHART_WIDTH}" height="{height}"><title>{escape(title)}</title>'
            f'<text x="0" y="14" font-weight="600">{escape(title)}</text>' + "".join(body) +
            "</svg>")


def _plain(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def bar_chart(labels: Sequence[str], values: Sequence[float], *, title: str,
              color: str = PALETTE[0], fmt: Callable[[float], str] = _plain) -> str:
    """Horizontal bars, one per label, longest scale at the largest value."""
    margin = _margin(labels)
    names = _labels(labels)
    top = 26
    room = CHART_WIDTH - margin - 70
    peak = max(values, default=0) or 1
    body = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = top + i * ROW_HEIGHT
        w = max(0.0, value / peak * room)
        shown = escape(fmt(value))
        body.append(
            f'<text x="{margin - 8}" y="{y + 15}" text-anchor="end">{escape(names[label])}</text>'
            f'<rect class="bar" x="{margin}" y="{y + 3}" width="{w:.1f}" height="{ROW_HEIGHT - 6}" '
            f'fill="{color}"><title>{escape(label)}: {shown}</title></rect>'
            f'<text class="muted" x="{margin + w + 6:.1f}" y="{y + 15}">{shown}</text>')
    height = top + len(labels) * ROW_HEIGHT + 8
    return _svg("bar", title, height, body)


def stacked_bar_chart(labels: Sequence[str], segments: Sequence[str],
                      values: Sequence[Sequence[float]], *, title: str,
                      colors: Sequence[str] = PALETTE, groups: Sequence[str] | None = None,
                      normalize: bool = False) -> str:
    """Horizontal bars split into coloured segments (``values[row][segment]``), with a legend.

    ``groups`` (one name per row) draws a group heading above each run of rows that share
    one; ``normalize`` draws every bar at full width (shares instead of counts).
    """
    margin = _margin(labels)
    names = _labels(labels)
    group_names = _labels(groups or [])
    legend_y = 34
    body = []
    x = margin
    for k, name in enumerate(segments):
        color = colors[k % len(colors)]
        width = 15 + len(name) * CHAR_WIDTH + 18
        if x + width > CHART_WIDTH and x > margin:  # wrap the legend onto another line
            x = margin
            legend_y += 18
        body.append(f'<g class="legend"><rect x="{x}" y="{legend_y - 10}" width="11" height="11" '
                    f'fill="{color}"/><text x="{x + 15}" y="{legend_y}">{escape(name)}</text></g>')
        x += width
    room = CHART_WIDTH - margin - 70
    totals = [sum(row) for row in values]
    peak = max(totals, default=0) or 1
    y = legend_y + 10
    previous_group: str | None = None
    for i, (label, row) in enumerate(zip(labels, values, strict=True)):
        group = groups[i] if groups is not None else None
        if group is not None and group != previous_group:
            body.append(f'<text x="0" y="{y + 16}" font-weight="600">{escape(group_names[group])}'
                        "</text>")
            y += ROW_HEIGHT
            previous_group = group
        total = totals[i]
        scale = (room / total if total else 0) if normalize else room / peak
        body.append(f'<text x="{margin - 8}" y="{y + 15}" text-anchor="end">'
                    f"{escape(names[label])}</text>")
        x0 = float(margin)
        for k, (name, value) in enumerate(zip(segments, row, strict=True)):
            if value <= 0:
                continue
            w = value * scale
            share = f" ({value / total:.0%})" if total else ""
            body.append(
                f'<rect class="segment" x="{x0:.1f}" y="{y + 3}" width="{w:.1f}" '
                f'height="{ROW_HEIGHT - 6}" fill="{colors[k % len(colors)]}"><title>'
                f"{escape(label)}: {escape(name)} {_plain(value)}{share}</title></rect>")
            x0 += w
        body.append(f'<text class="muted" x="{x0 + 6:.1f}" y="{y + 15}">{_plain(total)}</text>')
        y += ROW_HEIGHT
    return _svg("stacked", title, y + 8, body)


def column_chart(labels: Sequence[str], values: Sequence[float], *, title: str,
                 x_label: str = "", y_label: str = "", color: str = PALETTE[0]) -> str:
    """Vertical columns over labelled bins: a histogram when the labels are ranges."""
    top, bottom, left = 30, 46, 50
    plot_h = 170
    n = max(len(labels), 1)
    room = CHART_WIDTH - left - 10
    step = room / n
    peak = max(values, default=0) or 1
    body = [f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{CHART_WIDTH - 10}" '
            f'y2="{top + plot_h}"/>',
            f'<text class="muted" x="{left - 6}" y="{top + 10}" text-anchor="end">'
            f"{_plain(peak)}</text>",
            f'<text class="muted" x="{left - 6}" y="{top + plot_h}" text-anchor="end">0</text>',
            f'<text class="muted" x="{left - 6}" y="{top + 26}" text-anchor="end">'
            f"{escape(y_label)}</text>"]
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = value / peak * plot_h
        x = left + i * step
        body.append(
            f'<rect class="column" x="{x + 2:.1f}" y="{top + plot_h - h:.1f}" '
            f'width="{max(step - 4, 1):.1f}" height="{h:.1f}" fill="{color}"><title>'
            f"{escape(label)}: {_plain(value)}</title></rect>"
            f'<text class="muted" x="{x + step / 2:.1f}" y="{top + plot_h + 14}" '
            f'text-anchor="middle" font-size="10">{escape(label)}</text>')
    if x_label:
        body.append(f'<text class="muted" x="{left + room / 2:.1f}" y="{top + plot_h + 36}" '
                    f'text-anchor="middle">{escape(x_label)}</text>')
    return _svg("column", title, top + plot_h + bottom, body)


def _log_ticks(lo: float, hi: float) -> list[int]:
    """Powers of ten and their 2x and 5x multiples between lo and hi, at most ~8."""
    ticks = []
    decade = 1
    while decade <= hi:
        for m in (1, 2, 5):
            if lo <= decade * m <= hi:
                ticks.append(decade * m)
        decade *= 10
    return ticks if len(ticks) <= 8 else [t for t in ticks if str(t)[0] == "1"]


def range_chart(labels: Sequence[str], rows: Sequence[tuple[float | None, float | None,
                                                           float | None]],
                *, title: str, unit: str = "", color: str = PALETTE[0]) -> str:
    """A box summary per label on a log scale: a line from the smallest median to the max, a
    box from the median to the 95th percentile, a dot at the median and a tick at the max.
    ``rows`` are (median, p95, max); a row with None draws nothing."""
    margin = _margin(labels)
    names = _labels(labels)
    top = 44
    room = CHART_WIDTH - margin - 70
    known = [r for r in rows if None not in r]
    peak = max((float(r[2] or 0) for r in known), default=1.0)
    floor = min((float(r[0] or 0) for r in known), default=1.0)
    # The axis starts at the decade below the smallest median (values below it sit at 0).
    lo = 10 ** math.floor(math.log10(floor)) if floor >= 1 else 1
    hi = max(peak, lo * 10)
    span = math.log10(hi) - math.log10(lo)

    def x(value: float) -> float:
        return margin + max(0.0, math.log10(max(value, lo)) - math.log10(lo)) / span * room

    body = [f'<g class="legend"><circle cx="{margin + 5}" cy="{top - 14}" r="4" fill="{color}"/>'
            f'<text x="{margin + 14}" y="{top - 10}">median</text>'
            f'<rect x="{margin + 80}" y="{top - 19}" width="18" height="10" fill="{color}" '
            f'opacity=".35"/><text x="{margin + 104}" y="{top - 10}">median to p95</text>'
            f'<line x1="{margin + 210}" y1="{top - 14}" x2="{margin + 232}" y2="{top - 14}" '
            f'stroke="{color}"/><text x="{margin + 238}" y="{top - 10}">to max (log scale'
            f"{', ' + escape(unit) if unit else ''})</text></g>"]
    bottom = top + len(labels) * ROW_HEIGHT
    for tick in _log_ticks(lo, hi):
        body.append(f'<line class="axis" x1="{x(tick):.1f}" y1="{top}" x2="{x(tick):.1f}" '
                    f'y2="{bottom}"/><text class="muted" x="{x(tick):.1f}" y="{bottom + 14}" '
                    f'text-anchor="middle" font-size="10">{_plain(tick)}</text>')
    for i, (label, (median, p95, most)) in enumerate(zip(labels, rows, strict=True)):
        y = top + i * ROW_HEIGHT
        mid = y + ROW_HEIGHT / 2
        body.append(f'<text x="{margin - 8}" y="{y + 15}" text-anchor="end">'
                    f"{escape(names[label])}</text>")
        if median is None or p95 is None or most is None:
            body.append(f'<text class="muted" x="{margin}" y="{y + 15}">-</text>')
            continue
        tip = (f"{escape(label)}: median {_plain(median)}, p95 {_plain(p95)}, "
               f"max {_plain(most)}{' ' + escape(unit) if unit else ''}")
        body.append(
            f'<g class="range"><title>{tip}</title>'
            f'<line class="range" x1="{x(median):.1f}" y1="{mid}" x2="{x(most):.1f}" y2="{mid}" '
            f'stroke="{color}"/>'
            f'<rect x="{x(median):.1f}" y="{y + 5}" width="{max(x(p95) - x(median), 1):.1f}" '
            f'height="{ROW_HEIGHT - 10}" fill="{color}" opacity=".35"/>'
            f'<circle cx="{x(median):.1f}" cy="{mid}" r="4" fill="{color}"/>'
            f'<line x1="{x(most):.1f}" y1="{y + 5}" x2="{x(most):.1f}" y2="{y + ROW_HEIGHT - 5}" '
            f'stroke="{color}"/></g>'
            f'<text class="muted" x="{x(most) + 6:.1f}" y="{y + 15}">{_plain(most)}</text>')
    return _svg("range", title, bottom + 22, body)
