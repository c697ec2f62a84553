"""``build``/``validate`` over byte ranges: what build plugs into the ranged engine.

The engine (``_engines.ranges``) reads the ranges in worker processes or on a Dask cluster
and merges them as one process would (late duplicates, line numbers, rejects, counts). What
is build's: each range runs build's loop (``loop.process``) into a part file of records
(``Records``), which the parent splices into the output in order, leaving out the records
of late duplicates and taking back what they counted (``BuildMerge``). The output is
byte-identical for any number of workers or machines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from evalstream._build.loop import Options, Outcome, checker_for, process
from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import Record
from evalstream._cases.rejects import Reject
from evalstream._checks.checker import MAX_OVER_BUDGET_LISTED, Checker, CheckTally, OverBudget
from evalstream._checks.rubrics import RubricSet
from evalstream._engines.ranges import Late, Merger, Part, PartFiles, on_workers, shared_folder
from evalstream._files.lines import Progress
from evalstream._files.outputs import AtomicOutput
from evalstream._files.temporaries import PARTS_SUFFIX, SHARED_PARTS

WORTHWHILE_BYTES = 16 << 20  # smaller inputs run in one process


class Records(NamedTuple):
    """A range's record lines: its part file and its size."""

    path: str
    size: int


@dataclass
class BuildRange:
    """What each range makes: build's loop over its cases, records into a part file (none
    for validate). Sent to every worker."""

    opts: Options
    rubric_set: RubricSet | None
    volume: int | None = None  # the whole input's size, as one process's checker is told

    @property
    def allow_unknown_fields(self) -> bool:
        return self.opts.allow_unknown_fields

    @property
    def max_line_bytes(self) -> int:
        return self.opts.max_line_bytes

    def checker(self) -> Checker | None:
        return checker_for(self.opts, self.rubric_set, self.volume)

    def read(self, records: Iterator[Record[Any] | Reject], checker: Checker | None,
             reject: Callable[[bytes], object], log: CaseLog, files: PartFiles) -> Records | None:
        out = files.open("out") if self.opts.output is not None else None
        process(records, checker, out.write_all if out is not None else _ignore, reject, log)
        return Records(out.path, out.size) if out is not None else None


@dataclass
class BuildMerge:
    """Splices each part's records into ``out`` (in order, without late duplicates' records)
    and takes back what the late duplicates counted.

    On a cluster a local output file is joined ``ahead``, as the parts arrive (while the
    other tasks run), and cut back (``AtomicOutput.rewind``) to the first part that holds a
    late duplicate, which only the reducers can name after the last task (1 GB, one idle
    machine: the join after the tasks was ~8 s of 24); the parts from there are spliced
    again. ``sizes``: a directory of parts' record of each part's size."""

    range: BuildRange
    out: Any
    ahead: AtomicOutput | None = None
    sizes: dict[str, int] | None = None
    starts: dict[int, int] = field(default_factory=dict)  # part -> where it begins in ``ahead``
    rewound: bool = False
    # Re-checks a late duplicate to take its checks back out of the counts.
    scratch: Checker | None = field(init=False)

    def __post_init__(self) -> None:
        self.scratch = self.range.checker()

    def arrived(self, part: Part[Records | None]) -> None:
        if self.ahead is not None and part.made is not None:
            self.starts[part.index] = self.ahead.tell()
            self.out.splice(part.made.path, 0, part.made.size)

    def take(self, part: Part[Records | None], late: list[Late],
             merger: Merger[Records | None]) -> None:
        if part.checks is not None:
            self._take_back(part, part.checks, late, merger)
        records = part.made
        if self.out is None or records is None:
            return
        if self.sizes is not None:
            self.sizes[records.path] = records.size
        if part.index in self.starts and not self.rewound:
            if not late:
                return  # joined ahead, and nothing to leave out
            assert self.ahead is not None
            self.ahead.rewind(self.starts[part.index])
            self.rewound = True
        at = 0
        for d, _, _ in late:  # the records between the late duplicates' own
            if d.out_start > at:
                self.out.splice(records.path, at, d.out_start)
            at = d.out_end
        if records.size > at:
            self.out.splice(records.path, at, records.size)

    def _take_back(self, part: Part[Records | None], checks: CheckTally, late: list[Late],
                   merger: Merger[Records | None]) -> None:
        """Take the late duplicates' checks back out of ``checks``, and their entries out of
        its list of over-budget checks."""
        assert self.scratch is not None
        for _, line, case in late:
            self.scratch.tally = CheckTally()
            self.scratch.check(case, line)
            checks.subtract(self.scratch.tally)
        listed = checks.over_budget
        skip = {d.line for d, _, _ in late}
        kept = [o for o in listed if o.line not in skip]
        assert merger.checks is not None
        if len(listed) >= MAX_OVER_BUDGET_LISTED and len(kept) < len(listed) and \
                len(merger.checks.over_budget) + len(kept) < MAX_OVER_BUDGET_LISTED:
            # The worker's list was full and its duplicates took places that later checks
            # of the range would have had: list the range again without them.
            kept = self._over_budget(merger.again(part, skip))
        checks.over_budget = kept

    def _over_budget(self, records: Iterator[Record[Any]]) -> list[OverBudget]:
        """The first over-budget checks of these cases."""
        assert self.scratch is not None
        self.scratch.tally = CheckTally()
        for line_no, _, _, case in records:
            self.scratch.check(case, line_no)
        return self.scratch.tally.over_budget


def worthwhile(opts: Options, size: int | None) -> bool:
    """Whether workers can and should run: a plain input file over WORTHWHILE_BYTES."""
    return (opts.workers > 1 and size is not None and size > WORTHWHILE_BYTES
            and opts.input != "-" and not opts.input.endswith((".gz", ".zst")))


def run(opts: Options, rubric_set: RubricSet | None, size: int, out: AtomicOutput | None,
        rejects: AtomicOutput | None, on_progress: Progress | None) -> Outcome:
    """Build (or validate) with ``opts.workers`` processes."""
    # Beside the output file, named for it (the next run of that output removes the folder
    # a killed run left, with or without workers); else in the temporary folder, where
    # every run removes what dead runs left (files.temporaries).
    if out is not None and out.tmp is not None:
        where = (os.path.dirname(out.tmp), f".{os.path.basename(out.path)}.", PARTS_SUFFIX)
    else:
        where = shared_folder(SHARED_PARTS)
    produce = BuildRange(opts, rubric_set, size)
    merged = on_workers(produce, BuildMerge(produce, out), path=opts.input, size=size,
                        workers=opts.workers, where=where, counts_checks=rubric_set is not None,
                        rejects_out=rejects,
                        target=opts.output if opts.output is not None else opts.rejects,
                        on_progress=on_progress, stop_quietly=True)
    return Outcome(merged.lines, merged.checks, merged.first_rejects, merged.stopped)


def _ignore(data: object) -> None:
    return None
