"""``build``/``validate --engine dask``: byte ranges of many files on a Dask cluster.

The inputs (paths, globs, fsspec URLs) are cut into tasks: a plain file into byte ranges
of ``RANGE_BYTES`` (a range owns the lines whose first byte lies in it: a local file's ranges
are aligned once in this process, a URL's by each task from its own bytes, see
``files.store.tasks_of``), a compressed file is one task. Each task runs the loop of one process
(``run.process``) over its range and writes its records as one part file into a hidden
folder beside the output, in the output's store; it returns its counts, its rejects
(JSONL, lines counted from 1) and its case log cut into buckets by id hash, which stay on
the cluster: reducers find the duplicate ids (``cases.duplicates``), tasks that hold a late
duplicate read its line again, and the ``Merger`` that ``--workers`` uses takes the parts in
order, renumbering lines, leaving the duplicates' records out and joining the parts into
the target (``files.parts``). Every task is a pure function of its range, so a task that
Dask runs again after a worker died writes the same part: the output is byte-identical to
one process reading the files in order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from evalstream._build.ranges import Merger, Part
from evalstream._build.run import Options, Outcome, _report, checker_for, process
from evalstream._cases.duplicates import (
    Bucket,
    buckets,
    by_task,
    duplicate_lines,
    reduce_bucket,
    reducers_for,
)
from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import FIRST_REJECTS_KEPT, case_reader
from evalstream._cases.rejects import Reject
from evalstream._checks.report import RunReport
from evalstream._checks.report import encode as encode_report
from evalstream._checks.rubrics import RubricSet
from evalstream._engines.dask import Cluster
from evalstream._files.lines import Progress, read_chunks
from evalstream._files.parts import Streamed, parts_folder, remove_folder
from evalstream._files.sniff import check_cases_head
from evalstream._files.store import (
    FileOffsets,
    InputFile,
    PartFile,
    Task,
    TaskReader,
    range_size,
    tasks_of,
)
from evalstream._files.transaction import Transaction
from evalstream.errors import ReaderGone

# Per task: ~1 s of work, few enough tasks for the scheduler. Larger than ``--workers``'
# ranges (engines.local.range_bytes, at most 16 MiB): a cluster task costs a scheduler round
# trip and a part file in the store, not a pipe message.
RANGE_BYTES = 64 << 20


@dataclass
class Settings:
    """What every task needs (sent with each task, never scattered)."""

    opts: Options
    rubric_set: RubricSet | None
    parts: str | None  # the folder of part files (None: no target file to put it beside)
    reducers: int
    # "store": every reject into a part file; "all": every reject back with the result (to
    # stdout); "first": only the first ones come back (counted, not written).
    rejects: str = "store"


# -- in a worker ---------------------------------------------------------------------------------
def _init(settings: Settings) -> Settings:
    return settings


def _run_range(s: Settings, task: Task) -> tuple[Part, list[Bucket]]:
    opts = s.opts
    reader = case_reader(opts.allow_unknown_fields, opts.max_line_bytes, check_duplicates=False)
    checker = checker_for(opts, s.rubric_set)
    log = CaseLog()
    kept: list[bytes] = []
    out = None
    if s.parts is not None and opts.output is not None:
        out = PartFile(f"{s.parts}/{task.index:08d}.out")
    rejects = PartFile(f"{s.parts}/{task.index:08d}.rejects") if s.rejects == "store" else None

    def reject(line: bytes) -> None:
        if rejects is not None:
            rejects.write_all([line])
        elif s.rejects == "all" or len(kept) < FIRST_REJECTS_KEPT:
            kept.append(line)

    try:
        with TaskReader(task, check_cases_head) as stream:
            items = read_chunks(stream, opts.max_line_bytes, first_line=1,
                                first_offset=stream.start)
            process(reader.read(items), checker,
                    out.write_all if out is not None else _ignore, reject, log)
        size = out.commit() if out is not None else 0
        if rejects is not None:
            rejects.commit()
    except BaseException:
        for part_file in (out, rejects):
            if part_file is not None:
                part_file.abort()
        raise
    part = Part(task.index, stream.start, stream.start + stream.bytes,
                out.path if out else None, rejects.path if rejects else None, reader.counts,
                checker.tally if checker else None, (), rejects_data=b"".join(kept),
                out_size=size)
    return part, buckets(task.index, log.arrays(), s.reducers)


def _ignore(data: object) -> None:
    return None


# -- in the client -------------------------------------------------------------------------------
def run(opts: Options, rubric_set: RubricSet | None, files: list[InputFile],
        outputs: Transaction, started: float,
        on_progress: Progress | None) -> tuple[RunReport, list[Reject]]:
    """Build (or validate) ``files`` on the cluster ``opts.scheduler`` (None: this machine's
    cores) into the checked ``outputs``; return the report and the first rejects. Targets
    appear only if all succeeds."""
    command = "validate" if opts.output is None else "build"
    with Cluster(opts.scheduler, opts.workers if opts.workers > 1 else None) as cluster:
        # Part files go beside the output, else beside the rejects file; a run with neither
        # (validate to the terminal or stdout) gets its rejects back with the results.
        anchor = next((t for t in (opts.output, outputs.path("rejects"))
                       if t not in (None, "-")), None)
        folder = parts_folder(anchor, cluster.run_id) if anchor is not None else None
        try:
            with outputs:
                # A directory's rejects and report are written inside it, with it.
                out, rej_out, report_out = (
                    outputs.open_joined(role, folder) if outputs.path(role) else None
                    for role in ("output", "rejects", "report"))
                outcome = _merge(cluster, opts, rubric_set, files, folder, out, rej_out,
                                 on_progress)
                if outcome.stopped:
                    outputs.leave_out("output")  # standard output is gone
                if not outcome.lines.rejected:
                    outputs.empty("rejects")  # as one process: no new empty rejects file
                report = _report(outcome, opts, command, rubric_set, outputs.path("rejects"),
                                 outputs.path("report"), started, [])
                report.seconds = round(time.perf_counter() - started, 3)
                if report_out is not None:
                    report_out.write(encode_report(report))
        finally:
            if folder is not None:
                remove_folder(folder)
    return report, outcome.first_rejects


def _merge(cluster: Cluster, opts: Options, rubric_set: RubricSet | None,
           files: list[InputFile], folder: str | None, out: Any, rej_out: Any,
           on_progress: Progress | None) -> Outcome:
    total = sum(f.size for f in files)
    tasks = tasks_of(files, range_size(total, RANGE_BYTES))
    mode = "store" if folder is not None and rej_out is not None else \
        "all" if rej_out is not None else "first"
    settings = Settings(opts, rubric_set, folder, reducers_for(total), mode)
    summaries, reductions = cluster.map_reduce(_init, _run_range, settings, tasks,
                                               settings.reducers, reduce_bucket, describe=str)
    # A local output file is joined while the other tasks run, as the process engine joins
    # it, then cut back to the first part that holds a duplicate, which only the reducers
    # can name after the last task (1 GB, one idle machine: the join after the tasks was
    # ~8 s of 24). A directory, an object or standard output is joined by the merger below.
    ahead = out.output if isinstance(out, Streamed) and out.output.rewindable else None
    starts: dict[int, int] = {}  # part index -> where its records begin in the output
    parts: list[Part] = []
    done = 0
    for part in summaries:
        parts.append(part)
        if ahead is not None and part.out_path is not None:
            starts[part.index] = ahead.tell()
            out.splice(part.out_path, 0, part.out_size)
        done += tasks[part.index].nominal_bytes
        if on_progress is not None:
            on_progress(done, total)
    found = by_task(reductions())
    first_duplicate = min(found, default=len(tasks))
    if ahead is not None and first_duplicate in starts:
        ahead.rewind(starts[first_duplicate])
    written = {i for i in starts if i < first_duplicate}
    raw = duplicate_lines(found, tasks,
                          lambda jobs: cluster.read_lines(jobs, opts.max_line_bytes))
    sizes = getattr(out, "part_sizes", None)
    merger = Merger(opts, rubric_set, out, rej_out, lambda part, dup: raw[part.index, dup.k],
                    lambda part: TaskReader(tasks[part.index]))
    offsets = FileOffsets()
    for part in parts:
        part.offset_base = offsets.base(tasks[part.index], part.end)
        if sizes is not None and part.out_path is not None:
            sizes[part.out_path] = part.out_size
        try:
            merger.add(part, found.get(part.index, []), written=part.index in written)
        except ReaderGone:  # `| head`: stop; the counts are of the ranges written
            return Outcome(merger.lines, merger.checks, merger.first_rejects, stopped=True)
    return Outcome(merger.lines, merger.checks, merger.first_rejects)
