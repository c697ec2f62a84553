"""The verdict record, and a streaming reader that turns a verdict file into compact columns.

A verdict file is read by the same loop as cases (``cases.reading.RecordReader``), with a
typed msgspec decoder and the verdict's own ``Shape`` for the sentences of its rejects.
Each verdict leaves only its key and status (and, for ``compare``, three 64-bit hashes) in
Python lists that become Polars frames every 65,536 rows; rationales, judge details and
evidence are checked while decoding and then dropped, so memory grows with the number of
verdicts, never with their text. Lines that are not verdicts become rejects with the line,
a JSON path and a sentence, as in ``build``. Lines written by ``build`` for a judge (judge
states: a ``state`` and no ``status``) are counted apart: checks with no verdict yet.
"""

# No `from __future__ import annotations`: msgspec must resolve the annotations of Structs
# defined inside a function (the strict and lenient families).
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import msgspec
from msgspec import Struct

from evalstream._cases import rejects, schema
from evalstream._cases.reading import Problem, RecordKind, RecordReader
from evalstream._cases.rejects import FileReject, Reject, raw_text
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._files.outputs import escape_line_breaks
from evalstream._verdicts import pairwise
from evalstream.errors import InputError

if TYPE_CHECKING:
    import polars as pl

# The statuses, each meaning defined once (``tests/verdicts/test_verdicts.py`` fails on a
# copy elsewhere). Their order is the order of codes kept in columns and of report keys:
# never reorder one. A label's, from the case format: pass, fail, na; its sources.
LABEL_STATUSES, LABEL_SOURCES = schema.LABEL_STATUSES, schema.LABEL_SOURCES
# A verdict's: `na` (the judge says the rubric does not apply) came last, so that the codes
# of the others stayed.
VerdictStatus = Literal["pass", "fail", "unscored", "na"]
STATUSES: tuple[str, ...] = get_args(VerdictStatus)
# How judge's and batch collect's reports, a panel's votes and view's split panels tally
# verdicts: a judge's answers (a label's statuses), then unscored.
VOTE_STATUSES = (*LABEL_STATUSES, "unscored")
STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}
PASS, FAIL, UNSCORED, NA_VERDICT = 0, 1, 2, 3
VERDICT_FIELDS = ("case_id", "rubric_id", "status", "rationale", "judge", "usage", "request_id",
                  "rubric_hash", "state_hash", "exposure", "error", "votes", "panel", "kind",
                  "evidence", "question", "state", "allows_na", "pair", "confidence")
# A panel's verdict (issue 26): one vote per juror and sample, and how the decision was taken.
VOTE_FIELDS = ("judge", "model", "sample", "status", "rationale", "usage", "request_id", "error")
PANEL_FIELDS = ("rule", "votes", "scored", "agreed")
# How sure the judge was (issue 29): the status's probabilities and where they came from.
CONFIDENCE_FIELDS = ("pass", "fail", "na", "source")
CONFIDENCE_SOURCES = ("logprobs", "samples")
EXPOSURE_FIELDS = ("shown", "withheld", "never_shown", "tokens")
FLUSH_ROWS = 1 << 16
MAX_LINE_NUMBER = (1 << 32) - 1  # line numbers are kept as UInt32
MAX_JUDGES_LISTED = 20
# Distinct rubric ids analysed in one run (agree, compare): each costs a few KB of results,
# and a file can name millions. Keys of further rubric ids are counted, not analysed.
MAX_RUBRICS = 1_000

RubricId = schema.RubricId  # one id rule: the case format's, for label keys and verdicts


class Judge(Struct, forbid_unknown_fields=False, gc=False):
    """Who judged: a model name and any other details, which are not kept."""

    model: str


# -- the verdict as ``evalstream judge`` writes it ---------------------------------------------
# Defined beside the reader so that what judge writes is what agree and compare read (a test
# decodes every written verdict with the strict reader).
class JudgeInfo(Struct, gc=False):
    """Who judged: the model, the provider, the server's host (never a path, user or key), the
    temperature sent (None: not sent), and a hash of everything else that shaped the request."""

    model: str
    provider: str
    base_url: str
    temperature: float | None
    config_hash: str


class TokenUsage(Struct, gc=False, omit_defaults=True):
    """Tokens the provider counted for one answer: ``output_tokens`` includes any reasoning
    (as providers bill it), ``reasoning_tokens`` says how much of it, where the provider
    says (written only then)."""

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int | None = None


class VerdictError(Struct, gc=False):
    """Why a verdict is ``unscored``: a documented cause and a short excerpt (never a key)."""

    cause: str
    detail: str


# -- a pairwise verdict (issue 28; the rule in ``pairwise``) ------------------------------------
class OrderAnswer(Struct, gc=False, omit_defaults=True):
    """One order's answer of a pairwise verdict: its order (``ab``: run A's response was
    response_1), the response it named (``better``; null when unscored, with ``error``), its
    reason, usage and request id, and the hash of the state it judged."""

    order: str
    better: str | None
    reason: str | None
    usage: TokenUsage | None
    request_id: str | None
    state_hash: str
    error: VerdictError | None = None


class PairVerdict(Struct, gc=False):
    """How a pairwise verdict was reached: the pair's key (both states' records carry it), the
    lengths of run A's and run B's responses in characters, the decision in A/B terms (``a``,
    ``b``, ``tie``; null when unscored), whether the two orders agreed (null when an order is
    unscored), and each order's answer, ``ab`` first."""

    key: str
    chars: tuple[int, int]
    decision: str | None
    agreed: bool | None
    orders: list[OrderAnswer]


class Vote(Struct, gc=False, omit_defaults=True):
    """One juror's answer on one sample of a panel's judge state (``error`` only when
    unscored): the juror's name in the jury, its model, which of its samples (from 0)."""

    judge: str
    model: str
    sample: int
    status: str
    rationale: str | None
    usage: TokenUsage | None
    request_id: str | None
    error: VerdictError | None = None


class Panel(Struct, gc=False):
    """How a panel's decision was taken: the rule, the votes cast, those scored, and those
    that agree with the decision (0 when it is ``unscored``)."""

    rule: str
    votes: int
    scored: int
    agreed: int


class Confidence(Struct, gc=False):
    """How sure the judge was of the status (issue 29): P(pass), P(fail), P(na), summing to 1,
    read from the status token's log probabilities (``logprobs``) or the share of a panel's
    scored votes (``samples``)."""

    pass_: float = msgspec.field(name="pass")
    fail: float
    na: float
    source: str


class JudgeVerdict(Struct, gc=False, omit_defaults=True):
    """One verdict line written by ``evalstream judge``; ``error`` only when unscored,
    ``pair`` only for a pairwise state's pair (``pairwise``: its ``status`` in run A's
    terms); ``votes`` and ``panel`` only for a panel (a jury, or several samples of one
    judge); ``confidence`` only where it was asked for and could be read (never on a pair's
    verdict)."""

    case_id: str
    rubric_id: str
    status: str
    rationale: str | None
    judge: JudgeInfo
    usage: TokenUsage | None
    request_id: str | None
    rubric_hash: str
    state_hash: str
    exposure: msgspec.Raw  # copied byte for byte from the judge state
    error: VerdictError | None = None
    pair: PairVerdict | None = None
    votes: list[Vote] | None = None
    panel: Panel | None = None
    confidence: Confidence | None = None


def _make_types(forbid_unknown: bool) -> tuple[type[Struct], type[Struct]]:
    opts: dict[str, Any] = {"forbid_unknown_fields": forbid_unknown, "gc": False}

    class VerdictExposure(Struct, **opts):
        shown: list[str]
        withheld: list[str] = []
        never_shown: list[str] = []
        tokens: dict[str, Any] | None = None

    class Usage(Struct, **opts):
        input_tokens: int
        output_tokens: int
        reasoning_tokens: int | None = None

    class Error(Struct, **opts):
        cause: str
        detail: str

    class VoteRecord(Struct, **opts):
        judge: str
        status: VerdictStatus
        model: str | None = None
        sample: int = 0
        rationale: str | None = None
        usage: Usage | None = None
        request_id: str | None = None
        error: Error | None = None

    class PanelRecord(Struct, **opts):
        rule: str
        votes: int
        scored: int
        agreed: int

    class ConfidenceRecord(Struct, **opts):
        pass_: Annotated[float, msgspec.Meta(ge=0, le=1)] = msgspec.field(name="pass")
        fail: Annotated[float, msgspec.Meta(ge=0, le=1)]
        na: Annotated[float, msgspec.Meta(ge=0, le=1)]
        source: Literal["logprobs", "samples"]

    class Verdict(Struct, **opts):
        case_id: schema.CaseId
        rubric_id: RubricId
        # Optional only so that a judge state (no status) can be told from a broken verdict.
        status: VerdictStatus | None = None
        rationale: str | None = None
        judge: Judge | None = None
        usage: Usage | None = None
        request_id: str | None = None
        rubric_hash: str | None = None
        state_hash: str | None = None
        exposure: VerdictExposure | None = None
        error: Error | None = None
        votes: list[VoteRecord] | None = None
        panel: PanelRecord | None = None
        kind: Literal["judge", "exact"] | None = None
        evidence: list[str] | None = None
        confidence: ConfidenceRecord | None = None
        # A judge state written by `build` has these; Raw keeps them undecoded.
        question: msgspec.Raw = msgspec.Raw()
        state: msgspec.Raw = msgspec.Raw()
        allows_na: bool | None = None  # a judge state's, written only when false
        pair: pairwise.reader_type(forbid_unknown) | None = None  # type: ignore[valid-type]

    return Verdict, VerdictExposure


STRICT = _make_types(forbid_unknown=True)
LENIENT = _make_types(forbid_unknown=False)


def decoder(allow_unknown_fields: bool = False) -> msgspec.json.Decoder[Any]:
    """A typed decoder for one verdict line; build it once and reuse it."""
    return msgspec.json.Decoder((LENIENT if allow_unknown_fields else STRICT)[0])


class DuplicateKeyError(InputError):
    """A verdict file holds two verdicts for one (case id, rubric id): which counts is unknown."""


class VerdictFileSummary(Struct):
    """What one verdict file held: ``lines == blank + verdicts + judge_states + rejected``."""

    path: str
    lines: int
    blank: int
    verdicts: int
    judge_states: int
    rejected: int
    rejected_by_kind: dict[str, int]
    by_status: dict[str, int]
    judges: dict[str, int]  # judge model -> verdicts, the first 20 models seen
    judges_unlisted: int  # verdicts by models beyond those
    no_judge: int  # verdicts without a `judge`
    unscored_rate: float | None  # unscored / verdicts (None: no verdict)
    first_rejects: list[Reject]
    # Verdicts whose rubric id came after the first MAX_RUBRICS: counted here, not analysed.
    unlisted_rubric: int = 0


# -- compact columns -----------------------------------------------------------------------------
class Codes:
    """Small integer codes for repeated strings (rubric ids, groups), shared by both files so
    that joins compare integers; ``limited`` gives codes to the first ``limit`` only."""

    def __init__(self, limit: int | None = None) -> None:
        self.of: dict[str, int] = {}
        self.names: list[str] = []
        self.limit = limit

    def limited(self, name: str) -> int | None:
        """The name's code, or None for a new name once ``limit`` names have codes."""
        found = self.of.get(name)
        if found is None and self.limit is not None and len(self.names) >= self.limit:
            return None
        return self.code(name)

    def code(self, name: str) -> int:
        found = self.of.get(name)
        if found is None:
            found = self.of[name] = len(self.names)
            self.names.append(name)
        return found


class Columns:
    """Python lists appended row by row, frozen into a Polars frame every 65,536 rows."""

    def __init__(self, schema_: dict[str, Any]) -> None:
        self.schema = schema_
        self.lists: dict[str, list[Any]] = {name: [] for name in schema_}
        self.frames: list["pl.DataFrame"] = []

    def flush(self) -> None:
        import polars as pl

        first = next(iter(self.lists.values()))
        if first:
            self.frames.append(pl.DataFrame(
                {name: pl.Series(name, values, dtype=self.schema[name])
                 for name, values in self.lists.items()}))
            for values in self.lists.values():
                values.clear()

    def frame(self) -> "pl.DataFrame":
        """Everything appended, as one (chunked) frame."""
        import polars as pl

        self.flush()
        if not self.frames:
            return pl.DataFrame(schema=self.schema)
        frame = pl.concat(self.frames, rechunk=False)
        self.frames = []
        return frame


def verdict_schema(with_hashes: bool) -> dict[str, Any]:
    """The column types of a verdict frame; ``compare`` adds the three hashes."""
    import polars as pl

    columns: dict[str, Any] = {"case_id": pl.String, "rubric": pl.UInt32, "status": pl.UInt8,
                               "line": pl.UInt32}
    if with_hashes:
        columns |= {"rubric_hash": pl.Int64, "state_hash": pl.Int64, "exposure": pl.Int64}
    return columns


def _hash(text: str | None) -> int | None:
    # Python's 64-bit string hash: the keys are only compared within one process, and a str
    # caches its hash, so this costs nothing for the rubric hash repeated on every line.
    return None if text is None else hash(text)


def exposure_key(shown: list[str]) -> int:
    """A 64-bit key for what a judge was shown: the set of judge-state names."""
    return hash("\x1f".join(sorted(shown)))


def first_rows(rows: "pl.LazyFrame", groups: list[str], order: str, k: int,
               batched: bool | None = None) -> "pl.DataFrame":
    """The ``k`` rows with the smallest ``order`` in each group, sorted by group and order.

    Streamed in batches and merged (memory: the join plus one batch), when this Polars
    has ``collect_batches``; otherwise one group-by, which holds every row of a group.
    """
    import polars as pl

    if batched is None:
        batched = hasattr(pl.LazyFrame, "collect_batches")
    if batched:
        best: pl.DataFrame | None = None
        for batch in rows.collect_batches(engine="streaming"):
            merged = batch if best is None else pl.concat([best, batch])
            best = merged.sort(order).group_by(groups, maintain_order=True).head(k)
        if best is None:
            best = rows.clear().collect()
    else:
        values = [c for c in rows.collect_schema().names() if c not in groups]
        best = (rows.group_by(groups).agg(pl.col(c).bottom_k_by(order, k=k) for c in values)
                .collect(engine="streaming").explode(values))
    return best.sort([*groups, order])


# -- rationales of listed examples -------------------------------------------------------------
class _Rationale(Struct, gc=False):
    rationale: str | None = None


def rationales_at(path: str, lines: set[int],
                  max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> dict[int, str | None]:
    """The rationale of the verdict on each of these lines of ``path``, read in a second pass
    that decodes only those lines (the first pass keeps no text). Standard input cannot be
    read twice: nothing is found there."""
    from evalstream._files.lines import Chunk, open_input, read_chunks

    if not lines or path == "-":
        return {}
    wanted = sorted(lines)
    found: dict[int, str | None] = {}
    decode = msgspec.json.Decoder(_Rationale).decode
    stream = open_input(path)
    try:
        at = 0
        for item in read_chunks(stream, max_line_bytes):
            if type(item) is not Chunk:
                continue
            end = item.line + len(item.lines)
            while at < len(wanted) and wanted[at] < end:
                if wanted[at] >= item.line:
                    try:
                        found[wanted[at]] = decode(item.lines[wanted[at] - item.line]).rationale
                    except msgspec.DecodeError:
                        pass  # the line was rejected: it has no rationale
                at += 1
            if at == len(wanted):
                break
    finally:
        if path != "-":
            stream.close()
    return found


# -- rejects ---------------------------------------------------------------------------------------
class RejectSink:
    """Where the rejects of a run go: counted always, written as JSONL when a path is given
    (into ``out``, a target of the run's transaction, when given: it commits it then)."""

    def __init__(self, path: str | None, out: Any = None) -> None:
        from evalstream._files.outputs import AtomicOutput

        self.path = path
        self._out = out if out is not None else AtomicOutput(path) if path else None
        self._encode = msgspec.json.Encoder().encode

    def write(self, file: str, rejects: Iterable[Reject]) -> None:
        if self._out is None:
            return
        self._out.write(b"".join(
            escape_line_breaks(self._encode(FileReject.of(file, r)))
            + b"\n"
            for r in rejects))

    def commit(self) -> None:
        """Commit the rejects written to a path of their own (a run's transaction commits the
        ``out`` it gave)."""
        if self._out is not None:
            self._out.commit()

    def abort(self) -> None:
        if self._out is not None:
            self._out.abort()


@dataclass
class _Tally:
    lines: int = 0
    blank: int = 0
    judge_states: int = 0
    rejected: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    judges: Counter[str] = field(default_factory=Counter)
    judges_unlisted: int = 0
    no_judge: int = 0
    unlisted_rubric: int = 0
    first: list[Reject] = field(default_factory=list)


@dataclass
class VerdictFile:
    """A verdict file read into compact columns, with what it held."""

    summary: VerdictFileSummary
    frame: "pl.DataFrame"


def read_verdicts(path: str, rubrics: Codes, sink: RejectSink, *, with_hashes: bool = False,
                  max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                  allow_unknown_fields: bool = False, pairs: Any = None,
                  each: Callable[[int, int, Any], None] | None = None) -> VerdictFile:
    """Stream a verdict file into a frame of (case_id, rubric code, status code, line[, hashes]).

    Rejects go to ``sink`` as they are found; every line is counted. Raises DuplicateKeyError
    when two verdicts share a (case id, rubric id). ``pairs`` (``bias.PairRows``) is given the
    ``pair`` of each pairwise verdict. ``each(rubric code, line, verdict)`` sees every verdict
    kept, decoded, before its text is dropped (a panel's votes, usage).
    """
    reader = RecordReader(verdict_kind(allow_unknown_fields), max_line_bytes)
    columns = Columns(verdict_schema(with_hashes))
    lists = columns.lists
    case_ids, codes, statuses, line_nos = (lists["case_id"], lists["rubric"], lists["status"],
                                           lists["line"])
    hashes = (lists["rubric_hash"], lists["state_hash"], lists["exposure"]) if with_hashes \
        else None
    rubric_code = rubrics.limited
    tally = _Tally()
    for item in reader.read_file(path):
        if type(item) is Reject:
            sink.write(path, [item])
            continue
        line_no, _, _, v = item  # type: ignore[misc]
        if line_no > MAX_LINE_NUMBER:
            raise InputError(f"{path}: more than {MAX_LINE_NUMBER:,} lines; split the file.")
        status = v.status
        if status is None:  # a judge state written by build: no verdict yet
            tally.judge_states += 1
            continue
        code = rubric_code(v.rubric_id)
        if code is None:
            tally.unlisted_rubric += 1
            continue
        case_ids.append(v.case_id)
        codes.append(code)
        statuses.append(STATUS_CODE[status])
        line_nos.append(line_no)
        if pairs is not None and v.pair is not None:
            pairs.add(v.case_id, code, v.pair)
        if each is not None:
            each(code, line_no, v)
        if v.judge is None:
            tally.no_judge += 1
        else:
            _count_judge(tally, v.judge.model)
        if hashes is not None:
            hashes[0].append(_hash(v.rubric_hash))
            hashes[1].append(_hash(v.state_hash))
            hashes[2].append(None if v.exposure is None else exposure_key(v.exposure.shown))
        if len(case_ids) >= FLUSH_ROWS:
            columns.flush()
    counts = reader.counts
    tally.lines, tally.blank, tally.rejected = counts.lines, counts.blank, counts.rejected
    tally.by_kind.update(counts.rejected_by_kind)
    tally.first = reader.first_rejects
    frame = columns.frame()
    check_duplicates(path, frame, rubrics.names)
    return VerdictFile(_summary(path, tally, frame), frame)


def _count_judge(tally: _Tally, model: str) -> None:
    if model in tally.judges or len(tally.judges) < MAX_JUDGES_LISTED:
        tally.judges[model] += 1
    else:
        tally.judges_unlisted += 1


def _summary(path: str, tally: _Tally, frame: "pl.DataFrame") -> VerdictFileSummary:
    counts = Counter(dict(frame["status"].value_counts().iter_rows()))
    unscored = counts.get(UNSCORED, 0)
    return VerdictFileSummary(
        path=path, lines=tally.lines, blank=tally.blank, verdicts=frame.height,
        judge_states=tally.judge_states, rejected=tally.rejected,
        rejected_by_kind=dict(sorted(tally.by_kind.items())),
        by_status={s: counts.get(code, 0) for code, s in enumerate(STATUSES)},
        judges=dict(tally.judges.most_common()), judges_unlisted=tally.judges_unlisted,
        no_judge=tally.no_judge,
        unscored_rate=unscored / frame.height if frame.height else None,
        first_rejects=tally.first, unlisted_rubric=tally.unlisted_rubric)


def check_duplicates(path: str, frame: "pl.DataFrame", rubric_names: list[str]) -> None:
    """Raise DuplicateKeyError naming the first repeated (case id, rubric id) and its lines.

    A sorted 64-bit hash of each key finds candidates in 16 bytes a row (a Polars group-by
    on the string key takes ten times that); candidates are then checked on the keys.
    """
    import polars as pl

    if frame.height < 2:
        return
    key = (pl.col("case_id").hash(0x5EED) ^ (pl.col("rubric").cast(pl.UInt64)
                                             * 0x9E3779B97F4A7C15)).alias("key")
    hashes = frame.select(key).to_series().sort()
    repeated = hashes.filter(hashes == hashes.shift(1))
    del hashes
    if repeated.is_empty():
        return
    groups = (frame.filter(key.is_in(repeated.implode()))
              .group_by("case_id", "rubric").agg(pl.col("line").sort())
              .filter(pl.col("line").list.len() > 1)
              .sort(pl.col("line").list.get(1)))
    if groups.is_empty():
        return  # different keys that share a hash
    case_id, rubric, lines = groups.row(0)
    more = f" ({groups.height:,} keys are repeated in all)" if groups.height > 1 else ""
    raise DuplicateKeyError(
        f"{path}: lines {lines[0]} and {lines[1]} are both verdicts for case `{case_id}`, rubric "
        f"`{rubric_names[rubric]}`{more}. A file may hold one verdict per (case_id, rubric_id): "
        "which one counts is unknown, so nothing was computed. Keep one line per key (e.g. the "
        "last retry) and run again.")


# -- reject sentences ------------------------------------------------------------------------------
SHAPE = rejects.Shape(
    noun="verdict",
    required=("case_id", "rubric_id", "status"),
    fields={"$": VERDICT_FIELDS, "$.exposure": EXPOSURE_FIELDS,
            "$.usage": ("input_tokens", "output_tokens"), "$.error": ("cause", "detail"),
            "$.pair": ("key", "chars", "decision", "agreed", "orders", "order"),
            "$.votes[]": VOTE_FIELDS, "$.votes[].usage": ("input_tokens", "output_tokens"),
            "$.votes[].error": ("cause", "detail"), "$.panel": PANEL_FIELDS,
            "$.confidence": CONFIDENCE_FIELDS},
    allowed={"$.status": "pass, fail, na, unscored", "$.kind": "judge, exact",
             "$.votes[].status": "pass, fail, na, unscored"},
    unlisted=frozenset({"question", "state", "allows_na"}),
    ids={"$.case_id": "Case id", "$.rubric_id": "Rubric id"},
    id_field="case_id",
    too_long="a verdict is rarely that long (check the file), or raise --max-line-bytes",
)
_MISSING_STATUS = ("Required field `status` is missing or null; a verdict's status is `pass`, "
                   "`fail`, `na` or `unscored` (a verdict that could not be read is "
                   "`unscored`).")


def verdict_kind(allow_unknown_fields: bool = False) -> RecordKind[Any]:
    """How verdict files are read: the verdict decoder, the verdict sentences, and a line
    with neither a status nor a judge state rejected."""

    def reject(line_no: int, offset: int, line: bytes, exc: BaseException) -> Problem:
        return (rejects.reject(line_no, offset, line, exc, SHAPE),
                rejects.reject_kind(exc, line, SHAPE))

    def check(verdict: Any, line_no: int, line: bytes) -> Problem | None:
        if verdict.status is not None:
            return None
        state = bytes(verdict.state).lstrip()
        if state.startswith(b"{"):
            return None  # a judge state written by build: no verdict yet
        if state and not state.startswith(b"null"):
            kind = {b"[": "an array", b'"': "a string"}.get(state[:1], "a number or boolean")
            return Reject(line_no, 0, verdict.case_id, "$.state", (
                f"`$.state` is {kind}, but a judge state is an object; a line without "
                "`status` must be a judge state written by build, and a verdict needs "
                "`status` (`pass`, `fail` or `unscored`)."), raw_text(line)), "invalid value"
        return Reject(line_no, 0, verdict.case_id, "$.status", _MISSING_STATUS,
                      raw_text(line)), "missing field"

    return RecordKind(decode=decoder(allow_unknown_fields).decode, reject=reject,
                      too_long=lambda item, limit: rejects.long_line_reject(item, limit, SHAPE),
                      check=check)
