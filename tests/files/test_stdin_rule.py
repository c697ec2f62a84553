"""One rule for ``-`` (stdin) among a command's inputs (``_files.store.check_stdin``): every
command that reads cases from several arguments (build, validate, stats, agree, view) refuses
stdin among files, and a cluster run refuses stdin, in the same sentences naming the fix."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evalstream
from evalstream.errors import UsageError
from tests.helpers import SAMPLES

CASES = str(SAMPLES / "cases.jsonl")
VERDICTS = str(SAMPLES / "verdicts.jsonl")
AMONG = re.escape("- (stdin) can only be the one input: it is read once, as it comes, and "
                  "cannot be read in order with files; save it to a file and give that file's "
                  "path among the others.")
ON_DASK = re.escape("--engine dask reads files, not stdin (its tasks read byte ranges of each "
                    "file); save it to a file and give that file's path.")


def _commands(tmp: Path) -> dict[str, Callable[[Any], object]]:
    return {
        "build": lambda inputs: evalstream.build(inputs, tmp / "out.jsonl"),
        "validate": lambda inputs: evalstream.validate(inputs),
        "stats": lambda inputs: evalstream.stats(inputs),
        "agree": lambda inputs: evalstream.agree(VERDICTS, inputs),
        "view": lambda inputs: evalstream.export_view(VERDICTS, inputs, tmp / "site"),
    }


@pytest.mark.parametrize("command", ["build", "validate", "stats", "agree", "view"])
@pytest.mark.parametrize("inputs", [["-", CASES], [CASES, "-"]])
def test_stdin_among_files_is_one_sentence_everywhere(tmp_path: Path, command: str,
                                                      inputs: list[str]) -> None:
    with pytest.raises(UsageError, match=f"^{AMONG}$"):
        _commands(tmp_path)[command](inputs)


@pytest.mark.parametrize("command", ["build", "validate", "stats"])
def test_stdin_on_a_cluster_is_one_sentence(tmp_path: Path, command: str) -> None:
    run = {"build": lambda: evalstream.build("-", tmp_path / "out.jsonl", engine="dask"),
           "validate": lambda: evalstream.validate("-", engine="dask"),
           "stats": lambda: evalstream.stats("-", engine="dask")}[command]
    with pytest.raises(UsageError, match=f"^{ON_DASK}$"):
        run()
