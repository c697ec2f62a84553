"""`stats`: what a dataset holds, before anyone pays to judge it.

The input is read and decoded exactly as ``build`` does it, and every case is run past
the rubrics with build's own rules (``dataset.rows``: one small row of numbers per case,
never its text; ``dataset.parallel``: the same over worker processes). Every judge state
is counted exactly in the run's tokenizer (``build`` decides the same checks, mostly by a
byte bound: a state that fits in bytes fits in tokens), so every token figure here is an
exact count.
Here the rows are aggregated with Polars into ``DatasetStats``: a msgspec Struct with a
stable JSON shape (documented in docs/stats.md). It holds no timings, so the same input
gives the same bytes, whatever the number of workers.

Memory: the rows take about 40 bytes per case (build's id index takes 36-72, and is freed
before the aggregation); the rest is bounded: outcome and label counts per key, metadata
keys (at most ``KEYS_CAP`` key paths, exact values up to ``DISTINCT_CAP`` per key, then a
fixed-size estimate). Polars is imported only to aggregate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec
import numpy as np

from evalstream._cases.reading import LineCounts, case_reader
from evalstream._cases.rejects import Reject, did_you_mean
from evalstream._checks import encodings, tokens
from evalstream._checks.checker import OVER_BUDGET, CheckTally
from evalstream._checks.report import RubricInfo, label_warnings
from evalstream._checks.rubrics import RubricSet, load_rubrics
from evalstream._checks.state import question_text, system_text
from evalstream._engines.local import default_workers
from evalstream._files.lines import (
    DEFAULT_MAX_LINE_BYTES,
    Progress,
    input_size,
    open_input,
    progress,
    read_chunks,
    read_files,
)
from evalstream._files.outputs import AtomicOutput, escape_line_breaks
from evalstream._files.sniff import check_cases_input, check_cases_stream
from evalstream._files.store import (
    InputFile,
    input_volume,
    is_url,
    open_file,
    resolve_inputs,
)
from evalstream._files.temporaries import remove_stale_shared
from evalstream._files.transaction import Transaction, open_reports, report_targets
from evalstream._stats.rows import (
    DISTINCT_CAP,
    FIELDS,
    KEY_DEPTH,
    KEYS_CAP,
    MISSING,
    NO_STATE,
    SOURCES,
    STATUSES,
    UNKNOWN_RUBRICS_CAP,
    Collector,
    MetadataKeys,
    stats_checker,
)
from evalstream._version import __version__
from evalstream.errors import UsageError

if TYPE_CHECKING:  # Polars is imported when the rows are aggregated (see _summarize)
    import polars as pl

SHAPE = "evalstream.stats/2"  # the JSON shape's name and version; bumped on any change
# Histogram bin edges (a 1-2-5 series): fixed, so two datasets' histograms line up.
EDGES = (0, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000,
         200_000, 500_000)
TOP_VALUES = 10
LOW_CARDINALITY = 20  # keys with at most this many distinct values list their top values
FIRST_REJECTS = 20
_DTYPES = {"g": "UInt32", "line_bytes": "UInt64", "input_chars": "UInt32",
           "output_chars": "UInt32", "messages": "UInt16", "tool_events": "UInt16",
           "tool_failures": "UInt16", "state_tokens": "Int64", "judge_tokens": "UInt64",
           **{f"has_{f}": "Boolean" for f in FIELDS}}


# -- the JSON shape ------------------------------------------------------------------------------
class Summary(msgspec.Struct):
    """A distribution: mean, median and 95th percentile (linear interpolation, as numpy's
    default), and max. All null when there are no values."""

    mean: float | None
    median: float | None
    p95: float | None
    max: int | None


class GroupStats(msgspec.Struct):
    """The cases of one group (``key`` maps each ``--by`` key to its value; {} for all)."""

    key: dict[str, str]
    cases: int
    fields: dict[str, int]  # cases that have each optional field (FIELDS)
    tool_events: int
    tool_failures: int
    tool_failure_rate: float | None  # failures / tool events
    messages: Summary  # messages per case (0 when absent)
    input_chars: Summary
    output_chars: Summary
    line_bytes: Summary
    state_tokens: Summary  # exact tokens of the largest judge state per case, over cases with one
    # exact input tokens of every check build would write, as the judge is sent it: its
    # state, its question and the answer instruction, the request's framing
    judge_tokens: int
    checks: int  # checks build would write
    over_budget: int  # checks skipped because their requests would not fit the budget


class LabelCounts(msgspec.Struct):
    """Expected labels of one rubric (in one group, or overall), and its coverage."""

    labels: int
    status: dict[str, int]  # pass, fail, na
    source: dict[str, dict[str, int]]  # source -> status -> labels
    applies: int  # cases where the rubric applies (written or over budget)
    labelled: int  # of those, cases with a label for the rubric
    coverage: float | None  # labelled / applies
    not_applicable: int  # labels on cases where the rubric does not apply: never comparable


class GroupLabels(msgspec.Struct):
    key: dict[str, str]
    counts: LabelCounts


class RubricLabels(msgspec.Struct):
    rubric: str
    in_rubrics: bool  # false: a label for a rubric the rubric set does not have
    total: LabelCounts
    groups: list[GroupLabels]


class RubricChecks(msgspec.Struct):
    """What ``build`` would do with one rubric: checks written and skipped, by reason."""

    rubric: str
    kind: str
    applies: int
    checks: int
    skipped: dict[str, int]
    # exact: the system text the judge is sent (preamble, question, answer instruction; judge
    # rubrics; null for exact ones)
    question_tokens: int | None


class ValueCount(msgspec.Struct):
    value: str
    cases: int


class MetadataKey(msgspec.Struct):
    """One metadata key path (nested keys joined with dots)."""

    key: str
    cases: int
    objects: int  # cases where the value is an object (its keys are counted as key paths)
    distinct: int  # distinct values that are not objects
    distinct_exact: bool  # false: over DISTINCT_CAP values, ``distinct`` is an estimate
    top: list[ValueCount] | None  # the most frequent values, for low-cardinality keys


class MetadataStats(msgspec.Struct):
    cases: int  # cases with metadata
    keys: list[MetadataKey]
    depth: int
    distinct_cap: int
    keys_cap: int
    keys_dropped: int  # key occurrences not counted because KEYS_CAP paths were tracked


class ByKey(msgspec.Struct):
    distinct: int
    missing: int


class Overview(msgspec.Struct):
    lines: int
    blank: int
    cases: int
    rejected: int
    bytes: int
    rejected_by_kind: dict[str, int]
    groups: int
    by: dict[str, ByKey]


class Histogram(msgspec.Struct):
    """``counts[i]`` values fall in [edges[i], edges[i+1]); the last bin is open-ended."""

    edges: list[int]
    counts: list[int]


class FirstReject(msgspec.Struct):
    line: int
    id: str | None
    path: str | None
    error: str


class DatasetStats(msgspec.Struct):
    """The whole ``stats`` report of a dataset."""

    shape: str
    evalstream: str
    input: str
    by: list[str]
    rubrics: RubricInfo
    tokenizer: str
    budget: int
    overview: Overview
    total: GroupStats
    groups: list[GroupStats]
    labels: list[RubricLabels]
    checks: list[RubricChecks]
    metadata: MetadataStats
    histograms: dict[str, Histogram]
    first_rejects: list[FirstReject]
    warnings: list[str]
    exit_code: int


# -- options -------------------------------------------------------------------------------------
@dataclass
class StatsOptions:
    """What a stats run reads and how, and where it writes (``evalstream.stats`` fills it)."""

    input: str
    by: list[str] = field(default_factory=lambda: ["scenario"])
    rubric_files: list[str] = field(default_factory=list)
    max_tokens: int = tokens.DEFAULT_BUDGET
    max_output_tokens: int = tokens.DEFAULT_OUTPUT  # the judge's bound, held back in the budget
    tokenizer: str = encodings.DEFAULT
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    allow_unknown_fields: bool = False
    rejects: str | None = None  # write rejects here (JSONL); None: count them only
    force: bool = False  # replace a rejects target that holds something else
    workers: int | None = None  # None: the CPUs available (for a plain file over 128 MiB)
    inputs: list[str] = field(default_factory=list)  # several inputs, read in order as one
    engine: str = "local"  # or "dask"
    scheduler: str | None = None  # a Dask scheduler's address; None: a local cluster
    # The report (in ``format``; ``-``: stdout) and its HTML page, rendered by the caller's
    # ``write`` (``_render`` sits above this package) and committed with the rejects.
    output: str | None = None
    html: str | None = None
    format: str = "table"

    def arguments(self) -> list[str]:
        """The input arguments as given."""
        return self.inputs or [self.input]


def parse_by(text: str) -> list[str]:
    """``scenario,split`` -> the metadata keys to group by (a leading ``metadata.`` is
    dropped, dots reach nested metadata)."""
    keys = [k.strip() for k in text.split(",")]
    if not keys or any(not k for k in keys):
        raise UsageError(f"--by {text!r}: give metadata keys separated by commas, "
                         "e.g. --by scenario,split or --by source.kind.")
    keys = [k.removeprefix("metadata.") or k for k in keys]
    if len(set(keys)) != len(keys):
        raise UsageError(f"--by {text!r} names a key twice.")
    return keys


# -- the run -------------------------------------------------------------------------------------
def collect(opts: StatsOptions, on_progress: Progress | None = None,
            write: Callable[[DatasetStats, dict[str, AtomicOutput]], None] | None = None,
            ) -> DatasetStats:
    """Read the dataset once and return its stats; rejects go to ``opts.rejects`` if given.
    The report and page (``opts.output``, ``opts.html``) are checked with the rejects before
    anything is read and opened at once; ``write(stats, opened)`` renders them, and they are
    committed with the rejects, all or none.

    Raises UsageError for bad options, RubricError for bad rubric files, InputError and
    OutputError for files that cannot be read or written. A plain file over 128 MiB is read
    by ``opts.workers`` processes; when Polars is already loaded they are spawned, which
    needs the usual ``if __name__ == "__main__":`` guard in a calling script.
    """
    from evalstream._stats import ranges

    if opts.max_tokens <= 0 or opts.max_line_bytes <= 0 or opts.max_output_tokens <= 0:
        raise UsageError("--max-tokens, --max-output-tokens and --max-line-bytes must be "
                         "positive.")
    if opts.workers is not None and opts.workers <= 0:
        raise UsageError("--workers must be positive.")
    encodings.check_name(opts.tokenizer)
    if opts.engine not in ("local", "dask"):
        raise UsageError(f"--engine {opts.engine!r}: choose local or dask.")
    if opts.scheduler is not None and opts.engine != "dask":
        raise UsageError("--scheduler needs --engine dask.")
    arguments = opts.arguments()
    files = resolve_inputs(arguments, opts.engine)
    inputs = [f.url for f in files] if files is not None else [opts.input]
    targets = Transaction(
        [*(("input", i) for i in inputs), *(("rubrics", f) for f in opts.rubric_files)],
        report_targets(opts.output, opts.format, opts.html, opts.rejects), opts.force).check()
    remove_stale_shared()  # what killed runs left in /tmp, whether this run needs it or not
    rubric_set = load_rubrics(opts.rubric_files)
    if files is not None:
        for f in files:
            if opts.engine == "local" and not is_url(f.url):
                check_cases_input(f.url)  # on a cluster each file's first task checks it
    else:
        check_cases_input(opts.input)
    collector = Collector(rubric_set, opts.by)
    size = input_size(opts.input) if files is None else None
    workers = opts.workers if opts.workers is not None else default_workers()
    with targets:
        # A local path, stdout, or a URL written through fsspec.
        rejects_out: Any = targets.open_any("rejects") if opts.rejects else None
        produce = ranges.StatsRange(opts.by, rubric_set, opts.max_tokens, opts.tokenizer,
                                    opts.max_line_bytes, opts.allow_unknown_fields,
                                    opts.max_output_tokens, input_volume(files, opts.input))
        reports = open_reports(targets, opts.format)
        if opts.engine == "dask":
            assert files is not None
            lines, checks, first_rejects, n_bytes = ranges.on_cluster(
                collector, produce, files, opts.scheduler, opts.workers, rejects_out, on_progress)
        elif files is None and ranges.worthwhile(opts.input, size, workers):
            assert size is not None
            lines, checks, first_rejects, n_bytes = ranges.on_workers(
                collector, produce, opts.input, workers, size, rejects_out, on_progress)
        else:
            lines, checks, first_rejects, n_bytes = _read(collector, rubric_set, opts, files,
                                                          rejects_out, size, on_progress)
        collector.flush()
        stats = _summarize(collector, lines, checks, opts, rubric_set, n_bytes, first_rejects)
        if write is not None:
            write(stats, reports)  # committed with the rejects, all or none
    return stats


def _read(collector: Collector, rubric_set: RubricSet, opts: StatsOptions,
          files: list[InputFile] | None, rejects_out: Any, size: int | None,
          on_progress: Progress | None) -> tuple[LineCounts, CheckTally, list[Reject], int]:
    """Read the whole input (one stream, or ``files`` in order) in this process: line
    counts, check tally, first rejects and the bytes read."""
    reader = case_reader(opts.allow_unknown_fields, opts.max_line_bytes)
    checker = stats_checker(rubric_set, opts.max_tokens, opts.tokenizer, opts.max_output_tokens,
                            input_volume(files, opts.input))
    encode = msgspec.json.Encoder().encode
    stream = None
    counted: list[_Counting] = []
    if files is None:
        opened = open_input(opts.input)
        stream = _Counting(check_cases_stream(opened) if opts.input == "-" else opened)
        counted.append(stream)
        items = read_chunks(stream, opts.max_line_bytes)
    else:
        def opener(path: str) -> Any:
            opened = _Counting(open_input(path) if not is_url(path)
                               else check_cases_stream(open_file(path), path))
            counted.append(opened)
            return opened

        items = read_files([f.url for f in files], opts.max_line_bytes, opener)
    try:
        if on_progress is not None:
            items = progress(items, on_progress, size)
        write = rejects_out.write if rejects_out is not None else None
        collector.take(reader.read(items), checker,
                       lambda r: write(escape_line_breaks(encode(r)) + b"\n")
                       if write is not None else None)
    finally:
        if stream is not None and opts.input != "-":
            stream.stream.close()
    return reader.counts, checker.tally, reader.first_rejects, sum(c.bytes for c in counted)


class _Counting:
    """A binary stream wrapper that counts the bytes read through it."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.bytes = 0

    def readline(self, size: int = -1) -> bytes:
        data = self.stream.readline(size)
        self.bytes += len(data)
        return data

    def close(self) -> None:
        self.stream.close()


# -- aggregation ---------------------------------------------------------------------------------
_SUMMARIZED = ("messages", "input_chars", "output_chars", "line_bytes", "state_tokens")


def _summary(column: str) -> list[pl.Expr]:
    import polars as pl

    col = pl.col(column)
    return [col.mean().alias(f"{column}:mean"), col.median().alias(f"{column}:median"),
            col.quantile(0.95, "linear").alias(f"{column}:p95"),
            col.max().alias(f"{column}:max")]


def _counts() -> list[pl.Expr]:
    import polars as pl

    return [pl.len().alias("cases"),
            *(pl.col(f"has_{f}").sum().alias(f"has_{f}") for f in FIELDS),
            pl.col("tool_events").cast(pl.UInt64).sum().alias("tool_events_sum"),
            pl.col("tool_failures").cast(pl.UInt64).sum().alias("tool_failures_sum"),
            pl.col("judge_tokens").sum().alias("judge_tokens_sum")]


def _aggregate(cases: pl.DataFrame) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
    """The counts and summaries of every group (by code) and of all cases.

    One column at a time: a median sorts its column, and sorting one at a time keeps the
    working memory to one column's copy.
    """
    counts = _counts()
    groups = {row["g"]: row for row in cases.group_by("g").agg(counts).iter_rows(named=True)}
    total = cases.select(counts).row(0, named=True)
    for column in _SUMMARIZED:
        part = cases.select("g", column)
        for row in part.group_by("g").agg(_summary(column)).iter_rows(named=True):
            groups[row.pop("g")].update(row)
        total.update(part.select(_summary(column)).row(0, named=True))
    return groups, total


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(float(value), digits)


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _group_stats(key: dict[str, str], row: dict[str, Any], checks: int,
                 over: int) -> GroupStats:
    summaries = {}
    for c in _SUMMARIZED:
        most = row[f"{c}:max"]
        summaries[c] = Summary(_round(row[f"{c}:mean"]), _round(row[f"{c}:median"]),
                               _round(row[f"{c}:p95"]), None if most is None else int(most))
    events, failures = int(row["tool_events_sum"] or 0), int(row["tool_failures_sum"] or 0)
    return GroupStats(
        key=key, cases=int(row["cases"]),
        fields={f: int(row[f"has_{f}"] or 0) for f in FIELDS},
        tool_events=events, tool_failures=failures,
        tool_failure_rate=_ratio(failures, events),
        messages=summaries["messages"], input_chars=summaries["input_chars"],
        output_chars=summaries["output_chars"], line_bytes=summaries["line_bytes"],
        state_tokens=summaries["state_tokens"], judge_tokens=int(row["judge_tokens_sum"] or 0),
        checks=checks, over_budget=over)


def _histogram(frame: pl.DataFrame, column: str) -> Histogram:
    import polars as pl

    values = frame.get_column(column).drop_nulls()
    counts = [0] * len(EDGES)
    if len(values):
        # The bin of each value: how many edges are at or below it, minus one.
        bins = pl.Series(EDGES[1:]).search_sorted(values, side="right")
        for b, n in pl.DataFrame({"b": bins}).group_by("b").len().iter_rows():
            counts[int(b)] = int(n)
    return Histogram(list(EDGES), counts)


def _frame(collector: Collector) -> pl.DataFrame:
    """All case rows as one frame (columns concatenated once, never row by row)."""
    import polars as pl

    columns = []
    for name, dtype in _DTYPES.items():
        # Column by column, each batch's copy dropped as soon as it is joined: the rows are
        # held about once, not twice.
        parts = [batch.pop(name) for batch in collector.batches]
        values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        del parts
        series = pl.Series(name, values, dtype=getattr(pl, dtype))
        del values
        if name == "state_tokens":
            series = pl.select(pl.when(series == NO_STATE).then(None).otherwise(series)
                               .alias(name)).to_series()
        columns.append(series)
    collector.batches.clear()
    return pl.DataFrame(columns)


def _metadata(keys: MetadataKeys) -> MetadataStats:
    result = []
    for path in sorted(keys.seen, key=lambda p: (-keys.seen[p], p)):
        counts = keys.values[path]
        objects = keys.objects.get(path, 0)
        if counts is None:
            result.append(MetadataKey(path, keys.seen[path], objects,
                                      keys.sketches[path].estimate(), False, None))
            continue
        top = None
        if counts and len(counts) <= LOW_CARDINALITY:
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_VALUES]
            top = [ValueCount(v, n) for v, n in ranked]
        result.append(MetadataKey(path, keys.seen[path], objects, len(counts), True, top))
    return MetadataStats(keys.cases, result, KEY_DEPTH, DISTINCT_CAP, KEYS_CAP, keys.dropped)


def _empty_counts() -> dict[str, Any]:
    return {"labels": 0, "status": dict.fromkeys(STATUSES, 0),
            "source": {s: dict.fromkeys(STATUSES, 0) for s in SOURCES}, "not_applicable": 0,
            "labelled": 0}


class _Outcomes:
    """What became of every rubric, per group and overall, from the outcome signatures:
    ``per_group[g][r]`` and ``overall[r]`` map a skip reason (None: written) to cases."""

    def __init__(self, collector: Collector, n_rubrics: int) -> None:
        signatures = sorted(collector.signatures, key=collector.signatures.__getitem__)
        self.n_rubrics = n_rubrics
        self.per_group: dict[int, list[dict[str | None, int]]] = {}
        for (g, sig), n in sorted(collector.outcomes.items()):
            if not n:  # a duplicate taken back out
                continue
            per_rubric = self.per_group.setdefault(g, [{} for _ in range(n_rubrics)])
            for r, reason in enumerate(signatures[sig]):
                per_rubric[r][reason] = per_rubric[r].get(reason, 0) + n
        self.overall: list[dict[str | None, int]] = [{} for _ in range(n_rubrics)]
        for per_rubric in self.per_group.values():
            for r, reasons in enumerate(per_rubric):
                for reason, n in reasons.items():
                    self.overall[r][reason] = self.overall[r].get(reason, 0) + n

    def of(self, g: int | None) -> list[dict[str | None, int]] | None:
        """The rubrics' outcomes in group ``g`` (None: the whole dataset)."""
        return self.overall if g is None else self.per_group.get(g)

    def written(self, g: int | None) -> tuple[int, int]:
        """Checks written, and checks over budget, in group ``g``."""
        per_rubric = self.of(g) or []
        return (sum(reasons.get(None, 0) for reasons in per_rubric),
                sum(reasons.get(OVER_BUDGET, 0) for reasons in per_rubric))

    def applies(self, g: int | None, r: int) -> int:
        """Cases of group ``g`` where rubric ``r`` applies (written or over budget)."""
        per_rubric = self.of(g)
        if per_rubric is None or r >= self.n_rubrics:
            return 0
        return per_rubric[r].get(None, 0) + per_rubric[r].get(OVER_BUDGET, 0)


def _summarize(collector: Collector, lines: LineCounts, checks_tally: CheckTally,
               opts: StatsOptions, rubric_set: RubricSet, n_bytes: int,
               first_rejects: list[Reject]) -> DatasetStats:
    group_keys = sorted(collector.groups, key=collector.groups.__getitem__)  # by code
    cases = _frame(collector)
    outcomes = _Outcomes(collector, len(rubric_set.rubrics))
    rows, total_row = _aggregate(cases)
    question_tokens = {r.id: encodings.count(system_text(question_text(r.question), r.allows_na),
                                             opts.tokenizer)
                       for r in rubric_set.rubrics if r.kind == "judge"}

    def key_of(g: int) -> dict[str, str]:
        return dict(zip(opts.by, group_keys[g], strict=True))

    groups = [_group_stats(key_of(g), rows[g], *outcomes.written(g)) for g in rows]
    groups.sort(key=lambda s: (-s.cases, list(s.key.values())))
    total = _group_stats({}, total_row, *outcomes.written(None))
    order = sorted(rows, key=lambda g: (-rows[g]["cases"], group_keys[g]))
    labels = _labels(collector, outcomes, order, key_of)
    checks = [RubricChecks(rubric.id, rubric.kind, outcomes.applies(None, r),
                           outcomes.overall[r].get(None, 0),
                           {k: v for k, v in sorted(outcomes.overall[r].items(),
                                                    key=lambda kv: str(kv[0])) if k is not None},
                           question_tokens.get(rubric.id))
              for r, rubric in enumerate(rubric_set.rubrics)]
    by_keys = {}
    for i, key in enumerate(opts.by):
        values = {group_keys[g][i] for g in rows}  # groups with cases
        missing = sum(rows[g]["cases"] for g in rows if group_keys[g][i] == MISSING)
        by_keys[key] = ByKey(len(values - {MISSING}), missing)
    overview = Overview(lines.lines, lines.blank, lines.records, lines.rejected, n_bytes,
                        dict(sorted((+lines.rejected_by_kind).items())), len(groups), by_keys)
    return DatasetStats(
        shape=SHAPE, evalstream=__version__, input=opts.input, by=list(opts.by),
        rubrics=RubricInfo(rubric_set.ids, rubric_set.hash, list(rubric_set.sources)),
        tokenizer=opts.tokenizer, budget=opts.max_tokens, overview=overview, total=total,
        groups=groups, labels=labels, checks=checks, metadata=_metadata(collector.metadata),
        histograms={c: _histogram(cases, c) for c in ("input_chars", "output_chars",
                                                      "state_tokens")},
        first_rejects=[FirstReject(r.line, r.id, r.path, r.error) for r in first_rejects],
        warnings=_warnings(collector, checks_tally, rubric_set, by_keys, labels, lines.records),
        exit_code=1 if lines.rejected or not lines.records else 0)


def _labels(collector: Collector, outcomes: _Outcomes, order: list[int],
            key_of: Callable[[int], dict[str, str]]) -> list[RubricLabels]:
    """The expected labels per rubric, overall and per group (groups in ``order``)."""
    per_group: dict[tuple[int, int], dict[str, Any]] = {}
    label_total: dict[int, dict[str, Any]] = {}
    for (g, r, st, src, is_applicable), n in sorted(collector.labels.items()):
        if n:
            for counts in (per_group.setdefault((r, g), _empty_counts()),
                           label_total.setdefault(r, _empty_counts())):
                counts["labels"] += n
                counts["status"][STATUSES[st]] += n
                counts["source"][SOURCES[src]][STATUSES[st]] += n
                counts["labelled" if is_applicable else "not_applicable"] += n

    def label_counts(counts: dict[str, Any], applies: int) -> LabelCounts:
        return LabelCounts(counts["labels"], counts["status"], counts["source"], applies,
                           counts["labelled"], _ratio(counts["labelled"], applies),
                           counts["not_applicable"])

    labels = []
    for r, rubric_id in enumerate(collector.rubric_ids):
        if r >= outcomes.n_rubrics and r not in label_total:
            continue
        group_labels = []
        for g in order:
            applies = outcomes.applies(g, r)
            found = per_group.get((r, g))
            if found is None and not applies:
                continue
            group_labels.append(GroupLabels(key_of(g),
                                            label_counts(found or _empty_counts(), applies)))
        labels.append(RubricLabels(rubric_id, r < outcomes.n_rubrics,
                                   label_counts(label_total.get(r, _empty_counts()),
                                                outcomes.applies(None, r)), group_labels))
    return labels


def _warnings(collector: Collector, checks: CheckTally, rubric_set: RubricSet,
              by_keys: dict[str, ByKey], labels: list[RubricLabels], n_cases: int) -> list[str]:
    warnings = []
    if not n_cases:
        warnings.append("no line of the input is a case: the input is empty, or every line was "
                        "rejected or blank.")
    if n_cases:
        warnings += checks.when_warnings(rubric_set, name_keys=True)
        for key, counts in by_keys.items():
            if counts.distinct == 0:
                warnings.append(f"no case has metadata key `{key}` (--by): every case is in the "
                                f"{MISSING} group.{did_you_mean(key, collector.metadata.seen)}")
    warnings += label_warnings({r.rubric: r.total.labels for r in labels if not r.in_rubrics},
                               sum(r.total.not_applicable for r in labels if r.in_rubrics),
                               name_ids=True, unlisted=collector.labels_unlisted)
    if collector.labels_unlisted:
        warnings.append(f"labels name more than {UNKNOWN_RUBRICS_CAP:,} rubric ids that are not "
                        f"in the rubric set; the {collector.labels_unlisted:,} labels of further "
                        "ids are counted here only, not per rubric.")
    if collector.metadata.dropped:
        warnings.append(f"metadata has more than {KEYS_CAP:,} distinct key paths; "
                        f"{collector.metadata.dropped:,} occurrences of further keys were not "
                        "counted.")
    return warnings


# -- a report read back from a file --------------------------------------------------------------
def check_shape(stats: DatasetStats) -> None:
    """Raise ValueError naming the first place where a decoded stats JSON breaks what the
    views rely on beyond its types (which keys its counts have, matching lengths): a file
    edited by hand or written by another program must be refused, not crash a renderer."""
    if stats.shape != SHAPE:
        raise ValueError(f"`shape` is {stats.shape!r}, not {SHAPE!r}")

    def keys(where: str, found: dict[str, Any], wanted: tuple[str, ...] | list[str]) -> None:
        if sorted(found) != sorted(wanted):
            raise ValueError(f"`{where}` has the keys {sorted(found)}; expected {list(wanted)}")

    def label_counts(where: str, counts: LabelCounts) -> None:
        keys(f"{where}.status", counts.status, STATUSES)
        keys(f"{where}.source", counts.source, SOURCES)
        for source, by_status in counts.source.items():
            keys(f"{where}.source.{source}", by_status, STATUSES)

    keys("overview.by", stats.overview.by, stats.by)
    for i, group in enumerate([stats.total, *stats.groups]):
        where = "total" if i == 0 else f"groups[{i - 1}]"
        keys(f"{where}.fields", group.fields, FIELDS)
        if i:
            keys(f"{where}.key", group.key, stats.by)
    for i, rubric in enumerate(stats.labels):
        label_counts(f"labels[{i}].total", rubric.total)
        for j, labelled in enumerate(rubric.groups):
            keys(f"labels[{i}].groups[{j}].key", labelled.key, stats.by)
            label_counts(f"labels[{i}].groups[{j}].counts", labelled.counts)
    for name, histogram in stats.histograms.items():
        if len(histogram.counts) != len(histogram.edges):
            raise ValueError(f"`histograms.{name}` has {len(histogram.counts)} counts for "
                             f"{len(histogram.edges)} edges")
