"""The conformance suite: evalstream against judge servers nobody here wrote (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build_run
from evalstream._checks.rubrics import builtin_text
from tests.helpers import SAMPLES


@pytest.fixture(scope="session")
def sample_states(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample cases built: 101 judge states and 11 exact verdicts, with the built-in
    rubrics the suite was measured with (those before issue 30's starter rubrics, which
    would more than double the requests a quota paces)."""
    folder = tmp_path_factory.mktemp("states")
    rubrics = folder / "rubrics.toml"
    rubrics.write_text(builtin_text().partition("# Starter rubrics")[0], "utf-8")
    out = folder / "states.jsonl"
    build_run(BuildOptions(input=str(SAMPLES / "cases.jsonl"), output=str(out),
                           rubric_files=[str(rubrics)]))
    return out


def first_states(sample_states: Path, folder: Path, n: int) -> Path:
    """The first ``n`` judge states of the samples, as a file of their own."""
    folder.mkdir(parents=True, exist_ok=True)
    kept = [line for line in sample_states.read_bytes().splitlines(keepends=True)
            if b'"state"' in line][:n]
    path = folder / "states.jsonl"
    path.write_bytes(b"".join(kept))
    return path
