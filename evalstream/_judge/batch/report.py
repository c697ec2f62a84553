"""The reports of ``batch prepare`` (``DIR/prepare.report.json``) and ``batch collect``
(``verdicts.report.json``): counts that add up, and what is left to do."""

from __future__ import annotations

import msgspec
from msgspec import Struct

from evalstream._judge.report import Prices
from evalstream._verdicts.records import JudgeInfo, TokenUsage

MAX_MISSING_LISTED = 1_000


class PrepareCounts(Struct):
    """``lines == blank + judge_states + exact_verdicts + rejected`` and
    ``judge_states == requests + duplicates + stored``."""

    lines: int = 0
    blank: int = 0
    judge_states: int = 0
    exact_verdicts: int = 0
    rejected: int = 0
    requests: int = 0  # request lines written
    duplicates: int = 0  # judge states whose request another state of the input already makes
    stored: int = 0  # judge states whose answer the consulted store already holds


class FileEntry(Struct):
    """One request file."""

    name: str
    requests: int
    bytes: int


class Limit(Struct):
    """What one request file may hold."""

    requests: int
    bytes: int


class PrepareReport(Struct):
    """The machine-readable summary of one ``batch prepare``."""

    command: str
    evalstream: str
    input: str
    folder: str
    judge: JudgeInfo
    format: str  # openai (also vLLM run-batch) or anthropic
    limits: Limit
    store: str | None  # the store consulted (--store, --only-missing): its answers not asked
    counts: PrepareCounts
    files: list[FileEntry]
    rejected_by_kind: dict[str, int]
    warnings: list[str]
    seconds: float
    exit_code: int


class ResultFile(Struct):
    """One result file: ``lines == blank + results + rejected``."""

    path: str
    lines: int
    blank: int
    results: int
    rejected: int


class ResultCounts(Struct):
    """Every result line, counted once: ``lines == blank + rejected + answers + repeats +
    failures`` (a conflicting or unknown result is one of ``rejected``)."""

    lines: int = 0
    blank: int = 0
    rejected: int = 0
    answers: int = 0  # answers stored by this collect
    repeats: int = 0  # the same answer again (given twice, or stored before)
    failures: int = 0  # errored, canceled or expired requests
    conflicts: int = 0  # of rejected: a second, different answer to a request
    unknown: int = 0  # of rejected: a custom_id that is not a request of this batch


class CollectCounts(Struct):
    """``judge_states == verdicts + missing + pairs``: a pairwise state's two orders are two
    judge states and one verdict (``pairs`` counts those collected; a pair not collected is
    two states missing)."""

    judge_states: int = 0
    exact_verdicts: int = 0  # passed through
    verdicts: int = 0
    missing: int = 0
    pairs: int = 0


class Missing(Struct):
    """A judge state without a verdict: no result came back (``reason`` "no result"), or,
    with ``--missing skip``, the request's failure (errored, canceled, expired)."""

    line: int
    case_id: str
    rubric_id: str
    reason: str


class CollectReport(Struct):
    """The machine-readable summary of one ``batch collect``."""

    command: str
    evalstream: str
    folder: str
    output: str
    rejects: str | None  # None: no line rejected, and no --rejects named
    store: str
    judge: JudgeInfo
    result_files: list[ResultFile]
    results: ResultCounts
    # Results of this batch by the provider's type (conflicting answers included; lines that
    # are not results of this batch are not).
    by_type: dict[str, int]
    counts: CollectCounts
    by_status: dict[str, int]
    by_cause: dict[str, int]
    unscored_rate: float | None
    max_unscored_rate: float | None
    missing_policy: str  # unscored or skip
    usage: TokenUsage  # answers stored by this collect
    usage_all: TokenUsage  # every verdict's answer
    prices: Prices | None
    cost_usd: float | None  # usage_all at the given (batch) prices
    missing: list[Missing]
    missing_listed: int
    rejected_by_kind: dict[str, int]
    warnings: list[str]
    seconds: float
    exit_code: int


def encode(report: Struct) -> bytes:
    """A report as indented JSON with a final newline."""
    return msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n"
