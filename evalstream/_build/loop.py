"""What every way of running ``build`` and ``validate`` shares (one process, worker
processes, a Dask cluster): the options, the loop from cases to record lines, what a run
counted and its report.

``run`` reads in one process and dispatches to ``ranges`` (workers) and ``cluster`` (Dask);
those import this module, never ``run``, so the build package has no import cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

from evalstream._build.records import RecordEncoder
from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import LineCounts, Record
from evalstream._cases.rejects import Reject
from evalstream._checks import encodings, tokens
from evalstream._checks.checker import Checker, CheckTally, room_warning
from evalstream._checks.report import RubricInfo, RunReport, label_warnings, run_report
from evalstream._checks.rubrics import RubricSet
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._files.outputs import escape_line_breaks
from evalstream.errors import EXIT_PIPE

FLUSH_BYTES = 1 << 18  # output handed to the writer in pieces of about this size


@dataclass
class Options:
    """Everything a build or validate run needs (``evalstream.build``, ``validate`` fill it)."""

    input: str
    output: str | None = None  # None: validate only
    rejects: str | None = None
    report: str | None = None
    rubric_files: list[str] = field(default_factory=list)
    max_tokens: int = tokens.DEFAULT_BUDGET
    max_output_tokens: int = tokens.DEFAULT_OUTPUT  # the judge's bound, held back in the budget
    tokenizer: str = encodings.DEFAULT
    exact_tokens: bool = False  # count every judge state, not only those over the byte room
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    allow_unknown_fields: bool = False
    workers: int = 1
    # Several inputs (paths, globs, URLs) read in order as one; ``input`` then names them
    # all for the report. Empty: ``input`` is the one input.
    inputs: list[str] = field(default_factory=list)
    engine: str = "local"  # or "dask"
    scheduler: str | None = None  # a Dask scheduler's address; None: a local cluster
    force: bool = False  # replace targets that hold something else (cases, another kind)
    pair_with: str | None = None  # run B: pairwise states of input and it (_build.pairs)

    def arguments(self) -> list[str]:
        """The input arguments as given."""
        return self.inputs or [self.input]


class Outcome(NamedTuple):
    """What a run counted: its lines, its checks (build only) and its first rejects."""

    lines: LineCounts
    checks: CheckTally | None
    first_rejects: list[Reject]
    stopped: bool = False  # standard output was closed by its reader before the end


def process(records: Iterable[Record[Any] | Reject], checker: Checker | None,
            write: Callable[[list[bytes]], object], reject: Callable[[bytes], object],
            log: CaseLog | None = None) -> None:
    """The build loop: each case's written checks go to ``write`` as record lines, each
    reject to ``reject`` as a JSON line. With a ``log`` (a worker's range), every case is
    logged with where its output ends, so the parent can drop a late duplicate's records."""
    encoder = RecordEncoder()
    encode_reject = msgspec.json.Encoder().encode
    out: list[bytes] = []
    size = 0  # bytes in ``out``
    written = 0  # bytes handed to ``write`` before them
    for item in records:
        if type(item) is Reject:
            reject(escape_line_breaks(encode_reject(item)) + b"\n")
            continue
        line_no, offset, _, case = item  # type: ignore[misc]
        if checker is not None:
            size += encoder.add(case.id, checker.check(case, line_no), out)
        if log is not None:
            log.add(case.id, line_no, offset, written + size)
        if size >= FLUSH_BYTES:
            write(out)
            written += size
            out, size = [], 0  # the writer may still hold the last list: never reuse it
    if out:
        write(out)


def checker_for(opts: Options, rubric_set: RubricSet | None,
                volume: int | None = None) -> Checker | None:
    """The Checker of a build run (None for validate); ``volume``: the input's size, when
    known (``--exact-tokens`` then counts about that much text)."""
    if rubric_set is None:
        return None
    return Checker(rubric_set, opts.max_tokens, tokenizer=opts.tokenizer,
                   exact_tokens=opts.exact_tokens, max_output_tokens=opts.max_output_tokens,
                   volume=volume)


def report_of(outcome: Outcome, opts: Options, command: str, rubric_set: RubricSet | None,
              rejects_path: str | None, report_path: str | None, started: float,
              warnings: list[str]) -> RunReport:
    """The run report of a build or validate run that counted ``outcome``."""
    if outcome.stopped:
        warnings.insert(0, f"standard output was closed by its reader after line "
                           f"{outcome.lines.lines:,}: the counts are of the lines read until "
                           "then.")
    if not outcome.lines.records:
        warnings.append("no line of the input is a case: " + (
            "the input is empty." if not outcome.lines.lines else
            "every line was rejected or blank (see the rejects)."))
    if rubric_set is not None and outcome.checks is not None:
        if outcome.lines.records:
            warnings += outcome.checks.when_warnings(rubric_set, name_keys=False)
        warnings += label_warnings(+outcome.checks.labels_outside,
                                   outcome.checks.labels_not_applicable, name_ids=False)
        no_room = room_warning(rubric_set, opts.max_tokens, opts.max_output_tokens)
        if no_room:
            warnings.insert(0, no_room)
    return run_report(
        outcome.lines, outcome.checks, rubric_set.ids if rubric_set else [],
        command=command,
        input=opts.input,
        output=opts.output,
        rejects=rejects_path,
        report=report_path,
        rubrics=RubricInfo(rubric_set.ids, rubric_set.hash, list(rubric_set.sources))
        if rubric_set else None,
        tokenizer=opts.tokenizer if rubric_set else None,
        budget=opts.max_tokens if rubric_set else None,
        warnings=warnings,
        seconds=round(time.perf_counter() - started, 3),
        exit_code=EXIT_PIPE if outcome.stopped else
        1 if outcome.lines.rejected or not outcome.lines.records else 0,
    )
