"""The `batch` transcript of docs/batch.md is real: each `$ command` of it runs, from a folder that sees
the repository's data/, against a fresh fake server, and prints exactly the lines shown."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.judge.support import FakeServer

README_PORT = "8765"


def _transcript() -> list[tuple[str, list[str]]]:
    text = (ROOT / "docs" / "batch.md").read_text()
    section = text[:text.index("\n## The folder `prepare` writes")]
    block = next(b for b in re.findall(r"```\n(.*?)```", section, re.S) if "\n$ " in b)
    found: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            found[-1][1].append(line)
    return found


@pytest.mark.slow  # eight commands, each a new process (~20 s)
def test_readme_batch_transcript_runs(tmp_path: Path) -> None:
    transcript = _transcript()
    assert len(transcript) >= 7
    server = FakeServer("--batch-polls", "2")
    try:
        (tmp_path / "data").symlink_to(ROOT / "data")
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(PATH=path, PYTHONPATH=str(ROOT), NO_COLOR="1")
        port = str(server.port)
        for command, expected in transcript:
            if command.endswith("&"):
                assert "fake_server" in command  # started above, on a free port
                continue
            done = subprocess.run(["bash", "-c", command.replace(README_PORT, port) + " 2>&1"],
                                  cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=120)
            assert done.stdout.splitlines() == [x.replace(README_PORT, port) for x in expected], \
                command
    finally:
        server.stop()
