"""Rubric files are data, never code: every bad file is a clear error at load, before any
case is read, and nothing in a file is ever executed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalstream._build import run as build
from evalstream._cli import main

from .support import run_on

OK = '[[rubric]]\nid = "ok"\nquestion = "Fine?"\nshows = ["user_input"]\n'
BAD_FILES = [
    ("malformed TOML", "[[rubric]\nid = 1\n", r"r\.toml: not valid TOML: .*line 1"),
    ("not UTF-8", b"\xff\xfe[[rubric]]", r"r\.toml: the rubric file is not UTF-8 text"),
    ("NUL byte", '[[rubric]]\nid = "a\x00"\n', r"not valid TOML: Illegal character"),
    ("no rubric", "title = 'x'\n", r"unknown top-level key\(s\) `title`"),
    ("empty file", "", r"no \[\[rubric\]\] tables found"),
    ("unknown key", OK + 'expose = ["expected"]\n',
     r"rubric 1 \(`ok`\): unknown key\(s\) `expose`; a judge rubric takes"),
    ("shows expected", OK.replace('["user_input"]', '["user_input", "expected"]'),
     r"`shows` names `expected`, not a judge-state name; allowed: user_input"),
    ("shows metadata", OK.replace('["user_input"]', '["metadata"]'),
     r"`shows` names `metadata`, not a judge-state name"),
    ("wire name", OK.replace('["user_input"]', '["toolEvents"]'),
     r"`shows` names `toolEvents` \(did you mean `tool_events`\?\)"),
    ("requires unknown", OK + 'requires = ["input"]\n', r"`requires` names `input`"),
    ("duplicate id", OK + OK, r"rubric 2: id `ok` is defined twice"),
    ("empty question", OK.replace('"Fine?"', '"  \\n "'),
     r"`question` must be a non-empty string"),
    ("no shows", '[[rubric]]\nid = "a"\nquestion = "Q?"\n', r"`shows` is required"),
    ("id with slash", OK.replace('"ok"', '"a/b"'),
     r"the id 'a/b' is not a valid rubric id; rubric ids must be non-empty, at most 512 "),
    # Issue 23, item 18: build wrote states of this id that judge and batch prepare refused.
    ("id of 600 characters", OK.replace('"ok"', '"' + "r" * 600 + '"'),
     r"the id 'r{80}\.\.\. \(600 characters\)' is not a valid rubric id; rubric ids must be "
     r"non-empty, at most 512 characters"),
    ("bad kind", OK + 'kind = "python"\n', r"`kind` is 'python'; allowed"),
    ("bad regex", '[[rubric]]\nid = "x"\nkind = "exact"\n'
     'check = { last_call = "t", field = "error", matches = "(" }\n',
     r"`check.matches` is not a valid regular expression"),
    ("backreference", '[[rubric]]\nid = "x"\nkind = "exact"\n'
     'check = { last_call = "t", field = "error", matches = "(a)\\\\1" }\n',
     r"r\.toml: rubric 1 \(`x`\): `check\.matches` uses what RE2 cannot run: invalid escape "
     r"sequence: \\1 \('\(a\)\\\\1'\)\. Patterns are matched by RE2"),
    ("lookahead", '[[rubric]]\nid = "x"\nkind = "exact"\n'
     'check = { all = [{ last_call = "t", field = "error", matches = "a(?=b)" }] }\n',
     r"rubric 1 \(`x`\): `check\.all\[0\]\.matches` uses what RE2 cannot run: invalid perl "
     r"operator: \(\?="),
    ("bad when", OK + "when = { scenario = [] }\n", r"`when.scenario` must be a value"),
]


@pytest.mark.parametrize(("what", "text", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_rubric_file_is_an_error_before_any_case_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        what: str, text: str | bytes, message: str) -> None:
    rubric = tmp_path / "r.toml"
    rubric.write_bytes(text if isinstance(text, bytes) else text.encode())

    def no_reading(path: str) -> None:
        raise AssertionError("the input was opened before the rubrics were checked")

    monkeypatch.setattr(build, "open_input", no_reading)
    code = main(["build", "cases.jsonl", str(tmp_path / "states.jsonl"), "--rubrics",
                 str(rubric), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("evalstream: error: ") and err.count("\n") == 1, err
    assert re.search(message, err), err
    assert not list(tmp_path.glob("states*"))


def test_duplicate_ids_across_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a.toml", "b.toml"):
        (tmp_path / name).write_text(OK)
    code = main(["build", "x.jsonl", str(tmp_path / "s.jsonl"), "--rubrics",
                 str(tmp_path / "a.toml"), "--rubrics", str(tmp_path / "b.toml"), "-q"])
    assert code == 2
    assert "rubric id `ok` is defined twice" in capsys.readouterr().err


def test_rubric_text_is_never_executed(tmp_path: Path) -> None:
    canary = tmp_path / "PWNED"
    payload = f"{{__import__('os').system('touch {canary}')}} $(touch {canary}) `touch {canary}`"
    rubric = tmp_path / "r.toml"
    rubric.write_text(
        "[[rubric]]\n"
        f'id = "code"\nquestion = {json.dumps(payload)}\nshows = ["user_input"]\n'
        f'when = {{ "__class__" = ["x"], {json.dumps(payload)} = ["y"] }}\n'
        "[[rubric]]\n"
        f'id = "exact"\nkind = "exact"\ndescription = {json.dumps(payload)}\n'
        f'check = {{ last_call = {json.dumps(payload)}, field = "input.__class__", '
        f'equals = {json.dumps(payload)} }}\n')
    case = {"id": "c", "input": payload, "output": "o", "metadata": {"__class__": "x"},
            "toolEvents": [{"id": "t", "name": payload, "status": "success",
                            "input": {"__class__": payload}}]}
    result = run_on(tmp_path, json.dumps(case).encode() + b"\n", rubric_files=[str(rubric)])
    assert not canary.exists()
    (exact,) = result.records  # the judge rubric's `when` on the payload key does not match
    assert (exact["rubric_id"], exact["status"]) == ("exact", "pass")


def test_a_when_key_no_case_has_is_a_warning(tmp_path: Path) -> None:
    rubric = tmp_path / "r.toml"
    rubric.write_text(OK + 'when = { "split.name" = ["dev"] }\n')
    result = run_on(tmp_path, b'{"id":"c","input":"i","output":"o","metadata":{"split":1}}\n',
                    rubric_files=[str(rubric)])
    assert result.report.warnings == [
        "no case has metadata key `split.name`, named by a `when` rule: the rubrics that use "
        "it never apply. (`evalstream stats` lists the keys the cases have)"]
    assert result.report.skipped == {"ok": {"when split.name": 1}}


def test_a_when_key_some_case_has_is_no_warning(tmp_path: Path) -> None:
    rubric = tmp_path / "r.toml"
    rubric.write_text(OK + 'when = { "split.name" = ["dev"] }\n')
    data = (b'{"id":"c","input":"i","output":"o"}\n'
            b'{"id":"d","input":"i","output":"o","metadata":{"split":{"name":"test"}}}\n')
    result = run_on(tmp_path, data, rubric_files=[str(rubric)])
    assert result.report.warnings == []


DEEP = [
    ("deep array", "x = " + "[" * 5_000 + "]" * 5_000 + "\n"),
    ("deep inline table", "x = " + "{a=" * 3_000 + "1" + "}" * 3_000 + "\n"),
    ("deep condition", '[[rubric]]\nid = "x"\nkind = "exact"\ncheck = '
     + "{ not = " * 2_000 + '{ called = "t" }' + " }" * 2_000 + "\n"),
]


@pytest.mark.parametrize(("what", "text"), DEEP, ids=[d[0] for d in DEEP])
def test_deeply_nested_rubric_file_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, text: str) -> None:
    rubric = tmp_path / "r.toml"
    rubric.write_text(text)
    code = main(["build", "x.jsonl", str(tmp_path / "s.jsonl"), "--rubrics", str(rubric), "-q"])
    assert code == 2, capsys.readouterr().err
