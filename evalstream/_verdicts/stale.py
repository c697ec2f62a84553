"""Stale verdicts: verdicts whose ``state_hash`` or ``rubric_hash`` no longer matches what
``build`` makes of the cases as they are now (issue 25: after every case's output was
replaced, ``agree`` gave the same statistics without a word).

What build makes today comes from one of two places:

- the cases themselves (``FromCases``): each case read by ``agree`` (or ``view``) goes
  through the same ``Checker`` build runs, with the rubric set given (``--rubrics``, default
  the built-in set), which joins each judge state's bytes exactly as build writes them; their
  xxh3-128 is what a fresh verdict's ``state_hash`` holds. The budget is left out (no token is
  counted): a verdict's state is the same whether or not it fit. A verdict whose rubric is
  not in the set cannot be checked this way, nor can a pairwise verdict (issue 28: its state
  is made of two runs' cases, ``build --pair-with``): both are ``NOT_CHECKED``.
- build's output (``from_states``, ``--states FILE``): the judge states and exact verdicts
  it wrote, with their hashes (a pairwise state's first order, run A's response first,
  whose hash its pair's verdict carries).

Each verdict gets one code (``rule``, one Polars expression for every command):
``FRESH``; ``STATE`` (its ``state_hash`` is not the state's, or
build makes no state for that case and rubric today: the rubric no longer applies);
``RUBRIC`` (its ``rubric_hash`` is not the rubric's: another version of the rubric, or
another ``allows_na``); ``NOT_CHECKED`` (no hash to compare, a rubric the set does not hold,
a case that is not in the cases file). Hashes are compared as Python's 64-bit string hashes,
within one process, as ``compare`` compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import xxhash
from msgspec import Struct

from evalstream._verdicts.records import Codes, Columns

if TYPE_CHECKING:
    import polars as pl

    from evalstream._checks.rubrics import RubricSet

FRESH, STATE, RUBRIC, NOT_CHECKED = 0, 1, 2, 3
KINDS = ("fresh", "state", "rubric", "not_checked")
NO_BUDGET = 1 << 60  # rebuilding a state never counts a token: any state fits
EXPECTED_SCHEMA = ("case_id", "rubric", "xstate", "xrubric")


class StaleCounts(Struct):
    """Verdicts checked against the cases as they are now: ``fresh``, ``state`` and
    ``rubric`` (stale, by what no longer matches), ``not_checked``."""

    fresh: int = 0
    state: int = 0
    rubric: int = 0
    not_checked: int = 0

    @property
    def stale(self) -> int:
        return self.state + self.rubric


class StaleCheck(Struct):
    """What a report says of staleness: what the verdicts were checked against (the rubric
    set whose states were rebuilt from the cases, or build's output), and the counts."""

    against: str
    counts: StaleCounts


@dataclass
class Expected:
    """What build makes today: per (case id, rubric code), the state's hash (null: an exact
    rubric, which has no state) and the rubric's hash; the rubrics and cases it knows."""

    frame: pl.DataFrame
    rubrics: set[int]
    cases: pl.Series
    against: str


@dataclass
class FromCases:
    """Rebuilds the judge states of each case given to ``add``, as build does, and keeps
    their hashes (``expected`` once every case was added)."""

    rubric_set: RubricSet
    codes: Codes
    against: str
    columns: Columns = field(init=False)

    def __post_init__(self) -> None:
        import polars as pl

        from evalstream._checks.checker import Checker

        self.checker = Checker(self.rubric_set, NO_BUDGET, keep_states=True)
        self.columns = Columns({"case_id": pl.String, "rubric": pl.UInt32, "xstate": pl.Int64,
                                "xrubric": pl.Int64})
        self.rubric_codes = [self.codes.limited(r.id) for r in self.rubric_set.rubrics]
        self.rubric_hashes = [hash(r.hash) for r in self.rubric_set.rubrics]
        self.case_ids: list[str] = []

    def add(self, case: object, line: int) -> None:
        """Rebuild one case's checks (a case decoded and accepted as build accepts it)."""
        case_ids, codes, states, hashes = self.columns.lists.values()
        digest = xxhash.xxh3_128_hexdigest
        case_id = case.id  # type: ignore[attr-defined]
        self.case_ids.append(case_id)
        for i, check in enumerate(self.checker.check(case, line)):
            code = self.rubric_codes[i]
            if check.reason is not None or code is None:
                continue  # the rubric does not apply: build writes nothing for it
            case_ids.append(case_id)
            codes.append(code)
            states.append(None if check.state is None else hash(digest(check.state)))
            hashes.append(self.rubric_hashes[i])
        if len(case_ids) >= 1 << 16:
            self.columns.flush()

    def expected(self) -> Expected:
        import polars as pl

        # A pairwise rubric's state is a pair's, made from two runs (``build --pair-with``):
        # it cannot be rebuilt from one run's cases, so its verdicts are not checked here.
        known = {c for c, r in zip(self.rubric_codes, self.rubric_set.rubrics, strict=True)
                 if c is not None and not r.pairwise}
        return Expected(self.columns.frame(), known, pl.Series("case_id", self.case_ids,
                                                               pl.String), self.against)


def from_cases(path: str, rubric_set: RubricSet, codes: Codes, against: str,
               max_line_bytes: int, allow_unknown_fields: bool = False) -> Expected:
    """What build makes today of the cases at ``path`` (``compare --cases``): each case read
    and decoded as build reads it, its states rebuilt. Rejected lines are skipped: their
    verdicts cannot be checked."""
    from evalstream._cases.reading import case_reader
    from evalstream._cases.rejects import Reject

    rebuilt = FromCases(rubric_set, codes, against)
    for item in case_reader(allow_unknown_fields, max_line_bytes).read_file(path):
        if type(item) is not Reject:
            line, _, _, case = item  # type: ignore[misc]
            rebuilt.add(case, line)
    return rebuilt.expected()


def from_states(path: str, codes: Codes, max_line_bytes: int,
                allow_unknown_fields: bool = False) -> Expected:
    """What build wrote (``--states``): every judge state's and exact verdict's hashes.
    Lines that are neither are skipped here (``view`` and ``agree`` read verdicts, and
    ``judge`` rejects them with their sentence)."""
    import polars as pl

    from evalstream._cases.reading import RecordReader
    from evalstream._cases.rejects import Reject
    from evalstream._verdicts.records import verdict_kind

    columns = Columns({"case_id": pl.String, "rubric": pl.UInt32, "xstate": pl.Int64,
                       "xrubric": pl.Int64})
    case_ids, rubric_codes, states, hashes = columns.lists.values()
    rubrics: set[int] = set()
    reader = RecordReader(verdict_kind(allow_unknown_fields), max_line_bytes)
    for item in reader.read_file(path):
        if type(item) is Reject:
            continue
        _, _, _, record = item  # type: ignore[misc]
        code = codes.limited(record.rubric_id)
        if code is None or record.rubric_hash is None:
            continue
        rubrics.add(code)
        case_ids.append(record.case_id)
        rubric_codes.append(code)
        states.append(None if record.state_hash is None else hash(record.state_hash))
        hashes.append(hash(record.rubric_hash))
        if len(case_ids) >= 1 << 16:
            columns.flush()
    frame = columns.frame()
    return Expected(frame, rubrics, frame["case_id"].unique(), f"build's output {path}")


def rule() -> pl.Expr:
    """The rule, as a Polars expression over the columns ``v_rubric``, ``v_state`` (a
    verdict's 64-bit hashes, 0 when absent), ``found`` (build makes its check today),
    ``x_rubric``, ``x_state`` (that check's hashes, 0 when absent) and ``checkable`` (its
    rubric is in the set and its case in the cases file): each verdict's code, ``UInt8``. The
    one rule of ``agree``, ``compare`` and ``view`` (which evaluates it on its arrays)."""
    import polars as pl

    v = pl.col
    no_hash = (v("v_rubric") == 0) & (v("v_state") == 0)
    return (pl.when(no_hash | ~v("checkable")).then(NOT_CHECKED)
            .when(~v("found")).then(STATE)  # build makes no check of it today
            .when((v("v_rubric") != 0) & (v("v_rubric") != v("x_rubric"))).then(RUBRIC)
            .when((v("v_state") != 0) & (v("x_state") != 0) & (v("v_state") != v("x_state")))
            .then(STATE)
            .when((v("v_rubric") == 0) & ((v("v_state") == 0) | (v("x_state") == 0)))
            .then(NOT_CHECKED)  # nothing left to compare
            .otherwise(FRESH).cast(pl.UInt8).alias("stale"))


def mark(verdicts: pl.DataFrame, expected: Expected | None) -> pl.DataFrame:
    """The verdict frame (with its hashes: ``read_verdicts(with_hashes=True)``) and a
    ``stale`` column: each verdict's code (``FRESH`` for all when nothing is checked)."""
    import polars as pl

    if expected is None:
        return verdicts.with_columns(stale=pl.lit(FRESH, pl.UInt8))
    x = expected.frame.lazy().unique(["case_id", "rubric"], keep="first").with_columns(
        found=pl.lit(True))
    codes = (verdicts.lazy().select("case_id", "rubric", "rubric_hash", "state_hash")
             .with_row_index("_row").join(x, on=["case_id", "rubric"], how="left")
             .sort("_row")
             .select(pl.col("rubric_hash").fill_null(0).alias("v_rubric"),
                     pl.col("state_hash").fill_null(0).alias("v_state"),
                     pl.col("xrubric").fill_null(0).alias("x_rubric"),
                     pl.col("xstate").fill_null(0).alias("x_state"),
                     pl.col("found").fill_null(False),
                     (pl.col("case_id").is_in(expected.cases.implode())
                      & pl.col("rubric").is_in(pl.Series(sorted(expected.rubrics),
                                                         dtype=pl.UInt32).implode()))
                     .alias("checkable"))
             .select(rule()).collect())
    return verdicts.with_columns(codes["stale"])


def counts(frame: pl.DataFrame) -> tuple[StaleCounts, dict[int, StaleCounts]]:
    """The stale counts of a marked verdict frame: in all, and by rubric code."""
    import polars as pl

    whole: dict[str, int] = dict.fromkeys(KINDS, 0)
    by_rubric: dict[int, dict[str, int]] = {}
    for rubric, code, n in frame.group_by("rubric", "stale").agg(pl.len()).iter_rows():
        whole[KINDS[code]] += n
        by_rubric.setdefault(rubric, dict.fromkeys(KINDS, 0))[KINDS[code]] += n
    return StaleCounts(**whole), {r: StaleCounts(**c) for r, c in by_rubric.items()}


def is_stale() -> pl.Expr:
    """Whether a marked verdict is stale (its state or rubric no longer matches)."""
    import polars as pl

    return pl.col("stale").is_in([STATE, RUBRIC])
