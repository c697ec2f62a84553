"""Fixtures shared by several test packages: a real Dask cluster and an S3-compatible server,
each a set of processes on 127.0.0.1 started once per test session and stopped at its end;
worker processes for inputs of any size."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cluster import DaskProcesses, S3Server


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server; s3fs in this process and in workers started after it uses it."""
    import fsspec.config

    server = S3Server(tmp_path_factory.mktemp("moto"))
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    fsspec.config.conf["s3"] = {"endpoint_url": server.endpoint, "key": "test",
                                "secret": "test"}
    try:
        yield server
    finally:
        fsspec.config.conf.pop("s3", None)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory, s3: S3Server) -> Iterator[str]:
    """A scheduler and two workers (one thread, 1 GiB each); yields the scheduler address."""
    cluster = DaskProcesses(tmp_path_factory.mktemp("dask"), workers=2)
    try:
        yield cluster.address
    finally:
        cluster.stop()


@pytest.fixture
def worker_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``build`` and ``stats`` with ``--workers N`` read any input over worker processes
    (not only those over ``WORTHWHILE_BYTES``), and each such run is listed here by its parts
    folder. A test of workers asserts the list is not empty: with small test files the size
    rule alone once kept every test of tests/build/test_ranges.py and
    tests/stats/test_parallel.py in one process, comparing one process with itself."""
    from evalstream._build import ranges as build_ranges
    from evalstream._engines import ranges as engine
    from evalstream._stats import ranges as stats_ranges

    monkeypatch.setattr(build_ranges, "WORTHWHILE_BYTES", 0)
    monkeypatch.setattr(stats_ranges, "WORTHWHILE_BYTES", 0)
    made: list[str] = []
    folder = engine.temp_folder

    @contextmanager
    def spy(*args: str) -> Iterator[str]:
        with folder(*args) as path:
            made.append(path)
            yield path

    monkeypatch.setattr(engine, "temp_folder", spy)
    return made


@pytest.fixture
def tokenizer_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A file that gets the process id of every load of toktok's counter, in this process or
    in its forked workers, by a run that counts as a large input (toktok loads at its first
    count). The process's tokenizers are made anew for the test, and again after it."""
    from evalstream._checks import encodings

    loads = tmp_path / "toktok-loads.txt"
    loads.touch()
    counter = encodings.toktok_counter

    def spy(name: str) -> object:
        with open(loads, "a") as f:
            f.write(f"{os.getpid()}\n")
        return counter(name)

    monkeypatch.setattr(encodings, "toktok_counter", spy)
    monkeypatch.setattr(encodings, "TOKTOK_AFTER", 1)  # an input over a byte is large
    encodings.tokenizer.cache_clear()
    yield loads
    encodings.tokenizer.cache_clear()
