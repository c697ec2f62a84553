"""``compare``: what changed between two judge runs, pair by pair on (case id, rubric).

Both verdict files are streamed into compact columns (key, status, line, and 64-bit
hashes of ``rubric_hash``, ``state_hash`` and the exposure's ``shown`` names) and joined
with Polars. A pair is comparable when the judge saw the same thing in both runs: the same
rubric, the same state and the same exposure (a field absent from both verdicts counts as
the same; absent from one only, as different). Pairs that are not comparable are counted
by reason and left out of the statistics unless ``include_incomparable``. Per rubric:

    keys = only_a + only_b + paired;  paired = not_comparable + comparable
    compared = comparable (+ not_comparable with include_incomparable)
             = scored + pairs with an unscored side
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct

from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._verdicts import agreement
from evalstream._verdicts import stale as staleness
from evalstream._verdicts.links import export_page
from evalstream._verdicts.records import (
    FAIL,
    MAX_RUBRICS,
    PASS,
    STATUSES,
    Codes,
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

    from evalstream._files.outputs import AtomicOutput


DEFAULT_MAX_IDS = 20
STALE = [staleness.STATE, staleness.RUBRIC]
HASHES = ("rubric_hash", "state_hash", "exposure")
TRANSITIONS = tuple(f"{a}->{b}" for a in STATUSES for b in STATUSES)
EXAMPLE_KINDS = ("pass_to_fail", "fail_to_pass", "not_comparable", "only_a", "only_b",
                 "stale")


class McNemarOut(Struct):
    """McNemar's test: ``b`` pass->fail and ``c`` fail->pass flips; method exact or chi2-cc."""

    b: int
    c: int
    statistic: float
    p_value: float
    method: str


class Examples(Struct):
    """The first case ids of each kind, in run A's line order (run B's for ``only_b``)."""

    pass_to_fail: list[str]
    fail_to_pass: list[str]
    not_comparable: list[str]
    only_a: list[str]
    only_b: list[str]
    stale: list[str] = []  # a key whose verdict is stale in either run (with --cases, --states)


class Rationales(Struct):
    """The judge's rationale in each run (null: no verdict there, none given, or read from
    stdin)."""

    a: str | None
    b: str | None


class ExampleRationales(Struct):
    """The rationales of each listed example, in the order of ``Examples``."""

    pass_to_fail: list[Rationales]
    fail_to_pass: list[Rationales]
    not_comparable: list[Rationales]
    only_a: list[Rationales]
    only_b: list[Rationales]
    stale: list[Rationales] = []


class ExamplePages(Struct):
    """Each listed example's page in a view export (null: the export does not hold it)."""

    pass_to_fail: list[str | None]
    fail_to_pass: list[str | None]
    not_comparable: list[str | None]
    only_a: list[str | None]
    only_b: list[str | None]
    stale: list[str | None] = []


class Counts(Struct):
    """The counts of one rubric, or of all rubrics together."""

    keys: int
    only_a: int
    only_b: int
    paired: int
    comparable: int  # = checked + unchecked
    checked: int  # comparable, with all three fields present in both runs: really checked
    unchecked: int  # comparable only because a field is absent from both runs (not checked)
    not_comparable: int
    differs: dict[str, int]  # rubric_hash, state_hash, exposure: pairs that differ in it
    forced: int  # not comparable, yet in the statistics (--force)
    compared: int  # pairs in the statistics
    absent_on_both: dict[str, int]  # compared pairs where neither verdict has the field
    transitions: dict[str, int]  # "pass->fail": compared pairs by (run A, run B) status
    scored: int  # compared pairs with pass or fail on both sides
    stale: int = 0  # keys whose verdict is stale in either run (checked with --cases, --states)


class RubricComparison(Struct):
    """Everything ``compare`` found for one rubric."""

    rubric: str
    counts: Counts
    pass_rate_a: float | None
    pass_rate_b: float | None
    difference: float | None  # pass_rate_b - pass_rate_a
    mcnemar: McNemarOut | None  # None when no pair is scored on both sides
    examples: Examples
    rationales: ExampleRationales
    pages: ExamplePages | None  # with --view
    # Each run's verdicts of this rubric checked for staleness (None: not checked).
    stale_a: StaleCounts | None = None
    stale_b: StaleCounts | None = None


class CompareReport(Struct):
    """The result of ``compare``: the JSON output, and what the other styles show."""

    command: str
    evalstream: str
    run_a: VerdictFileSummary
    run_b: VerdictFileSummary
    include_incomparable: bool
    max_ids: int
    max_unscored_rate: float | None
    view: str | None  # the view export the example ids link to
    summary: Counts
    rubrics: list[RubricComparison]
    rejects: str | None
    exit_code: int
    # What each run's verdicts were checked against for staleness (None: not checked, no
    # --cases or --states given); with ``fail_on_stale`` a stale verdict makes the exit 1.
    stale_a: StaleCheck | None = None
    stale_b: StaleCheck | None = None
    fail_on_stale: bool = False


@dataclass
class CompareOptions:
    """What a ``compare`` run needs; ``evalstream.compare`` fills it."""

    run_a: str
    run_b: str
    include_incomparable: bool = False
    rejects: str | None = None
    force: bool = False  # replace a rejects target that holds something else
    max_ids: int = DEFAULT_MAX_IDS
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    allow_unknown_fields: bool = False
    max_unscored_rate: float | None = None  # exit 1 when either run's unscored rate is above
    view: str | None = None  # a view export folder (of run A): link each example id to its page
    # The report (in ``format``; ``-``: stdout) and its HTML page, rendered by the caller's
    # ``write`` (``_render`` sits above this package) and committed with the rejects.
    output: str | None = None
    html: str | None = None
    format: str = "table"
    # Stale verdicts: each run checked against the states build makes of ``cases`` with
    # ``rubric_files`` (empty: the built-in set), or against build's output (``states``);
    # neither given: not checked.
    cases: str | None = None
    rubric_files: list[str] = field(default_factory=list)
    states: str | None = None
    fail_on_stale: bool = False  # exit 1 when a verdict of either run is stale


# -- joining and counting --------------------------------------------------------------------------
def _joined(a: pl.DataFrame, b: pl.DataFrame) -> pl.LazyFrame:
    """Every key of either run; run B's columns end in ``_b``; flags say what differs."""
    import polars as pl

    joined = a.lazy().join(b.lazy(), on=["case_id", "rubric"], how="full", coalesce=True,
                           suffix="_b")
    paired = pl.col("line").is_not_null() & pl.col("line_b").is_not_null()
    return joined.with_columns(
        in_a=pl.col("line").is_not_null(), in_b=pl.col("line_b").is_not_null(),
        stale_any=pl.col("stale").is_in(STALE).fill_null(False)
        | pl.col("stale_b").is_in(STALE).fill_null(False),
        **{f"d_{h}": paired & ~pl.col(h).eq_missing(pl.col(f"{h}_b")) for h in HASHES},
        **{f"n_{h}": pl.col(h).is_null() & pl.col(f"{h}_b").is_null() for h in HASHES})


def _kind_exprs(force: bool) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Which example lists a joined row belongs to: by presence and comparability, by flip
    (a forced pair can be in both), and stale in either run."""
    import polars as pl

    differs = pl.col("d_rubric_hash") | pl.col("d_state_hash") | pl.col("d_exposure")
    included = pl.col("in_a") & pl.col("in_b") & (pl.lit(True) if force else ~differs)
    a, b = pl.col("status"), pl.col("status_b")
    pairing = (pl.when(~pl.col("in_b")).then(pl.lit("only_a"))
               .when(~pl.col("in_a")).then(pl.lit("only_b"))
               .when(differs).then(pl.lit("not_comparable"))
               .otherwise(None))
    flip = (pl.when(included & (a == PASS) & (b == FAIL)).then(pl.lit("pass_to_fail"))
            .when(included & (a == FAIL) & (b == PASS)).then(pl.lit("fail_to_pass"))
            .otherwise(None))
    stale = pl.when(pl.col("stale_any")).then(pl.lit("stale")).otherwise(None)
    return pairing, flip, stale


Example = tuple[str, int | None, int | None]  # a case id, its verdict lines in run A and B


def _count_rows(joined: pl.LazyFrame, max_ids: int, force: bool,
                ) -> tuple[list[dict[str, Any]], dict[tuple[int, str], list[Example]]]:
    import polars as pl

    keys = ["rubric", "in_a", "in_b", *(f"d_{h}" for h in HASHES),
            *(f"n_{h}" for h in HASHES), "status", "status_b", "stale_any"]
    # One query at a time: run together, each builds its own join and the peak doubles.
    counts = joined.group_by(keys).agg(pl.len().alias("n")).collect(engine="streaming")
    examples: dict[tuple[int, str], list[Example]] = {}
    for kind in _kind_exprs(force) if max_ids > 0 else ():
        found = first_rows(
            joined.with_columns(kind=kind, order=pl.coalesce("line", "line_b"))
            .filter(pl.col("kind").is_not_null()).select("rubric", "kind", "order", "case_id",
                                                         "line", "line_b"),
            ["rubric", "kind"], "order", max_ids)
        for rubric, name, _, case_id, line, line_b in found.iter_rows():
            examples.setdefault((rubric, name), []).append((case_id, line, line_b))
    return counts.to_dicts(), examples


class _Tally:
    def __init__(self) -> None:
        self.keys = self.only_a = self.only_b = self.paired = self.not_comparable = 0
        self.forced = self.compared = self.scored = self.unchecked = self.stale = 0
        self.differs = dict.fromkeys(HASHES, 0)
        self.absent = dict.fromkeys(HASHES, 0)
        self.transitions = dict.fromkeys(TRANSITIONS, 0)

    def add(self, row: dict[str, Any], force: bool) -> None:
        n = row["n"]
        self.keys += n
        if row["stale_any"]:
            self.stale += n
        if not row["in_b"]:
            self.only_a += n
            return
        if not row["in_a"]:
            self.only_b += n
            return
        self.paired += n
        differs = [h for h in HASHES if row[f"d_{h}"]]
        for h in differs:
            self.differs[h] += n
        if differs:
            self.not_comparable += n
            if not force:
                return
            self.forced += n
        elif any(row[f"n_{h}"] for h in HASHES):
            self.unchecked += n
        self.compared += n
        for h in HASHES:
            if row[f"n_{h}"]:
                self.absent[h] += n
        a, b = row["status"], row["status_b"]
        self.transitions[f"{STATUSES[a]}->{STATUSES[b]}"] += n
        if a in (PASS, FAIL) and b in (PASS, FAIL):
            self.scored += n

    def counts(self) -> Counts:
        return Counts(keys=self.keys, only_a=self.only_a, only_b=self.only_b, paired=self.paired,
                      comparable=self.paired - self.not_comparable,
                      checked=self.paired - self.not_comparable - self.unchecked,
                      unchecked=self.unchecked,
                      not_comparable=self.not_comparable, differs=self.differs,
                      forced=self.forced, compared=self.compared, absent_on_both=self.absent,
                      transitions=self.transitions, scored=self.scored, stale=self.stale)


def _comparison(rubric: str, tally: _Tally, examples: dict[str, list[Example]],
                rationales: tuple[dict[int, str | None], dict[int, str | None]],
                view: str | None) -> RubricComparison:
    t = tally.transitions
    pp, pf, fp = t["pass->pass"], t["pass->fail"], t["fail->pass"]
    n = tally.scored
    rate_a = (pp + pf) / n if n else None
    rate_b = (pp + fp) / n if n else None
    test = agreement.mcnemar(pf, fp) if n else None
    return RubricComparison(
        rubric=rubric, counts=tally.counts(), pass_rate_a=rate_a, pass_rate_b=rate_b,
        difference=None if rate_a is None or rate_b is None else rate_b - rate_a,
        mcnemar=None if test is None else McNemarOut(*test),
        examples=Examples(**{k: [e[0] for e in examples.get(k, [])] for k in EXAMPLE_KINDS}),
        rationales=ExampleRationales(**{k: [
            Rationales(None if a is None else rationales[0].get(a),
                       None if b is None else rationales[1].get(b))
            for _, a, b in examples.get(k, [])] for k in EXAMPLE_KINDS}),
        pages=None if view is None else ExamplePages(**{
            k: [export_page(view, e[0], rubric) for e in examples.get(k, [])]
            for k in EXAMPLE_KINDS}))


def run(opts: CompareOptions,
        write: Callable[[CompareReport, dict[str, AtomicOutput]], None] | None = None,
        ) -> CompareReport:
    """Read both runs, join them and compare them rubric by rubric. The report and page
    (``opts.output``, ``opts.html``) are checked with the rejects before anything is read and
    opened at once; ``write(report, opened)`` renders them, and they are committed with the
    rejects, all or none.

    Rejects go to ``opts.rejects`` when given; raises DuplicateKeyError (exit 2) when a run
    repeats a key.
    """
    from evalstream._files.transaction import Transaction, open_reports, report_targets
    from evalstream._verdicts.agree import check_unscored_rate, check_view, over_unscored_rate
    from evalstream.errors import UsageError

    if opts.run_a == "-" and opts.run_b == "-":
        raise UsageError("only one of the two runs can be read from stdin (-).")
    from evalstream._files.sniff import check_input

    if opts.max_ids < 0:
        raise UsageError("--max-ids must be 0 or more.")
    check_unscored_rate(opts.max_unscored_rate)
    # The targets before the runs' first bytes are read (as agree's).
    inputs = [("run-a", opts.run_a), ("run-b", opts.run_b),
              *([("cases", opts.cases)] if opts.cases else []),
              *([("states", opts.states)] if opts.states else []),
              *(("rubrics", path) for path in opts.rubric_files if path != "builtin")]
    targets = Transaction(inputs, report_targets(opts.output, opts.format, opts.html,
                                                 opts.rejects), opts.force).check()
    usage = "; compare reads two verdict files (the runs to compare)"
    check_input(opts.run_a, "verdicts", usage)
    check_input(opts.run_b, "verdicts", usage)
    check_view(opts.view)
    from evalstream._verdicts.agree import against_rubrics, stale_rubrics

    if opts.cases is None and opts.rubric_files:
        raise UsageError("--rubrics rebuilds the states of --cases to find stale verdicts; give "
                         "--cases CASES with it.")
    rubric_set = None if opts.cases is None else stale_rubrics(opts.rubric_files, opts.states)
    if opts.cases is not None:
        check_input(opts.cases, "cases", "; --cases takes the cases the runs judged")
    if opts.states is not None:
        check_input(opts.states, "judge states", "; --states takes build's output")
    rubrics = Codes(MAX_RUBRICS)
    with targets:
        sink = RejectSink(opts.rejects, targets.open("rejects") if opts.rejects else None)
        reports = open_reports(targets, opts.format)
        files = [read_verdicts(path, rubrics, sink, with_hashes=True,
                               max_line_bytes=opts.max_line_bytes,
                               allow_unknown_fields=opts.allow_unknown_fields)
                 for path in (opts.run_a, opts.run_b)]
        expected = None
        if opts.states is not None:
            expected = staleness.from_states(opts.states, rubrics, opts.max_line_bytes,
                                             opts.allow_unknown_fields)
        elif opts.cases is not None and rubric_set is not None:
            expected = staleness.from_cases(opts.cases, rubric_set, rubrics,
                                            against_rubrics(opts.rubric_files),
                                            opts.max_line_bytes, opts.allow_unknown_fields)
        marked = [staleness.mark(f.frame, expected) for f in files]
        stale_counts = [staleness.counts(frame) for frame in marked]
        rows, example_rows = _count_rows(_joined(marked[0], marked[1]), opts.max_ids,
                                         opts.include_incomparable)
        lines_a = {a for listed in example_rows.values() for _, a, _ in listed if a is not None}
        lines_b = {b for listed in example_rows.values() for _, _, b in listed if b is not None}
        rationales = (rationales_at(opts.run_a, lines_a, opts.max_line_bytes),
                      rationales_at(opts.run_b, lines_b, opts.max_line_bytes))
        tallies: dict[int, _Tally] = {}
        whole = _Tally()
        for row in rows:
            tallies.setdefault(row["rubric"], _Tally()).add(row, opts.include_incomparable)
            whole.add(row, opts.include_incomparable)
        results = [_comparison(rubrics.names[r], tallies[r],
                               {k: ids for (rubric, k), ids in example_rows.items()
                                if rubric == r},
                               rationales, opts.view)
                   for r in sorted(tallies, key=lambda r: rubrics.names[r])]
        if expected is not None:
            for r, result in zip(sorted(tallies, key=lambda r: rubrics.names[r]), results,
                                 strict=True):
                result.stale_a = stale_counts[0][1].get(r, StaleCounts())
                result.stale_b = stale_counts[1][1].get(r, StaleCounts())
        checks = [None if expected is None else StaleCheck(expected.against, whole_counts)
                  for whole_counts, _ in stale_counts]
        rejected = files[0].summary.rejected + files[1].summary.rejected
        too_many = any(over_unscored_rate(f.summary, opts.max_unscored_rate) for f in files)
        too_many = too_many or (opts.fail_on_stale and any(
            c is not None and c.counts.stale for c in checks))
        report = CompareReport(
            command="compare", evalstream=__version__, run_a=files[0].summary,
            run_b=files[1].summary, include_incomparable=opts.include_incomparable,
            max_ids=opts.max_ids,
            max_unscored_rate=opts.max_unscored_rate, view=opts.view, summary=whole.counts(),
            rubrics=results, rejects=opts.rejects,
            exit_code=1 if rejected or too_many else 0, stale_a=checks[0], stale_b=checks[1],
            fail_on_stale=opts.fail_on_stale)
        if write is not None:
            write(report, reports)  # committed with the rejects, all or none
    return report


def encode(report: CompareReport) -> bytes:
    """The report as indented JSON with a final newline."""
    from evalstream._files.outputs import escape_line_breaks

    return escape_line_breaks(msgspec.json.format(msgspec.json.encode(report), indent=2)) + b"\n"


