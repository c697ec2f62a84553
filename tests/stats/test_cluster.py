"""stats on a real Dask cluster (the session's scheduler and two workers): the same JSON
as one process reading the same files in order, duplicates across ranges and files taken
back out, through the command line too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from evalstream._cases import duplicates
from evalstream._engines import dask as engine
from evalstream._engines import ranges
from evalstream._stats.stats import StatsOptions, collect
from tests.build.test_cluster import hostile_files
from tests.cluster import S3Server
from tests.helpers import CORPUS, SAMPLES

# Slow as a module: a real Dask cluster and moto's S3 server: seconds to start.
pytestmark = pytest.mark.slow

RANGE = 1024


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranges, "RANGE_BYTES", RANGE)
    monkeypatch.setattr(duplicates, "REDUCER_BYTES", 16 * RANGE)
    monkeypatch.setattr(engine, "GROUP", 3)  # several groups of tasks for each reducer


def same_as_one_process(tmp_path: Path, inputs: list[str], address: str,
                        **more: object) -> None:
    def options(**engine: object) -> StatsOptions:
        return StatsOptions(input=" ".join(inputs), inputs=inputs if len(inputs) > 1 else [],
                            **more, **engine)  # type: ignore[arg-type]

    one = collect(options(workers=1, rejects=str(tmp_path / "r1.jsonl")))
    two = collect(options(engine="dask", scheduler=address, rejects=str(tmp_path / "r2.jsonl")))
    assert msgspec.json.encode(two) == msgspec.json.encode(one)
    assert (tmp_path / "r2.jsonl").read_bytes() == (tmp_path / "r1.jsonl").read_bytes()
    # Without a rejects file only the first rejects come back from the tasks.
    assert collect(options(engine="dask", scheduler=address)) == collect(options(workers=1))


def test_sample(tmp_path: Path, dask_cluster: str, small_ranges: None) -> None:
    same_as_one_process(tmp_path, [str(SAMPLES / "cases.jsonl"), str(SAMPLES / "bad.jsonl"),
                                   str(SAMPLES / "cases.jsonl")], dask_cluster,
                        by=["scenario", "split"])


def test_hostile_files(tmp_path: Path, dask_cluster: str, small_ranges: None) -> None:
    (tmp_path / "in").mkdir()
    same_as_one_process(tmp_path, hostile_files(tmp_path / "in"), dask_cluster, max_tokens=300)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
def test_corpus(tmp_path: Path, dask_cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranges, "RANGE_BYTES", 1 << 20)
    monkeypatch.setattr(duplicates, "REDUCER_BYTES", 8 << 20)
    same_as_one_process(tmp_path, [str(CORPUS / "*.jsonl")], dask_cluster)


def test_command_line_with_a_glob_on_s3(tmp_path: Path, dask_cluster: str, s3: S3Server) -> None:
    import fsspec

    fs = fsspec.filesystem("s3")
    for name in ("cases.jsonl", "bad.jsonl"):
        fs.pipe(f"{s3.bucket}/shards/{name}", (SAMPLES / name).read_bytes())
    env = {**os.environ, **s3.env()}
    local = subprocess.run(
        [sys.executable, "-m", "evalstream", "stats", str(SAMPLES / "bad.jsonl"),
         str(SAMPLES / "cases.jsonl"), "--format", "json", "-o", str(tmp_path / "one.json")],
        capture_output=True, text=True, timeout=300, env=env)
    remote = subprocess.run(
        [sys.executable, "-m", "evalstream", "stats", f"s3://{s3.bucket}/shards/*.jsonl",
         "--engine", "dask", "--scheduler", dask_cluster, "--format", "json", "-o",
         str(tmp_path / "two.json")], capture_output=True, text=True, timeout=300, env=env)
    assert local.returncode == remote.returncode == 1, (local.stderr, remote.stderr)
    one = (tmp_path / "one.json").read_bytes()
    two = (tmp_path / "two.json").read_bytes()
    # The same figures; only the input as given differs (paths, or the glob).
    assert two.replace(f"s3://{s3.bucket}/shards/*.jsonl".encode(), b"X") == one.replace(
        f"{SAMPLES / 'bad.jsonl'} {SAMPLES / 'cases.jsonl'}".encode(), b"X")


def test_capped_tables_with_late_duplicates(tmp_path: Path, dask_cluster: str, s3: S3Server,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/stats/test_parallel.py's case on the cluster: late duplicates bring their own
    # metadata keys, rubric ids and values, which must take none of the capped places; the
    # tasks holding them are read again without them (a local file, and a URL through fsspec).
    import json

    import fsspec

    monkeypatch.setattr(ranges, "RANGE_BYTES", 20_000)
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
    url = f"s3://{s3.bucket}/capped/hostile.jsonl"
    fsspec.filesystem("s3").pipe(url, path.read_bytes())
    one = collect(StatsOptions(input=str(path), workers=1))
    assert one.overview.rejected_by_kind["duplicate id"] == 900
    assert not any(k.key.startswith("dup") for k in one.metadata.keys)
    local = collect(StatsOptions(input=str(path), engine="dask", scheduler=dask_cluster))
    assert local == one
    remote = collect(StatsOptions(input=url, engine="dask", scheduler=dask_cluster))
    remote.input = one.input  # only the name given differs
    assert remote == one
