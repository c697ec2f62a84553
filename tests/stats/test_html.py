"""Pages and charts: self-contained, escaped, and one mark per value."""

from __future__ import annotations

import re

from evalstream._render.html import Page, bar_chart, column_chart, range_chart, stacked_bar_chart
from evalstream._render.tables import Column, Table

HOSTILE = '<script>alert("x")</script>&"'


def test_bar_chart_draws_one_bar_per_label_to_scale() -> None:
    svg = bar_chart(["a", "b", HOSTILE], [10, 5, 0], title="T")
    widths = [float(w) for w in re.findall(r'class="bar"[^>]*width="([\d.]+)"', svg)]
    assert len(widths) == 3
    assert widths[1] == widths[0] / 2 and widths[2] == 0
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_stacked_chart_segments_and_legend() -> None:
    svg = stacked_bar_chart(["r1", "r2"], ["pass", "fail", "na"], [[3, 1, 0], [0, 2, 2]],
                            title="Labels", groups=["g", "g"])
    assert svg.count('class="segment"') == 4  # zero-width segments are not drawn
    assert svg.count('class="legend"') == 3
    assert "r1: pass 3 (75%)" in svg
    # Long legends wrap instead of running off the chart.
    wide = stacked_bar_chart(["r"], [f"skipped: reason number {i}" for i in range(8)],
                             [[1] * 8], title="T")
    xs = [float(x) for x in re.findall(r'<g class="legend"><rect x="([\d.]+)"', wide)]
    assert max(xs) < 760 and len(set(re.findall(r'<g class="legend"><rect x="[\d.]+" y="(\d+)"',
                                                 wide))) > 1


def test_column_and_range_charts() -> None:
    svg = column_chart(["[0, 10)", "[10, 20)"], [4, 2], title="H", x_label="chars")
    assert svg.count('class="column"') == 2
    svg = range_chart(["a", "b"], [(10, 50, 90), (None, None, None)], title="R", unit="chars")
    assert svg.count('class="range"') == 2  # the group and its line, for the one known row
    assert "a: median 10, p95 50, max 90 chars" in svg


def test_page_is_self_contained_and_escaped() -> None:
    page = Page(HOSTILE, subtitle=HOSTILE)
    page.heading("Section")
    page.paragraph(HOSTILE)
    page.cards([("1", HOSTILE)])
    t = Table([Column("group"), Column("n", "count")], title=HOSTILE)
    t.add(HOSTILE, 1234)
    page.table(t)
    page.figure(bar_chart([HOSTILE], [1], title=HOSTILE), HOSTILE)
    html = page.html()
    assert "<script" not in html.lower()
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing to fetch
    assert '<td class="num">1,234</td>' in html
