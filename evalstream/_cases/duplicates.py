"""Duplicate case ids across an input read in byte ranges, found without one index of all ids.

Every range task logs its accepted cases (``ids.CaseLog``). On one machine the parent checks
them against one ``IdIndex`` (``ParentIndex``). On a cluster the ids are never sent to the
client: each task cuts its log into ``reducers`` buckets by a prefix of the id hash
(``buckets``), bucket ``j`` of every task goes to reducer ``j`` in task order, and each
reducer keeps an ``IdIndex`` of its share of the ids and reports only the duplicates
(``reduce_bucket``). A hash lands in one bucket wherever it occurs, and a reducer sees its
entries in input order, so it finds exactly the duplicates one process finds.

An entry is eight 64-bit numbers (``FIELDS``): 64 bytes a case while it waits in the
cluster; a reducer's index holds 24 bytes a slot (32-64 a case) of its share.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import NamedTuple

from evalstream._cases.ids import IdIndex
from evalstream._files.store import Task

FIELDS = ("lo", "hi", "task", "k", "line", "offset", "out_start", "out_end")
_LINE_BITS = 40  # local line numbers below 2**40; task indexes below 2**24
REDUCER_BYTES = 8 << 30  # input bytes whose ids one reducer takes
MAX_REDUCERS = 128


class Dup(NamedTuple):
    """A case whose id was used before: its position in its task's log (``k``), its line
    (local to the task), its byte offset in its file, where its output lies in the task's
    part file, and the task and local line of the first use."""

    k: int
    line: int
    offset: int
    out_start: int
    out_end: int
    first_task: int
    first_line: int


Bucket = tuple[array, ...]  # one array('Q') per name in FIELDS


def buckets(task: int, log: tuple[array, ...], reducers: int) -> list[Bucket]:
    """Cut a task's case log (lo, hi, line, offset[, end]) into ``reducers`` buckets by the
    top bits of the id hash; entries keep their order within a bucket."""
    lo, hi, line, offset = log[:4]
    end = log[4] if len(log) > 4 else None
    out: list[Bucket] = [tuple(array("Q") for _ in FIELDS) for _ in range(reducers)]
    previous = 0
    for k in range(len(lo)):
        # The top 32 bits of the high half, scaled to the reducers: even for any count.
        b = ((hi[k] >> 32) * reducers) >> 32
        target = out[b]
        stop = end[k] if end is not None else 0
        for column, value in zip(target, (lo[k], hi[k], task, k, line[k], offset[k], previous,
                                          stop), strict=True):
            column.append(value)
        previous = stop
    return out


def reduce_bucket(parts: list[Bucket]) -> list[tuple[int, Dup]]:
    """The duplicates among the entries of one bucket from every task, given in task order:
    (task, Dup) for each entry whose id an earlier entry used."""
    index = IdIndex()
    found: list[tuple[int, Dup]] = []
    for part in parts:
        lo, hi, task, k, line, offset, out_start, out_end = part
        codes = [(t << _LINE_BITS) | n for t, n in zip(task, line, strict=True)]
        first = index.add(lo, hi, codes)
        for i, code in enumerate(first):
            if code:
                found.append((task[i], Dup(k[i], line[i], offset[i], out_start[i], out_end[i],
                                           code >> _LINE_BITS, code & ((1 << _LINE_BITS) - 1))))
    return found


def reducers_for(total_bytes: int) -> int:
    """How many reducers share the ids of an input of ``total_bytes``: one per
    REDUCER_BYTES (at 2 KB a case, ~4 million ids, ~200 MB of index and entries)."""
    return max(1, min(MAX_REDUCERS, -(-total_bytes // REDUCER_BYTES)))


def duplicate_lines(found: dict[int, list[Dup]], tasks: list[Task],
                    read: Callable[[list[tuple[Task, list[int]]]], Iterable[list[bytes]]],
                    ) -> dict[tuple[int, int], bytes]:
    """(task, k) -> the line of each duplicate in ``found``, read by ``read`` (on the
    cluster: one task per range that holds duplicates)."""
    jobs = [(tasks[i], [d.offset for d in dups]) for i, dups in sorted(found.items())]
    raw: dict[tuple[int, int], bytes] = {}
    for (task, _), lines in zip(jobs, read(jobs), strict=True):
        for dup, line in zip(found[task.index], lines, strict=True):
            raw[task.index, dup.k] = line
    return raw


def by_task(found: list[list[tuple[int, Dup]]]) -> dict[int, list[Dup]]:
    """The reducers' findings per task, each task's in log order."""
    tasks: dict[int, list[Dup]] = {}
    for reducer in found:
        for task, dup in reducer:
            tasks.setdefault(task, []).append(dup)
    for dups in tasks.values():
        dups.sort()
    return tasks


class ParentIndex:
    """One index of the whole input in the parent (worker processes on one machine): the
    duplicates of each part as it arrives, in order. The same findings as the reducers'."""

    def __init__(self) -> None:
        self.index = IdIndex()

    def duplicates(self, task: int, log: tuple[array, ...]) -> list[Dup]:
        """The cases of task ``task``'s log (lo, hi, line, offset[, end]) whose id was used
        before, by this task or an earlier one."""
        lo, hi, line, offset = log[:4]
        end = log[4] if len(log) > 4 else None
        first = self.index.add(lo, hi, [(task << _LINE_BITS) | n for n in line])
        mask = (1 << _LINE_BITS) - 1
        return [Dup(k, line[k], offset[k], end[k - 1] if end is not None and k else 0,
                    end[k] if end is not None else 0, code >> _LINE_BITS, code & mask)
                for k, code in enumerate(first) if code]
