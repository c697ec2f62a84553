"""The progress bar of ``build``, ``stats`` and ``view`` (issue 31): drawn on stderr while
it is a terminal, whatever stdout is; nothing of it anywhere otherwise. Before, rich drew it
on stdout: never when stdout was redirected (``view`` showed nothing while it indexed), and
among the records of ``build ... -`` when stdout was the terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, SAMPLES

ESC = b"\x1b["
BAR = b"\x1b[?25l"  # a live display hides the cursor while it draws; a summary never does


def _run(argv: list[str], stdout: Path, stderr_tty: bool) -> bytes:
    """Run evalstream with stdout to a file and stderr to a pseudo-terminal or a pipe;
    return what stderr received."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    with open(stdout, "wb") as out:
        if not stderr_tty:
            done = subprocess.run([sys.executable, "-m", "evalstream", *argv], stdout=out,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                                  cwd=ROOT, check=False)
            assert done.returncode in (0, 1), done.stderr
            return done.stderr
        primary, secondary = pty.openpty()
        process = subprocess.Popen([sys.executable, "-m", "evalstream", *argv], stdout=out,
                                   stderr=secondary, stdin=subprocess.DEVNULL, env=env,
                                   cwd=ROOT)
        os.close(secondary)
        said = b""
        while True:
            try:
                data = os.read(primary, 1 << 16)
            except OSError:  # the terminal's other end closed
                break
            if not data:
                break
            said += data
        os.close(primary)
        assert process.wait() in (0, 1), said
        return said


def _big_cases(tmp_path: Path) -> Path:
    # Enough lines that the bar is drawn at least once (rich redraws ten times a second).
    path = tmp_path / "cases.jsonl"
    line = (SAMPLES / "cases.jsonl").read_bytes().splitlines()[0]
    with open(path, "wb") as f:
        for i in range(30_000):
            f.write(line.replace(b'"id":"', b'"id":"n%d-' % i, 1) + b"\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("tty", [True, False])
def test_build_draws_its_bar_on_a_terminal_stderr_only(tmp_path: Path, tty: bool) -> None:
    cases = _big_cases(tmp_path)
    stdout = tmp_path / "stdout"
    said = _run(["build", str(cases), "-"], stdout, tty)
    records = stdout.read_bytes().splitlines()
    assert ESC not in stdout.read_bytes() and len(records) > 30_000  # the records alone
    assert all(json.loads(r)["case_id"] for r in records[::997])
    assert (BAR in said) == tty, said[:300]


@pytest.mark.slow
@pytest.mark.parametrize("tty", [True, False])
def test_view_draws_its_bar_while_it_indexes(tmp_path: Path, tty: bool) -> None:
    cases = _big_cases(tmp_path)
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_bytes((SAMPLES / "verdicts.jsonl").read_bytes())
    stdout = tmp_path / "stdout"
    said = _run(["view", str(verdicts), "--cases", str(cases), "--export",
                 str(tmp_path / "pages"), "--limit", "1"], stdout, tty)
    assert stdout.read_bytes() == b""
    assert (b"view: cases" in said and BAR in said) == tty, said[:300]
    assert b"view: indexed cases 30,000 lines" in said


@pytest.mark.slow
@pytest.mark.parametrize("tty", [True, False])
def test_stats_draws_its_bar_on_a_terminal_stderr_only(tmp_path: Path, tty: bool) -> None:
    cases = _big_cases(tmp_path)
    stdout = tmp_path / "stdout"
    said = _run(["stats", str(cases), "--format", "json", "--workers", "1"], stdout, tty)
    assert json.loads(stdout.read_bytes())["overview"]["cases"] == 30_000
    assert (BAR in said) == tty, said[:300]
