"""A reader that goes away (`| head`), and options spelled as they are: every command ends
quietly with 141 whichever library was writing, and no option is taken by its prefix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, SAMPLES

CASES = str(SAMPLES / "cases.jsonl")
VERDICTS = str(SAMPLES / "verdicts.jsonl")
VERDICTS_B = str(SAMPLES / "verdicts-b.jsonl")

# Each command that prints to stdout, with the library that writes it: rich (tables),
# print (JSON), the atomic output of stdout (JSONL).
PRINTING = {
    "validate (rich table)": ["validate", str(SAMPLES / "bad.jsonl")],
    "validate --format json": ["validate", str(SAMPLES / "bad.jsonl"), "--format", "json"],
    "build to stdout": ["build", CASES, "-", "-q"],
    "stats (rich)": ["stats", CASES],
    "stats --format json": ["stats", CASES, "--format", "json"],
    "agree (rich)": ["agree", VERDICTS, CASES],
    "agree --format markdown": ["agree", VERDICTS, CASES, "--format", "markdown"],
    "compare (rich)": ["compare", VERDICTS, VERDICTS_B],
    "convert to stdout": ["convert", str(SAMPLES / "chats.jsonl"), "-", "-q"],
    "rubrics": ["rubrics"],
}


@pytest.mark.slow
@pytest.mark.parametrize("argv", PRINTING.values(), ids=PRINTING.keys())
def test_a_reader_that_went_away_ends_every_command_with_141(tmp_path: Path,
                                                             argv: list[str]) -> None:
    # The read end is closed before the command writes anything: its first write fails,
    # as `| head -1` makes a later one fail (a race this removes).
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "evalstream", *argv], stdout=write,
                              stderr=subprocess.PIPE, cwd=tmp_path, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr.decode()
    assert done.stderr == b"", done.stderr.decode()


@pytest.mark.parametrize("argv, wrong", [
    (["build", CASES, "out.jsonl", "--max-token", "5"], "--max-token"),
    (["stats", CASES, "--form", "json"], "--form"),
    (["agree", VERDICTS, CASES, "--min", "3"], "--min"),
])
def test_an_option_is_never_taken_by_its_prefix(argv: list[str], wrong: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from evalstream._cli import main

    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert f"unrecognized arguments: {wrong}" in err


def test_a_misspelled_option_gets_its_commands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    from evalstream._cli import main

    with pytest.raises(SystemExit):
        main(["build", CASES, "out.jsonl", "--exact-token"])
    err = capsys.readouterr().err
    assert err.startswith("usage: evalstream build "), err
    assert "evalstream build: error: unrecognized arguments: --exact-token" in err
    with pytest.raises(SystemExit):
        main(["batch", "prepare", "states.jsonl", "out", "--model", "m", "--modle", "x"])
    assert "evalstream batch prepare: error: unrecognized arguments: --modle" in \
        capsys.readouterr().err
