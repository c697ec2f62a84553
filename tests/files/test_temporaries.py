"""Temporaries of a dead run (kill -9, the OOM killer): found and removed by the next run, or
left beside the output under a name that says whose they are; never a live run's, another
machine's or another target's (issue 23, item 19)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from evalstream._build.run import Options, run
from evalstream._engines import ranges as engine
from evalstream._files import temporaries
from evalstream._stats.stats import StatsOptions
from evalstream._stats.stats import collect as stats
from tests.helpers import SAMPLES


@pytest.fixture(scope="module")
def dead() -> int:
    """The process id of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or
                  p.name.startswith("evalstream-"))


def _leave(folder: Path, name: str) -> None:
    """What a killed run leaves: a file, or a folder of part files (``/`` at the end)."""
    if name.endswith("/"):
        (folder / name).mkdir()
        (folder / name / "00000000.out").write_bytes(b"x" * 1000)
    else:
        (folder / name).write_bytes(b"x")


def test_every_temporary_a_dead_run_left_for_a_target_goes_with_the_next_run_of_it(
        tmp_path: Path, dead: int) -> None:
    machine = temporaries.tag().split("-")[1].rstrip(".")
    mine = f"{dead}-{machine}.abcdefgh"
    gone = [f".states.jsonl.{mine}.tmp", f".states.jsonl.{mine}.evalstream-parts/",
            f".states.jsonl.{mine}.old/", f".states.rejects.jsonl.{mine}.tmp"]
    kept = [f".other.jsonl.{mine}.evalstream-parts/",  # another target's: its name says whose
            f".states.jsonl.{dead}-0123abcd.abcdefgh.evalstream-parts/",  # another machine's
            f".states.jsonl.{mine}ij.tmp",  # not the random part of a run's name
            ".states.jsonl.notes.tmp"]  # not named for a run
    for name in gone + kept:
        _leave(tmp_path, name)
    # A plain run of one process: no workers, so no parts folder of its own is made.
    run(Options(input=str(SAMPLES / "cases.jsonl"), output=str(tmp_path / "states.jsonl")))
    assert _names(tmp_path) == sorted(n.rstrip("/") for n in kept)


def test_the_workers_parts_folder_is_named_for_its_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker_runs: list[str]) -> None:
    made = worker_runs  # the conftest fixture lists each run's parts folder
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: 8192)
    run(Options(input=str(SAMPLES / "cases.jsonl"), output=str(tmp_path / "states.jsonl"),
                workers=2))
    assert len(made) == 1
    name = Path(made[0]).name
    assert Path(made[0]).parent == tmp_path
    assert name.startswith(f".states.jsonl.{temporaries.tag()}") and \
        name.endswith(".evalstream-parts"), name
    assert _names(tmp_path) == []


@pytest.mark.slow  # stats loads the tokenizer: 0.7 s
def test_the_next_run_removes_what_dead_runs_left_in_the_temporary_folder(
        tmp_path: Path, dead: int, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    machine = temporaries.tag().split("-")[1].rstrip(".")
    gone = [f"evalstream-stats-{dead}-{machine}.abcdefgh/",  # stats --workers' rejects parts
            f".evalstream-parts-{dead}-{machine}.abcdefgh/"]  # build --workers to stdout
    kept = [f"evalstream-stats-{dead}-0123abcd.abcdefgh/", "evalstream-notes/"]
    for name in gone + kept:
        _leave(shared, name)
    # Plain runs of one process, which make no such folder themselves.
    stats(StatsOptions(input=str(SAMPLES / "cases.jsonl"), workers=1))
    assert _names(shared) == sorted(n.rstrip("/") for n in kept)
    for name in gone:
        _leave(shared, name)
    run(Options(input=str(SAMPLES / "cases.jsonl"), output=None))  # validate
    assert _names(shared) == sorted(n.rstrip("/") for n in kept)
