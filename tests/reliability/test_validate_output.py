"""What validate shows people (a table of the first problems and the totals) and scripts
(every reject as JSONL on stdout), including when the problems themselves are hostile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstream._cli import main

from .support import run_on

GOOD = b'{"id":"good-%d","input":"x","output":"y"}'


def _dataset(tmp_path: Path) -> Path:
    lines = [GOOD % 1, b""]
    lines += [b'{"id":"bad-%d","input":%d,"output":"y"}' % (n, n) for n in range(12)]
    lines += [b'{"id":"cut-%d","input":"x' % n for n in range(12)]
    lines += [b"   ", GOOD % 2]
    src = tmp_path / "cases.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    return src


def test_table_shows_line_id_path_message_and_totals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    src = _dataset(tmp_path)
    assert main(["validate", str(src), "--report", str(tmp_path / "r.json"),
                 "--rejects", str(tmp_path / "cases.rejects.jsonl")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("First 20 of 24 problems")
    header = out.splitlines()[2]
    assert [w for w in header.replace("┃", " ").split()] == ["line", "id", "path", "problem"]
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) == 20  # one row each: nothing folds at this width
    for n, row in enumerate(rows[:12]):
        cells = [c.strip() for c in row.strip("│").split("│")]
        assert cells == [str(n + 3), f"bad-{n}", "$.input",
                         "`$.input` must be a string, not an integer."]
    # A line cut short still names its case: the id came first.
    assert "cut-0" in rows[12] and "The JSON ends before the object is closed" in rows[12]
    assert out.rstrip().splitlines()[-2] == "28 lines: 2 cases, 24 rejected, 2 blank."
    assert "Rejected by kind: invalid value 12, malformed JSON 12." in out
    # The table is for people; every reject is in the rejects file asked for.
    assert len((tmp_path / "cases.rejects.jsonl").read_bytes().splitlines()) == 24


def test_json_format_writes_every_reject_to_stdout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _dataset(tmp_path)
    assert main(["validate", str(src), "--format", "json", "-q",
                 "--report", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    records = [json.loads(line) for line in out.splitlines()]
    assert all(list(r) == ["line", "offset", "id", "path", "error", "raw"] for r in records)
    # The same rejects as the rejects file of an ordinary run, byte for byte.
    (tmp_path / "plain").mkdir()
    expected = run_on(tmp_path / "plain", src.read_bytes(), build=False).rejects
    assert records == expected
    assert not (tmp_path / "cases.rejects.jsonl").exists()


HOSTILE = [b'{"id":"[/x]","input":1,"output":"y"}',
           b'{"id":"ok","input":"x","output":"y","[bold]":1}',
           b'{"id":"[link=https://example.com]click[/link]","input":1,"output":"y"}']


def test_table_shows_hostile_ids_and_fields_literally(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "cases.jsonl"
    src.write_bytes(b"\n".join(HOSTILE) + b"\n")
    code = main(["validate", str(src), "--report", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 1
    assert "[/x]" in out and "[bold]" in out and "[link=https://example.com]" in out


def test_table_never_sends_control_sequences_from_the_data(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "cases.jsonl"
    src.write_bytes(b'{"id":"a\\u001b]0;PWNED\\u0007\\u001b[2J","input":1,"output":"y"}\n'
                    b'{"id":"b","input":"x","output":"y","\\u001b[31mred":1}\n')
    assert main(["validate", str(src), "--report", str(tmp_path / "r.json"),
                 "--rejects", str(tmp_path / "cases.rejects.jsonl")]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out


def test_messages_escape_control_characters_in_field_names(tmp_path: Path) -> None:
    data = b'{"id":"b","input":"x","output":"y","\\u001b[31mred":1}\n'
    (reject,) = run_on(tmp_path, data, build=False).rejects
    assert reject["path"] == '$["\\u001b[31mred"]'
    assert reject["error"].startswith("Unknown field `\\u001b[31mred` in the case.")
    assert "\x1b" not in reject["error"]


def test_messages_cut_very_long_field_names(tmp_path: Path) -> None:
    name = "q" * 100_000
    data = b'{"id":"b","input":"x","output":"y","%s":1}\n' % name.encode()
    (reject,) = run_on(tmp_path, data, build=False).rejects
    assert reject["path"] == f"$.{name}"  # the path stays exact, for scripts
    assert f"Unknown field `{'q' * 80}... (100,000 characters)` in the case." in reject["error"]
    assert len(reject["error"]) < 400


def test_without_rejects_file_the_table_says_how_to_get_every_reject(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _dataset(tmp_path)
    assert main(["validate", str(src), "-q"]) == 1
    out = " ".join(capsys.readouterr().out.split())  # as wrapped at any width
    assert out.endswith("Give --rejects FILE (or --format json) for every rejected line.")
    assert "None" not in out
