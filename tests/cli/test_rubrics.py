"""`evalstream rubrics` and `--rubrics builtin`: start from the built-in set, add to it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import msgspec
import pytest

from evalstream._checks.rubrics import builtin, load_rubrics
from evalstream._cli import main
from tests.helpers import SAMPLES


def test_show_builtin_prints_the_file_the_set_is_read_from(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rubrics", "--show-builtin"]) == 0
    text = capsys.readouterr().out
    assert [t["id"] for t in tomllib.loads(text)["rubric"]] == builtin().ids
    mine = tmp_path / "mine.toml"
    mine.write_text(text)
    # The same rubrics, whatever file they come from: the same hashes (verdicts stay comparable).
    assert load_rubrics([str(mine)]).hash == builtin().hash
    assert [r.hash for r in load_rubrics([str(mine)]).rubrics] == \
        [r.hash for r in builtin().rubrics]


def test_builtin_adds_to_a_file_of_ones_own(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    both = load_rubrics(["builtin", str(SAMPLES / "rubrics.toml")])
    sample = load_rubrics([str(SAMPLES / "rubrics.toml")])
    assert both.ids == builtin().ids + sample.ids
    assert main(["rubrics", "builtin", str(SAMPLES / "rubrics.toml")]) == 0
    out = capsys.readouterr().out
    assert all(rid in out for rid in both.ids) and both.hash in out
    assert main(["build", str(SAMPLES / "cases.jsonl"), str(tmp_path / "s.jsonl"), "-q",
                 "--rubrics", "builtin", "--rubrics", str(SAMPLES / "rubrics.toml")]) == 0
    written = (tmp_path / "s.jsonl").read_text()
    assert '"rubric_id":"tool-backed-claims"' in written
    assert any(f'"rubric_id":"{rid}"' in written for rid in sample.ids)


def test_a_bad_file_is_exit_2_naming_it(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rubric]]\nid = "x"\nquestion = "q"\nshow = ["user_input"]\n')
    assert main(["rubrics", str(bad)]) == 2
    assert "unknown key(s) `show`" in capsys.readouterr().err


def test_the_table_says_what_each_judge_may_answer(capsys: pytest.CaptureFixture[str]) -> None:
    from evalstream._render.rubrics import rubric_blocks
    from evalstream._render.tables import Table

    table = rubric_blocks(builtin())[0]
    assert isinstance(table, Table)
    answers = {row[0]: row[4] for row in table.rows}
    assert answers == {"tool-backed-claims": "pass, fail", "booking-succeeded": "pass, fail",
                       "claim-support": "pass, fail, na", "policy-compliance": "pass, fail",
                       "escalation": "pass, fail, na", "task-success": "pass, fail, na",
                       "booking-claim": "pass, fail, na", "faithfulness": "pass, fail, na",
                       "instruction-following": "pass, fail, na"}


def test_list_shows_each_rubric_with_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 30: `rubrics --list` and evalstream.rubrics(): id, version (the rubric hash that
    # judge states and verdicts carry), what it reads, whether na is an answer, its question.
    import evalstream

    entries = evalstream.rubrics()
    assert [e.id for e in entries] == builtin().ids
    for e, r in zip(entries, builtin().rubrics, strict=True):
        assert (e.kind, e.version, e.reads, e.requires) == (r.kind, r.hash, r.shows, r.requires)
        assert e.question == r.question.strip().splitlines()[0]
        # an exact check is pass or fail; a judge rubric as its allows_na (issue 25) says
        assert e.allows_na == (r.kind == "judge" and r.allows_na)
    starters = {e.id: e for e in entries}
    assert starters["task-success"].question == \
        "Did the assistant accomplish what the user asked for?"
    assert starters["booking-claim"].reads[-1] == "tool_events"
    assert [starters[r].allows_na for r in ("tool-backed-claims", "policy-compliance",
                                            "claim-support", "task-success")] == \
        [False, False, True, True]
    assert main(["rubrics", "--list"]) == 0
    out = capsys.readouterr().out
    for e in entries:
        assert f"{e.id}: {e.question[:30]}" in " ".join(out.split())
        assert e.version[:12] in out
    assert main(["rubrics", "--list", "--json", str(SAMPLES / "rubrics.toml")]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == json.loads(msgspec.json.encode(evalstream.rubrics([SAMPLES / "rubrics.toml"])))
    assert [e["version"] for e in listed] == \
        [r.hash for r in load_rubrics([str(SAMPLES / "rubrics.toml")]).rubrics]


def test_json_without_list_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rubrics", "--json"]) == 2
    assert "--json prints the list of --list" in capsys.readouterr().err


RUBRIC_STDIN = ("`-` (stdin) is no rubric file: rubric files are never read from stdin, which "
                "carries a command's data, not its settings; give the file's path (`--rubrics "
                "FILE`; `evalstream rubrics FILE`).")


@pytest.mark.parametrize("argv", [
    ["rubrics", "--list", "-"], ["rubrics", "-"], ["rubrics", "builtin", "-"],
    ["build", str(SAMPLES / "cases.jsonl"), "OUT", "--rubrics", "-"],
    ["stats", str(SAMPLES / "cases.jsonl"), "--rubrics", "-"],
    ["agree", str(SAMPLES / "verdicts.jsonl"), "--cases", str(SAMPLES / "cases.jsonl"),
     "--rubrics", "-"],
    ["view", str(SAMPLES / "verdicts.jsonl"), "--cases", str(SAMPLES / "cases.jsonl"),
     "--rubrics", "-", "--export", "SITE"]])
def test_a_rubric_file_is_never_read_from_stdin(tmp_path: Path, argv: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`-` among rubric files is refused with the reason and the way to give one (the option
    of every command, and `rubrics`' FILE), never a plain "cannot read"; nothing is written."""
    argv = [str(tmp_path / a) if a in ("OUT", "SITE") else a for a in argv]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"evalstream: error: {RUBRIC_STDIN}"
    assert list(tmp_path.iterdir()) == []


def test_a_jury_file_is_never_read_from_stdin(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from tests.judge.support import states

    src = states(tmp_path / "in", ["FAKE:pass"])
    assert main(["judge", str(src), str(tmp_path / "v.jsonl"), "--jury", "-"]) == 2
    assert capsys.readouterr().err.strip() == (
        "evalstream: error: `-` (stdin) is no jury file: jury files are never read from stdin, "
        "which carries a command's data, not its settings; give the file's path (`--jury "
        "FILE`).")

