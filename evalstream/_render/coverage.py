"""Coverage first, in words: over how many labels a figure of ``agree`` is computed, what it
left out, and the headline that leads the one-screen summary when coverage is bad
(``_verdicts.coverage``), and what the stale check found (``_verdicts.stale``). Shared by
the table, markdown and HTML views of ``agree``."""

from __future__ import annotations

from evalstream._render.tables import Block, Paragraph
from evalstream._verdicts.agree import AgreeReport
from evalstream._verdicts.coverage import COVERAGE_FLOOR, Coverage, worst_first
from evalstream._verdicts.stale import StaleCounts

MAX_HEADLINES = 5  # rubrics named in the summary's first lines; the table has the rest
LEFT_OUT = (("na_verdicts", "na verdicts"), ("unscored", "unscored"), ("stale", "stale"),
            ("no_verdict", "without a verdict"))


def share(value: float | None) -> str:
    """A share as a percentage with one decimal (``52.1%``); ``-`` for none."""
    return "-" if value is None else f"{value:.1%}"


def left_out(c: Coverage) -> str:
    """What the scored figures left out, as words (``215 na verdicts, 128 unscored``)."""
    parts = [f"{c.left_out[key]:,} {words}" for key, words in LEFT_OUT if c.left_out[key]]
    return ", ".join(parts) if parts else "nothing"


def covers(accuracy: float | None, c: Coverage) -> str:
    """``accuracy 52.1% covers 407 of 750 labels (54.3%)``: a scored figure with its base."""
    return (f"accuracy {share(accuracy)} covers {c.scored:,} of {c.labels:,} pass/fail labels "
            f"({share(c.scored_share)})")


def sentence(name: str, accuracy: float | None, c: Coverage) -> str:
    """One rubric's coverage: the scored accuracy, its base, what it left out, and the
    accuracy over all labels."""
    return (f"{name}: {covers(accuracy, c)}; left out: {left_out(c)}; over all "
            f"{c.labels:,} labels {share(c.accuracy_all_labels)}.")


def headline_blocks(report: AgreeReport) -> list[Block]:
    """What leads the summary when it is bad: the rubrics whose scored figures leave out more
    than ``1 - COVERAGE_FLOOR`` of their labels, the worst first; stale verdicts."""
    out: list[Block] = []
    covered = [(r.rubric, r.all.coverage, r.all.accuracy) for r in report.rubrics
               if r.all.coverage is not None]
    bad = worst_first([(name, c) for name, c, _ in covered])
    accuracy = {name: a for name, _, a in covered}
    if bad:
        shown = bad[:MAX_HEADLINES]
        more = f" ({len(bad) - len(shown):,} more in the table)" if len(bad) > len(shown) else ""
        out.append(Paragraph(
            f"Coverage first: {len(bad):,} rubric{'' if len(bad) == 1 else 's'} scored less "
            f"than {COVERAGE_FLOOR:.0%} of {'its' if len(bad) == 1 else 'their'} pass/fail "
            f"labels{more}. " + " ".join(sentence(name, accuracy[name], c)
                                         for name, c in shown)))
    line = stale_line(report)
    if line and report.stale is not None and report.stale.counts.stale:
        out.append(Paragraph(line))
    return out


def stale_line(report: AgreeReport) -> str | None:
    """What the stale check found, or None when it did not run."""
    if report.stale is None:
        return None
    c = report.stale.counts
    checked = c.fresh + c.state + c.rubric
    text = stale_counts(c, report.verdicts.path)
    if c.stale:
        text += (" They are left out of the figures (their labels are counted as not scored): "
                 "judge build's current output again" + (
                     "" if c.rubric == 0 else ", or give the --rubrics they were judged with")
                 + "." + (" --fail-on-stale: exit 1." if report.fail_on_stale else ""))
    return text + f" Checked {checked:,} verdicts against {report.stale.against}."


def stale_counts(c: StaleCounts, path: str) -> str:
    """``3 of 111 verdicts of FILE are stale: ...``."""
    total = c.fresh + c.state + c.rubric + c.not_checked
    if not c.stale:
        text = f"No verdict of {path} is stale."
    else:
        parts = []
        if c.state:
            parts.append(f"{c.state:,} judged another state than build makes of the case "
                         "today (or build makes none)")
        if c.rubric:
            parts.append(f"{c.rubric:,} judged under another version of the rubric")
        text = (f"{c.stale:,} of {total:,} verdicts of {path} are stale: "
                + "; ".join(parts) + ".")
    if c.not_checked:
        text += (f" {c.not_checked:,} could not be checked (no hash to compare, a rubric not "
                 "in the rubric set, or a case not in the cases file).")
    return text
