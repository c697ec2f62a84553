"""The ``stats --html`` page: the charts first, then the same tables as the terminal.

One self-contained file (see ``evalstream.html``): cases per group, which fields they
carry, label distribution per rubric (stacked by status, split by source), coverage,
checks written and skipped, and length distributions (histograms and per-group box
summaries). A run report gets its own, shorter page in the same style.
"""

from __future__ import annotations

from evalstream._checks.report import RunReport
from evalstream._render.html import (
    PALETTE,
    Page,
    bar_chart,
    column_chart,
    range_chart,
    stacked_bar_chart,
)
from evalstream._render.stats import MAX_TABLE_GROUPS, group_name, report_blocks, stats_blocks
from evalstream._stats.stats import DatasetStats, Histogram

STATUS_COLORS = ("#3a9a5b", "#d1495b", "#a0a7b1")  # pass, fail, na
SKIP_COLORS = ("#4e79a7", "#edc948", "#f28e2b", "#b07aa1", "#9c755f", "#76b7b2", "#e15759")
CHART_GROUPS = 30  # groups drawn in a chart; the tables below list more


def page(result: DatasetStats | RunReport) -> str:
    """The HTML page of a stats result or a run report."""
    if isinstance(result, DatasetStats):
        return stats_page(result)
    return report_page(result)


def _bins(h: Histogram) -> tuple[list[str], list[int]]:
    """Bin labels ("[20, 50)": from 20, under 50) and counts, from the first to the last
    non-empty bin."""
    last = max((i for i, n in enumerate(h.counts) if n), default=-1)
    first = min((i for i, n in enumerate(h.counts) if n), default=0)
    labels = []
    for i in range(first, last + 1):
        lo = h.edges[i]
        hi = h.edges[i + 1] if i + 1 < len(h.edges) else None
        labels.append(f"≥ {_short(lo)}" if hi is None else f"[{_short(lo)}, {_short(hi)})")
    return labels, h.counts[first: last + 1]


def _short(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


def stats_page(s: DatasetStats) -> str:
    """The page of a dataset's stats."""
    o = s.overview
    by = ", ".join(s.by)
    p = Page(f"evalstream stats: {s.input}",
             f"{o.lines:,} lines · {len(s.rubrics.ids)} rubrics "
             f"({', '.join(s.rubrics.sources)}) · budget {s.budget:,} {s.tokenizer} tokens · "
             f"token figures are exact {s.tokenizer} counts")
    labels_total = sum(r.total.labels for r in s.labels)
    p.cards([(f"{o.cases:,}", "cases"), (f"{o.rejected:,}", "rejected lines"),
             (f"{o.groups:,}", f"groups by {by}"),
             (f"{s.total.checks:,}", "checks build would write"),
             (f"{s.total.over_budget:,}", "checks over budget"),
             (f"{s.total.judge_tokens:,}", f"tokens of their states and questions "
                                           f"(exact, {s.tokenizer})"),
             (f"{labels_total:,}", "expected labels")])
    for warning in s.warnings:
        p.paragraph(f"warning: {warning}")

    groups = s.groups[:CHART_GROUPS]
    names = [group_name(g.key) for g in groups]
    more = (f" (the {CHART_GROUPS} largest of {len(s.groups):,} groups)"
            if len(s.groups) > CHART_GROUPS else "")
    p.heading("Groups")
    if groups:
        p.figure(bar_chart(names, [g.cases for g in groups], title=f"Cases per {by}{more}"))
        fields = ("messages", "context", "policy", "tool_events")
        p.figure(stacked_bar_chart(
            names, ["with " + f.replace("_", " ") for f in fields],
            [[g.fields[f] for f in fields] for g in groups],
            title=f"Cases with each field, per {by}{more}",
            colors=PALETTE), "Each segment counts the cases of the group that have the field; "
                             "a case with several fields counts in several segments.")
        p.figure(range_chart(names, [(g.input_chars.median, g.input_chars.p95,
                                      g.input_chars.max) for g in groups],
                             title="Input length per group", unit="characters"))
        p.figure(range_chart(names, [(g.output_chars.median, g.output_chars.p95,
                                      g.output_chars.max) for g in groups],
                             title="Output length per group", unit="characters",
                             color=PALETTE[1]))
        if any(g.state_tokens.max is not None for g in groups):
            p.figure(range_chart(names, [(g.state_tokens.median, g.state_tokens.p95,
                                          g.state_tokens.max) for g in groups],
                                 title=(f"Largest judge state per case (tokens, exact, "
                                        f"{s.tokenizer}; budget {s.budget:,})"),
                                 unit="tokens", color=PALETTE[2]))

    p.heading("Length distributions")
    for column, title, unit, color in (
            ("input_chars", "Input length", "characters", PALETTE[0]),
            ("output_chars", "Output length", "characters", PALETTE[1]),
            ("state_tokens", "Largest judge state per case", f"tokens, exact, {s.tokenizer}",
             PALETTE[2])):
        labels, counts = _bins(s.histograms[column])
        if counts:
            p.figure(column_chart(labels, counts, title=f"{title} ({unit})", x_label=unit,
                                  y_label="cases", color=color))

    p.heading("Expected labels")
    labelled = [r for r in s.labels if r.total.labels]
    if labelled:
        rows, row_groups, values = [], [], []
        for r in labelled:
            for source, statuses in r.total.source.items():
                if any(statuses.values()):
                    rows.append(source)
                    row_groups.append(r.rubric if r.in_rubrics else f"{r.rubric} (not a rubric)")
                    values.append(list(statuses.values()))
        # The series are the counts' own keys (stats' label statuses), in their order.
        p.figure(stacked_bar_chart(rows, list(labelled[0].total.status), values,
                                   title="Labels per rubric, by source and status",
                                   colors=STATUS_COLORS, groups=row_groups))
        applicable = [r for r in s.labels if r.in_rubrics and r.total.applies]
        if applicable:
            p.figure(stacked_bar_chart(
                [r.rubric for r in applicable], ["labelled", "not labelled"],
                [[r.total.labelled, r.total.applies - r.total.labelled] for r in applicable],
                title="Coverage: cases where the rubric applies, labelled or not",
                colors=(STATUS_COLORS[0], "#d0d7de")))
    else:
        p.paragraph("No case has expected labels.")

    p.heading("Checks")
    if s.checks:
        reasons = sorted({k for c in s.checks for k in c.skipped})
        p.figure(stacked_bar_chart(
            [c.rubric for c in s.checks], ["written", *(f"skipped: {r}" for r in reasons)],
            [[c.checks, *(c.skipped.get(r, 0) for r in reasons)] for c in s.checks],
            title="What build would do with each rubric", colors=SKIP_COLORS))

    p.heading("Tables")
    p.paragraph(f"The tables list at most {MAX_TABLE_GROUPS} groups; --format json lists all.",
                note=True)
    p.blocks(stats_blocks(s)[1:], shift=1)  # under "Tables"; the page has its own title
    return p.html()


def report_page(r: RunReport) -> str:
    """The page of a build or validate run report."""
    c = r.counts
    p = Page(f"evalstream {r.command} report: {r.input}",
             f"evalstream {r.evalstream} · {r.seconds:,} s · exit code {r.exit_code}")
    cards = [(f"{c.lines:,}", "lines"), (f"{c.cases:,}", "cases"),
             (f"{c.rejected:,}", "rejected"), (f"{c.blank:,}", "blank")]
    if r.rubrics is not None:
        cards += [(f"{c.checks:,}", "checks written"), (f"{c.skipped:,}", "checks skipped")]
    p.cards(cards)
    if r.rubrics is not None and r.rubrics.ids:
        reasons = sorted({k for v in r.skipped.values() for k in v})
        p.heading("Checks")
        p.figure(stacked_bar_chart(
            r.rubrics.ids, ["written", *(f"skipped: {k}" for k in reasons)],
            [[r.checks_by_rubric.get(rid, 0), *(r.skipped.get(rid, {}).get(k, 0)
                                                for k in reasons)] for rid in r.rubrics.ids],
            title="Checks written and skipped per rubric", colors=SKIP_COLORS))
    if r.rejected_by_kind:
        kinds = list(r.rejected_by_kind)
        p.heading("Rejected lines")
        p.figure(bar_chart(kinds, [r.rejected_by_kind[k] for k in kinds],
                           title="Rejected lines by kind", color=STATUS_COLORS[1]))
    p.heading("Tables")
    p.blocks(report_blocks(r)[1:], shift=1)
    return p.html()
