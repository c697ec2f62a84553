"""The worker engine: results in task order, a worker that dies ends the run at once with a
sentence, and workers die with their parent (no orphan keeps working)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalstream._engines.local import WorkerDied, map_ordered
from tests.helpers import ROOT


def _pid_file(folder: str) -> str:
    # Module-level, so that a spawned worker can run it too.
    path = os.path.join(folder, f"{os.getpid()}.pid")
    with open(path, "w") as f:
        f.write(str(os.getpid()))
    return folder


def _square(folder: str, task: int) -> int:
    return task * task


def _slow(folder: str, task: int) -> int:
    if task == 1:
        time.sleep(600)  # the task a worker is killed in
    return task


def _workers(folder: Path, n: int, timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while len(pids := [int(p.stem) for p in folder.glob("*.pid")]) < n:
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.01)
    return sorted(pids)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped has stopped running)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_results_come_back_in_task_order(tmp_path: Path) -> None:
    assert list(map_ordered(_pid_file, _square, str(tmp_path), list(range(50)), 3)) == \
        [n * n for n in range(50)]


def test_a_killed_worker_ends_the_run_with_a_sentence(tmp_path: Path) -> None:
    results = map_ordered(_pid_file, _slow, str(tmp_path), [0, 1, 2, 3], 2,
                          describe=lambda t: f"task {t}")
    started = time.monotonic()
    got = [next(results)]  # task 0 done; task 1 now sleeps in a worker
    for pid in _workers(tmp_path, 2):
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(WorkerDied, match=r"a worker process died \(killed by SIGKILL\) while "
                                         r"working on task \d; nothing was written\."):
        got += list(results)
    assert time.monotonic() - started < 30  # seen at once, not after the sleep
    assert got == [0]
    assert WorkerDied("").exit_code == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_die_with_their_parent(tmp_path: Path) -> None:
    # A parent that is SIGKILLed cannot stop its workers: the kernel must.
    script = ("import sys; from evalstream._engines.local import map_ordered; "
              "from tests.engines.test_local import _pid_file, _slow; "
              "list(map_ordered(_pid_file, _slow, sys.argv[1], [1, 1, 1, 1], 2))")
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        workers = _workers(tmp_path, 2)
        parent.kill()
        parent.wait(timeout=30)
        killed = time.monotonic()
        while any(_alive(pid) for pid in workers):
            assert time.monotonic() - killed < 5, "a worker outlived its parent"
            time.sleep(0.02)
    finally:
        parent.kill()
        for pid in _workers(tmp_path, 0):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _dies_at_50(folder: str, task: int) -> int:
    if task == 50:
        os.kill(os.getpid(), signal.SIGKILL)
    return task


@pytest.mark.slow
def test_a_worker_dying_while_tasks_are_sent_is_still_a_dead_worker(tmp_path: Path) -> None:
    # The parent may be sending the dead worker its next task when it dies: a broken pipe
    # then, which must end the run as a dead worker, never pass for a closed stdout.
    for _ in range(5):
        with pytest.raises(WorkerDied, match="killed by SIGKILL"):
            list(map_ordered(_pid_file, _dies_at_50, str(tmp_path), list(range(400)), 2))
