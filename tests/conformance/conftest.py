"""The conformance suite: evalstream against judge servers nobody here wrote (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build_run
from tests.helpers import SAMPLES


@pytest.fixture(scope="session")
def sample_states(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample cases built: 101 judge states and 11 exact verdicts."""
    out = tmp_path_factory.mktemp("states") / "states.jsonl"
    build_run(BuildOptions(input=str(SAMPLES / "cases.jsonl"), output=str(out)))
    return out


def first_states(sample_states: Path, folder: Path, n: int) -> Path:
    """The first ``n`` judge states of the samples, as a file of their own."""
    folder.mkdir(parents=True, exist_ok=True)
    kept = [line for line in sample_states.read_bytes().splitlines(keepends=True)
            if b'"state"' in line][:n]
    path = folder / "states.jsonl"
    path.write_bytes(b"".join(kept))
    return path
