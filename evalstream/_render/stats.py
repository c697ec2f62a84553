"""The text views of ``stats``: blocks built from a ``DatasetStats`` or a build's
``RunReport``; printed with rich, written as markdown, or laid out in the HTML page."""

from __future__ import annotations

from collections.abc import Collection

from evalstream._checks.report import RunReport
from evalstream._render.names import cut_names, key_note
from evalstream._render.tables import Block, Column, Heading, Paragraph, Table
from evalstream._stats.stats import DatasetStats, GroupStats

MAX_TABLE_GROUPS = 50  # rows of group tables in the terminal and markdown; JSON has all
GROUP_WIDTH = 24  # a group name longer than this is cut, with the full name in a key
# The sections of the tables, in order. The terminal shows SUMMARY (one screen: the
# largest groups, labels per rubric, the first warnings); --full or --section the rest.
SECTIONS = ("overview", "groups", "sizes", "labels", "coverage", "checks", "metadata")
SUMMARY = ("groups", "labels", "checks")
SUMMARY_GROUPS = 10
SUMMARY_WARNINGS = 5


# -- the tables -----------------------------------------------------------------------------------
def blocks(result: DatasetStats | RunReport,
           sections: Collection[str] | None = None) -> list[Block]:
    """The headings, paragraphs and tables of a stats result or a run report; for a stats
    result, only ``sections`` (names of SECTIONS; None: all, ``()``: the one-screen
    summary)."""

    if isinstance(result, DatasetStats):
        return stats_blocks(result, sections)
    return report_blocks(result)


def group_name(key: dict[str, str]) -> str:
    """A group's label: its values joined with " / ", or "(all)" for the total."""
    return " / ".join(key.values()) if key else "(all)"


def _shown_groups(groups: list[GroupStats],
                 limit: int = MAX_TABLE_GROUPS) -> tuple[list[GroupStats], str | None]:
    if len(groups) <= limit:
        return groups, None
    rest = len(groups) - limit
    return groups[:limit], (f"{rest:,} smaller groups are not shown; "
                            + ("--full shows up to 50, " if limit < MAX_TABLE_GROUPS else "")
                            + "--format json lists every group.")


def stats_blocks(s: DatasetStats, sections: Collection[str] | None = None) -> list[Block]:
    """The tables of a dataset's stats, in the order of SECTIONS: all of them (None), those
    named, or (an empty collection) the one-screen summary, which ends with what it left
    out."""
    summary = sections is not None and not sections
    chosen = set(SECTIONS if sections is None else SUMMARY if summary else sections)
    out = _title_blocks(s)
    warnings = s.warnings[:SUMMARY_WARNINGS] if summary else s.warnings
    if warnings:  # first, where they are read
        out.append(Heading("Warnings"))
        out.extend(Paragraph(f"warning: {w}") for w in warnings)
        if len(s.warnings) > len(warnings):
            more = len(s.warnings) - len(warnings)
            out.append(Paragraph(f"{more:,} more warning{'s' if more > 1 else ''}: --full "
                                 "shows them."))
    if "overview" in chosen:
        out += _overview_blocks(s)
    elif s.overview.rejected:
        out.append(_rejected_table(s))
    if "groups" in chosen or "sizes" in chosen:
        out += _group_blocks(s, "groups" in chosen, "sizes" in chosen,
                             SUMMARY_GROUPS if summary else MAX_TABLE_GROUPS)
    if "labels" in chosen or "coverage" in chosen:
        out += _label_blocks(s, "labels" in chosen, "coverage" in chosen, compact=summary)
    if "checks" in chosen:
        out += _check_blocks(s, compact=summary)
    if "metadata" in chosen:
        out += _metadata_blocks(s)
    if summary:
        left = [name for name in SECTIONS if name not in chosen]
        out.append(Paragraph(f"Not shown: {', '.join(left)}. --full shows every section, "
                             "--section NAME those named (also --format markdown or json: "
                             "complete)."))
    return out


def _title_blocks(s: DatasetStats) -> list[Block]:
    """The title and the summary line."""
    o = s.overview
    return [Heading(f"evalstream stats: {s.input}", 1), Paragraph(
        f"{o.lines:,} lines = {o.cases:,} cases + {o.rejected:,} rejected + {o.blank:,} blank; "
        f"{o.bytes:,} bytes. Rubrics: {len(s.rubrics.ids)} "
        f"({', '.join(s.rubrics.sources)}); budget {s.budget:,} {s.tokenizer} tokens. Token "
        f"figures are exact {s.tokenizer} counts.")]


def _overview_blocks(s: DatasetStats) -> list[Block]:
    """The overview table (and rejected lines by kind)."""
    o = s.overview
    by = ", ".join(s.by)
    out: list[Block] = [Heading("Overview")]
    t = Table([Column("figure"), Column("value", "count")])
    for name, value in (("lines", o.lines), ("cases", o.cases), ("rejected", o.rejected),
                        ("blank lines", o.blank), ("bytes", o.bytes),
                        (f"groups (by {by})", o.groups)):
        t.add(name, value)
    for key, counts in o.by.items():
        t.add(f"distinct values of {key}", counts.distinct)
        t.add(f"cases without {key}", counts.missing)
    out.append(t)
    if o.rejected:
        out.append(_rejected_table(s))
    return out


def _rejected_table(s: DatasetStats) -> Table:
    kinds = Table([Column("rejected because"), Column("lines", "count")])
    for kind, n in s.overview.rejected_by_kind.items():
        kinds.add(kind, n)
    kinds.note = ("Rejected lines are counted only; give --rejects FILE (or run "
                  "`evalstream validate`) to see each one.")
    return kinds


def _group_names(groups: list[GroupStats]) -> dict[str, str]:
    """What each group is called in the tables (``render.names``: long names cut, never
    two alike)."""
    return cut_names([group_name(g.key) for g in groups], GROUP_WIDTH)


def _with_key(note: str | None, names: dict[str, str]) -> str | None:
    key = key_note(names)
    return " ".join(part for part in (note, key) if part) or None


def _group_blocks(s: DatasetStats, fields: bool = True, sizes: bool = True,
                  limit: int = MAX_TABLE_GROUPS) -> list[Block]:
    """The group tables: fields carried (``fields``), sizes and the largest states and
    checks (``sizes``), for the ``limit`` largest groups and the total."""
    by = ", ".join(s.by)
    out: list[Block] = []
    groups, more = _shown_groups(s.groups, limit)
    rows = [*groups, s.total]
    names = _group_names(rows)
    out.append(Heading(f"Groups by {by}"))
    if fields:
        t = Table([Column("group"), Column("cases", "count"), Column("messages", "share"),
                   Column("context", "share"), Column("policy", "share"),
                   Column("tool events", "share"), Column("events", "count"),
                   Column("failed", "share")],
                  title="Cases, the share that carry each field, and their tool events",
                  note=_with_key(more, names))
        for g in rows:
            t.add(names[group_name(g.key)], g.cases,
                  *(_share(g.fields[f], g.cases)
                    for f in ("messages", "context", "policy", "tool_events")),
                  g.tool_events, g.tool_failure_rate)
        out.append(t)
    if not sizes:
        return out
    t = Table([Column("group"), Column("msgs/case", "number"), Column("max msgs", "count"),
               Column("input p50", "number"), Column("input p95", "number"),
               Column("input max", "count"), Column("output p50", "number"),
               Column("output p95", "number"), Column("output max", "count")],
              title="Messages per case; input and output length (characters)",
              note=_with_key(more, names))
    for g in rows:
        t.add(names[group_name(g.key)], g.messages.mean, g.messages.max, g.input_chars.median,
              g.input_chars.p95, g.input_chars.max, g.output_chars.median, g.output_chars.p95,
              g.output_chars.max)
    out.append(t)
    t = Table([Column("group"), Column("line bytes p50", "number"),
               Column("line bytes max", "count"), Column("state p50", "number"),
               Column("state p95", "number"), Column("state max", "count"),
               Column("checks", "count"), Column("judge tokens", "count"),
               Column("over budget", "count")],
              title=(f"Line size (bytes); largest judge state per case (tokens, exact, "
                     f"{s.tokenizer}; budget {s.budget:,})"),
              note=_with_key(
                  "State: the exact token count of each case's largest judge state (its "
                  "JSON). Checks: those build would write; judge tokens: the input tokens of "
                  "their judge requests, exact: state, question (preamble included) and "
                  "answer instruction, and the request's framing, as judge --dry-run counts "
                  "them.", names))
    for g in rows:
        t.add(names[group_name(g.key)], g.line_bytes.median, g.line_bytes.max,
              g.state_tokens.median, g.state_tokens.p95, g.state_tokens.max, g.checks,
              g.judge_tokens, g.over_budget)
    out.append(t)
    return out


def _label_blocks(s: DatasetStats, labels: bool = True, coverage: bool = True,
                  compact: bool = False) -> list[Block]:
    """The expected labels: by status and source (``labels``; ``compact``: one row a
    rubric, with its coverage), coverage and per group (``coverage``)."""
    by = ", ".join(s.by)
    out: list[Block] = []
    out.append(Heading("Expected labels"))
    if not s.labels or not any(r.total.labels for r in s.labels):
        out.append(Paragraph("No case has expected labels."))
        return out
    if labels and compact:
        # One screen: the rubrics no case labels are named in the note, not given a row of
        # zeros each (a built-in set of nine left no room for the checks below).
        unlabelled = [r.rubric for r in s.labels if r.total.applies and not r.total.labels]
        t = Table([Column("rubric"), Column("labels", "count"), Column("pass", "count"),
                   Column("fail", "count"), Column("na", "count"), Column("applies", "count"),
                   Column("coverage", "share")],
                  note="Coverage: labelled cases among those where the rubric applies."
                       + (f" No labels for {', '.join(unlabelled)}." if unlabelled else ""))
        for r in s.labels:
            if r.total.labels:
                t.add(r.rubric if r.in_rubrics else f"{r.rubric} *", r.total.labels,
                      *r.total.status.values(), r.total.applies, r.total.coverage)
        out.append(t)
    elif labels:
        t = Table([Column("rubric"), Column("source"), Column("labels", "count"),
                   Column("pass", "count"), Column("fail", "count"), Column("na", "count")],
                  title="By status and source")
        for r in s.labels:
            if not r.total.labels:
                continue
            t.add(r.rubric, "all", r.total.labels, *r.total.status.values())
            for source, statuses in r.total.source.items():
                if any(statuses.values()):
                    t.add("", source, sum(statuses.values()), *statuses.values())
        out.append(t)
    if not coverage:
        return out
    t = Table([Column("rubric"), Column("applies", "count"), Column("labelled", "count"),
               Column("coverage", "share"), Column("labels where it does not apply", "count")],
              title="Coverage: labelled cases among the cases where the rubric applies",
              note=("A label on a case where its rubric does not apply (or for a rubric "
                    "not in the rubric set, marked *) can never be compared with a judge."))
    for r in s.labels:
        t.add(r.rubric if r.in_rubrics else f"{r.rubric} *", r.total.applies,
              r.total.labelled, r.total.coverage, r.total.not_applicable)
    out.append(t)
    shown = [gl for r in s.labels for gl in r.groups[:MAX_TABLE_GROUPS]]
    names = cut_names([group_name(gl.key) for gl in shown], GROUP_WIDTH)
    t = Table([Column("rubric"), Column("group"), Column("labels", "count"),
               Column("pass", "count"), Column("fail", "count"), Column("na", "count"),
               Column("applies", "count"), Column("coverage", "share"),
               Column("not applicable", "count")],
              title=f"Per group (by {by})", note=key_note(names))
    for r in s.labels:
        for gl in r.groups[:MAX_TABLE_GROUPS]:
            lc = gl.counts
            t.add(r.rubric, names[group_name(gl.key)], lc.labels, *lc.status.values(),
                  lc.applies, lc.coverage, lc.not_applicable)
    out.append(t)
    return out


def _check_blocks(s: DatasetStats, compact: bool = False) -> list[Block]:
    """The checks build would write and skip, per rubric (``compact``: the one screen's
    note, one line: the nine built-in rubrics left no room for two; its first line names the
    tokenizer and says the counts are exact)."""
    out: list[Block] = []
    out.append(Heading("Checks build would write"))
    note = ("Question tokens: the preamble, question and answer instruction." if compact else
            f"Question tokens: exact {s.tokenizer} counts of what the judge is sent besides "
            "the state: the preamble, the question and the answer instruction.")
    t = Table([Column("rubric"), Column("kind"), Column("applies", "count"),
               Column("written", "count"), Column("question tokens", "count"),
               Column("skipped (reason: count)")], note=note)
    for rc in s.checks:
        t.add(rc.rubric, rc.kind, rc.applies, rc.checks, rc.question_tokens,
              ", ".join(f"{k}: {v:,}" for k, v in rc.skipped.items()) or "-")
    t.add("(all)", "", sum(c.applies for c in s.checks), sum(c.checks for c in s.checks), None,
          f"{sum(sum(c.skipped.values()) for c in s.checks):,}")
    out.append(t)
    return out


def _metadata_blocks(s: DatasetStats) -> list[Block]:
    """The metadata keys, with their distinct and top values."""
    out: list[Block] = []
    m = s.metadata
    out.append(Heading("Metadata keys"))
    if not m.keys:
        out.append(Paragraph("No case has metadata."))
    else:
        t = Table([Column("key"), Column("cases", "count"), Column("distinct", "number"),
                   Column("top values (cases)")],
                  note=(f"{m.cases:,} {'case has' if m.cases == 1 else 'cases have'} "
                        f"metadata. Nested keys (up to {m.depth} levels) "
                        "are joined with dots; an object value is described by its keys. Over "
                        f"{m.distinct_cap:,} distinct values the count is an estimate (~)."))
        for k in m.keys:
            if k.top:
                top = ", ".join(f"{v.value} ({v.cases:,})" for v in k.top)
            else:
                top = "(objects)" if k.objects == k.cases else "-"
            distinct: str | int = k.distinct if k.distinct_exact else f"~{k.distinct:,}"
            t.add(k.key, k.cases, distinct if k.objects < k.cases else None, top)
        out.append(t)
    return out


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def report_blocks(r: RunReport) -> list[Block]:
    """The tables of a build or validate run report."""

    c = r.counts
    out: list[Block] = [Heading(f"evalstream {r.command} report: {r.input}", 1)]
    head = (f"{c.lines:,} lines = {c.cases:,} cases + {c.rejected:,} rejected + "
            f"{c.blank:,} blank")
    if r.rubrics is not None:
        head += f"; {c.checks:,} checks written, {c.skipped:,} skipped"
    out.append(Paragraph(head + f". evalstream {r.evalstream}, {r.seconds:,} s."))
    t = Table([Column("figure"), Column("value")])
    for name, value in (("output", r.output), ("rejects", r.rejects),
                        ("rubrics", ", ".join(r.rubrics.sources) if r.rubrics else None),
                        ("rubric set hash", r.rubrics.hash if r.rubrics else None),
                        ("tokenizer", r.tokenizer),
                        ("budget", f"{r.budget:,}" if r.budget is not None else None),
                        ("exit code", str(r.exit_code))):
        t.add(name, value)
    out.append(t)
    if r.rubrics is not None and r.rubrics.ids:
        out.append(Heading("Checks"))
        t = Table([Column("rubric"), Column("written", "count"),
                   Column("skipped (reason: count)"), Column("shown (states: count)")])
        for rid in r.rubrics.ids:
            skipped = r.skipped.get(rid, {})
            shown = r.exposure.get(rid, {})
            t.add(rid, r.checks_by_rubric.get(rid, 0),
                  ", ".join(f"{k}: {v:,}" for k, v in skipped.items()) or "-",
                  ", ".join(f"{k}: {v:,}" for k, v in shown.items()) or "-")
        out.append(t)
    if r.over_budget:
        out.append(Heading("Over budget"))
        t = Table([Column("line", "count"), Column("case"), Column("rubric"),
                   Column(f"{r.tokenizer} tokens", "count")],
                  note=(f"State plus longest question, exact, or at least (≥) where counting "
                        f"stopped once past the budget. {r.over_budget_listed:,} listed in the "
                        "report" + (f"; the first {MAX_TABLE_GROUPS} shown."
                                    if len(r.over_budget) > MAX_TABLE_GROUPS else ".")))
        for item in r.over_budget[:MAX_TABLE_GROUPS]:
            t.add(item.line, item.case_id, item.rubric_id,
                  item.tokens if item.exact else f"≥ {item.tokens:,}")
        out.append(t)
    if c.rejected:
        out.append(Heading("Rejected lines"))
        t = Table([Column("rejected because"), Column("lines", "count")])
        for kind, n in r.rejected_by_kind.items():
            t.add(kind, n)
        if r.rejects and r.rejects != "-":
            t.note = f"Each rejected line is in {r.rejects}."
        out.append(t)
    if r.warnings:
        out.append(Heading("Warnings"))
        out.extend(Paragraph(f"warning: {w}") for w in r.warnings)
    return out
