"""``stats`` over byte ranges: what stats plugs into the ranged engine.

The engine (``_engines.ranges``) reads the ranges in worker processes (``on_workers``: a
plain file over 128 MiB) or on a Dask cluster (``on_cluster``) and merges them as one
process would (late duplicates, line numbers, rejects, counts). What is stats': each range
makes its rows (``StatsRange``: a ``Collector`` with its own codes), and the parent absorbs
them in order into one collector (``StatsMerge``). A range with a late duplicate is read
again without it: taking a case back out cannot undo what it did to the capped tables (a
metadata key or rubric id holding a place among the first 1,000, a value in a
distinct-count sketch), so only the figures of the range read again are those of one
process. Exact medians and percentiles need every value: the rows (about 40 bytes a case)
come to this process; on a cluster only the id hashes stay there.

Workers never import Polars (the parent loads it while they read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import LineCounts, Record
from evalstream._cases.rejects import Reject
from evalstream._checks import tokens
from evalstream._checks.checker import Checker, CheckTally
from evalstream._checks.rubrics import RubricSet
from evalstream._engines import ranges as engine
from evalstream._engines.dask import Cluster
from evalstream._engines.ranges import Late, Merged, Merger, Part, PartFiles
from evalstream._files.lines import Progress
from evalstream._files.store import InputFile
from evalstream._files.temporaries import STATS_PARTS
from evalstream._stats.rows import Collector, stats_checker

WORTHWHILE_BYTES = 128 << 20  # below this one process is as fast


def worthwhile(path: str, size: int | None, workers: int) -> bool:
    """Whether workers can and should run: a plain file over WORTHWHILE_BYTES.

    Starting workers costs about 0.3 s of CPU (each imports evalstream); measured here, two
    workers broke even with one process at 100 MB and took 0.54x its time at 1 GB."""
    return (workers > 1 and size is not None and size > WORTHWHILE_BYTES
            and path != "-" and not path.endswith((".gz", ".zst")))


@dataclass
class StatsRange:
    """What each range makes: its rows, as the one-process loop makes them. Sent to every
    worker."""

    by: list[str]
    rubric_set: RubricSet
    max_tokens: int
    tokenizer: str
    max_line_bytes: int
    allow_unknown_fields: bool
    max_output_tokens: int = tokens.DEFAULT_OUTPUT
    volume: int | None = None  # the whole input's size: each worker counts a share of it

    def checker(self) -> Checker:
        return stats_checker(self.rubric_set, self.max_tokens, self.tokenizer,
                             self.max_output_tokens, self.volume)

    def read(self, records: Iterator[Record[Any] | Reject], checker: Checker | None,
             reject: Callable[[bytes], object], log: CaseLog, files: PartFiles) -> Collector:
        assert checker is not None
        encode = msgspec.json.Encoder().encode
        rows = Collector(self.rubric_set, self.by)
        rows.take(records, checker, lambda r: reject(encode(r) + b"\n"), log)
        rows.flush()
        return rows


@dataclass
class StatsMerge:
    """Absorbs each part's rows into ``collector``; a part with late duplicates is read
    again without them (see the module's docstring)."""

    range: StatsRange
    collector: Collector

    def arrived(self, part: Part[Collector]) -> None:
        # For the aggregation, while the other ranges are read: the workers have started
        # (forked before Polars was loaded, which must not be forked).
        import polars  # noqa: F401

    def take(self, part: Part[Collector], late: list[Late], merger: Merger[Collector]) -> None:
        if late:
            s = self.range
            checker = s.checker()
            rows = Collector(s.rubric_set, s.by)
            rows.take(merger.again(part, {d.line for d, _, _ in late}), checker, _ignore)
            rows.flush()
            part.made, part.checks = rows, checker.tally
        self.collector.absorb(part.made)


Counts = tuple[LineCounts, CheckTally, list[Reject], int]  # lines, checks, first rejects, bytes


def on_workers(collector: Collector, produce: StatsRange, path: str, workers: int, size: int,
               rejects_out: Any, on_progress: Progress | None) -> Counts:
    """Read the plain file ``path`` with ``workers`` processes into ``collector``."""
    return _counts(engine.on_workers(
        produce, StatsMerge(produce, collector), path=path, size=size, workers=workers,
        where=engine.shared_folder(STATS_PARTS), counts_checks=True, rejects_out=rejects_out,
        on_progress=on_progress))


def on_cluster(collector: Collector, produce: StatsRange, files: list[InputFile],
               scheduler: str | None, workers: int | None, rejects_out: Any,
               on_progress: Progress | None) -> Counts:
    """Read ``files`` on the cluster at ``scheduler`` (None: a local cluster of ``workers``
    processes) into ``collector``; the rejects come back with the results (a stats run has
    no folder for part files)."""
    with Cluster(scheduler, workers) as cluster:
        return _counts(engine.on_cluster(
            cluster, produce, StatsMerge(produce, collector), files=files, folder=None,
            counts_checks=True, rejects_out=rejects_out, on_progress=on_progress))


def _counts(merged: Merged) -> Counts:
    assert merged.checks is not None  # stats counts checks
    return merged.lines, merged.checks, merged.first_rejects, merged.bytes


def _ignore(reject: Reject) -> None:
    return None
