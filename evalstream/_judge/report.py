"""The judge run report (``verdicts.report.json``): counts that add up, statuses and causes,
requests, retries, usage, cost and latency, and what was not judged."""

from __future__ import annotations

import math
from collections import Counter

import msgspec
from msgspec import Struct

from evalstream._judge.escalation import Escalation
from evalstream._judge.logprobs import ConfidenceReport
from evalstream._verdicts.cost import Price
from evalstream._verdicts.percentiles import percentile
from evalstream._verdicts.records import JudgeInfo, TokenUsage

MAX_NOT_JUDGED_LISTED = 1_000
# Above this share of unscored verdicts a judge run exits 1 unless told otherwise
# (--max-unscored-rate): a run where most answers are unusable says more about the server
# than about the cases (issue 25: a port with nothing listening, or a server refusing
# structured output, left 101 of 101 unscored and exit 0).
DEFAULT_MAX_UNSCORED_RATE = 0.5


def too_unscored(unscored: int, judged: int, limit: float | None) -> bool:
    """Whether a run's unscored verdicts make it exit 1: more than ``limit`` of the
    ``judged`` (None: no limit), or every one of them, whatever the limit (a run without one
    usable verdict is never clean)."""
    if not judged or not unscored:
        return False
    return unscored == judged or (limit is not None and unscored / judged > limit)


class Counts(Struct):
    """``lines == blank + judge_states + exact_verdicts + rejected`` and
    ``judge_states == verdicts + not_judged + pairs``: a pairwise state's two orders are two
    judge states and one verdict (``pairs`` counts those judged; a pair not judged is two
    states not judged)."""

    lines: int = 0
    blank: int = 0
    judge_states: int = 0
    exact_verdicts: int = 0
    rejected: int = 0
    verdicts: int = 0
    not_judged: int = 0
    pairs: int = 0


class Requests(Struct):
    """What was asked this run. ``needed`` judge states (a panel's: votes) had no stored
    answer (or, with --retry-unscored, an unscored one); ``sent`` requests were sent for
    them (the others were duplicates of a request already asked, answered by another run on
    the same store while this one ran: ``from_other_runs``, or stopped by a limit; a panel's
    request may ask for several samples); each sent request was ``answered`` (stored) or
    ``failed`` (no answer: not stored); ``reused`` answers (votes) were stored already."""

    needed: int = 0
    sent: int = 0
    answered: int = 0
    failed: int = 0
    reused: int = 0  # judge states whose answer was already stored
    retried_unscored: int = 0  # of needed: stored unscored answers to ask again
    from_other_runs: int = 0  # of needed: sent by another run on the store, its answer read
    attempts: int = 0  # HTTP attempts, retries included
    retries: int = 0
    retried: dict[str, int] = {}  # retries by reason: timeout, connection, http 429, ...
    rate_limited: int = 0  # 429 answers
    paced_seconds: float = 0.0  # held by the server's rate-limit headers (limits.Pacer)
    max_in_flight: int = 0
    lowest_concurrency: int = 0  # after halving on 429s


class Latency(Struct):
    """Answered requests' latency in milliseconds (the last attempt, send to last byte)."""

    p50: float | None = None
    p95: float | None = None
    max: float | None = None


# The price record is ``_verdicts.cost``'s (agree over several runs shows it too); judge's
# modules name it by what a report holds.
Prices = Price


class NotJudged(Struct):
    """A judge state without a verdict (a limit stopped the run first): re-run to judge it."""

    line: int
    case_id: str
    rubric_id: str


class JurorReport(Struct):
    """One juror of a panel: who, its samples a state, this run's requests (one may carry
    several samples), votes stored, failed (no answer) and reused from the store; the
    statuses of its votes in the verdicts written; this run's tokens and cost."""

    name: str
    model: str
    provider: str
    samples: int
    sent: int
    answered: int
    votes_stored: int
    votes_failed: int
    votes_reused: int
    votes: dict[str, int]  # by status: pass, fail, na, unscored
    usage: TokenUsage
    prices: Prices | None
    cost_usd: float | None


class JuryReport(Struct):
    """A panel's run (issue 26): its rule and file, each juror, and how its votes agreed:
    ``split`` verdicts whose scored votes differ, ``unstable`` verdicts where one juror's
    samples differ, ``consistency`` the mean share of scored votes agreeing with the
    decision (over decided verdicts; with one juror and --samples, its consistency)."""

    rule: str
    file: str | None
    votes_per_state: int
    jurors: list[JurorReport]
    split: int
    unstable: int
    consistency: float | None
    escalation: Escalation | None = None  # rule escalate (issue 29)


class JudgeReport(Struct, omit_defaults=True):
    """The machine-readable summary of one ``judge`` run (``jury`` only for a panel)."""

    command: str
    evalstream: str
    input: str
    output: str | None
    rejects: str | None
    store: str
    judge: JudgeInfo
    counts: Counts
    by_status: dict[str, int]
    by_cause: dict[str, int]
    unscored_rate: float | None
    max_unscored_rate: float | None
    requests: Requests
    usage: TokenUsage  # this run's answers
    usage_all: TokenUsage  # every verdict's answer, stored before or now
    # the encoding requests were counted in for --tpm and --max-cost (None: not counted);
    # usage is the provider's own count
    tokenizer: str | None
    prices: Prices | None
    cost_usd: float | None  # this run's answers, at the given prices
    max_cost: float | None
    max_requests: int | None
    stopped_by: str | None  # "max-cost", "max-requests": states were left not judged
    latency_ms: Latency
    not_judged: list[NotJudged]
    not_judged_listed: int
    rejected_by_kind: dict[str, int]
    # verdicts whose answer came in text that structured output did not shape (a fence, a
    # <think> block before it, text where a tool call was asked for): read all the same
    without_structured_output: int
    warnings: list[str]
    seconds: float
    exit_code: int
    jury: JuryReport | None = None
    confidence: ConfidenceReport | None = None  # --confidence (issue 29)


def encode(report: JudgeReport) -> bytes:
    """The report as indented JSON with a final newline."""
    from evalstream._files.outputs import escape_line_breaks

    return escape_line_breaks(msgspec.json.format(msgspec.json.encode(report), indent=2)) + b"\n"


class Histogram:
    """Latencies in buckets 1% wide: percentiles (nearest rank, ``_verdicts.percentiles``)
    within 1%, in memory that does not grow with the number of requests."""

    RATIO = math.log(1.01)

    def __init__(self) -> None:
        self.buckets: Counter[int] = Counter()
        self.n = 0
        self.max = 0.0

    def add(self, ms: float) -> None:
        self.buckets[int(math.log(max(ms, 0.01)) / self.RATIO)] += 1
        self.n += 1
        self.max = max(self.max, ms)

    def percentile(self, percent: int) -> float | None:
        """The nearest-rank ``percent`` percentile: the middle of its bucket, never above
        the largest latency; None without a latency."""
        bucket = percentile(self.buckets, percent)
        if bucket is None:
            return None
        return round(min(math.exp((bucket + 0.5) * self.RATIO), self.max), 1)

    def latency(self) -> Latency:
        return Latency(self.percentile(50), self.percentile(95),
                       round(self.max, 1) if self.n else None)
