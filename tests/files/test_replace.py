"""No command replaces a file that holds something other than its own kind of output (cases
from a shell glob, verdicts under build's output name, a user's own file) unless --force;
its own outputs are replaced on a re-run."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from evalstream._cli import main
from evalstream._files.replace import check_replaceable, holds
from evalstream.errors import UsageError
from tests.helpers import SAMPLES

CASE = b'{"id": "c1", "input": "hi", "output": "hello"}\n'
VERDICT = b'{"case_id": "c1", "rubric_id": "r", "status": "pass"}\n'
STATE = b'{"case_id": "c1", "rubric_id": "r", "question": "Q?", "state": {}}\n'
EXACT = b'{"case_id": "c1", "rubric_id": "r", "kind": "exact", "status": "pass"}\n'
REJECT = b'{"line": 1, "offset": 0, "error": "e", "raw": "x"}\n'


@pytest.mark.parametrize(("head", "kind", "held"), [
    (CASE, "judge states", "a cases file"),
    (VERDICT, "judge states", "a verdicts file"),
    (STATE, "judge states", None), (EXACT + STATE, "judge states", None),
    (EXACT, "verdicts", None),  # judge passes build's exact verdicts through
    (VERDICT, "verdicts", None), (CASE, "cases", None), (REJECT, "rejects", None),
    (CASE, "rejects", "a cases file"),
    (b'{"command": "build", "evalstream": "0.1.0"}', "json", None),
    (b'{"shape": "evalstream.stats/2"}', "json", None),
    (b'{"a": 1}', "json", "data evalstream did not write"),
    (b"evalstream stats: cases.jsonl\n", "text", None),
    (b"# evalstream agree\n", "text", None),
    (b"my notes\n", "text", "data evalstream did not write"),
    (b"<!doctype html><html><head><title>evalstream stats</title>", "html", None),
    (b"question,answer\nq,a\nq2,a2\n", "judge states", "a CSV table"),
])
def test_what_a_file_holds(head: bytes, kind: str, held: str | None) -> None:
    found = holds(head, kind)
    assert found == held or (held is not None and found is not None and found.startswith(held))


def test_a_glob_over_shards_replaces_no_dataset(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    shards = [tmp_path / "part-1.jsonl", tmp_path / "part-2.jsonl"]
    for shard in shards:
        shard.write_bytes((SAMPLES / "cases.jsonl").read_bytes())
    assert main(["build", *map(str, shards), "-q"]) == 2
    err = capsys.readouterr().err
    assert err == (f"evalstream: error: {shards[1]} holds a cases file, and this run would "
                   "replace it with judge states (its output); choose another output name, or "
                   "give --force to replace it.\n")
    assert shards[1].read_bytes() == shards[0].read_bytes()  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-1.jsonl", "part-2.jsonl"]
    assert main(["build", *map(str, shards), "-q", "--force"]) == 0
    assert shards[1].read_bytes().startswith(b'{"case_id"')


def test_a_rerun_replaces_its_own_outputs(tmp_path: Path) -> None:
    out = tmp_path / "states.jsonl.gz"
    for _ in range(2):  # compressed too: the head is read through the decompressor
        assert main(["build", str(SAMPLES / "bad.jsonl"), str(out), "-q"]) == 1
    assert gzip.decompress(out.read_bytes()).startswith(b'{"case_id"')
    stats = tmp_path / "stats.md"
    for _ in range(2):
        assert main(["stats", str(SAMPLES / "cases.jsonl"), "--format", "markdown", "-o",
                     str(stats), "--html", str(tmp_path / "s.html"), "-q"]) == 0


@pytest.mark.parametrize("command", [
    ["validate", "CASES", "--report", "TARGET"],
    ["stats", "CASES", "-o", "TARGET"],
    ["stats", "CASES", "--rejects", "TARGET"],
    ["agree", "VERDICTS", "CASES", "--format", "json", "-o", "TARGET"],
    ["agree", "VERDICTS", "CASES", "--html", "TARGET"],
    ["compare", "VERDICTS", "VERDICTS_B", "-o", "TARGET"],
    ["convert", "CHATS", "TARGET", "--from", "openai-chat"],
    ["judge", "VERDICTS", "TARGET", "--model", "m", "--dry-run"],
])
def test_every_command_refuses_to_replace_a_users_file(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("my own notes\n")
    names = {"CASES": SAMPLES / "cases.jsonl", "VERDICTS": SAMPLES / "verdicts.jsonl",
             "VERDICTS_B": SAMPLES / "verdicts-b.jsonl", "CHATS": SAMPLES / "chats.jsonl",
             "TARGET": target}
    args = [str(names.get(a, a)) for a in command]
    assert main(args) == 2
    assert "holds data evalstream did not write" in capsys.readouterr().err
    assert target.read_text() == "my own notes\n"


def test_the_library_refuses_too_and_force_allows() -> None:
    with pytest.raises(UsageError, match="give --force"):
        check_replaceable([("output", str(SAMPLES / "cases.jsonl"), "judge states")])
    check_replaceable([("output", str(SAMPLES / "cases.jsonl"), "judge states")], force=True)
    check_replaceable([("output", "/dev/null", "judge states"), ("output", "-", "text"),
                       ("output", None, "json")])
    assert json.loads((SAMPLES / "cases.jsonl").read_text().splitlines()[0])["id"]


def test_build_o_reads_every_path_as_input(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    shards = [tmp_path / "part-1.jsonl", tmp_path / "part-2.jsonl"]
    lines = (SAMPLES / "cases.jsonl").read_bytes().splitlines(keepends=True)
    shards[0].write_bytes(b"".join(lines[:20]))
    shards[1].write_bytes(b"".join(lines[20:]))
    out = tmp_path / "states.jsonl"
    assert main(["build", *map(str, shards), "-o", str(out), "-q"]) == 0
    whole = tmp_path / "whole.jsonl"
    assert main(["build", str(SAMPLES / "cases.jsonl"), str(whole), "-q"]) == 0
    assert out.read_bytes() == whole.read_bytes()  # both shards, in order, as one input
    assert main(["build", str(shards[0])]) == 2
    assert "build needs an input and an output" in capsys.readouterr().err
