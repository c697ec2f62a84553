"""``evalstream convert`` on the command line: exit codes, messages, stdin and stdout."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from evalstream._cli import main
from evalstream._convert.formats import NAMES
from tests.helpers import ROOT


def _cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "evalstream", "convert", *args], input=stdin,
                          capture_output=True, cwd=ROOT, timeout=120)


def test_list_formats(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "--list-formats"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # Three lines a format: its name and what it reads, the files it is inferred from, options.
    assert [line.split()[0] for line in lines[::3]] == list(NAMES)
    assert [line.split()[:2] for line in lines[1::3]] == [["inferred", "from:"]] * len(NAMES)
    assert [line.split()[0] for line in lines[2::3]] == ["options:"] * len(NAMES)
    assert NAMES == ("openai-chat", "otel", "csv", "tsv", "parquet", "json", "jsonl", "inspect",
                     "hf", "inspect-grades", "promptfoo-grades")


def test_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.csv"
    good.write_text("q,a\nx,y\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("q,a\nx,\n")
    out = str(tmp_path / "cases.jsonl")
    assert main(["convert", str(good), out, "--map", "input=q,output=a", "-q"]) == 0
    assert main(["convert", str(bad), out, "--map", "input=q,output=a", "-q"]) == 1
    assert main(["convert", str(good), out, "--map", "input=q"]) == 2
    assert "map `output`" in capsys.readouterr().err
    pq = tmp_path / "t.parquet"
    pl.DataFrame({"q": ["x"], "a": ["y"]}).write_parquet(pq)
    assert main(["convert", str(pq), out, "--from", "csv", "--map", "input=q,output=a"]) == 4
    err = capsys.readouterr().err
    assert err == (f"evalstream: error: {pq} is a Parquet file, not csv data; give --from "
                   "parquet.\n")
    assert main(["convert", str(tmp_path / "missing.csv"), out, "--map", "input=q,output=a"]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["convert", str(good)]) == 2
    assert "needs INPUT and OUTPUT" in capsys.readouterr().err


def test_no_case_at_all_exits_1_and_says_so(tmp_path: Path) -> None:
    src = tmp_path / "empty.csv"
    src.write_text("q,a\n")
    done = _cli(str(src), str(tmp_path / "c.jsonl"), "--map", "input=q,output=a")
    assert done.returncode == 1
    assert b"warning: no row became a case: the input has no rows." in done.stderr
    assert (tmp_path / "c.jsonl").read_bytes() == b""


def test_summary_on_stderr(tmp_path: Path) -> None:
    src = tmp_path / "chats.jsonl"
    src.write_text(json.dumps({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "image_url", "image_url": {"url": "u"}}]},
        {"role": "assistant", "content": "hello"}]}) + "\n")
    done = _cli(str(src), str(tmp_path / "c.jsonl"))
    assert done.returncode == 0
    assert done.stderr.decode().splitlines() == [
        "convert: 1 rows = 1 cases + 0 rejected + 0 blank (from openai-chat: inferred from its "
        "first line: a `messages` transcript in a .jsonl)",
        "non-text content parts named by placeholders: image: 1"]


@pytest.mark.slow
def test_stdin_to_stdout(tmp_path: Path) -> None:
    data = gzip.compress(b'q,a\n"x, y",z\n')
    done = _cli("-", "-", "--from", "csv", "--map", "input=q,output=a", "--rejects",
                str(tmp_path / "r.jsonl"), "--report", str(tmp_path / "r.json"), "-q",
                stdin=gzip.decompress(data))
    assert done.returncode == 0, done.stderr
    [case] = [json.loads(x) for x in done.stdout.splitlines()]
    assert case["input"] == "x, y"
    done = _cli("-", str(tmp_path / "c.jsonl"), "--map", "input=q,output=a")
    assert done.returncode == 2 and b"give --from for stdin" in done.stderr



def test_to_stdout_needs_no_flags_and_writes_no_file(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "evalstream", "convert", "-", "-", "--from",
                           "csv", "--map", "input=q,output=a"], input=b"q,a\nx,y\nz,\n",
                          capture_output=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1  # one row rejected: counted, said on stderr
    assert [json.loads(x)["input"] for x in done.stdout.splitlines()] == ["x"]
    assert b"rejects: not written (give --rejects FILE)" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_target_that_cannot_be_created_leaves_no_temporary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "t.csv"
    src.write_text("q,a\nx,y\n")
    assert main(["convert", str(src), str(tmp_path / "cases.jsonl"), "--map", "input=q,output=a",
                 "--report", str(tmp_path / "gone" / "r.json"), "-q"]) == 2
    assert "cannot create" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]  # no rejects temporary


def test_outputs_are_atomic(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text("q,a\nx,y\n")
    out = tmp_path / "cases.jsonl"
    out.write_text("previous\n")
    # A usage error found after the input was opened leaves the earlier file as it was.
    assert main(["convert", str(src), str(out), "--map", "input=q,output=nope", "-q"]) == 2
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.jsonl", "t.csv"]
    assert main(["convert", str(src), str(src), "--map", "input=q,output=a"]) == 2
