"""``agree`` on how sure the judge was (issue 29): the calibration of the verdicts' confidence,
the pass rates corrected with the labels (``--estimate``), and the cases worth labelling next
(``--to-label N``).

While agree reads the verdicts, ``SurenessExtension.verdict`` keeps one compact row a verdict
(its key, status and line as agree keeps them, the probability it gave its own status and
the share of a panel's scored votes that differ from the decision). The report joins those
rows to the labels with agree's own join (``agree.Joined``) and counts, with Polars:

- calibration, where verdicts carry ``confidence``: per rubric and label source, the
  reliability table and the expected calibration error (``calibration``) over the pairs;
- ``--estimate``: per rubric and ``--by`` group, the judge's raw pass rate, the labelled
  pass rate and the prediction-powered estimate with its interval (``estimate``), and how
  many more labels bring the interval to ``--target-width``;
- ``--to-label N``: the N checks without a label whose label would help most (written as
  their cases, for a labelling tool; see ``choose``).

What is left out, as agree's own figures leave it out (issue 25's coverage first, said in the
section's ``left_out``): stale verdicts (judged on another state or rubric than build makes
today: ``agree.Joined``'s ``vstale``) are out of all three; unscored and ``na`` verdicts out
of the calibration and the estimates (an unscored verdict is a doubtful one for
``--to-label``); a pair's verdict (a pairwise rubric, issue 28) out of the calibration (it
carries no confidence: a preference has no pass/fail/na token) and the estimates (its
``pass`` is run A's win over run B, not a pass rate; ties are ``na``), while ``--to-label``
may choose it, an inconsistent pair (its two orders disagreed) first, as doubtful as a
panel split in half.

The estimate's interval is valid when the labelled checks are a random sample of the checks
(as PPI assumes). Labels chosen by ``--to-label`` are not: they serve calibration and
agreement; for the estimate, label a random sample (or as many of each group as its budget
says, drawn at random).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct

from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._verdicts import calibration
from evalstream._verdicts import estimate as ppi
from evalstream._verdicts.agree import AgreeReport, Joined, RubricAgreement
from evalstream._verdicts.records import (
    FAIL,
    LABEL_SOURCES,
    NA_VERDICT,
    PASS,
    STATUS_CODE,
    UNSCORED,
    Columns,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import polars as pl

    from evalstream._files.transaction import Target

SOURCE_CODE = {"logprobs": 0, "samples": 1}
# A verdict's pair (issue 28): none, a pair whose two orders agreed, one whose orders did not.
NO_PAIR, PAIR, INCONSISTENT = 0, 1, 2
INCONSISTENT_DOUBT = 0.5  # two orders that disagree: a panel of two split in half
MAX_LISTED = 20  # chosen checks listed in the report (all of them are in the cases written)


# -- the report's sections -------------------------------------------------------------------------
class RubricCalibration(Struct):
    """One rubric's reliability: over every pair whose verdict carried a confidence, and per
    label source."""

    rubric: str
    all: calibration.Reliability
    by_source: dict[str, calibration.Reliability]


class GroupEstimate(Struct):
    """The estimate of one ``--by`` group (null: the case lacks the key)."""

    group: str | None
    estimate: ppi.Estimate


class RubricEstimate(Struct):
    """One rubric's corrected pass rate, over all its checks and per ``--by`` group."""

    rubric: str
    all: ppi.Estimate
    by_group: list[GroupEstimate]


class Chosen(Struct):
    """One check chosen for labelling, and why."""

    case_id: str
    rubric: str
    group: str | None
    why: str


class Stratum(Struct):
    """How many checks of one rubric and group were chosen, next to the labels it had."""

    rubric: str
    group: str | None
    labelled: int
    candidates: int
    chosen: int


class ToLabel(Struct):
    """``--to-label``: the checks chosen (``requested`` asked, ``chosen`` found), written as
    ``cases`` cases to ``output``; per rubric and group, and the first ``MAX_LISTED``."""

    requested: int
    chosen: int
    cases: int
    output: str | None
    strata: list[Stratum]
    first: list[Chosen]


class LeftOut(Struct):
    """The verdicts read, and those the calibration and the estimates leave out, as agree's
    figures leave them out: stale ones (out of ``--to-label`` too), unscored and ``na`` ones,
    and a pair's (a pairwise rubric's). Counted once each, in that order."""

    verdicts: int
    stale: int
    unscored: int
    na: int
    pairwise: int


class Sureness(Struct):
    """What agree says of the confidence (``calibration``: null when no verdict carries one),
    the corrected pass rates (``estimates``: with ``--estimate``) and the checks to label
    (``to_label``: with ``--to-label``)."""

    with_confidence: int  # verdicts that carry a confidence
    confidence_sources: dict[str, int]
    left_out: LeftOut
    calibration: list[RubricCalibration] | None
    interval: float  # the confidence of the estimates' intervals (agree's --confidence)
    estimates: list[RubricEstimate] | None
    to_label: ToLabel | None


_REPORTS: dict[type, type] = {}


def with_sureness(report: AgreeReport, sureness: Sureness) -> AgreeReport:
    """``report`` (agree's, or an extension's subclass of it) with a ``sureness`` field."""
    base = type(report)
    kind = _REPORTS.get(base)
    if kind is None:
        kind = _REPORTS[base] = msgspec.defstruct(
            base.__name__.replace("AgreeReport", "SureAgreeReport"),
            [("sureness", Sureness)], bases=(base,), kw_only=True)
    return kind(**msgspec.structs.asdict(report), sureness=sureness)


# -- the extension ----------------------------------------------------------------------------
@dataclass
class Options:
    """What the sureness part of agree was asked (``evalstream.agree`` fills it with
    ``options``); the rest is agree's, read the same way (the cases are read again with
    agree's rules to write the chosen ones)."""

    estimate: bool = False
    target_width: float = ppi.DEFAULT_TARGET_WIDTH
    to_label: int | None = None
    to_label_output: str | None = None
    interval: float = 0.95
    by: str | None = None
    allow_unknown_fields: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES


# The target's name, as its errors say it (``the output and the --to-label-output cannot
# both go to stdout``): the option that names it.
TARGET = "--to-label-output"
OWN = ("estimate", "target_width", "to_label", "to_label_output")  # agree's options of this


def options(given: dict[str, Any], cases: list[str]) -> Options:
    """This part's options taken out of agree's ``given`` (which keeps the rest), and
    checked together: ``--to-label`` needs ``--to-label-output`` and a cases file to read
    again (``--target-width`` is read only with ``--estimate``)."""
    from evalstream.errors import UsageError

    own = {name: given.pop(name) for name in OWN if name in given}
    opts = Options(**own, interval=given.get("confidence", 0.95), by=given.get("by"),
                   allow_unknown_fields=given.get("allow_unknown_fields", False),
                   max_line_bytes=given.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES))
    if (opts.to_label is None) != (opts.to_label_output is None):
        raise UsageError("--to-label N and --to-label-output FILE go together: N checks are "
                         "chosen and their cases written to FILE (e.g. --to-label 200 "
                         "--to-label-output to-label.jsonl).")
    if opts.to_label is not None and "-" in cases:
        raise UsageError("--to-label reads the cases again to write the chosen ones, and "
                         "stdin can be read once: give the cases as a file.")
    return opts


def targets(opts: Options) -> list[Target]:
    """The cases ``--to-label`` writes, a target of agree's run."""
    from evalstream._files.transaction import Target

    if opts.to_label_output is None:
        return []
    return [Target(TARGET, opts.to_label_output, "cases")]


class SurenessExtension:
    """agree's extension for confidence, corrected pass rates and the checks to label
    (``agree.Extension``): the report is unchanged when no verdict carries a confidence and
    neither ``--estimate`` nor ``--to-label`` was asked."""

    def __init__(self, options: Options) -> None:
        import polars as pl

        self.options = options
        self.columns = Columns({"case_id": pl.String, "rubric": pl.UInt32, "status": pl.UInt8,
                                "line": pl.UInt32, "conf": pl.Float64, "split": pl.Float64,
                                "pair": pl.UInt8})
        self.sources = dict.fromkeys(SOURCE_CODE, 0)

    def verdict(self, rubric: int, line: int, v: Any) -> None:
        """One verdict as agree reads it (the decoded record)."""
        lists = self.columns.lists
        lists["case_id"].append(v.case_id)
        lists["rubric"].append(rubric)
        lists["status"].append(STATUS_CODE[v.status])
        lists["line"].append(line)
        conf = None
        if v.confidence is not None and v.status != "unscored":
            self.sources[v.confidence.source] += 1
            conf = {"pass": v.confidence.pass_, "fail": v.confidence.fail,
                    "na": v.confidence.na}[v.status]
        lists["conf"].append(conf)
        split = None
        if v.votes:
            scored = [vote.status for vote in v.votes if vote.status != "unscored"]
            if scored:
                split = sum(status != v.status for status in scored) / len(scored)
        pair = getattr(v, "pair", None)
        if pair is not None and pair.agreed is False:
            split = INCONSISTENT_DOUBT
        lists["split"].append(split)
        lists["pair"].append(NO_PAIR if pair is None else
                             INCONSISTENT if pair.agreed is False else PAIR)
        if len(lists["case_id"]) >= 1 << 16:
            self.columns.flush()

    def report(self, report: AgreeReport,
               cells: Callable[[pl.DataFrame], list[RubricAgreement]],
               joined: Joined | None = None) -> AgreeReport:
        """agree's report with the ``sureness`` section, where there is something to say."""
        opts = self.options
        with_confidence = sum(self.sources.values())
        if joined is None or (not with_confidence and not opts.estimate
                              and opts.to_label is None):
            return report
        import polars as pl

        rows = joined.of(self.columns.frame()).collect()
        # Stale verdicts out of everything (their labels kept, as labels without a verdict);
        # a pair's out of calibration and the estimates.
        stale = pl.col("vstale").fill_null(False)
        fresh = rows.filter(~stale | pl.col("lstatus").is_not_null()).with_columns(
            pl.when(stale).then(None).otherwise(pl.col(c)).alias(c)
            for c in ("vstatus", "vcase", "vline", "conf", "split", "pair"))
        pointwise = fresh.filter(pl.col("pair").fill_null(NO_PAIR) == NO_PAIR)
        sureness = Sureness(
            with_confidence=with_confidence, confidence_sources=self.sources,
            left_out=_left_out(rows),
            calibration=_calibration(pointwise, joined) if with_confidence else None,
            interval=opts.interval,
            estimates=_estimates(pointwise, joined, opts) if opts.estimate else None,
            to_label=None if opts.to_label is None else _to_label(fresh, joined, opts))
        return with_sureness(report, sureness)


def _left_out(rows: pl.DataFrame) -> LeftOut:
    """How many verdicts were read, and left out of the calibration and the estimates."""
    import polars as pl

    judged = rows.filter(pl.col("vstatus").is_not_null())
    stale = pl.col("vstale").fill_null(False)
    status, pair = pl.col("vstatus"), pl.col("pair").fill_null(NO_PAIR) != NO_PAIR
    counts = judged.select(
        verdicts=pl.len(), stale=stale.sum(),
        unscored=(~stale & (status == UNSCORED)).sum(),
        na=(~stale & (status == NA_VERDICT)).sum(),
        pairwise=(~stale & status.is_in([PASS, FAIL]) & pair).sum()).row(0, named=True)
    return LeftOut(**{k: int(v or 0) for k, v in counts.items()})


def _name(names: list[str], code: int | None) -> str | None:
    return None if code is None else names[code]


def _calibration(rows: pl.DataFrame, joined: Joined) -> list[RubricCalibration]:
    """Per rubric and label source, the pairs whose verdict carries a confidence, binned."""
    import polars as pl

    pairs = rows.filter(pl.col("lstatus").is_in([PASS, FAIL]),
                        pl.col("vstatus").is_in([PASS, FAIL]), pl.col("conf").is_not_null())
    whole: dict[int, calibration.Bins] = {}
    by_source: dict[int, dict[int, calibration.Bins]] = {}
    for rubric, source, conf, agreed in pairs.select(
            "rubric", "source", "conf", pl.col("lstatus") == pl.col("vstatus")).iter_rows():
        whole.setdefault(rubric, calibration.Bins()).add(conf, agreed)
        by_source.setdefault(rubric, {}).setdefault(source, calibration.Bins()).add(conf, agreed)
    return [RubricCalibration(
        rubric=joined.rubrics[r], all=whole[r].table(),
        by_source={LABEL_SOURCES[s]: b.table() for s, b in sorted(by_source[r].items())})
        for r in sorted(whole, key=lambda r: joined.rubrics[r])]


def _estimates(rows: pl.DataFrame, joined: Joined, opts: Options) -> list[RubricEstimate]:
    """Per rubric and ``--by`` group: the labelled pairs and the checks the judge scored pass
    or fail without a label (of a case in the cases file), summed and estimated."""
    import polars as pl

    scored = pl.col("vstatus").is_in([PASS, FAIL])
    counted = (rows.filter(scored, pl.col("lstatus").is_in([PASS, FAIL])
                           | (pl.col("lstatus").is_null() & pl.col("vcase").is_not_null()))
               .group_by("rubric", "group", "lstatus", "vstatus").agg(pl.len().alias("n")))
    whole: dict[int, ppi.Sums] = {}
    groups: dict[int, dict[int | None, ppi.Sums]] = {}
    for rubric, group, lstatus, vstatus, n in counted.iter_rows():
        f = 1.0 if vstatus == PASS else 0.0
        for sums in (whole.setdefault(rubric, ppi.Sums()),
                     groups.setdefault(rubric, {}).setdefault(group, ppi.Sums())):
            if lstatus is None:
                sums.unlabelled(f, n)
            else:
                sums.labelled(1.0 if lstatus == PASS else 0.0, f, n)

    def figures(s: ppi.Sums) -> ppi.Estimate:
        return ppi.estimate(s, opts.interval, opts.target_width)

    out = []
    for r in sorted(whole, key=lambda r: joined.rubrics[r]):
        by = groups[r] if opts.by is not None else {}
        ordered = sorted(by, key=lambda g: (g is None, joined.groups[g] if g is not None else ""))
        out.append(RubricEstimate(
            rubric=joined.rubrics[r], all=figures(whole[r]),
            by_group=[GroupEstimate(_name(joined.groups, g), figures(by[g])) for g in ordered]))
    return out


def choose(rows: pl.DataFrame, n: int) -> pl.DataFrame:
    """The ``n`` checks without a label (of cases in the cases file) whose label would help
    most, one stratum (rubric and group) at a time so that no slice is starved: the strata
    with the fewest labelled pairs first, and within each the most doubtful verdict first
    (doubt: 1 minus the probability the judge gave its status, or the share of a panel's
    scored votes against the decision, whichever is larger; an unscored verdict is 1, an
    inconsistent pair 0.5, a verdict without either 0), ties in verdict-file order. ``rows``
    hold no stale verdict (``report`` leaves them out: their case is judged again first)."""
    import polars as pl

    strata = ["rubric", "group"]
    labelled = (rows.filter(pl.col("lstatus").is_in([PASS, FAIL]))
                .group_by(strata).agg(pl.len().alias("labelled")))
    doubt = pl.max_horizontal(
        pl.when(pl.col("vstatus") == UNSCORED).then(1.0).otherwise(0.0),
        1 - pl.col("conf").fill_null(1.0), pl.col("split").fill_null(0.0))
    candidates = (rows.filter(pl.col("lstatus").is_null(), pl.col("vcase").is_not_null())
                  .with_columns(doubt=doubt)
                  .join(labelled, on=strata, how="left", nulls_equal=True)
                  .with_columns(pl.col("labelled").fill_null(0))
                  .sort(["doubt", "vline"], descending=[True, False])
                  .with_columns(turn=pl.int_range(pl.len()).over(strata),
                                candidates=pl.len().over(strata)))
    return candidates.sort(["turn", "labelled", "rubric", "group", "vline"],
                           nulls_last=True).head(n)


def _why(row: dict[str, Any], rubric: str, group: str | None, by: str | None) -> str:
    """Why a check was chosen, in a sentence."""
    where = f"rubric {rubric}" + (f", {by} {group}" if by is not None else "")
    reasons = []
    if row["vstatus"] == UNSCORED:
        reasons.append("the judge gave no status (unscored)")
    if row["conf"] is not None:
        reasons.append(f"the judge gave its status a probability of {row['conf']:.2f}")
    if row["pair"] == INCONSISTENT:
        reasons.append("the pair's two orders disagreed (inconsistent: read as a tie)")
    elif row["split"]:
        reasons.append(f"{row['split']:.0%} of the panel's scored votes differ from the decision")
    if not reasons:
        reasons.append("no sign of doubt is known")
    return (f"{'; '.join(reasons)}; {row['labelled']} labelled and "
            f"{row['candidates']} unlabelled checks in {where}")


def _to_label(rows: pl.DataFrame, joined: Joined, opts: Options) -> ToLabel:
    """Choose, write each chosen check's case (once a case, in cases-file order, with
    ``metadata.to_label`` saying which rubrics and why) and count per stratum."""
    assert opts.to_label is not None
    chosen = choose(rows, opts.to_label)
    picked: list[Chosen] = []
    by_case: dict[int, list[dict[str, Any]]] = {}
    strata: dict[tuple[int, int | None], list[int]] = {}
    for row in chosen.iter_rows(named=True):
        rubric, group = joined.rubrics[row["rubric"]], _name(joined.groups, row["group"])
        why = _why(row, rubric, group, opts.by)
        picked.append(Chosen(row["case_id"], rubric, group, why))
        by_case.setdefault(row["case"], []).append({"rubric": rubric, "why": why})
        counts = strata.setdefault((row["rubric"], row["group"]), [row["labelled"],
                                                                    row["candidates"], 0])
        counts[2] += 1
    if opts.to_label_output is not None:
        _write_cases(joined, by_case, opts)
    return ToLabel(
        requested=opts.to_label, chosen=len(picked), cases=len(by_case),
        output=opts.to_label_output,
        strata=[Stratum(joined.rubrics[r], _name(joined.groups, g), *counts)
                for (r, g), counts in sorted(strata.items(), key=lambda item: (
                    joined.rubrics[item[0][0]], item[0][1] is None,
                    "" if item[0][1] is None else joined.groups[item[0][1]]))],
        first=picked[:MAX_LISTED])


def _write_cases(joined: Joined, by_case: dict[int, list[dict[str, Any]]],
                 opts: Options) -> None:
    """Each chosen case as the cases file holds it, with ``metadata.to_label`` (a list of
    ``{rubric, why}``): its ``expected`` has no label for those rubrics yet, for the labeller
    to add. Read again from the case files (its rows counted as agree counted them)."""
    from evalstream._cases.reading import case_reader
    from evalstream._cases.rejects import Reject
    from evalstream._files.outputs import escape_line_breaks

    out = joined.targets.open(TARGET)
    row = 0
    # Rejected lines are not rows; duplicate ids were rejected the same way the first time.
    reader = case_reader(opts.allow_unknown_fields, opts.max_line_bytes)
    for item in reader.read_files(joined.cases):
        if type(item) is Reject:
            continue
        wanted = by_case.get(row)
        row += 1
        if wanted is None:
            continue
        _, _, raw, found = item  # type: ignore[misc]
        # The rows are agree's first reading's: the same reader, so the same case at each.
        assert found.id == joined.case_ids[row - 1], (found.id, row)
        case = msgspec.json.decode(raw)
        metadata = case.get("metadata") or {}
        case["metadata"] = {**metadata, "to_label": wanted}
        out.write(escape_line_breaks(msgspec.json.encode(case)) + b"\n")
