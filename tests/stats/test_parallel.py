"""stats with worker processes gives the same figures, rejects and bytes as one process,
including duplicate ids whose first use is in another worker's range."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from evalstream._cli import main
from evalstream._engines import local
from evalstream._engines import ranges as engine
from evalstream._stats import ranges as stats_ranges
from evalstream._stats.stats import StatsOptions, collect
from tests.helpers import CORPUS, SAMPLES, threads


# Spawned workers import evalstream again: about a second a test, so those are slow ones.
@pytest.fixture(autouse=True, params=["fork", pytest.param("spawn", marks=pytest.mark.slow)])
def small_ranges(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ranges of a few KiB, so that small files are split between the workers; both ways
    # of starting them (the workers never touch Polars, so forking is safe here).
    import sys

    if request.param == "fork" and sys.version_info >= (3, 12) and threads() > 1:
        pytest.skip("Python 3.12+ warns about forking a process that runs threads (Polars' "
                    "pool in this test process); the command line forks before loading it.")
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: 3_000)
    monkeypatch.setattr(local, "start_method", lambda: request.param)


@pytest.mark.slow
def test_fork_only_before_polars_is_loaded() -> None:
    import subprocess
    import sys

    code = ("import evalstream._engines.local as p; a = p.start_method(); import polars; "
            "print(a, p.start_method())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == ["fork", "spawn"], done.stderr


def _same_with_workers(path: Path, tmp_path: Path, runs: list[str], **options: object) -> None:
    before = len(runs)
    one = collect(StatsOptions(input=str(path), workers=1, rejects=str(tmp_path / "r1.jsonl"),
                               **options))  # type: ignore[arg-type]
    two = collect(StatsOptions(input=str(path), workers=2, rejects=str(tmp_path / "r2.jsonl"),
                               **options))  # type: ignore[arg-type]
    assert len(runs) == before + 1  # the second, over worker processes
    assert two == one
    assert (tmp_path / "r2.jsonl").read_bytes() == (tmp_path / "r1.jsonl").read_bytes()


def test_bad_samples(tmp_path: Path, worker_runs: list[str]) -> None:
    _same_with_workers(SAMPLES / "bad.jsonl", tmp_path, worker_runs, by=["scenario", "split"])


def test_duplicates_across_ranges(tmp_path: Path, worker_runs: list[str]) -> None:
    rng = random.Random(7)
    lines = []
    for i in range(400):
        # Every 7th case reuses an earlier id, with other metadata, labels and fields.
        case_id = f"case-{rng.randrange(i)}" if i % 7 == 6 else f"case-{i}"
        case: dict[str, object] = {
            "id": case_id, "input": "q" * rng.randrange(1, 300), "output": "a" * (i % 50 + 1),
            "metadata": {"scenario": rng.choice(["booking", "rag", f"only-{i}"]),
                         "user": f"u{i}", f"key-{i % 9}": i},
            "expected": {rng.choice(["claim-support", "escalation", "made-up"]):
                         {"status": rng.choice(["pass", "fail", "na"]), "source": "human"}},
        }
        if i % 3 == 0:
            case["policy"] = "p" * 40
        if i % 4 == 0:
            case["context"] = [{"id": "p1", "text": "t" * rng.randrange(10, 500)}]
        lines.append(json.dumps(case))
        if i % 50 == 0:
            lines.append("")
    path = tmp_path / "dups.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 10 * 3_000
    one = collect(StatsOptions(input=str(path), workers=1))
    assert one.overview.rejected_by_kind["duplicate id"] > 30
    _same_with_workers(path, tmp_path, worker_runs)


@pytest.mark.skipif(not (CORPUS / "faithbench.jsonl").exists(), reason="no corpus")
def test_a_real_dataset_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        worker_runs: list[str]) -> None:
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: 256 << 10)
    source = CORPUS / "faithbench.jsonl"
    for workers in ("1", "2"):
        assert main(["stats", str(source), "--workers", workers, "--format", "json",
                     "-o", str(tmp_path / f"w{workers}.json"), "-q"]) == 0
    assert len(worker_runs) == 1
    assert (tmp_path / "w2.json").read_bytes() == (tmp_path / "w1.json").read_bytes()


def test_only_plain_files_big_enough_are_split() -> None:
    big = stats_ranges.WORTHWHILE_BYTES
    assert stats_ranges.worthwhile("a.jsonl", big + 1, 2)
    assert not stats_ranges.worthwhile("a.jsonl", big + 1, 1)
    assert not stats_ranges.worthwhile("a.jsonl", big, 2)
    assert not stats_ranges.worthwhile("a.jsonl.gz", big + 1, 2)
    assert not stats_ranges.worthwhile("-", None, 2)


@pytest.mark.slow
def test_capped_tables_are_the_same_for_any_number_of_workers(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               worker_runs: list[str]) -> None:
    # Late duplicates that bring their own metadata keys, rubric ids and values: one process
    # never counts them, so they must not take any of the capped places (1,000 key paths,
    # 1,000 unknown rubric ids, 1,000 exact values of a key) in a worker's figures either.
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: 20_000)
    label = {"status": "pass", "source": "human"}

    def case(i: int, tag: str) -> str:
        return json.dumps({"id": f"c{i}", "input": "q", "output": "a",
                           "metadata": {f"{tag}{i}": 1, "v": f"{tag}{i}", "when": tag},
                           "expected": {f"{tag}-r{i}": label}})

    lines = [case(i, "k") for i in range(900)]
    lines += [case(i, "dup") for i in range(900)]  # every one a late duplicate
    lines += [case(900 + i, "n") for i in range(400)]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")
    one = collect(StatsOptions(input=str(path), workers=1))
    keys = {k.key for k in one.metadata.keys}
    assert len(keys) == 1_000 and "n997" in keys and "n998" not in keys  # k0..k899, v, when
    assert not any(k.startswith("dup") for k in keys)
    assert {r.rubric for r in one.labels if not r.in_rubrics} >= {"k-r0", "n-r999"}
    assert one.overview.rejected_by_kind["duplicate id"] == 900
    for workers in (2, 3):
        assert collect(StatsOptions(input=str(path), workers=workers)) == one
    assert len(worker_runs) == 2


def test_forked_workers_share_the_tokenizer_the_parent_loaded(
        tmp_path: Path, worker_runs: list[str], tokenizer_loads: Path) -> None:
    """stats counts every state, so each worker would load the tokenizer (~0.3 s of CPU for
    toktok's o200k_base): the parent loads it before forking them, once."""
    import os

    if local.start_method() != "fork":
        pytest.skip("spawned workers load their own: nothing is shared")
    two = collect(StatsOptions(input=str(SAMPLES / "cases.jsonl"), workers=2))
    assert len(worker_runs) == 1
    assert tokenizer_loads.read_text().split() == [str(os.getpid())]
    assert two == collect(StatsOptions(input=str(SAMPLES / "cases.jsonl"), workers=1))


def test_several_files_tell_the_tokenizer_their_whole_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """stats counts every state of every file: its tokenizer is told their sizes summed, as
    it is told one file's, so toktok loads at the first count of a large dataset."""
    from evalstream._checks import encodings

    told: list[int] = []
    expect = encodings.Tokenizer.expect
    monkeypatch.setattr(encodings.Tokenizer, "expect",
                        lambda self, nbytes: (told.append(nbytes), expect(self, nbytes)))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    lines = (SAMPLES / "cases.jsonl").read_text().splitlines(keepends=True)
    a.write_text("".join(lines[:20]))
    b.write_text("".join(lines[20:]))
    collect(StatsOptions(input=str(tmp_path / "*.jsonl"), workers=1))
    assert told and set(told) == {a.stat().st_size + b.stat().st_size}
