"""``agree`` on a panel's verdicts (issue 26): each juror against the labels beside the panel,
the jurors against each other, and the states where they split.

A panel's verdict (``judge --jury``, ``--samples``) carries its ``votes``. While agree reads
the verdict file, ``PanelExtension.verdict`` keeps, per juror, one compact row a verdict (the
juror's own decision over its samples: their mode, ``rules.majority`` with the quorum, as
``--samples K`` alone decides) and, per rubric, how many verdicts had each pattern of votes.
The report then runs agree's own counting on each juror's rows against the same labels (per
rubric, label source and ``--by`` group: accuracy, Cohen's kappa with its interval, fail
precision and recall), and computes the agreement among the votes (``interrater``: Fleiss'
kappa over the states whose every vote is scored, Krippendorff's alpha over every state with
two scored votes, each with a bootstrap interval), and the share of split states (scored
votes that differ) and of unstable ones (one juror's samples that differ), with their ids.

Coverage and staleness as agree has them (issue 25): each juror's cells carry the coverage
agree's do (over how many labels, the accuracy over all of them), and a stale verdict
(``_verdicts.stale``) is left out of each juror's figures as it is of the panel's, and out of
the agreement among the jurors and the split and unstable states (``RubricPanel.stale`` says
how many): its votes judged a state that is no longer what build makes of the case.

Memory: per juror what agree keeps per verdict (its case id, rubric, status and line), and
per verdict its line, rubric, pattern of votes and whether it split (a few bytes, kept until
the stale verdicts are known); nothing grows with the votes' text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from msgspec import Struct

from evalstream._verdicts import rules
from evalstream._verdicts.agree import AgreeReport, Cell, GroupCell, Joined, RubricAgreement
from evalstream._verdicts.interrater import DEFAULT_RESAMPLES, Estimate, Pattern, among
from evalstream._verdicts.records import STATUS_CODE, Codes, Columns, verdict_schema

if TYPE_CHECKING:
    import polars as pl


class Interval(Struct):
    """A statistic of agreement among votes, its bootstrap interval (null: too few defined
    draws) and the judge states it was computed over."""

    value: float
    low: float | None
    high: float | None
    states: int


class JurorCells(Struct):
    """One juror against the labels, on one rubric: its decision on each state (the mode of
    its samples) counted as agree counts a judge's verdicts."""

    juror: str
    models: list[str]  # the models its votes name (one, unless the file mixes panels)
    samples: int  # the most votes it cast on one state
    all: Cell
    by_source: dict[str, Cell]
    by_group: list[GroupCell]


class RubricPanel(Struct):
    """A panel on one rubric: each juror against the labels, the jurors against each other,
    and the states where they split."""

    rubric: str
    rules: list[str]  # the rules its verdicts were decided by (one, usually)
    verdicts: int  # the rubric's verdicts with votes, stale ones left out
    jurors: list[JurorCells]
    fleiss_kappa: Interval | None  # over states whose every vote is scored
    krippendorff_alpha: Interval | None  # over states with two scored votes or more
    split: int  # states whose scored votes differ
    split_share: float | None
    split_ids: list[str]  # the first --max-ids, in file order
    unstable: int  # states where one juror's samples differ
    unstable_share: float | None
    unstable_ids: list[str]
    stale: int = 0  # verdicts with votes left out: stale (judged on another state or rubric)


class PanelAgreement(Struct):
    """``agree``'s panel section: the jurors, how the intervals were drawn, each rubric."""

    jurors: list[str]
    confidence: float
    resamples: int
    without_votes: int  # verdicts of the file that carry no votes (not a panel's)
    rubrics: list[RubricPanel]


class PanelAgreeReport(AgreeReport, kw_only=True):
    """``agree``'s report on a panel's verdicts: everything agree says of the panel's
    decisions, and ``panel``."""

    panel: PanelAgreement


@dataclass
class _Juror:
    columns: Columns
    models: Counter[str] = field(default_factory=Counter)
    samples: int = 0


@dataclass
class _Rubric:
    patterns: Counter[Pattern] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)
    verdicts: int = 0
    split: int = 0
    unstable: int = 0
    split_ids: list[str] = field(default_factory=list)
    unstable_ids: list[str] = field(default_factory=list)
    stale: int = 0


class _Seen(NamedTuple):
    """What the panel's figures take from one verdict with votes (kept until the stale
    verdicts are known, then counted into its rubric's ``_Rubric``)."""

    line: int
    rubric: str
    case_id: str
    pattern: Pattern
    rule: str | None
    split: bool
    unstable: bool


class PanelExtension:
    """agree's extension for a panel's verdicts (``agree.Extension``); a file without votes
    leaves the report as agree made it."""

    def __init__(self, max_ids: int, confidence: float,
                 resamples: int = DEFAULT_RESAMPLES) -> None:
        self.max_ids, self.confidence, self.resamples = max_ids, confidence, resamples
        self.jurors: dict[str, _Juror] = {}
        self.seen: list[_Seen] = []  # each verdict with votes, in file order
        self.without_votes = 0

    def verdict(self, rubric: int, line: int, v: Any) -> None:
        """One verdict as agree reads it (the decoded record)."""
        if not v.votes:
            self.without_votes += 1
            return
        by_juror: dict[str, list[str]] = {}
        models: dict[str, str | None] = {}
        for vote in v.votes:
            by_juror.setdefault(vote.judge, []).append(vote.status)
            models.setdefault(vote.judge, vote.model)
        for name, statuses in by_juror.items():
            juror = self.jurors.get(name)
            if juror is None:
                juror = self.jurors[name] = _Juror(Columns(verdict_schema(False)))
            own = rules.decide(rules.DEFAULT_RULE, rules.tally(statuses)).status
            lists = juror.columns.lists
            lists["case_id"].append(v.case_id)
            lists["rubric"].append(rubric)
            lists["status"].append(STATUS_CODE[own])
            lists["line"].append(line)
            if len(lists["case_id"]) >= 1 << 16:
                juror.columns.flush()
            juror.models[models[name] or name] += 1
            juror.samples = max(juror.samples, len(statuses))
        t = rules.tally(vote.status for vote in v.votes)
        scored = [{s for s in statuses if s != "unscored"} for statuses in by_juror.values()]
        self.seen.append(_Seen(line, v.rubric_id, v.case_id, t,
                               v.panel.rule if v.panel is not None else None,
                               len(set().union(*scored)) > 1,
                               any(len(seen) > 1 for seen in scored)))

    def rubrics(self, stale: frozenset[int] = frozenset()) -> dict[str, _Rubric]:
        """Each rubric's patterns of votes and split and unstable states, the verdicts at the
        lines of ``stale`` left out (counted as such)."""
        out: dict[str, _Rubric] = {}
        for seen in self.seen:
            r = out.setdefault(seen.rubric, _Rubric())
            if seen.line in stale:
                r.stale += 1
                continue
            r.patterns[seen.pattern] += 1
            if seen.rule is not None:
                r.rules[seen.rule] += 1
            r.verdicts += 1
            if seen.split:
                r.split += 1
                if len(r.split_ids) < self.max_ids:
                    r.split_ids.append(seen.case_id)
            if seen.unstable:
                r.unstable += 1
                if len(r.unstable_ids) < self.max_ids:
                    r.unstable_ids.append(seen.case_id)
        return out

    def report(self, report: AgreeReport,
               cells: Callable[[pl.DataFrame], list[RubricAgreement]],
               joined: Joined | None = None) -> AgreeReport:
        """agree's report with the panel's section (unchanged when no verdict had votes);
        ``joined.stale_lines``: each verdict's line and stale code (``stale.mark``), whose
        stale verdicts are left out of the agreement among the jurors as ``cells`` leaves
        them out of each juror's figures."""
        if not self.jurors:
            return report
        stale: frozenset[int] = frozenset()
        stale_lines = None if joined is None else joined.stale_lines
        if stale_lines is not None:
            from evalstream._verdicts.stale import is_stale

            stale = frozenset(stale_lines.filter(is_stale())["line"].to_list())
        found = {name: {r.rubric: r for r in cells(juror.columns.frame())}
                 for name, juror in self.jurors.items()}
        rubric_panels = []
        counted = self.rubrics(stale)
        for rubric in sorted(counted):
            r = counted[rubric]
            jurors = [JurorCells(name, sorted(juror.models), juror.samples,
                                 found[name][rubric].all, found[name][rubric].by_source,
                                 found[name][rubric].by_group)
                      for name, juror in self.jurors.items() if rubric in found[name]]
            rubric_panels.append(self._rubric(rubric, r, jurors))
        panel = PanelAgreement(jurors=list(self.jurors), confidence=self.confidence,
                               resamples=self.resamples, without_votes=self.without_votes,
                               rubrics=rubric_panels)
        return PanelAgreeReport(**msgspec.structs.asdict(report), panel=panel)

    def among_jurors(self) -> list[RubricPanel]:
        """Every rubric's panel without labels (``panel_agreement``): no juror cells."""
        counted = self.rubrics()
        return [self._rubric(rubric, counted[rubric], []) for rubric in sorted(counted)]

    def _rubric(self, rubric: str, r: _Rubric, jurors: list[JurorCells]) -> RubricPanel:
        fleiss, alpha = among(r.patterns, self.confidence, self.resamples)
        return RubricPanel(
            rubric=rubric, rules=sorted(r.rules), verdicts=r.verdicts, jurors=jurors,
            fleiss_kappa=_interval(fleiss), krippendorff_alpha=_interval(alpha),
            split=r.split, split_share=r.split / r.verdicts if r.verdicts else None,
            split_ids=r.split_ids, unstable=r.unstable,
            unstable_share=r.unstable / r.verdicts if r.verdicts else None,
            unstable_ids=r.unstable_ids, stale=r.stale)


def _interval(found: Estimate | None) -> Interval | None:
    return None if found is None else Interval(found.value, found.low, found.high, found.units)


def panel_agreement(verdicts: Iterable[Mapping[str, Any]], *, confidence: float = 0.95,
                    resamples: int = DEFAULT_RESAMPLES,
                    max_ids: int = 20) -> list[RubricPanel]:
    """The agreement among a panel's votes, rubric by rubric, from verdict records in memory
    (dicts as ``judge`` writes them, or as ``json.loads`` reads them): Fleiss' kappa and
    Krippendorff's alpha with their bootstrap intervals, and the split and unstable states
    with their first ids. Each record is checked as agree checks a verdict line (a
    UsageError names the record and the field)."""
    from evalstream._verdicts.records import decoder
    from evalstream.errors import UsageError

    kind = decoder().type  # the strict verdict, as agree reads a file
    extension = PanelExtension(max_ids, confidence, resamples)
    rubrics = Codes()
    for n, record in enumerate(verdicts, 1):
        try:
            v = msgspec.convert(record, kind, strict=True)
        except msgspec.ValidationError as exc:
            raise UsageError(f"verdict record {n}: {exc}") from None
        if v.status is None:
            continue  # a judge state, not yet judged
        extension.verdict(rubrics.code(v.rubric_id), n, v)
    return extension.among_jurors()
