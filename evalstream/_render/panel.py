"""The panel's part of ``agree`` (issue 26): each juror against the labels beside the panel,
the agreement among the jurors, and the split and unstable states; as blocks (table,
markdown) after agree's own, and as a section of agree's HTML page (a kappa chart of the
panel and its jurors per rubric)."""

from __future__ import annotations

from collections.abc import Callable

from evalstream._render.agree import _interval, _kappa
from evalstream._render.agree import blocks as agree_blocks
from evalstream._render.agree_html import agree_page, kappa_chart
from evalstream._render.html import Page
from evalstream._render.tables import Block, Column, Heading, Paragraph, Table
from evalstream._render.tables import Cell as TableCell
from evalstream._verdicts.agree import AgreeReport, Cell, RubricAgreement
from evalstream._verdicts.panel import Interval, PanelAgreement, RubricPanel


def blocks(report: AgreeReport, base: str | None = None) -> list[Block]:
    """agree's blocks, then the panel's (when the verdicts carried votes)."""
    out = agree_blocks(report, base)
    panel: PanelAgreement | None = getattr(report, "panel", None)
    if panel is not None:
        out += panel_blocks(report, panel)
    return out


def page(report: AgreeReport, base: str | None = None) -> str:
    """agree's HTML page, with the panel's section (when the verdicts carried votes)."""
    panel: PanelAgreement | None = getattr(report, "panel", None)
    return agree_page(report, base, more=None if panel is None else _section(report, panel))


def panel_blocks(report: AgreeReport, panel: PanelAgreement) -> list[Block]:
    """Each rubric's jurors and their agreement, under one heading."""
    out: list[Block] = [Heading("The panel's jurors", 2), Paragraph(_about(panel))]
    decided = {r.rubric: r for r in report.rubrics}
    for r in panel.rubrics:
        out += rubric_blocks(r, decided.get(r.rubric), report)
    return out


def _about(panel: PanelAgreement) -> str:
    text = (f"Jurors: {', '.join(panel.jurors)}. Each juror's decision on a state is the mode "
            "of its samples; it is counted against the labels as the panel's verdicts are. "
            "Coverage first, as above: each row says over how many pass/fail labels it is "
            "computed (labels), how many it scored (pairs) and its accuracy over all of them; "
            "stale verdicts are left out of every row and of the agreement among the jurors. "
            f"Intervals: kappa's as above; among the jurors, {panel.confidence:.0%} "
            f"percentile bootstrap over states ({panel.resamples:,} draws).")
    if panel.without_votes:
        text += (f" {panel.without_votes:,} verdicts carry no votes (not a panel's): they "
                 "count for the panel above, not here.")
    return text


def _cells(name: str, cell: Cell, report: AgreeReport) -> list[TableCell]:
    # Coverage first, as agree's own tables: over how many labels, and the accuracy over all.
    cov = cell.coverage
    return [name, cov.labels if cov else None, cell.pairs, cell.accuracy,
            cov.accuracy_all_labels if cov else None, _kappa(cell), _interval(cell),
            cell.fail_precision, cell.fail_recall, cell.na_verdicts, cell.unscored,
            *([cell.stale] if report.stale is not None else []), cell.labels_without_verdict]


def _columns(report: AgreeReport, first: str) -> list[Column]:
    return [Column(first), Column("labels", "count"), Column("pairs", "count"),
            Column("accuracy", "share"), Column("over all labels", "share"),
            Column("kappa", "number"), Column(f"{report.confidence:.0%} CI"),
            Column("fail precision", "share"), Column("fail recall", "share"),
            Column("na verdict", "count"), Column("unscored", "count"),
            *([Column("stale", "count")] if report.stale is not None else []),
            Column("no verdict", "count")]


def rubric_blocks(r: RubricPanel, decided: RubricAgreement | None,
                  report: AgreeReport) -> list[Block]:
    """One rubric: the panel and each juror against the labels; among the jurors."""
    out: list[Block] = [Heading(f"{r.rubric}: the panel and its jurors", 3)]
    table = Table(_columns(report, "judge"),
                  title="Against the labels (fail is the positive class)")
    if decided is not None:
        table.add(*_cells(f"the panel ({', '.join(r.rules) or 'votes'})", decided.all, report))
    for j in r.jurors:
        samples = f", {j.samples} samples" if j.samples > 1 else ""
        table.add(*_cells(f"{j.juror} ({', '.join(j.models)}{samples})", j.all, report))
    out.append(table)
    keyed = [(j.juror, f"source {s}", cell) for j in r.jurors
             for s, cell in j.by_source.items()]
    if report.by is not None:
        keyed += [(j.juror, f"{report.by} = {g.group}" if g.group is not None
                   else f"{report.by} missing", g) for j in r.jurors for g in j.by_group]
    if keyed:
        by = Table([Column("juror"), *_columns(report, "keys")],
                   title="Each juror by label source" + (f" and by {report.by}"
                                                         if report.by else ""))
        for juror, keys, cell in keyed:
            by.add(juror, *_cells(keys, cell, report))
        out.append(by)
    out.append(Paragraph(among_text(r)))
    return out


def _estimate(name: str, e: Interval | None, over: str) -> str:
    if e is None:
        return f"{name}: undefined (no {over}, or every vote alike)"
    interval = "too few defined draws for an interval" if e.low is None or e.high is None \
        else f"[{e.low:.3f}, {e.high:.3f}]"
    return f"{name} {e.value:.3f} {interval} over {e.states:,} {over}"


def among_text(r: RubricPanel) -> str:
    """The agreement among the jurors and the split and unstable states, as sentences."""
    def share(n: int, of: float | None) -> str:
        return f"{n:,} of {r.verdicts:,} ({of:.1%})" if of is not None else f"{n:,}"

    fleiss = _estimate("Fleiss kappa", r.fleiss_kappa, "states whose every vote is scored")
    alpha = _estimate("Krippendorff alpha", r.krippendorff_alpha,
                      "states with two scored votes or more")
    text = (f"Among the jurors, over {r.verdicts:,} verdicts with votes"
            + (f" ({r.stale:,} stale left out)" if r.stale else "")
            + f": {fleiss}; {alpha}. Split states (scored votes that differ): "
            f"{share(r.split, r.split_share)}")
    if r.split_ids:
        text += f": {', '.join(r.split_ids)}" + ("..." if r.split > len(r.split_ids) else "")
    text += f". Unstable states (a juror's samples differ): {share(r.unstable, r.unstable_share)}"
    if r.unstable_ids:
        text += f": {', '.join(r.unstable_ids)}" + ("..." if r.unstable > len(r.unstable_ids)
                                                    else "")
    return text + "."


def _section(report: AgreeReport, panel: PanelAgreement) -> Callable[[Page], None]:
    """What the panel adds to agree's page: per rubric, a kappa chart of the panel and its
    jurors, and the blocks above."""
    decided = {r.rubric: r for r in report.rubrics}

    def add(p: Page) -> None:
        p.heading("The panel's jurors")
        p.paragraph(_about(panel))
        for r in panel.rubrics:
            rows = []
            if r.rubric in decided:
                d = decided[r.rubric].all
                rows.append(("the panel", d.kappa, d.pairs))
            rows += [(j.juror, j.all.kappa, j.all.pairs) for j in r.jurors]
            p.figure(kappa_chart(f"{r.rubric}: the panel and its jurors against the labels "
                                 f"(Cohen's kappa, {report.confidence:.0%} interval)", rows),
                     "Each juror's decision is the mode of its samples.")
            p.blocks(rubric_blocks(r, decided.get(r.rubric), report), shift=0)
    return add
