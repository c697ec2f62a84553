"""``agree``: how well a judge's verdicts agree with the labels the cases carry.

Both files are streamed into compact key columns (``verdicts.read_verdicts`` and
``read_labels`` here) and joined with Polars on (case id, rubric). Every key lands in
exactly one bucket, so the counts add up, per rubric and per cell:

    labels   = pairs + unscored + na_verdicts + stale + labels_without_verdict + na_labels
    verdicts = pairs + unscored + na_verdicts + stale + na_with_verdict + verdicts_without_label

``pairs`` (a pass/fail label and a pass/fail verdict) are the only keys in the scored-only
statistics. A label ``na`` says the rubric does not apply, so it is counted and left out; a
verdict ``na`` on a pass/fail label (the judge says the rubric does not apply where the label
says it does) is a disagreement of its own kind, listed, and left out of the scored-only
statistics; an ``unscored`` verdict is counted and left out (never read as pass: evalstream
fails closed); a ``stale`` verdict (its state or rubric no longer what build makes of the
case: ``stale``) is counted, listed and left out, for the label is about the case as it is
now. Coverage comes first (``coverage``): every figure says over how many labels it is
computed, and the accuracy over all pass/fail labels counts every label without a usable
verdict as not agreeing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from msgspec import Struct

from evalstream._cases.rejects import Reject
from evalstream._cases.schema import group_value
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._verdicts import agreement, bias
from evalstream._verdicts import stale as staleness
from evalstream._verdicts.coverage import Coverage, coverage
from evalstream._verdicts.links import MARKER, export_page, is_export
from evalstream._verdicts.records import (
    FAIL,
    FLUSH_ROWS,
    LABEL_SOURCES,
    LABEL_STATUSES,
    MAX_RUBRICS,
    NA_VERDICT,
    PASS,
    STATUSES,
    UNSCORED,
    Codes,
    Columns,
    RejectSink,
    VerdictFileSummary,
    first_rows,
    rationales_at,
    read_verdicts,
)
from evalstream._verdicts.stale import StaleCheck, StaleCounts
from evalstream._version import __version__

if TYPE_CHECKING:
    from collections.abc import Callable

    import polars as pl

    from evalstream._checks.rubrics import RubricSet
    from evalstream._files.outputs import AtomicOutput
    from evalstream._files.transaction import Target, Transaction


NA = 2  # label code of `na`; pass and fail share the verdicts' codes 0 and 1
DEFAULT_MAX_IDS = 20
EXAMPLE_KINDS = ("missed", "false_alarms", "unscored", "labels_without_verdict",
                 "verdicts_without_label", "na_verdicts", "stale")


# -- the report ------------------------------------------------------------------------------------
class KappaOut(Struct):
    """Cohen's kappa, its standard error and interval (``low``, ``high``; null below 10
    pairs: too few to estimate)."""

    value: float
    se: float
    low: float | None
    high: float | None


class ConfusionOut(Struct):
    """Pass/fail labels (first word) by verdict (second word): pass and fail are the pairs;
    na, unscored, stale and no_verdict are left out of the scored-only statistics (and count
    as not agreeing over all labels)."""

    pass_pass: int
    pass_fail: int
    fail_pass: int
    fail_fail: int
    pass_unscored: int
    fail_unscored: int
    pass_no_verdict: int
    fail_no_verdict: int
    pass_na: int = 0
    fail_na: int = 0
    pass_stale: int = 0
    fail_stale: int = 0


class Cell(Struct):
    """Agreement over one set of keys (a rubric, a label source or a group), with what was
    left out of it and why."""

    pairs: int
    accuracy: float | None
    kappa: KappaOut | None
    confusion: ConfusionOut
    fail_precision: float | None
    fail_recall: float | None
    unscored: int
    na_verdicts: int  # a pass/fail label, and the judge said the rubric does not apply
    labels_without_verdict: int
    na_labels: int
    na_with_verdict: int
    verdicts_without_label: int
    unknown_case: int  # of verdicts_without_label: the case is not in the cases file
    # A pass/fail label whose verdict is stale: left out (the label is about the case now).
    stale: int = 0
    # Over how many labels the figures are computed, and the accuracy over all of them.
    coverage: Coverage | None = None


class GroupCell(Cell):
    """A cell for one value of the ``--by`` metadata key (null: the case lacks the key, or
    is not in the cases file)."""

    group: str | None = None


class Examples(Struct):
    """The first case ids (in verdict-file order, else case-file order) of each kind."""

    missed: list[str]  # label fail, judge pass
    false_alarms: list[str]  # label pass, judge fail
    unscored: list[str]
    labels_without_verdict: list[str]
    verdicts_without_label: list[str]
    na_verdicts: list[str] = []  # label pass or fail, judge na
    stale: list[str] = []  # label pass or fail, a stale verdict


class ExampleTexts(Struct):
    """One text (or null) per listed example id, in the order of ``Examples``: the judge's
    rationale (null without a verdict, or when the verdicts came from stdin), or the path of
    the check's page in a view export (null when the export does not hold it)."""

    missed: list[str | None]
    false_alarms: list[str | None]
    unscored: list[str | None]
    labels_without_verdict: list[str | None]
    verdicts_without_label: list[str | None]
    na_verdicts: list[str | None] = []
    stale: list[str | None] = []


class RubricAgreement(Struct):
    """Everything ``agree`` found for one rubric."""

    rubric: str
    labels: dict[str, int]  # by label status: pass, fail, na
    verdicts: dict[str, int]  # by verdict status: pass, fail, unscored, na
    unscored_rate: float | None  # unscored / verdicts of this rubric (None: no verdict)
    all: Cell
    by_source: dict[str, Cell]  # label sources present; keys that have a label only
    by_group: list[GroupCell]  # with --by: one cell per value, sorted, null last
    examples: Examples
    rationales: ExampleTexts  # the judge's rationale of each example
    pages: ExampleTexts | None  # with --view: each example's page in the export
    # Every verdict of this rubric checked for staleness (None: not checked).
    stale: StaleCounts | None = None


class CaseFileSummary(Struct):
    """What the cases file held: ``lines == blank + cases + rejected``."""

    path: str
    lines: int
    blank: int
    cases: int
    rejected: int
    rejected_by_kind: dict[str, int]
    labels: int
    first_rejects: list[Reject]
    # Labels whose rubric id came after the first MAX_RUBRICS: counted here, not analysed.
    unlisted_rubric: int = 0


class AgreeReport(Struct):
    """The result of ``agree``: the JSON output, and what the table, markdown and HTML show."""

    command: str
    evalstream: str
    verdicts: VerdictFileSummary
    cases: CaseFileSummary
    by: str | None
    confidence: float
    max_ids: int
    max_unscored_rate: float | None
    view: str | None  # the view export the example ids link to
    rubrics: list[RubricAgreement]
    rejects: str | None
    exit_code: int
    # What the verdicts were checked against for staleness, and what was found (None: not
    # checked); with ``fail_on_stale`` a stale verdict makes the exit code 1.
    stale: StaleCheck | None = None
    fail_on_stale: bool = False
    bias: list[bias.RubricBias] = []  # position and length, by rubric (``bias``)


class Extension(Protocol):
    """What a module beside agree adds to it (a panel's jurors, ``_verdicts.panel``; the
    confidence's calibration and corrected pass rates, ``_verdicts.sureness``): it sees every
    verdict as it is read, and makes the report from the one agree made, given ``cells``:
    agree's own figures, per rubric, of another frame of verdicts (case_id, rubric, status,
    line) against the same labels, each row stale as the verdict at its line is; and
    ``joined``: such a frame joined to the labels, row by key (its own further columns kept,
    and ``vstale``; see ``_joined``), with the rubric and group names and each verdict's line
    and stale code (``Joined.stale_lines``)."""

    def verdict(self, rubric: int, line: int, verdict: Any) -> None: ...

    def report(self, report: AgreeReport,
               cells: Callable[[pl.DataFrame], list[RubricAgreement]],
               joined: Joined) -> AgreeReport: ...


@dataclass
class Joined:
    """A frame of verdicts (with any further columns) joined to the labels, for an
    ``Extension``: ``of(frame)`` is ``_joined``'s lazy frame, each row stale as the verdict
    at its line is (``vstale``); ``rubrics`` and ``groups`` name the codes; ``cases`` are the
    case files' paths (read in order as one) and ``case_ids`` their ids by row; ``targets``
    the run's transaction, where the extension opens its own targets
    (``AgreeOptions.more_targets``);
    ``stale_lines`` each verdict's line and stale code (``stale.mark``)."""

    of: Callable[[pl.DataFrame], pl.LazyFrame]
    rubrics: list[str]
    groups: list[str]
    cases: list[str]
    case_ids: pl.Series
    targets: Transaction
    stale_lines: pl.DataFrame | None = None


class Extensions:
    """Several extensions as one, each given the report the one before made."""

    def __init__(self, *extensions: Extension) -> None:
        self.extensions = extensions

    def verdict(self, rubric: int, line: int, verdict: Any) -> None:
        for extension in self.extensions:
            extension.verdict(rubric, line, verdict)

    def report(self, report: AgreeReport,
               cells: Callable[[pl.DataFrame], list[RubricAgreement]],
               joined: Joined) -> AgreeReport:
        for extension in self.extensions:
            report = extension.report(report, cells, joined)
        return report


@dataclass
class AgreeOptions:
    """What an ``agree`` run needs; ``evalstream.agree`` fills it."""

    verdicts: str
    cases: str  # the cases' argument, or several joined by spaces (as build names its input)
    by: str | None = None
    rejects: str | None = None
    force: bool = False  # replace a rejects target that holds something else
    max_ids: int = DEFAULT_MAX_IDS
    confidence: float = agreement.DEFAULT_CONFIDENCE
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    allow_unknown_fields: bool = False
    max_unscored_rate: float | None = None  # exit 1 when the verdicts' unscored rate is above
    view: str | None = None  # a view export folder: link each example id to its page
    # The report (in ``format``; ``-``: stdout) and its HTML page, rendered by the caller's
    # ``write`` (``_render`` sits above this package) and committed with the rejects.
    output: str | None = None
    html: str | None = None
    format: str = "table"
    # Stale verdicts: checked against the states build makes of the cases with these rubric
    # files (empty: the built-in set), or against build's output (``states``).
    rubric_files: list[str] = field(default_factory=list)
    states: str | None = None
    fail_on_stale: bool = False  # exit 1 when a verdict is stale
    # An extension's own targets (``to_label``'s cases), checked and committed with the rest;
    # the extension opens them through ``Joined.targets``.
    more_targets: list[Target] = field(default_factory=list)
    # Several case files, globs or both, read in order as one, as build reads its inputs.
    case_inputs: list[str] = field(default_factory=list)


# -- reading the cases -----------------------------------------------------------------------------
@dataclass
class CaseFile:
    """The cases (case_id, group, chars: the response's length) and their labels (case,
    rubric, lstatus, source, cline, group), where ``case`` is the case's row in ``cases``:
    labels hold no strings."""

    summary: CaseFileSummary
    labels: pl.DataFrame
    cases: pl.DataFrame


def read_labels(path: str, rubrics: Codes, groups: Codes, sink: RejectSink, *,
                by: str | None = None, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                allow_unknown_fields: bool = False,
                on_case: Callable[[Any, int], None] | None = None,
                files: list[str] | None = None) -> CaseFile:
    """Stream a cases file (decoded and checked exactly as ``build`` does) into key columns;
    ``files``: the files ``path`` names (``case_files``), read in order as one.

    Each case leaves its id and ``--by`` group; each label its case's row number, rubric
    code, status, source, line and group. ``on_case(case, line)`` is given every case read
    (the stale check rebuilds its states).
    """
    import polars as pl

    from evalstream._cases.reading import case_reader

    reader = case_reader(allow_unknown_fields, max_line_bytes)
    label_cols = Columns({"case": pl.UInt32, "rubric": pl.UInt32, "lstatus": pl.UInt8,
                          "source": pl.UInt8, "cline": pl.UInt32, "group": pl.UInt32})
    case_cols = Columns({"case_id": pl.String, "group": pl.UInt32, "chars": pl.UInt32})
    l_case, l_rubrics, l_status, l_source, l_line, l_group = label_cols.lists.values()
    c_ids, c_groups, c_chars = case_cols.lists.values()
    status_code = {s: i for i, s in enumerate(LABEL_STATUSES)}
    source_code = {s: i for i, s in enumerate(LABEL_SOURCES)}
    rubric_code, group_code = rubrics.limited, groups.code
    unlisted = 0
    group_path = tuple(by.split(".")) if by else None
    counts = reader.counts  # its ``records`` are the summary's ``cases``
    for item in reader.read_files(files or [path]):
        if type(item) is Reject:
            sink.write(path, [item])
            continue
        line, _, _, case = item  # type: ignore[misc]
        row = counts.records - 1  # the case's row in the cases frame: the cases before it
        if on_case is not None:
            on_case(case, line)
        c_ids.append(case.id)
        c_chars.append(len(case.output))  # the length audit's (bias)
        group = None
        if group_path is not None:
            value = group_value(case.metadata, group_path)
            group = None if value is None else group_code(value)
        c_groups.append(group)
        if case.expected:
            for rid, label in case.expected.items():
                code = rubric_code(rid)
                if code is None:
                    unlisted += 1
                    continue
                l_case.append(row)
                l_rubrics.append(code)
                l_status.append(status_code[label.status])
                l_source.append(source_code[label.source])
                l_line.append(line)
                l_group.append(group)
            if len(l_case) >= FLUSH_ROWS:
                label_cols.flush()
        if len(c_ids) >= FLUSH_ROWS:
            case_cols.flush()
    labels, cases = label_cols.frame(), case_cols.frame()
    summary = CaseFileSummary(
        path=path, lines=counts.lines, blank=counts.blank, cases=counts.records,
        rejected=counts.rejected, rejected_by_kind=dict(sorted(counts.rejected_by_kind.items())),
        labels=labels.height, first_rejects=reader.first_rejects, unlisted_rubric=unlisted)
    return CaseFile(summary, labels, cases)


def case_files(cases: str, case_inputs: list[str]) -> list[str]:
    """The files of the cases' arguments (one path, several, globs), as build reads its
    inputs: a case id that an earlier file used is a duplicate, rejected, as in build."""
    from evalstream._files.store import input_paths

    return input_paths(case_inputs or [cases])


# -- joining and counting --------------------------------------------------------------------------
def _key(case: str) -> pl.Expr:
    """One 64-bit join key from a case row and a rubric code (null for an unknown case)."""
    import polars as pl

    return pl.col(case).cast(pl.UInt64) * (1 << 32) + pl.col("rubric").cast(pl.UInt64)


def _joined(verdicts: pl.DataFrame, labels: pl.DataFrame, cases: pl.DataFrame,
            keep: tuple[str, ...] = ()) -> pl.LazyFrame:
    """Every key of either file with its label, verdict and group (nulls where absent), and
    the verdicts' columns ``keep`` (an extension's).

    Verdicts find their case's row by id (a left join on the cases, whose strings are few
    next to the keys); verdicts and labels then meet on one integer key, which takes a
    third of the memory of a join on (string, rubric).
    """
    import polars as pl

    rows = cases.lazy().with_row_index("vcase").select("case_id", "vcase",
                                                         pl.col("group").alias("vgroup"))
    judged = (verdicts.lazy().join(rows, on="case_id", how="left")
              .select(_key("vcase").alias("key"), "case_id", "vcase", "vgroup",
                      pl.col("rubric").alias("vrubric"), pl.col("status").alias("vstatus"),
                      pl.col("line").alias("vline"), staleness.is_stale().alias("vstale"),
                      *keep))
    return (labels.lazy().with_columns(_key("case").alias("key"))
            .join(judged, on="key", how="full", coalesce=True)
            .with_columns(rubric=pl.coalesce("rubric", "vrubric"),
                          group=pl.coalesce("group", "vgroup"),
                          case=pl.coalesce("case", "vcase"),
                          known=pl.col("lstatus").is_not_null() | pl.col("vcase").is_not_null()))


def _kind_expr() -> pl.Expr:
    """Which example list a joined row belongs to (null: none)."""
    import polars as pl

    label, verdict = pl.col("lstatus"), pl.col("vstatus")
    scored = label.is_in([PASS, FAIL])
    return (pl.when(label.is_null()).then(pl.lit("verdicts_without_label"))
            .when(scored & verdict.is_null()).then(pl.lit("labels_without_verdict"))
            .when(scored & pl.col("vstale")).then(pl.lit("stale"))
            .when(scored & (verdict == UNSCORED)).then(pl.lit("unscored"))
            .when(scored & (verdict == NA_VERDICT)).then(pl.lit("na_verdicts"))
            .when(scored & (label == FAIL) & (verdict == PASS)).then(pl.lit("missed"))
            .when(scored & (label == PASS) & (verdict == FAIL)).then(pl.lit("false_alarms"))
            .otherwise(None))


Example = tuple[str, int | None]  # a listed case id, and the line of its verdict (if any)


def _count_rows(joined: pl.LazyFrame, case_ids: pl.Series, max_ids: int,
                ) -> tuple[list[tuple[Any, ...]], dict[tuple[int, str], list[Example]]]:
    """(rubric, source, group, known, lstatus, vstatus, vstale, n) counts, and the
    examples."""
    import polars as pl

    keys = ["rubric", "source", "group", "known", "lstatus", "vstatus", "vstale"]
    # One query at a time: run together, each builds its own join and the peak doubles.
    counts = joined.group_by(keys).agg(pl.len().alias("n")).collect(engine="streaming").rows()
    if max_ids == 0:
        return counts, {}
    found = first_rows(
        joined.with_columns(kind=_kind_expr(), order=pl.coalesce("vline", "cline"))
        .filter(pl.col("kind").is_not_null()).select("rubric", "kind", "order", "case_id",
                                                     "case", "vline"),
        ["rubric", "kind"], "order", max_ids)
    examples: dict[tuple[int, str], list[Example]] = {}
    for rubric, kind, _, case_id, row, vline in found.iter_rows():
        # A verdict carries its case id; a label only its case's row.
        examples.setdefault((rubric, kind), []).append(
            (case_id if case_id is not None else case_ids[row], vline))
    return counts, examples


@dataclass
class _Bucket:
    """The counts behind one Cell."""

    confusion: agreement.Confusion = agreement.Confusion()
    unscored: int = 0
    na_verdicts: int = 0
    stale: int = 0
    labels_without_verdict: int = 0
    unscored_by: tuple[int, int] = (0, 0)  # by label: pass, fail
    missing_by: tuple[int, int] = (0, 0)
    na_by: tuple[int, int] = (0, 0)
    stale_by: tuple[int, int] = (0, 0)
    na_labels: int = 0
    na_with_verdict: int = 0
    verdicts_without_label: int = 0
    unknown_case: int = 0

    def add(self, known: bool | None, lstatus: int | None, vstatus: int | None,
            stale: bool | None, n: int) -> None:
        if lstatus is None:
            self.verdicts_without_label += n
            if not known:
                self.unknown_case += n
        elif lstatus == NA:
            self.na_labels += n
            if vstatus is not None:
                self.na_with_verdict += n
        elif vstatus is None:
            self.labels_without_verdict += n
            self.missing_by = _bump(self.missing_by, lstatus, n)
        elif stale:  # judged on another state or rubric than the label is about
            self.stale += n
            self.stale_by = _bump(self.stale_by, lstatus, n)
        elif vstatus == UNSCORED:
            self.unscored += n
            self.unscored_by = _bump(self.unscored_by, lstatus, n)
        elif vstatus == NA_VERDICT:
            self.na_verdicts += n
            self.na_by = _bump(self.na_by, lstatus, n)
        else:
            cells = [0, 0, 0, 0]
            cells[lstatus * 2 + vstatus] = n
            self.confusion = self.confusion.plus(agreement.Confusion(*cells))

    def cell(self, confidence: float, cls: type[Cell] = Cell, **extra: Any) -> Any:
        c = self.confusion
        k = agreement.kappa(c, confidence)
        return cls(
            pairs=c.pairs, accuracy=agreement.accuracy(c),
            kappa=None if k is None else KappaOut(*k),
            confusion=ConfusionOut(*c, *self.unscored_by, *self.missing_by, *self.na_by,
                                   *self.stale_by),
            fail_precision=agreement.fail_precision(c),
            fail_recall=agreement.fail_recall(c), unscored=self.unscored,
            na_verdicts=self.na_verdicts, labels_without_verdict=self.labels_without_verdict,
            na_labels=self.na_labels,
            na_with_verdict=self.na_with_verdict,
            verdicts_without_label=self.verdicts_without_label,
            unknown_case=self.unknown_case, stale=self.stale,
            coverage=coverage(c.pairs, c.pass_pass + c.fail_fail, self.na_verdicts,
                              self.unscored, self.stale, self.labels_without_verdict),
            **extra)


def _bump(pair: tuple[int, int], index: int, n: int) -> tuple[int, int]:
    return (pair[0] + n, pair[1]) if index == 0 else (pair[0], pair[1] + n)


def _rubric_results(rows: list[tuple[Any, ...]], listed: dict[tuple[int, str], list[Example]],
                    rubric_names: list[str], group_names: list[str], by: str | None,
                    confidence: float, rationales: dict[int, str | None],
                    view: str | None, stale_by_rubric: dict[int, StaleCounts] | None = None,
                    ) -> list[RubricAgreement]:
    """One RubricAgreement per rubric seen in either file, sorted by rubric id."""
    whole: dict[int, _Bucket] = {}
    by_source: dict[int, dict[int, _Bucket]] = {}
    by_group: dict[int, dict[int | None, _Bucket]] = {}
    labels: dict[int, Counter[str]] = {}
    verdicts: dict[int, Counter[str]] = {}
    for rubric, source, group, known, lstatus, vstatus, vstale, n in rows:
        whole.setdefault(rubric, _Bucket()).add(known, lstatus, vstatus, vstale, n)
        if source is not None:
            by_source.setdefault(rubric, {}).setdefault(source, _Bucket()).add(
                known, lstatus, vstatus, vstale, n)
        if by is not None:
            by_group.setdefault(rubric, {}).setdefault(group, _Bucket()).add(
                known, lstatus, vstatus, vstale, n)
        if lstatus is not None:
            labels.setdefault(rubric, Counter())[LABEL_STATUSES[lstatus]] += n
        if vstatus is not None:
            verdicts.setdefault(rubric, Counter())[STATUSES[vstatus]] += n
    results = []
    for rubric in sorted(whole, key=lambda r: rubric_names[r]):
        groups = by_group.get(rubric, {})
        ordered = sorted(groups, key=lambda g: (g is None, group_names[g] if g is not None else ""))
        counted = verdicts.get(rubric, Counter())
        total = sum(counted.values())
        results.append(RubricAgreement(
            rubric=rubric_names[rubric],
            labels={s: labels.get(rubric, Counter())[s] for s in LABEL_STATUSES},
            verdicts={s: counted[s] for s in STATUSES},
            unscored_rate=counted["unscored"] / total if total else None,
            all=whole[rubric].cell(confidence),
            by_source={LABEL_SOURCES[s]: b.cell(confidence)
                       for s, b in sorted(by_source.get(rubric, {}).items())},
            by_group=[groups[g].cell(confidence, GroupCell,
                                     group=None if g is None else group_names[g])
                      for g in ordered],
            examples=Examples(**{kind: [case_id for case_id, _ in listed.get((rubric, kind), [])]
                                 for kind in EXAMPLE_KINDS}),
            rationales=ExampleTexts(**{
                kind: [None if line is None else rationales.get(line)
                       for _, line in listed.get((rubric, kind), [])]
                for kind in EXAMPLE_KINDS}),
            pages=None if view is None else ExampleTexts(**{
                kind: [export_page(view, case_id, rubric_names[rubric])
                       for case_id, _ in listed.get((rubric, kind), [])]
                for kind in EXAMPLE_KINDS}),
            stale=None if stale_by_rubric is None else stale_by_rubric.get(rubric,
                                                                           StaleCounts()),
        ))
    return results


def run(opts: AgreeOptions,
        write: Callable[[AgreeReport, dict[str, AtomicOutput]], None] | None = None,
        extension: Extension | None = None) -> AgreeReport:
    """Read both files, join them and compute the agreement of every rubric. The report and
    page (``opts.output``, ``opts.html``) are checked with the rejects before anything is
    read and opened at once; ``write(report, opened)`` renders them, and they are committed
    with the rejects, all or none.

    Rejects go to ``opts.rejects`` when given (written only if the run succeeds); raises
    DuplicateKeyError (exit 2) when a verdict file repeats a key.
    """
    from evalstream._files.transaction import open_reports
    from evalstream.errors import UsageError

    if opts.verdicts == "-" and "-" in (opts.case_inputs or [opts.cases]):
        raise UsageError("only one of the verdicts and the cases can be read from stdin (-).")
    if opts.max_ids < 0:
        raise UsageError("--max-ids must be 0 or more.")
    if opts.by is not None and ("," in opts.by or not opts.by.strip(".")):
        raise UsageError(f"--by takes one metadata key (dots reach nested metadata), not "
                         f"{opts.by!r}.")
    usage = ("; usage: evalstream agree VERDICTS CASES..., or agree RUN_A RUN_B ... --cases "
             "CASES for several runs side by side")
    cases, targets, rubric_set = checked_inputs(opts, [opts.verdicts], usage,
                                                opts.more_targets, opts.view)
    rubrics, groups = Codes(MAX_RUBRICS), Codes()
    with targets:
        sink = RejectSink(opts.rejects, targets.open("rejects") if opts.rejects else None)
        reports = open_reports(targets, opts.format)
        pairs = bias.PairRows.new()
        verdict_file = read_verdicts(opts.verdicts, rubrics, sink, with_hashes=True,
                                     max_line_bytes=opts.max_line_bytes,
                                     allow_unknown_fields=opts.allow_unknown_fields,
                                     pairs=pairs,
                                     each=extension.verdict if extension else None)
        case_file, expected = cases_and_states(opts, cases, rubric_set, rubrics, groups, sink,
                                               opts.by)
        verdicts = staleness.mark(verdict_file.frame, expected)
        stale_all, stale_by_rubric = staleness.counts(verdicts)
        joined = _joined(verdicts, case_file.labels, case_file.cases)
        rows, examples = _count_rows(joined, case_file.cases["case_id"], opts.max_ids)
        lines = {line for listed in examples.values() for _, line in listed if line is not None}
        rationales = rationales_at(opts.verdicts, lines, opts.max_line_bytes)
        results = _rubric_results(rows, examples, rubrics.names, groups.names, opts.by,
                                  opts.confidence, rationales, opts.view,
                                  None if expected is None else stale_by_rubric)
        audited = bias.audit(pairs, joined, case_file.labels, case_file.cases, rubrics.names,
                             opts.confidence)
        rejected = verdict_file.summary.rejected + case_file.summary.rejected
        too_many = over_unscored_rate(verdict_file.summary, opts.max_unscored_rate)
        stale_check = None if expected is None else StaleCheck(expected.against, stale_all)
        failed_stale = opts.fail_on_stale and stale_check is not None \
            and stale_check.counts.stale > 0
        report = AgreeReport(
            command="agree", evalstream=__version__, verdicts=verdict_file.summary,
            cases=case_file.summary, by=opts.by, confidence=opts.confidence,
            max_ids=opts.max_ids, max_unscored_rate=opts.max_unscored_rate, view=opts.view,
            rubrics=results, rejects=opts.rejects,
            exit_code=1 if rejected or too_many or failed_stale else 0, stale=stale_check,
            fail_on_stale=opts.fail_on_stale, bias=audited)
        if extension is not None:  # the hook of a module beside agree (a panel's jurors)
            stale_lines = verdicts.select("line", "stale")

            def cells(frame: pl.DataFrame) -> list[RubricAgreement]:
                # Each row is a verdict's (its line): stale as that verdict is, left out alike.
                marked = frame.join(stale_lines, on="line", how="left")
                found, _ = _count_rows(_joined(marked, case_file.labels, case_file.cases),
                                       case_file.cases["case_id"], 0)
                return _rubric_results(found, {}, rubrics.names, groups.names, opts.by,
                                       opts.confidence, {}, None,
                                       None if expected is None else stale_by_rubric)

            def of(frame: pl.DataFrame) -> pl.LazyFrame:
                # An extension's frame, its rows stale as their verdicts are, its own columns kept.
                extra = tuple(c for c in frame.columns if c not in ("case_id", "rubric",
                                                                    "status", "line", "stale"))
                marked = frame.join(stale_lines, on="line", how="left")
                return _joined(marked, case_file.labels, case_file.cases, extra)

            report = extension.report(report, cells, Joined(
                of, rubrics.names, groups.names, cases, case_file.cases["case_id"],
                targets, stale_lines))
        if write is not None:
            write(report, reports)  # committed with the rejects, all or none
    return report


def stale_rubrics(rubric_files: list[str], states: str | None) -> RubricSet | None:
    """The rubric set whose states are rebuilt from the cases to find stale verdicts (the
    files given, else the built-in set), or None when build's output is read instead
    (``states``); RubricError for a file that cannot be used, before anything is read."""
    from evalstream._checks.rubrics import load_rubrics
    from evalstream.errors import UsageError

    if states is not None:
        if rubric_files:
            raise UsageError("give --states (build's output) or --rubrics (to rebuild the "
                             "states from the cases), not both: the states file says which "
                             "rubrics built it.")
        return None
    return load_rubrics(rubric_files)


def against_rubrics(rubric_files: list[str]) -> str:
    """What the stale check compares with, said as the report says it."""
    named = ", ".join(rubric_files) if rubric_files else "builtin"
    return f"the judge states build makes of the cases today, with the rubrics {named}"


class _Inputs(Protocol):
    """The options agree and its several runs side by side share: the inputs and targets."""

    @property
    def cases(self) -> str: ...
    @property
    def case_inputs(self) -> list[str]: ...
    @property
    def confidence(self) -> float: ...
    @property
    def max_unscored_rate(self) -> float | None: ...
    @property
    def states(self) -> str | None: ...
    @property
    def rubric_files(self) -> list[str]: ...
    @property
    def output(self) -> str | None: ...
    @property
    def format(self) -> str: ...
    @property
    def html(self) -> str | None: ...
    @property
    def rejects(self) -> str | None: ...
    @property
    def force(self) -> bool: ...
    @property
    def max_line_bytes(self) -> int: ...
    @property
    def allow_unknown_fields(self) -> bool: ...


def checked_inputs(opts: _Inputs, verdicts: list[str], usage: str,
                   more_targets: list[Target] | None = None, view: str | None = None,
                   ) -> tuple[list[str], Transaction, RubricSet | None]:
    """Check the options and inputs of agree (one verdict file) or of several runs side by
    side (``verdicts``), before anything is read: the case files, the checked transaction
    (the targets before the inputs' first bytes are read: an input named as a target is
    refused as that, whatever it holds) and the rubric set to rebuild the states with (None
    when ``opts.states`` is read instead). UsageError names the option or file."""
    from evalstream._files.sniff import check_input
    from evalstream._files.transaction import Transaction, report_targets
    from evalstream.errors import UsageError

    if not 0 < opts.confidence < 1:
        raise UsageError("--confidence must be between 0 and 1 (e.g. 0.95).")
    check_unscored_rate(opts.max_unscored_rate)
    cases = case_files(opts.cases, opts.case_inputs)
    inputs = [*(("verdicts", p) for p in verdicts), *(("cases", c) for c in cases),
              *([("states", opts.states)] if opts.states else []),
              *(("rubrics", path) for path in opts.rubric_files if path != "builtin")]
    targets = Transaction(inputs, report_targets(opts.output, opts.format, opts.html,
                                                 opts.rejects) + (more_targets or []),
                          opts.force).check()
    for path in verdicts:
        check_input(path, "verdicts", usage)
    for path in cases:
        check_input(path, "cases", usage)
    check_view(view)
    rubric_set = stale_rubrics(opts.rubric_files, opts.states)
    if opts.states is not None:
        check_input(opts.states, "judge states", "; --states takes build's output")
    return cases, targets, rubric_set


def cases_and_states(opts: _Inputs, cases: list[str], rubric_set: RubricSet | None,
                     rubrics: Codes, groups: Codes, sink: RejectSink, by: str | None = None,
                     ) -> tuple[CaseFile, staleness.Expected | None]:
    """Read the cases (``cases``: ``case_files``) and what build makes of them today: rebuilt
    with ``rubric_set`` as each case is read, or build's output (``opts.states``), or None
    when neither is known."""
    rebuilt = None if rubric_set is None else staleness.FromCases(
        rubric_set, rubrics, against_rubrics(opts.rubric_files))
    case_file = read_labels(opts.cases, rubrics, groups, sink, by=by,
                            max_line_bytes=opts.max_line_bytes,
                            allow_unknown_fields=opts.allow_unknown_fields,
                            on_case=None if rebuilt is None else rebuilt.add, files=cases)
    if rebuilt is not None:
        return case_file, rebuilt.expected()
    if opts.states is not None:
        return case_file, staleness.from_states(opts.states, rubrics, opts.max_line_bytes,
                                                opts.allow_unknown_fields)
    return case_file, None


def check_view(view: str | None) -> None:
    """Raise UsageError unless ``view`` is None or a view export folder."""
    from evalstream.errors import UsageError

    if view is not None and not is_export(view):
        raise UsageError(f"{view} is not an evalstream view export (it has no {MARKER}); "
                         "write one with `evalstream view VERDICTS --cases CASES --export "
                         f"{view}`.")


def check_unscored_rate(rate: float | None) -> None:
    """Raise UsageError unless ``rate`` is None or a share between 0 and 1."""
    from evalstream.errors import UsageError

    if rate is not None and not 0 <= rate <= 1:
        raise UsageError(f"--max-unscored-rate must be between 0 and 1 (e.g. 0.02), not {rate}.")


def nothing_scored(summary: VerdictFileSummary) -> bool:
    """Whether the file holds no scored verdict: none at all (empty, or judge states not
    judged yet), or every one unscored. Such a file measures nothing, whatever its report
    says, so it is never a green run (as ``judge`` exits 1 when every verdict is unscored)."""
    return summary.verdicts == summary.by_status.get("unscored", 0)


def over_unscored_rate(summary: VerdictFileSummary, limit: float | None) -> bool:
    """Whether the file's share of unscored verdicts is above ``limit`` (None: no limit), or
    the file holds no scored verdict at all (``nothing_scored``), whatever the limit."""
    if nothing_scored(summary):
        return True
    return limit is not None and summary.unscored_rate is not None \
        and summary.unscored_rate > limit


def encode(report: AgreeReport) -> bytes:
    """The report as indented JSON with a final newline."""
    from evalstream._files.outputs import escape_line_breaks

    return escape_line_breaks(msgspec.json.format(msgspec.json.encode(report), indent=2)) + b"\n"


