"""``agree A.jsonl B.jsonl C.jsonl --cases cases.jsonl`` (issue 26): several judge runs over the
same states side by side, which agrees best with people, and at what cost.

The cases are read once (``agree.read_labels``), each run's verdicts with the same rubric
codes (``records.read_verdicts``), and each run is counted against the labels exactly as
``agree`` counts one file (``agree``'s join and cells), so a row here is ``agree RUN CASES``'s
figures for that rubric. Beside them: the unscored rate, and the tokens and cost per 1,000
judge states from the verdicts' ``usage`` (a panel's verdict: each vote's, priced by the
vote's model) at the prices given per model (``--price MODEL=IN,OUT``; none are built in).
Rows are sorted by Cohen's kappa with the labels (undefined last), then accuracy.

Coverage first and stale verdicts as ``agree`` has them (issue 25), per run: each row says
over how many pass/fail labels it is computed and its accuracy over all of them
(``coverage``), and each run's verdicts are checked for staleness against the same states
(rebuilt once from the cases with ``--rubrics``, default the built-in set, or build's output
``--states``), a stale verdict counted in its row and left out of its figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct

from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._verdicts import agreement
from evalstream._verdicts import stale as staleness
from evalstream._verdicts.agree import (
    CaseFileSummary,
    KappaOut,
    _count_rows,
    _joined,
    _rubric_results,
    cases_and_states,
    checked_inputs,
    over_unscored_rate,
)
from evalstream._verdicts.cost import Price, usd
from evalstream._verdicts.coverage import Coverage
from evalstream._verdicts.records import (
    MAX_RUBRICS,
    Codes,
    RejectSink,
    VerdictFileSummary,
    read_verdicts,
)
from evalstream._verdicts.stale import StaleCheck
from evalstream._version import __version__

if TYPE_CHECKING:
    from evalstream._files.outputs import AtomicOutput

PER = 1000  # tokens and cost per this many judge states


class JudgeRow(Struct):
    """One run on one rubric: its agreement with the labels (as ``agree`` counts it), its
    unscored verdicts, and its tokens and cost per 1,000 judge states."""

    run: str  # the verdict file
    judge: str  # the model most of its verdicts name (a jury's name for a panel)
    verdicts: int
    pairs: int
    accuracy: float | None
    kappa: KappaOut | None
    fail_precision: float | None
    fail_recall: float | None
    unscored: int
    unscored_rate: float | None
    input_tokens_per_1000: float | None  # None: no verdict of it says its usage
    output_tokens_per_1000: float | None
    cost_per_1000: float | None  # None: a model it used has no price given
    unpriced: list[str]  # the models of its verdicts (or votes) without a price
    # Over how many pass/fail labels its figures are computed, and what they left out.
    coverage: Coverage | None = None
    stale: int = 0  # pass/fail labels whose verdict of this run is stale: left out


class RubricJudges(Struct):
    """The runs on one rubric, the best agreement with people first."""

    rubric: str
    rows: list[JudgeRow]


class JudgesReport(Struct):
    """The result of ``agree A B C --cases CASES``: the JSON, and what the table, markdown
    and HTML show."""

    command: str
    evalstream: str
    runs: list[VerdictFileSummary]
    cases: CaseFileSummary
    confidence: float
    prices: dict[str, Price]
    max_unscored_rate: float | None
    rubrics: list[RubricJudges]
    rejects: str | None
    exit_code: int
    # What each run's verdicts were checked against for staleness, and what was found, one a
    # run in the order of ``runs`` (empty: not checked); ``fail_on_stale``: exit 1 on one.
    stale: list[StaleCheck] = []
    fail_on_stale: bool = False


@dataclass
class JudgesOptions:
    """What a run of ``agree_judges`` needs; ``evalstream.agree_judges`` fills it."""

    runs: list[str]
    cases: str  # the cases' argument, or several joined by spaces (as build names its input)
    prices: dict[str, tuple[float, float]] | None = None  # by model; None: none given
    confidence: float = agreement.DEFAULT_CONFIDENCE
    rejects: str | None = None
    force: bool = False
    max_unscored_rate: float | None = None
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    allow_unknown_fields: bool = False
    output: str | None = None
    html: str | None = None
    format: str = "table"
    # Stale verdicts, as agree finds them: the rubric files whose states are rebuilt from the
    # cases (empty: the built-in set), or build's output (``states``).
    rubric_files: list[str] = field(default_factory=list)
    states: str | None = None
    fail_on_stale: bool = False
    # Several case files, globs or both, read in order as one, as build reads its inputs.
    case_inputs: list[str] = field(default_factory=list)


@dataclass
class _Spend:
    """One run's verdicts of one rubric: their tokens, their cost, what had no price."""

    verdicts: int = 0
    said: int = 0  # verdicts whose usage (or a vote's) is known
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    unpriced: set[str] = field(default_factory=set)


class _Usage:
    """``read_verdicts``' ``each``: the tokens and cost of each verdict, by rubric."""

    def __init__(self, prices: Mapping[str, tuple[float, float]]) -> None:
        self.prices = prices
        self.by_rubric: dict[int, _Spend] = {}

    def __call__(self, rubric: int, line: int, v: Any) -> None:
        spend = self.by_rubric.setdefault(rubric, _Spend())
        spend.verdicts += 1
        parts = [(vote.model or vote.judge, vote.usage) for vote in v.votes] if v.votes else \
            [(v.judge.model if v.judge is not None else "(no judge)", v.usage)]
        known = False
        for model, usage in parts:
            if usage is None:
                continue
            known = True
            spend.input_tokens += usage.input_tokens
            spend.output_tokens += usage.output_tokens
            price = self.prices.get(model)
            if price is None:
                spend.unpriced.add(model)
            else:
                spend.cost += usd(usage.input_tokens, usage.output_tokens, *price)
        spend.said += known


def run(opts: JudgesOptions,
        write: Callable[[JudgesReport, dict[str, AtomicOutput]], None] | None = None,
        ) -> JudgesReport:
    """Read the cases once and every run, count each against the labels and write the report
    (``write``, into the targets opened with the rejects: all committed, or none)."""
    from evalstream._files.transaction import open_reports
    from evalstream.errors import UsageError

    if len(opts.runs) < 1:
        raise UsageError("give the verdict files of the runs to set side by side, then --cases "
                         "CASES.")
    if sum(p == "-" for p in [*opts.runs, *(opts.case_inputs or [opts.cases])]) > 1:
        raise UsageError("only one of the verdict files and the cases can be read from stdin "
                         "(-).")
    usage = "; usage: evalstream agree RUN_A RUN_B ... --cases CASES"
    cases, targets, rubric_set = checked_inputs(opts, opts.runs, usage)
    rubrics, groups = Codes(MAX_RUBRICS), Codes()
    with targets:
        sink = RejectSink(opts.rejects, targets.open("rejects") if opts.rejects else None)
        reports = open_reports(targets, opts.format)
        files, spent = [], []
        for path in opts.runs:
            used = _Usage(opts.prices or {})
            files.append(read_verdicts(path, rubrics, sink, with_hashes=True,
                                       max_line_bytes=opts.max_line_bytes,
                                       allow_unknown_fields=opts.allow_unknown_fields,
                                       each=used))
            spent.append(used)
        # What build makes of the cases today, once for every run (as agree finds it).
        case_file, expected = cases_and_states(opts, cases, rubric_set, rubrics, groups, sink)
        rows: dict[str, list[JudgeRow]] = {}
        checks = []
        for path, found, used in zip(opts.runs, files, spent, strict=True):
            verdicts = staleness.mark(found.frame, expected)
            stale_all, stale_by_rubric = staleness.counts(verdicts)
            if expected is not None:
                checks.append(StaleCheck(expected.against, stale_all))
            counted, _ = _count_rows(_joined(verdicts, case_file.labels, case_file.cases),
                                     case_file.cases["case_id"], 0)
            judge = next(iter(found.summary.judges), "(no judge)")
            for r in _rubric_results(counted, {}, rubrics.names, groups.names, None,
                                     opts.confidence, {}, None,
                                     None if expected is None else stale_by_rubric):
                spend = used.by_rubric.get(rubrics.of[r.rubric], _Spend())
                rows.setdefault(r.rubric, []).append(_row(path, judge, r, spend))
        rejected = sum(f.summary.rejected for f in files) + case_file.summary.rejected
        too_many = any(over_unscored_rate(f.summary, opts.max_unscored_rate) for f in files)
        failed_stale = opts.fail_on_stale and any(c.counts.stale for c in checks)
        report = JudgesReport(
            command="agree", evalstream=__version__, runs=[f.summary for f in files],
            cases=case_file.summary, confidence=opts.confidence,
            prices={m: Price(*p) for m, p in sorted((opts.prices or {}).items())},
            max_unscored_rate=opts.max_unscored_rate,
            rubrics=[RubricJudges(rubric, sorted(found, key=_rank))
                     for rubric, found in sorted(rows.items())],
            rejects=opts.rejects, exit_code=1 if rejected or too_many or failed_stale else 0,
            stale=checks, fail_on_stale=opts.fail_on_stale)
        if write is not None:
            write(report, reports)
    return report


def _row(path: str, judge: str, r: Any, spend: _Spend) -> JudgeRow:
    c = r.all
    verdicts = sum(r.verdicts.values())
    per = PER / spend.verdicts if spend.verdicts else 0.0
    said = spend.said > 0  # a verdict of it said its usage
    return JudgeRow(
        run=path, judge=judge, verdicts=verdicts, pairs=c.pairs, accuracy=c.accuracy,
        kappa=c.kappa, fail_precision=c.fail_precision, fail_recall=c.fail_recall,
        unscored=r.verdicts["unscored"], unscored_rate=r.unscored_rate,
        input_tokens_per_1000=round(spend.input_tokens * per, 3) if said else None,
        output_tokens_per_1000=round(spend.output_tokens * per, 3) if said else None,
        cost_per_1000=round(spend.cost * per, 6) if said and not spend.unpriced else None,
        unpriced=sorted(spend.unpriced), coverage=c.coverage, stale=c.stale)


def _rank(row: JudgeRow) -> tuple[bool, float, float, str]:
    """Best agreement with people first: kappa (undefined last), then accuracy, then name."""
    kappa = row.kappa.value if row.kappa is not None else 0.0
    return (row.kappa is None, -kappa, -(row.accuracy or 0.0), row.run)


def encode(report: JudgesReport) -> bytes:
    """The report as indented JSON with a final newline."""
    from evalstream._files.outputs import escape_line_breaks

    return escape_line_breaks(msgspec.json.format(msgspec.json.encode(report), indent=2)) + b"\n"
