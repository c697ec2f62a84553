"""The Dask engine's contract, on the session's real cluster: results in task order, a task's
own exception raised as it was, the shuffle's buckets reaching their reducers in order."""

from __future__ import annotations

from array import array
from typing import Any

import pytest

from evalstream._engines import dask as engine
from evalstream.errors import InputError

# Slow as a module: a real Dask cluster (scheduler and workers on 127.0.0.1): seconds to start.
pytestmark = pytest.mark.slow


def _init(settings: int) -> int:
    return settings


def _work(offset: int, task: int) -> int:
    if task == 7:
        raise InputError("cannot read task 7")
    return offset + task


def _split(offset: int, task: int) -> tuple[int, list[Any]]:
    # Bucket j of task t holds 10 t + j in its one column: the reducer sees who sent what.
    return task, [(array("Q", [10 * task + j]),) for j in range(3)]


def _reduce(parts: list[Any]) -> list[int]:
    return [value for part in parts for column in part for value in column]


def test_results_in_task_order_and_errors_as_raised(dask_cluster: str) -> None:
    with engine.Cluster(dask_cluster) as cluster:
        assert cluster.threads == 2
        tasks = [5, 3, 9, 1, 0, 2]
        assert list(cluster.map_ordered(_init, _work, 100, tasks)) == [105, 103, 109, 101, 100,
                                                                       102]
        with pytest.raises(InputError, match="cannot read task 7"):
            list(cluster.map_ordered(_init, _work, 0, [1, 7, 2]))


def test_buckets_reach_their_reducer_in_task_order(dask_cluster: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "GROUP", 2)  # groups of two tasks before the reducers
    with engine.Cluster(dask_cluster) as cluster:
        summaries, reductions = cluster.map_reduce(_init, _split, 0, list(range(5)), 3, _reduce)
        assert list(summaries) == [0, 1, 2, 3, 4]
        assert reductions() == [[10 * t + j for t in range(5)] for j in range(3)]
