"""Duplicate ids found by hash-prefix buckets and reducers are exactly those one index finds,
and those a plain dict of ids finds, for any number of reducers and any grouping of tasks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._cases.duplicates import Dup, ParentIndex, buckets, by_task, reduce_bucket
from evalstream._cases.ids import CaseLog
from evalstream._engines.dask import sum_arrays


def _logs(tasks: list[list[str]]) -> list[tuple]:
    logs = []
    for ids in tasks:
        log = CaseLog()
        end = 0
        for k, case_id in enumerate(ids):
            end += 10 + k
            log.add(case_id, 2 * k + 1, 100 * k, end)  # lines, offsets, ends of any shape
        logs.append(log.arrays())
    return logs


def _oracle(tasks: list[list[str]]) -> dict[int, list[tuple[int, int, int]]]:
    """(k, first task, first line) of each repeated id, per task, from a plain dict."""
    first: dict[str, tuple[int, int]] = {}
    found: dict[int, list[tuple[int, int, int]]] = {}
    for t, ids in enumerate(tasks):
        for k, case_id in enumerate(ids):
            if case_id in first:
                found.setdefault(t, []).append((k, *first[case_id]))
            else:
                first[case_id] = (t, 2 * k + 1)
    return found


def _summary(found: dict[int, list[Dup]]) -> dict[int, list[tuple[int, int, int]]]:
    return {t: [(d.k, d.first_task, d.first_line) for d in dups] for t, dups in found.items()
            if dups}


ids = st.lists(st.lists(st.sampled_from([f"c{i}" for i in range(12)] + ["x/y", "é", "\ud800"]),
                        max_size=15), max_size=8)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(tasks=ids, reducers=st.integers(1, 7), group=st.integers(1, 4))
def test_reducers_find_what_one_index_finds(tasks: list[list[str]], reducers: int,
                                            group: int) -> None:
    logs = _logs(tasks)
    index = ParentIndex()
    parent = {t: index.duplicates(t, log) for t, log in enumerate(logs)}
    split = [buckets(t, log, reducers) for t, log in enumerate(logs)]
    # Tasks gathered in groups, as the cluster's combine step does, then reduced.
    groups = [split[g:g + group] for g in range(0, len(split), group)]
    combined = [[tuple(sum_arrays(list(f)) for f in zip(*(s[j] for s in g), strict=True))
                 for j in range(reducers)] for g in groups]
    reduced = by_task([reduce_bucket([c[j] for c in combined]) for j in range(reducers)])
    assert _summary(reduced) == _summary(parent) == _oracle(tasks)
    for t, dups in reduced.items():  # where each duplicate's records lie in its part
        end = logs[t][4]
        assert dups == parent[t]
        for d in dups:
            assert d.out_end == end[d.k] and d.out_start == (end[d.k - 1] if d.k else 0)
