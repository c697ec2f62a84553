"""The bias audit of ``agree`` (issue 28): where a judge's verdicts follow the position or the
length of a response rather than the labels.

For a pairwise rubric (verdicts with a ``pair``, ``pairwise``), over its pairs whose two
orders were both answered (``scored``):

- position consistency: the share of pairs whose two orders named the same run;
- first-slot preference: of the inconsistent pairs in which both orders named a response
  (neither said tie, so both named the same slot), the share that named ``response_1``
  (0.5 is a judge with no preference for a place; those with a tie are counted apart);
- ties: the share of pairs decided a tie (the inconsistent ones included);
- agreement with the labels (run A's ``expected``: ``pass`` run A's response is the better,
  ``fail`` run B's; ``na`` and absent labels are left out), over the consistent pairs only
  and over all (an inconsistent pair is a tie, which no label is);
- length: of the pairs decided for one run whose responses differ in length, the share
  decided for the longer, against the share of labelled pairs whose better one is the
  longer.

Coverage first (issue 25): stale verdicts are left out, as ``agree`` leaves them out of its
figures, and each audit says what it left out: a pairwise rubric's stale and unscored pairs
(and, from the agreement, pairs without a pass or fail label); a pointwise rubric's ``na``,
unscored and stale verdicts and those of cases not in the cases file.

For a pointwise rubric (any run), its pass and fail verdicts of cases found in the cases
file, none stale, by the length of the case's response (``output``, in characters) in five bins of
equal count by rank (quintiles: the k-th edge is the length at rank ceil(k n / 5), numpy's
``inverted_cdf``; a length on an edge falls in the lower bin, so equal lengths never
split): the verdicts' pass rate, the labels' pass rate and the agreement in each. A judge
whose pass rate climbs with length while the labels' stays flat is visible at a glance.

Every share carries its count and a Wilson score interval (``agreement.wilson``) at the
report's confidence; a share of nothing is null.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from evalstream._verdicts import agreement
from evalstream._verdicts.percentiles import percentile
from evalstream._verdicts.records import FAIL, NA_VERDICT, PASS, UNSCORED, Columns

if TYPE_CHECKING:
    import polars as pl

QUINTILES = 5
_BETTER = {"response_1": 1, "response_2": 2, "tie": 3}  # an order's answer, as a code
_DECISION = {"a": 1, "b": 2, "tie": 3}


# -- the report ------------------------------------------------------------------------------------
class Share(Struct):
    """``k`` of ``n``, the share, and its Wilson score interval (null when ``n`` is 0)."""

    k: int
    n: int
    share: float | None
    low: float | None
    high: float | None


class PairwiseAudit(Struct):
    """Position, ties, labels and length for one pairwise rubric (see the module's text)."""

    pairs: int  # pairwise verdicts of the rubric, stale ones left out
    scored: int  # both orders answered
    consistency: Share  # of scored: the two orders named the same run
    first_slot: Share  # of inconsistent pairs without a tie: named response_1 both times
    inconsistent_with_tie: int  # inconsistent pairs where one order said tie
    ties: Share  # of scored: decided a tie
    agreement_consistent: Share  # of labelled consistent pairs: decided as the label
    agreement_all: Share  # of labelled scored pairs: decided as the label
    judge_longer: Share  # of pairs decided for a run, lengths unequal: for the longer
    labels_longer: Share  # of labelled pairs, lengths unequal: the label's is the longer
    stale: int = 0  # pairwise verdicts left out: stale, as agree leaves them out (issue 25)


class LengthBin(Struct):
    """One length quintile of a pointwise rubric's scored verdicts."""

    bin: int  # 1 (shortest) to 5
    chars_min: int
    chars_max: int
    pass_rate: Share  # of the verdicts (pass or fail): pass
    label_pass_rate: Share  # of the pass/fail labels of the same checks: pass
    agreement: Share  # of the checks with both: verdict and label the same


class LengthAudit(Struct):
    """A pointwise rubric's pass and fail verdicts by response length, and the rubric's
    verdicts it leaves out (coverage first, as ``agree``'s figures say theirs)."""

    verdicts: int  # pass or fail verdicts whose case is in the cases file, none stale
    quintiles: list[LengthBin]
    na: int = 0  # na verdicts (no pass or fail to bin)
    unscored: int = 0
    stale: int = 0  # pass or fail verdicts on another state or rubric than build makes today
    not_in_cases: int = 0  # pass or fail verdicts of a case not in the cases file (no length)

    @property
    def left_out(self) -> int:
        return self.na + self.unscored + self.stale + self.not_in_cases


class RubricBias(Struct):
    """The bias audit of one rubric: ``pairwise`` for a pairwise one, ``length`` for any
    other with verdicts (its quintiles empty when none is a fresh pass or fail of a case in
    the cases file: what it left out says why)."""

    rubric: str
    pairwise: PairwiseAudit | None
    length: LengthAudit | None


# -- reading: the pairwise verdicts' columns -------------------------------------------------------
@dataclass
class PairRows:
    """The pair of each pairwise verdict read (``records.read_verdicts`` fills it): its case
    id, rubric code, decision, agreement, each order's answer, and the two lengths; a few
    dozen bytes a pair, no text."""

    columns: Columns

    @classmethod
    def new(cls) -> PairRows:
        import polars as pl

        return cls(Columns({"case_id": pl.String, "rubric": pl.UInt32, "decision": pl.UInt8,
                            "agreed": pl.Boolean, "ab": pl.UInt8, "ba": pl.UInt8,
                            "chars_a": pl.UInt32, "chars_b": pl.UInt32}))

    def add(self, case_id: str, rubric: int, pair: Any) -> None:
        """One verdict's ``pair`` (as the verdict reader decoded it)."""
        lists = self.columns.lists
        answers = {o.order: o.better for o in pair.orders}
        lists["case_id"].append(case_id)
        lists["rubric"].append(rubric)
        lists["decision"].append(_DECISION.get(pair.decision or "", 0))
        lists["agreed"].append(pair.agreed)
        lists["ab"].append(_BETTER.get(answers.get("ab") or "", 0))
        lists["ba"].append(_BETTER.get(answers.get("ba") or "", 0))
        lists["chars_a"].append(min(pair.chars[0], 0xFFFFFFFF))
        lists["chars_b"].append(min(pair.chars[1], 0xFFFFFFFF))
        if len(lists["case_id"]) >= 1 << 16:
            self.columns.flush()


# -- the audit -------------------------------------------------------------------------------------
def share(k: int, n: int, confidence: float) -> Share:
    """``k`` of ``n`` with its Wilson interval at ``confidence``."""
    if n == 0:
        return Share(k, n, None, None, None)
    low, high = agreement.wilson(k / n, n, agreement.z_value(confidence))
    return Share(k, n, k / n, low, high)


def audit(pairs: PairRows, joined: pl.LazyFrame, labels: pl.DataFrame, cases: pl.DataFrame,
          rubric_names: list[str], confidence: float) -> list[RubricBias]:
    """The audit of every rubric with verdicts, sorted by rubric id: ``joined``, every key
    of labels and verdicts with its case's row (``case``), ``lstatus`` and ``vstatus``,
    ``labels`` (case, rubric, lstatus) and ``cases`` (case_id, chars: each case's response
    length) as ``agree`` reads and joins them."""
    import polars as pl

    rows = cases.lazy().with_row_index("case")
    pair_frame = pairs.columns.frame()
    pairwise_codes = pair_frame["rubric"].unique().to_list()
    stale = pl.col("vstale").fill_null(False)  # joined's: agree's stale mark (issue 25)
    found: dict[int, RubricBias] = {}
    if pair_frame.height:
        # Stale pairwise verdicts are left out, as agree leaves every stale verdict out.
        gone = (joined.filter(stale & pl.col("rubric").is_in(pairwise_codes))
                .select("case_id", "rubric").unique().collect())
        kept = pair_frame.join(gone, on=["case_id", "rubric"], how="anti")
        left_out = dict(pair_frame.join(gone, on=["case_id", "rubric"], how="semi")
                        .group_by("rubric").len().iter_rows())
        paired = (kept.lazy().join(rows.select("case_id", "case"), on="case_id", how="left")
                  .join(labels.lazy().select("case", "rubric", "lstatus"),
                        on=["case", "rubric"], how="left"))
        for rubric, frame in _by_rubric(paired.collect()):
            found[rubric] = RubricBias(rubric_names[rubric], _pairwise(frame, confidence),
                                       None)
        for rubric, n in left_out.items():  # (a rubric whose every pair is stale: none kept)
            audited = found.get(rubric)
            if audited is None:
                empty = pair_frame.clear().with_columns(lstatus=pl.lit(None, pl.UInt8))
                audited = found[rubric] = RubricBias(rubric_names[rubric],
                                                     _pairwise(empty, confidence), None)
            assert audited.pairwise is not None
            audited.pairwise.stale = n
    # Pointwise: each pass or fail verdict of a case in the file, none stale, its length and
    # its label; what else the rubric's verdicts hold is counted as left out.
    pointwise = joined.filter(pl.col("vstatus").is_not_null()
                              & ~pl.col("rubric").is_in(pairwise_codes))
    decided = pl.col("vstatus").is_in([PASS, FAIL])
    in_cases = pl.col("vcase").is_not_null()
    scored = (pointwise.filter(decided & in_cases & ~stale)
              .join(rows.select("case", "chars"), on="case", how="inner")
              .select("rubric", pl.col("vstatus").alias("status"), "chars", "lstatus"))
    left = pointwise.group_by("rubric").agg(
        na=(pl.col("vstatus") == NA_VERDICT).sum(),
        unscored=(pl.col("vstatus") == UNSCORED).sum(),
        stale=(decided & in_cases & stale).sum(),
        not_in_cases=(decided & ~in_cases).sum()).collect()
    counted = {int(r["rubric"]): r for r in left.iter_rows(named=True)}
    binned = dict(_by_rubric(scored.collect(engine="streaming")))
    for rubric, c in counted.items():
        part = binned.get(rubric)
        lengths = (_lengths(part, confidence, c["na"], c["unscored"], c["stale"],
                            c["not_in_cases"]) if part is not None else
                   LengthAudit(0, [], c["na"], c["unscored"], c["stale"], c["not_in_cases"]))
        found[rubric] = RubricBias(rubric_names[rubric], None, lengths)
    return [found[r] for r in sorted(found, key=lambda r: rubric_names[r])]


def _by_rubric(frame: pl.DataFrame) -> list[tuple[int, pl.DataFrame]]:
    return [(int(key[0]), part) for key, part in frame.partition_by("rubric", as_dict=True)
            .items()]


def _pairwise(frame: pl.DataFrame, confidence: float) -> PairwiseAudit:
    """The audit of one pairwise rubric's pairs (a frame of ``PairRows`` with ``lstatus``)."""
    import polars as pl

    scored = frame.filter(pl.col("agreed").is_not_null())
    agreed = scored.filter(pl.col("agreed"))
    apart = scored.filter(~pl.col("agreed"))
    named = apart.filter((pl.col("ab") != _BETTER["tie"]) & (pl.col("ba") != _BETTER["tie"]))
    first = named.filter(pl.col("ab") == _BETTER["response_1"]).height
    ties = scored.filter(pl.col("decision") == _DECISION["tie"]).height
    # A label in A/B terms: pass, run A's response is the better; fail, run B's.
    label = pl.when(pl.col("lstatus") == PASS).then(_DECISION["a"]) \
        .when(pl.col("lstatus") == FAIL).then(_DECISION["b"]).otherwise(None)
    labelled = scored.with_columns(label=label).filter(pl.col("label").is_not_null())
    right = pl.col("decision") == pl.col("label")
    consistent = labelled.filter(pl.col("agreed"))
    # The longer response's run (null when they are as long).
    longer = pl.when(pl.col("chars_a") > pl.col("chars_b")).then(_DECISION["a"]) \
        .when(pl.col("chars_b") > pl.col("chars_a")).then(_DECISION["b"]).otherwise(None)
    decided = scored.with_columns(longer=longer).filter(
        pl.col("longer").is_not_null() & (pl.col("decision") != _DECISION["tie"]))
    uneven = labelled.with_columns(longer=longer).filter(pl.col("longer").is_not_null())
    return PairwiseAudit(
        pairs=frame.height, scored=scored.height,
        consistency=share(agreed.height, scored.height, confidence),
        first_slot=share(first, named.height, confidence),
        inconsistent_with_tie=apart.height - named.height,
        ties=share(ties, scored.height, confidence),
        agreement_consistent=share(consistent.filter(right).height, consistent.height,
                                   confidence),
        agreement_all=share(labelled.filter(right).height, labelled.height, confidence),
        judge_longer=share(decided.filter(pl.col("decision") == pl.col("longer")).height,
                           decided.height, confidence),
        labels_longer=share(uneven.filter(pl.col("label") == pl.col("longer")).height,
                            uneven.height, confidence))


def quintile_edges(lengths: list[int]) -> list[int]:
    """The four edges of five bins of equal count by rank: the nearest-rank 20th, 40th,
    60th and 80th percentiles of the lengths (``percentiles.percentile``: the length at rank
    ceil(k n / 5), k = 1..4, of the sorted lengths); none of no lengths."""
    counts = Counter(lengths)
    edges = (percentile(counts, k * 100 // QUINTILES) for k in range(1, QUINTILES))
    return [edge for edge in edges if edge is not None]


def _lengths(frame: pl.DataFrame, confidence: float, *left_out: int) -> LengthAudit:
    """A pointwise rubric's scored verdicts (status, chars, lstatus) by length quintile, and
    the counts of its verdicts left out (``LengthAudit``'s na, unscored, stale,
    not_in_cases)."""
    import polars as pl

    edges = quintile_edges(frame["chars"].to_list())
    # The bin: how many edges lie below the length (a length on an edge: the lower bin).
    binned = frame.with_columns(
        bin=pl.sum_horizontal([(pl.col("chars") > e).cast(pl.UInt8) for e in edges]))
    out = []
    for b in range(QUINTILES):
        part = binned.filter(pl.col("bin") == b)
        if not part.height:
            continue
        labelled = part.filter(pl.col("lstatus").is_in([PASS, FAIL]))
        out.append(LengthBin(
            bin=b + 1, chars_min=int(part["chars"].min()),  # type: ignore[arg-type]
            chars_max=int(part["chars"].max()),  # type: ignore[arg-type]
            pass_rate=share(part.filter(pl.col("status") == PASS).height, part.height,
                            confidence),
            label_pass_rate=share(labelled.filter(pl.col("lstatus") == PASS).height,
                                  labelled.height, confidence),
            agreement=share(labelled.filter(pl.col("status") == pl.col("lstatus")).height,
                            labelled.height, confidence)))
    return LengthAudit(frame.height, out, *left_out)

