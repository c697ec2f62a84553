"""Binary files (pictures, archives, databases, Parquet) given to any command that reads JSONL:
one sentence with the fix and exit 4, never a rejected line of garbage per newline byte.

Before issue 30 a PNG given to build was 522 rejects and exit 1, and the same PNG named
``.eval`` was called "JSONL" by convert."""

from __future__ import annotations

import gzip
import io
import sqlite3
import tarfile
import zipfile
from pathlib import Path

import polars as pl
import pytest

from evalstream._cli import main
from tests.files.test_sniff import PNG
from tests.helpers import SAMPLES

CASES = (SAMPLES / "cases.jsonl").read_bytes()
VERDICTS = SAMPLES / "verdicts.jsonl"


def _tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("cases.jsonl")
        info.size = len(CASES)
        t.addfile(info, io.BytesIO(CASES))
    return buf.getvalue()


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("cases.jsonl", CASES)
    return buf.getvalue()


def _sqlite(tmp: Path) -> bytes:
    path = tmp / "made.db"
    with sqlite3.connect(path) as db:
        db.execute("create table t (question text, answer text)")
        db.execute("insert into t values ('q', 'a')")
    data = path.read_bytes()
    path.unlink()
    return data


def _parquet() -> bytes:
    buf = io.BytesIO()
    pl.DataFrame({"question": ["q"], "answer": ["a"]}).write_parquet(buf)
    return buf.getvalue()


# What each file is, said in its sentence, and a word of its fix.
FILES = {
    "png": (lambda tmp: PNG, "a PNG image", "not a picture"),
    "jpeg": (lambda tmp: b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(2000), "a JPEG image",
             "not a picture"),
    "gif": (lambda tmp: b"GIF89a\x10\x00\x10\x00" + bytes(2000), "a GIF image", "not a picture"),
    "zip": (lambda tmp: _zip(), "a zip archive", "unzip"),
    "tar": (lambda tmp: _tar(), "a tar archive", "tar -xf"),
    "sqlite": (_sqlite, "an SQLite database", "sqlite3 -header -csv"),
    "parquet": (lambda tmp: _parquet(), "a Parquet file", "--from parquet"),
}

# Each command and where the file goes in it (FILE); OUT is a new path in the test's folder.
COMMANDS = {
    "build": ["build", "FILE", "OUT/s.jsonl"],
    "validate": ["validate", "FILE"],
    "stats": ["stats", "FILE"],
    "agree (cases)": ["agree", str(VERDICTS), "FILE"],
    "agree (verdicts)": ["agree", "FILE", str(SAMPLES / "cases.jsonl")],
    "compare": ["compare", "FILE", str(VERDICTS)],
    "view (cases)": ["view", str(VERDICTS), "--cases", "FILE", "--export", "OUT/site"],
    "view (verdicts)": ["view", "FILE", "--cases", str(SAMPLES / "cases.jsonl"), "--export",
                        "OUT/site"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", list(FILES))
def test_a_binary_file_is_one_sentence_and_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   kind: str, command: str) -> None:
    make, what, fix = FILES[kind]
    path = tmp_path / "data.jsonl"  # named as the command expects: the bytes say otherwise
    path.write_bytes(make(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    args = [a.replace("FILE", str(path)).replace("OUT", str(out)) for a in COMMANDS[command]]
    assert main(args) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"evalstream: error: {path} is {what}, not JSONL") and err.count("\n") == 1
    assert fix in err
    assert not list(out.iterdir())  # nothing written


@pytest.mark.parametrize("kind", list(FILES))
def test_convert_names_a_binary_file_whatever_it_is_called(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    # A PNG renamed .eval was "JSONL, not inspect data; give --from jsonl or openai-chat".
    make, what, _ = FILES[kind]
    for name in ("log.eval", "rows.csv", "rows.jsonl"):
        path = tmp_path / name
        path.write_bytes(make(tmp_path))
        code = main(["convert", str(path), str(tmp_path / "cases.jsonl")])
        err = capsys.readouterr().err
        if kind == "parquet":  # read by --from parquet, inferred from its first bytes
            assert code == 2 and "--map" in err, err
            continue
        assert code == 4, err
        assert err.startswith(f"evalstream: error: {path} is {what}, not ") and "is JSONL" not in err
    assert not (tmp_path / "cases.jsonl").exists()


def test_a_compressed_tar_is_read_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cases.tar.gz"
    path.write_bytes(gzip.compress(_tar()))
    assert main(["validate", str(path)]) == 4
    assert "is a tar archive" in capsys.readouterr().err
