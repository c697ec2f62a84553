"""Helpers for the reliability tests: running evalstream in-process and as a subprocess,
reading what it wrote, and the rules every reject message must follow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalstream._build.run import Options, run
from evalstream._checks.report import RunReport
from tests.helpers import CORPUS

ROOT = Path(__file__).resolve().parents[2]
JSONTESTSUITE = CORPUS / "jsontestsuite"
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
# Phrases of msgspec's own errors that must never reach a person unexplained.
RAW_MSGSPEC = ("Input data was truncated", "Expected `", "JSON is malformed", "Object contains",
               "Object missing", "Invalid enum value", "- at `$", "[...]")


def examples(n: int) -> int:
    """``n`` hypothesis examples, or twenty times as many under HYPOTHESIS_PROFILE=long."""
    return n * 20 if LONG else n


@dataclass
class Outcome:
    """What one in-process run wrote: the report, the output records and the rejects."""

    report: RunReport
    records: list[dict[str, Any]]
    rejects: list[dict[str, Any]]
    output: bytes


def run_or_diagnosis(tmp_path: Path, data: bytes, *, build: bool = True,
                     **options: Any) -> Outcome | None:
    """``run_on``, or None when evalstream found the file plainly not JSONL (exit 4): then
    it must have written nothing and said so in one sentence, as the sniffer sees the head."""
    from evalstream._files.sniff import HEAD_BYTES, diagnose, jsonl_kind
    from evalstream.errors import WrongFileError

    for old in tmp_path.glob("out.*"):  # hypothesis runs many examples in one tmp_path
        old.unlink()
    try:
        return run_on(tmp_path, data, build=build, **options)
    except WrongFileError as exc:
        assert exc.exit_code == 4
        assert "not JSONL cases" in str(exc) and "\n" not in str(exc)
        head = data[:HEAD_BYTES]
        assert diagnose(head, "in.jsonl") is not None or jsonl_kind(head) not in (None, "cases")
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(("out.", ".out."))]
        return None


def run_on(tmp_path: Path, data: bytes, *, build: bool = True, **options: Any) -> Outcome:
    """Run build (or validate) in-process on ``data``; read back everything it wrote."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    out = tmp_path / "out.jsonl"
    rejects = tmp_path / "out.rejects.jsonl"
    report, _ = run(Options(input=str(src), output=str(out) if build else None,
                            rejects=str(rejects), report=str(tmp_path / "out.report.json"),
                            **options))
    output = out.read_bytes() if build else b""
    return Outcome(report, [json.loads(x) for x in output.splitlines()],
                   [json.loads(x) for x in rejects.read_bytes().split(b"\n") if x], output)


def cli(*args: str, cwd: Path, timeout: float = 120, **kwargs: Any
        ) -> subprocess.CompletedProcess[bytes]:
    """``python -m evalstream ARGS`` in a subprocess, with the repo on the path."""
    return subprocess.run([sys.executable, "-m", "evalstream", *args], cwd=cwd,
                          env=cli_env(), capture_output=True, timeout=timeout, **kwargs)


def cli_env() -> dict[str, str]:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="120")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def assert_counts_add_up(report: RunReport) -> None:
    c = report.counts
    assert c.lines == c.blank + c.cases + c.rejected, c


def assert_actionable(reject: dict[str, Any]) -> None:
    """A reject a person can act on: a line, a JSON path (or a whole-line problem), and a
    full sentence in our words, not msgspec's."""
    error = reject["error"]
    assert isinstance(reject["line"], int) and reject["line"] >= 1, reject
    # A sentence: it starts with a capital or with the field it is about (`$.input` must ...).
    assert (error[:1].isupper() or error.startswith("`$")) and error.endswith("."), error
    assert not any(phrase in error for phrase in RAW_MSGSPEC), error
    if reject["path"] is None:
        assert "over the limit" in error, reject  # only a line too long has no path
    else:
        assert reject["path"].startswith("$"), reject
