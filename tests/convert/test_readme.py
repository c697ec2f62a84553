"""The `convert` transcripts of docs/convert.md are real: each `$ command` in it runs, from a
folder that sees the repository's data/, and prints exactly the lines shown under it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT


def _transcripts() -> list[tuple[str, list[str]]]:
    section = (ROOT / "docs" / "convert.md").read_text()
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```\n(.*?)```", section, re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            command = lines[i][2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + lines[i].strip()
            i += 1
            output = []
            while i < len(lines) and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
            found.append((command, output))
    return found


@pytest.mark.slow
def test_readme_transcripts_run(tmp_path: Path) -> None:
    transcripts = _transcripts()
    assert len(transcripts) >= 5
    (tmp_path / "data").symlink_to(ROOT / "data")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT)}
    for command, expected in transcripts:
        done = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.stdout.splitlines() == expected, command
