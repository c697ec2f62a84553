"""``stats --engine dask``: the rows of many files' byte ranges, made on a Dask cluster.

The tasks are those of ``build --engine dask`` (``files.store.tasks_of``): each reads its
range as ``stats --workers`` does (``Collector.take``) and returns its compact rows, counts
and rejects; its case log, cut into buckets by id hash, stays on the cluster, where
reducers find the duplicate ids (``cases.duplicates``). The ``Merger`` of
``dataset.parallel`` then adds the parts in order: each late duplicate's line is read
again by a task for its reject, and a range that holds one is read again by this process
without those lines (through fsspec: ``files.store.TaskReader``), so the figures are those
of one process. Only ranges with a late duplicate are read twice.

Exact medians and percentiles need every value: the rows (about 40 bytes a case) come to
this process, as with ``--workers``; only the id hashes stay on the cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalstream._cases.duplicates import (
    Bucket,
    buckets,
    by_task,
    duplicate_lines,
    reduce_bucket,
    reducers_for,
)
from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import case_reader
from evalstream._cases.rejects import Reject
from evalstream._engines.dask import Cluster
from evalstream._files.lines import read_chunks
from evalstream._files.sniff import check_cases_head
from evalstream._files.store import (
    FileOffsets,
    InputFile,
    Task,
    TaskReader,
    range_size,
    tasks_of,
)
from evalstream._stats.parallel import Merger, Part, Settings
from evalstream._stats.rows import Collector, stats_checker

# Per task: ~1 s of work, few enough tasks for the scheduler. Larger than ``--workers``'
# ranges (engines.local.range_bytes, at most 16 MiB): a cluster task costs a scheduler round
# trip and a part file in the store, not a pipe message.
RANGE_BYTES = 64 << 20


@dataclass
class ClusterSettings:
    """What every task needs: the stats settings, the reducers, and whether every reject
    comes back (a rejects file is written) or only the first ones."""

    stats: Settings
    reducers: int
    keep_all_rejects: bool


def _init(settings: ClusterSettings) -> ClusterSettings:
    return settings


def _run_range(c: ClusterSettings, task: Task) -> tuple[Part, list[Bucket]]:
    s = c.stats
    reader = case_reader(s.allow_unknown_fields, s.max_line_bytes, check_duplicates=False)
    checker = stats_checker(s.rubric_set, s.max_tokens, s.tokenizer)
    rows = Collector(s.rubric_set, s.by)
    log = CaseLog()
    rejects: list[Reject] = []

    def keep(reject: Reject) -> None:
        if c.keep_all_rejects or len(rejects) < s.first_rejects:
            rejects.append(reject)

    with TaskReader(task, check_cases_head) as stream:
        items = read_chunks(stream, s.max_line_bytes, first_line=1, first_offset=stream.start)
        rows.take(reader.read(items), checker, keep, log)
    rows.flush()
    part = Part(task.index, stream.start, stream.start + stream.bytes, rows, reader.counts,
                checker.tally, rejects, None, ())
    return part, buckets(task.index, log.arrays()[:4], c.reducers)


def run(collector: Collector, settings: Settings, files: list[InputFile],
        scheduler: str | None, workers: int | None, rejects_out: Any,
        on_progress: Callable[[int, int | None], None] | None) -> tuple[Merger, int]:
    """Read ``files`` on the cluster into ``collector``; return the merger (line counts,
    check tally, first rejects) and the bytes read (decompressed)."""
    total = sum(f.size for f in files)
    tasks = tasks_of(files, range_size(total, RANGE_BYTES))
    c = ClusterSettings(settings, reducers_for(total), rejects_out is not None)
    with Cluster(scheduler, workers) as cluster:
        summaries, reductions = cluster.map_reduce(_init, _run_range, c, tasks, c.reducers,
                                                   reduce_bucket, describe=str)
        parts: list[Part] = []
        done = 0
        for part in summaries:
            parts.append(part)
            done += tasks[part.index].nominal_bytes
            if on_progress is not None:
                on_progress(done, total)
        found = by_task(reductions())
        raw = duplicate_lines(found, tasks,
                              lambda jobs: cluster.read_lines(jobs, settings.max_line_bytes))
    import polars  # noqa: F401  (loaded for the aggregation)

    merger = Merger(collector, settings, rejects_out, lambda part, dup: raw[part.index, dup.k],
                    lambda part: TaskReader(tasks[part.index]))
    offsets = FileOffsets()
    for part in parts:
        part.offset_base = offsets.base(tasks[part.index], part.end)
        merger.add(part, found.get(part.index, []))
    return merger, offsets.total
