"""``build``/``validate --engine dask``: byte ranges of many files on a Dask cluster.

The inputs (paths, globs, fsspec URLs) are cut into tasks: a plain file into byte ranges
of ``RANGE_BYTES`` (a range owns the lines whose first byte lies in it, found by each task
from its own bytes), a compressed file is one task. Each task runs the loop of one process
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

import io
import time
from dataclasses import dataclass
from typing import Any

from evalstream.cases.duplicates import Bucket, Dup, buckets, by_task, reduce_bucket
from evalstream.cases.ids import CaseLog
from evalstream.cases.reading import case_reader
from evalstream.cases.rejects import Reject
from evalstream.checks.checker import Checker
from evalstream.checks.report import RunReport
from evalstream.checks.report import encode as encode_report
from evalstream.checks.rubrics import RubricSet
from evalstream.engines.dask import Cluster
from evalstream.files.lines import BLOCK_SIZE, Chunk, Progress, read_chunks
from evalstream.files.outputs import AtomicOutput, commit_all
from evalstream.files.parts import (
    DirectoryOutput,
    StoreOutput,
    is_directory,
    parts_folder,
    remove_folder,
)
from evalstream.files.sniff import HEAD_BYTES, check_cases_head
from evalstream.files.store import (
    InputFile,
    PartFile,
    RangeReader,
    is_url,
    line_end,
    open_file,
    range_start,
    read_head,
    read_line,
)
from evalstream.pipeline.ranges import Merger, Part
from evalstream.pipeline.run import Options, Outcome, _report, process

RANGE_BYTES = 64 << 20  # per task: ~1 s of work, few enough tasks for the scheduler
REDUCER_BYTES = 8 << 30  # input bytes whose ids one reducer takes (~100 MB of index)
MAX_REDUCERS = 256


@dataclass(frozen=True)
class Task:
    """A byte range [start, end) of one input file (nominal: moved to line starts by the
    task), or a whole compressed file (``whole``)."""

    index: int
    file: int
    url: str
    start: int
    end: int
    size: int
    whole: bool


def tasks_of(files: list[InputFile], range_bytes: int) -> list[Task]:
    """The tasks that read ``files`` in order."""
    tasks: list[Task] = []
    for f, file in enumerate(files):
        if file.compressed:
            tasks.append(Task(len(tasks), f, file.url, 0, -1, file.size, True))
            continue
        bounds = [*range(0, file.size, range_bytes), file.size]
        for a, b in zip(bounds, bounds[1:], strict=False):
            tasks.append(Task(len(tasks), f, file.url, a, b, file.size, False))
    return tasks


def reducers_for(total_bytes: int) -> int:
    """How many reducers share the ids: one per REDUCER_BYTES of input."""
    return max(1, min(MAX_REDUCERS, -(-total_bytes // REDUCER_BYTES)))


@dataclass
class Settings:
    """What every task needs (sent with each task, never scattered)."""

    opts: Options
    rubric_set: RubricSet | None
    parts: str | None  # the folder of part files; None: validate, no records
    reducers: int


# -- in a worker ---------------------------------------------------------------------------------
def _init(settings: Settings) -> Settings:
    return settings


def _run_range(s: Settings, task: Task) -> tuple[Part, list[Bucket]]:
    opts = s.opts
    reader = case_reader(opts.allow_unknown_fields, opts.max_line_bytes, check_duplicates=False)
    checker = Checker(s.rubric_set, opts.max_tokens) if s.rubric_set is not None else None
    log = CaseLog()
    rejects: list[bytes] = []
    out = None
    if s.parts is not None:
        out = PartFile(f"{s.parts}/{task.index:08d}.out")
    try:
        with open_file(task.url) as f:
            if task.start == 0:
                _check_head(task.url)
            if task.whole:
                start, stream = 0, _Counting(f)
            else:
                start = range_start(f, task.start, task.end)
                end = line_end(f, task.end, task.size) if start < task.end else start
                stream = _Counting(io.BufferedReader(RangeReader(f, start, end), BLOCK_SIZE))
            items = read_chunks(stream, opts.max_line_bytes, first_line=1, first_offset=start)
            process(reader.read(items), checker,
                    out.write_all if out is not None else _ignore, rejects.append, log)
        size = out.commit() if out is not None else 0
    except BaseException:
        if out is not None:
            out.abort()
        raise
    part = Part(task.index, start, start + stream.bytes, out.path if out else None, None,
                reader.counts, checker.tally if checker else None, (),
                rejects_data=b"".join(rejects), out_size=size)
    return part, buckets(task.index, log.arrays(), s.reducers)


def _check_head(url: str) -> None:
    """Raise WrongFileError when the file is plainly not JSONL cases (its raw first bytes)."""
    check_cases_head(read_head(url, HEAD_BYTES), url)


def _lines(s: Settings, job: tuple[Task, list[int]]) -> list[bytes]:
    """The lines at the given offsets of a task's file (for the duplicates the reducers
    found there), each at most ``max_line_bytes + 1`` bytes."""
    task, offsets = job
    limit = s.opts.max_line_bytes + 1
    found = []
    with open_file(task.url) as f:
        if not task.whole:
            return [read_line(f, at, limit) for at in offsets]
        # A compressed file cannot seek: read it once, keeping the lines asked for.
        wanted = set(offsets)
        for item in read_chunks(f, s.opts.max_line_bytes):
            if type(item) is Chunk:
                for at, line in zip(item.offsets(), item.lines, strict=True):
                    if at in wanted:
                        found.append((at, line))
        by_offset = dict(found)
        return [by_offset.get(at, b"") for at in offsets]


def _ignore(data: object) -> None:
    return None


class _Counting:
    def __init__(self, stream: Any) -> None:
        self.stream, self.bytes = stream, 0

    def readline(self, size: int = -1, /) -> bytes:
        data = self.stream.readline(size)
        self.bytes += len(data)
        return data


# -- in the client -------------------------------------------------------------------------------
def run(opts: Options, rubric_set: RubricSet | None, files: list[InputFile],
        rejects_path: str | None, report_path: str | None, started: float,
        on_progress: Progress | None) -> tuple[RunReport, list[Reject]]:
    """Build (or validate) ``files`` on the cluster ``opts.scheduler`` (None: this machine's
    cores); return the report and the first rejects. Targets appear only if all succeeds."""
    command = "validate" if opts.output is None else "build"
    with Cluster(opts.scheduler, opts.workers if opts.workers > 1 else None) as cluster:
        anchor = opts.output if opts.output not in (None, "-") else None
        folder = parts_folder(anchor, cluster.run_id) if anchor is not None else None
        sinks: list[Any] = []
        try:
            out, rej_out, report_out = _targets(opts, folder, rejects_path, report_path)
            sinks = [t for t in (out, rej_out, report_out) if t is not None]
            if isinstance(out, DirectoryOutput):
                sinks = [out]  # its rejects and report are inside it
            outcome = _merge(cluster, opts, rubric_set, files, folder, out, rej_out,
                             on_progress)
            report = _report(outcome, opts, command, rubric_set, rejects_path, started, [])
            report.seconds = round(time.perf_counter() - started, 3)
            if report_out is not None:
                report_out.write(encode_report(report))
            commit_all(sinks)
        except BaseException:
            for sink in sinks:
                sink.abort()
            raise
        finally:
            if folder is not None:
                remove_folder(folder)
    return report, outcome.first_rejects


def _targets(opts: Options, folder: str | None, rejects_path: str | None,
             report_path: str | None) -> tuple[Any, Any, Any]:
    """The output, rejects and report targets (None: not written)."""
    if is_directory(opts.output):
        assert folder is not None and opts.output is not None
        directory = DirectoryOutput(opts.output, folder)
        inside = opts.output
        rej = directory.member(rejects_path[len(inside):]) \
            if rejects_path and rejects_path.startswith(inside) else _target(rejects_path)
        rep = directory.member(report_path[len(inside):]) \
            if report_path and report_path.startswith(inside) else _target(report_path)
        return directory, rej, rep
    return _target(opts.output), _target(rejects_path), _target(report_path)


def _target(path: str | None) -> Any:
    if path is None:
        return None
    return StoreOutput(path) if is_url(path) else AtomicOutput(path)


def _merge(cluster: Cluster, opts: Options, rubric_set: RubricSet | None,
           files: list[InputFile], folder: str | None, out: Any, rej_out: Any,
           on_progress: Progress | None) -> Outcome:
    tasks = tasks_of(files, RANGE_BYTES)
    total = sum(f.size for f in files)
    settings = Settings(opts, rubric_set, folder, reducers_for(total))
    summaries, reductions = cluster.map_reduce(
        _init, _run_range, settings, tasks, settings.reducers, reduce_bucket,
        describe=lambda t: _describe(t))
    parts: list[Part] = []
    done = 0
    for part in summaries:
        parts.append(part)
        task = tasks[part.index]
        done += (task.end - task.start) if not task.whole else task.size
        if on_progress is not None:
            on_progress(done, total)
    found = by_task(reductions())
    raw = _fetch_lines(cluster, settings, tasks, found)
    sizes = getattr(out, "part_sizes", None)
    merger = Merger(opts, rubric_set, out, rej_out, lambda part, dup: raw[part.index, dup.k])
    base, file, file_size = 0, 0, 0
    for part in parts:
        task = tasks[part.index]
        if task.file != file:
            base += file_size
            file = task.file
        file_size = part.end if task.whole else task.size
        part.offset_base = base
        if sizes is not None and part.out_path is not None:
            sizes[part.out_path] = part.out_size
        merger.add(part, found.get(part.index, []))
    return Outcome(merger.lines, merger.checks, merger.first_rejects)


def _fetch_lines(cluster: Cluster, settings: Settings, tasks: list[Task],
                 found: dict[int, list[Dup]]) -> dict[tuple[int, int], bytes]:
    """The line of every late duplicate, read again by a task on the cluster."""
    jobs = [(tasks[i], [d.offset for d in dups]) for i, dups in sorted(found.items())]
    raw: dict[tuple[int, int], bytes] = {}
    lines = cluster.map_ordered(_init, _lines, settings, jobs,
                                describe=lambda job: _describe(job[0]), name="lines")
    for (task, _), got in zip(jobs, lines, strict=True):
        for dup, line in zip(found[task.index], got, strict=True):
            raw[task.index, dup.k] = line
    return raw


def _describe(task: Task) -> str:
    if task.whole:
        return task.url
    return f"bytes {task.start:,}-{task.end:,} of {task.url}"
