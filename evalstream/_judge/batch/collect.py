"""``batch collect``: result files -> the answer store -> one verdict per judge state.

Pass 1 reads every result file (in any order of lines, split over any number of files,
partial results included) through the one read loop and matches each line to its request by
``custom_id``, never by position. A succeeded result's response body goes into the answer
store under its request key (the custom_id), exactly where a live run stores its answer, so
neither a later live run nor another collect pays for it again. Failures (errored, canceled,
expired) are kept for this run only, as a live run keeps requests that got no answer.
Pass 1 commits every 10,000 answers.

Result files are read in the order of their names, so a collect gives the same bytes however
the files were listed. The first answer to a request is the one kept (one stored before this
collect comes first): the same answer again is counted as a repeat; a different one is
rejected with its file, line and a sentence. A failure never replaces an answer.

Pass 2 walks the manifest's judge states in input order and writes each verdict from the
store through ``judge.verdict``, the live judge's verdict maker: a verdict from a batch
result is the live verdict for the same request, byte for byte, but for usage and request
id. Exact verdicts of the input pass through in their places. A state whose request failed
is ``unscored`` with the failure as cause (``--missing skip``: left out and listed); a state
with no result at all is listed as missing (exit 3). A pairwise state's two orders (on
consecutive lines of the manifest, as prepare read them) make one verdict
(``verdict.pair_answered``), or are both missing when either is.
"""

from __future__ import annotations

import glob
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from evalstream._cases.reading import RecordReader
from evalstream._cases.rejects import FileReject, Reject, raw_text
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._files.outputs import AtomicOutput
from evalstream._files.sniff import check_input
from evalstream._files.transaction import Target, Transaction
from evalstream._judge import answer, verdict
from evalstream._judge.batch import formats, results
from evalstream._judge.batch.manifest import Manifest, State
from evalstream._judge.batch.report import (
    MAX_MISSING_LISTED,
    CollectCounts,
    CollectReport,
    Missing,
    ResultCounts,
    ResultFile,
)
from evalstream._judge.batch.report import encode as encode_report
from evalstream._judge.report import DEFAULT_MAX_UNSCORED_RATE, too_unscored
from evalstream._judge.store import Failure, Store, Stored
from evalstream._verdicts.cost import price, usd
from evalstream._verdicts.records import VOTE_STATUSES, JudgeVerdict, TokenUsage
from evalstream._version import __version__
from evalstream.errors import EXIT_INCOMPLETE, EXIT_OK, EXIT_REJECTS, UsageError

RESULTS_FOLDER = "results"
MISSING_POLICIES = ("unscored", "skip")
RESULTS_USAGE = ("; collect reads the provider's result files (OpenAI's output and error files, "
                 "vllm run-batch's output, Anthropic's results), each line with a `custom_id`")
NO_RESULT = "no result"
# Answers stored between commits. Commits follow the files' name order, so a collect stopped
# part-way and run again keeps the same first answers and writes the same bytes.
COMMIT_EVERY = 10_000
# SQLite's page cache for the store, bounded: a collect writes and reads every answer once
# under random keys, and each page missed is a system call. 1,000,000 results (a 670 MB
# store): 181 s, 26 s of it system time, 42 MiB peak with SQLite's default 2 MiB; 138 s, 16 s
# and 70 MiB with 32 MiB; 112 s, 13 s and 105 MiB with 64 MiB (a loaded machine, one run each).
STORE_CACHE_MIB = 32
CONFLICT = "conflicting answer"


@dataclass
class Options:
    """Everything a collect needs (``evalstream.batch_collect`` fills it)."""

    folder: str
    output: str
    results: list[str] = field(default_factory=list)  # empty: DIR/results/*.jsonl
    store: str | None = None  # the answer store; default: the one prepare consulted, else
    # beside the output (verdicts.judge.sqlite, where `evalstream judge` looks)
    missing: str = "unscored"
    price_in: float | None = None
    price_out: float | None = None
    max_unscored_rate: float | None = DEFAULT_MAX_UNSCORED_RATE
    rejects: str | None = None
    report: str | None = None
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    force: bool = False  # replace targets that hold something else (cases, build's states)


def result_paths(opts: Options) -> tuple[list[str], list[str]]:
    """The result files in name order, each once (and warnings)."""
    given = opts.results or sorted(
        glob.glob(os.path.join(glob.escape(opts.folder), RESULTS_FOLDER, "*.jsonl")))
    seen: dict[str, str] = {}
    warnings = []
    for path in given:
        if path == "-":
            raise UsageError("result files are read from paths, not stdin (-).")
        if not os.path.isfile(path):
            raise UsageError(f"{path} is not a file; give the provider's result files.")
        check_input(path, "batch results", RESULTS_USAGE)
        real = os.path.realpath(path)
        if real in seen:
            warnings.append(f"{path} was given twice (as {seen[real]}); it is read once.")
            continue
        seen[real] = path
    return sorted(seen.values()), warnings


def outputs(opts: Options, manifest: Manifest, paths: list[str]) -> Transaction:
    """The targets, checked as every command's are (no target is an input or another
    target, whatever the spelling; each replaces only its own kind of output, unless
    --force): the verdicts, the rejects and the report beside them by default, and the
    answer store (the one prepare consulted, else beside the output, where `evalstream
    judge` looks; SQLite opens it)."""
    if opts.output == "-" and not (opts.rejects and opts.report and (
            opts.store or manifest.meta.get("store"))):
        raise UsageError("with the verdicts on stdout, give --rejects, --report and --store.")
    return Transaction(
        [("manifest", manifest.path), *(("result file", p) for p in paths)],
        [Target("output", opts.output, "verdicts"),
         Target("rejects", opts.rejects, "rejects", beside=".rejects.jsonl", optional=True),
         Target("report", opts.report, "json", beside=".report.json"),
         Target("store", opts.store or manifest.meta.get("store"), beside=".judge.sqlite")],
        opts.force).check()


class _Failures:
    """This run's failed requests, the first failure of each (on disk: it may be millions)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("", isolation_level=None)
        self._db.execute("CREATE TABLE failed (key BLOB PRIMARY KEY, type TEXT NOT NULL, "
                         "detail TEXT NOT NULL) WITHOUT ROWID")
        self._db.execute("BEGIN")

    def add(self, key: str, kind: str, detail: str) -> None:
        self._db.execute("INSERT OR IGNORE INTO failed VALUES (?, ?, ?)",
                         (bytes.fromhex(key), kind, detail))

    def get(self, key: str) -> Failure | None:
        row = self._db.execute("SELECT type, detail FROM failed WHERE key = ?",
                               (bytes.fromhex(key),)).fetchone()
        return None if row is None else Failure(row[0], row[1])

    def close(self) -> None:
        self._db.close()


class Collector:
    """Pass 1: result lines into the store (answers) and this run's failures."""

    def __init__(self, opts: Options, manifest: Manifest, store: Store,
                 rejects: AtomicOutput) -> None:
        self.manifest = manifest
        self.config = manifest.config()
        self.provider = self.config.provider
        self.store = store
        self.rejects = rejects
        self.failures = _Failures()
        self.max_line_bytes = opts.max_line_bytes
        self.folder = opts.folder
        self.counts = ResultCounts()
        self.by_type: Counter[str] = Counter({t: 0 for t in formats.RESULT_TYPES})
        self.files: list[ResultFile] = []
        self.rejected_by_kind: Counter[str] = Counter()
        self.usage = [0, 0]
        self.commit_so_far: Callable[[], None] = lambda: None
        self._encode = msgspec.json.Encoder().encode

    def _reject(self, path: str, rej: Reject) -> None:
        self.rejects.write(self._encode(FileReject.of(path, rej)) + b"\n")

    def read(self, path: str) -> None:
        reader = RecordReader(results.kind(self.config.api, self.manifest, self.folder),
                              self.max_line_bytes)
        conflicts = 0
        for item in reader.read_file(path):
            if type(item) is Reject:
                self._reject(path, item)
                continue
            line_no, offset, raw, line = item  # type: ignore[misc]
            clash = self._take(line)
            if clash is not None:
                conflicts += 1
                self._reject(path, _conflict(line, line_no, offset, raw, *clash))
        c = reader.counts
        self.files.append(ResultFile(path, c.lines, c.blank, c.records - conflicts,
                                     c.rejected + conflicts))
        self.counts.lines += c.lines
        self.counts.blank += c.blank
        self.counts.rejected += c.rejected + conflicts
        self.counts.conflicts += conflicts
        self.counts.unknown += c.rejected_by_kind[results.UNKNOWN]
        self.rejected_by_kind.update(c.rejected_by_kind)
        if conflicts:
            self.rejected_by_kind[CONFLICT] += conflicts

    def _take(self, line: formats.ResultLine) -> tuple[answer.Parsed, answer.Parsed] | None:
        """Store or count one result; the answer kept and this one when this one answers an
        already answered request differently."""
        out = self.config.api.outcome(line)
        self.by_type[out.type] += 1
        key = line.custom_id
        if out.type != "succeeded":
            self.counts.failures += 1
            self.failures.add(key, out.type, out.detail or out.type)
            return None
        assert out.body is not None
        parsed = self.config.api.parse(out.body)
        usage = parsed.usage
        if self.store.add(key, self.provider, self.config.model, out.body,
                          out.request_id or parsed.response_id,
                          usage.input_tokens if usage else None,
                          usage.output_tokens if usage else None):
            self.counts.answers += 1
            if self.counts.answers % COMMIT_EVERY == 0:
                self.commit_so_far()
            if usage is not None:
                self.usage[0] += usage.input_tokens
                self.usage[1] += usage.output_tokens
            return None
        earlier = self.store.get(key)
        assert earlier is not None
        if earlier.body == out.body:  # the same result again (a file collected twice)
            self.counts.repeats += 1
            return None
        before, parsed = self._read(earlier.body), self._read(out.body)
        if (before.status, before.reason, before.cause) == (parsed.status, parsed.reason,
                                                            parsed.cause):
            self.counts.repeats += 1
            return None
        return before, parsed

    def _read(self, body: bytes) -> answer.Parsed:
        """An answer read in the form it was given in (a pointwise verdict, else a pairwise
        preference): only to tell two answers to one request apart, which the result line
        does not say the form of."""
        parsed = self.config.parse(body)
        if parsed.cause == "wrong_shape":
            other = self.config.pairwise.parse(body)
            if other.cause != "wrong_shape":
                return other
        return parsed


def _conflict(line: formats.ResultLine, line_no: int, offset: int, raw: bytes,
              before: answer.Parsed, now: answer.Parsed) -> Reject:
    return Reject(line_no, offset, line.custom_id, "$.custom_id", (
        f"This request was already answered differently ({_said(before)}, kept; this line "
        f"says {_said(now)}); the first answer is kept: one stored before this collect, else "
        "the first in the result files read in name order."), raw_text(raw))


def _said(parsed: answer.Parsed) -> str:
    return f"unscored: {parsed.cause}" if parsed.cause else f"{parsed.status!r}"


class Writer:
    """Pass 2: a verdict per judge state (or a missing entry), exact verdicts in place."""

    def __init__(self, opts: Options, manifest: Manifest, store: Store,
                 failures: _Failures) -> None:
        self.opts = opts
        self.manifest = manifest
        self.config = manifest.config()
        self.store = store
        self.failures = failures
        c = self.config
        self.info = c.info
        self.pair_info = c.pairwise.info
        self.counts = CollectCounts()
        self.by_status: Counter[str] = Counter()
        self.by_cause: Counter[str] = Counter()
        self.missing: list[Missing] = []
        self.usage_all = [0, 0]
        self._encode = msgspec.json.Encoder().encode

    def verdict(self, s: State) -> bytes | None:
        stored = self.store.get(s.key)
        if stored is not None:
            v, _ = verdict.answered(self.info, self.config.api, stored, s.case_id,
                                    s.rubric_id, s.rubric_hash, s.state_hash, s.exposure,
                                    s.allows_na)
            if v.usage is not None:
                self.usage_all[0] += v.usage.input_tokens
                self.usage_all[1] += v.usage.output_tokens
        else:
            failure = self.failures.get(s.key)
            if failure is None or self.opts.missing == "skip":
                self._missing(s, failure.cause if failure else NO_RESULT)
                return None
            v = verdict.unanswered(self.info, failure, s.case_id, s.rubric_id, s.rubric_hash,
                                   s.state_hash, s.exposure)
        return self._counted(v)

    def _counted(self, v: JudgeVerdict) -> bytes:
        self.by_status[v.status] += 1
        if v.error is not None:
            self.by_cause[v.error.cause] += 1
        return self._encode(v) + b"\n"

    def _answer(self, s: State) -> Stored | Failure | None:
        """What an order of a pair got; None when it has no result, or a failure and
        ``--missing skip``."""
        stored = self.store.get(s.key)
        if stored is not None:
            return stored
        failure = self.failures.get(s.key)
        return None if failure is None or self.opts.missing == "skip" else failure

    def pair_verdict(self, first: State, second: State) -> bytes | None:
        """The one verdict of a pairwise state's two orders, or None (both listed missing)
        when either has no result."""
        answers = [self._answer(first), self._answer(second)]
        if answers[0] is None or answers[1] is None:
            for s, got in zip((first, second), answers, strict=True):
                failure = self.failures.get(s.key)
                self._missing(s, (failure.cause if failure else NO_RESULT) if got is None
                              else "its other order has no verdict")
            return None
        v = verdict.pair_answered(self.pair_info, self.config.pairwise, first, second,
                                  answers[0], answers[1])
        if v.usage is not None:
            self.usage_all[0] += v.usage.input_tokens
            self.usage_all[1] += v.usage.output_tokens
        return self._counted(v)

    def _missing(self, s: State, reason: str) -> None:
        self.counts.missing += 1
        if len(self.missing) < MAX_MISSING_LISTED:
            self.missing.append(Missing(s.line, s.case_id, s.rubric_id, reason))

    def write(self, out: AtomicOutput) -> None:
        c = self.counts
        pending: list[bytes] = []
        first: State | None = None  # a pair's order ab: its order ba is the next state
        for item in self.manifest.items():
            if isinstance(item, State) and item.pair is not None:
                c.judge_states += 1
                if item.pair.order == "ab":
                    first = item
                    continue
                if first is None or first.pair is None or first.pair.key != item.pair.key:
                    raise self.manifest.damaged(f"holds the order ba of a pairwise state on "
                                                f"line {item.line} without its order ab")
                line = self.pair_verdict(first, item)
                first = None
                if line is None:
                    continue
                c.verdicts += 1
                c.pairs += 1
                pending.append(line)
            elif isinstance(item, State):
                c.judge_states += 1
                line = self.verdict(item)
                if line is None:
                    continue
                c.verdicts += 1
                pending.append(line)
            else:
                c.exact_verdicts += 1
                pending.append(item.raw + b"\n")
            if len(pending) >= 256:
                out.write_all(pending)
                pending = []
        out.write_all(pending)


def run(opts: Options) -> CollectReport:
    """Collect the results of ``opts.folder`` into verdicts; write verdicts, rejects and the
    report atomically; record the store in the folder (for ``prepare --only-missing``)."""
    started = time.perf_counter()
    if opts.missing not in MISSING_POLICIES:
        raise UsageError(f"--missing must be one of {', '.join(MISSING_POLICIES)}, not "
                         f"{opts.missing!r}.")
    manifest = Manifest.open(opts.folder)
    try:
        paths, warnings = result_paths(opts)
        if not paths and manifest.count("requests") and not manifest.all_downloaded():
            raise UsageError(
                f"no result files: give the provider's result files after the output (OpenAI: "
                f"the output and error files; vLLM run-batch: its output file; Anthropic: the "
                f"results), or run `evalstream batch status {opts.folder}` to download them into "
                f"{os.path.join(opts.folder, RESULTS_FOLDER)}.")
        targets = outputs(opts, manifest, paths)
        store_path = targets.path("store")
        assert store_path is not None
        store = Store(store_path, cache_mib=STORE_CACHE_MIB)
        try:
            with targets:
                out, rejects, report_out = (targets.open(role)
                                            for role in ("output", "rejects", "report"))
                collector = Collector(opts, manifest, store, rejects)
                try:
                    with store.transaction() as commit_so_far:
                        collector.commit_so_far = commit_so_far
                        for path in paths:
                            collector.read(path)
                    writer = Writer(opts, manifest, store, collector.failures)
                    writer.write(out)
                finally:
                    collector.failures.close()
                if not collector.counts.rejected:
                    targets.empty("rejects")
                report = _report(opts, collector, writer, store_path, targets.path("rejects"),
                                 warnings, started)
                report_out.write(encode_report(report))
        finally:
            store.close()
        manifest.set_meta("collected_into", os.path.abspath(store_path))
    finally:
        manifest.close()
    return report


def _report(opts: Options, collector: Collector, writer: Writer, store: str, rejects: str | None,
            warnings: list[str], started: float) -> CollectReport:
    c = writer.counts
    judged = sum(writer.by_status.values())
    unscored = writer.by_status["unscored"]
    rate = unscored / judged if judged else None
    prices = price(opts.price_in, opts.price_out)
    cost = None if prices is None else round(
        usd(writer.usage_all[0], writer.usage_all[1], prices.input, prices.output), 6)
    if c.missing:
        exit_code = EXIT_INCOMPLETE
    elif collector.counts.rejected or too_unscored(unscored, judged, opts.max_unscored_rate):
        exit_code = EXIT_REJECTS
    else:
        exit_code = EXIT_OK
    return CollectReport(
        command="batch collect", evalstream=__version__, folder=opts.folder, output=opts.output,
        rejects=rejects, store=store, judge=writer.info, result_files=collector.files,
        results=collector.counts, by_type=dict(collector.by_type), counts=c,
        by_status={s: writer.by_status[s] for s in VOTE_STATUSES},
        by_cause=dict(sorted(writer.by_cause.items())), unscored_rate=rate,
        max_unscored_rate=opts.max_unscored_rate, missing_policy=opts.missing,
        usage=TokenUsage(*collector.usage), usage_all=TokenUsage(*writer.usage_all),
        prices=prices, cost_usd=cost, missing=writer.missing,
        missing_listed=len(writer.missing),
        rejected_by_kind=dict(sorted(collector.rejected_by_kind.items())), warnings=warnings,
        seconds=round(time.perf_counter() - started, 3), exit_code=exit_code)
