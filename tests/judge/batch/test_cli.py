"""``evalstream batch`` on the command line: help with examples and exit codes, the exit codes
themselves, the summaries, sentences for people."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.judge.batch.support import results, write_split
from tests.judge.support import cli, states


@pytest.mark.parametrize("sub", ["prepare", "submit", "status", "collect"])
def test_help_has_examples_and_exit_codes(sub: str) -> None:
    r = cli("batch", sub, "--help")
    assert r.returncode == 0
    assert "examples:" in r.stdout and "exit codes:" in r.stdout
    assert f"evalstream batch {sub}" in r.stdout


@pytest.mark.slow
def test_prepare_then_collect_exit_codes_and_summaries(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:fail", "lost"])
    folder = tmp_path / "b"
    r = cli("batch", "prepare", str(src), str(folder), "--model", "fake-judge-1",
            "--base-url", "http://127.0.0.1:9/v1", "--max-requests-per-file", "2")
    assert r.returncode == 0, r.stderr
    assert "batch prepare: 3 lines = 3 judge states + 0 exact verdicts + 0 rejected + 0 blank" \
        in r.stderr
    assert "requests: 3 in 2 file(s) for openai (at most 2 requests" in r.stderr
    rows = [row for _, row in results(folder)][:2]  # the third never came back
    files = write_split(rows, tmp_path / "r", parts=2)
    r = cli("batch", "collect", str(folder), str(tmp_path / "v.jsonl"), *map(str, files))
    assert r.returncode == 3, r.stderr
    assert "verdicts: 2 = 1 pass + 1 fail + 0 na + 0 unscored" in r.stderr
    assert f"--only-missing {folder}" in r.stderr
    report = json.loads((tmp_path / "v.report.json").read_text())
    assert report["exit_code"] == 3 and report["missing"][0]["case_id"] == "c002"
    r = cli("batch", "prepare", str(src), str(tmp_path / "b2"), "--model", "fake-judge-1",
            "--base-url", "http://127.0.0.1:9/v1", "--only-missing", str(folder), "-q")
    assert r.returncode == 0 and r.stderr == ""
    assert len((tmp_path / "b2" / "requests-00001.jsonl").read_text().splitlines()) == 1


def test_prepare_refuses_a_full_folder_and_says_so(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep").write_text("x")
    r = cli("batch", "prepare", str(src), str(tmp_path / "b"), "--model", "m")
    assert r.returncode == 2
    assert "is not empty; prepare writes a new folder" in r.stderr and "Traceback" not in r.stderr


def test_prepare_with_rejected_lines_exits_1(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    with open(src, "a") as f:
        f.write("{broken\n")
    r = cli("batch", "prepare", str(src), str(tmp_path / "b"), "--model", "m")
    assert r.returncode == 1
    assert "rejects written to" in r.stderr
    assert json.loads((tmp_path / "b" / "rejects.jsonl").read_text())["line"] == 2


def test_prepare_reads_stdin(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a", "b"])
    r = cli("batch", "prepare", "-", str(tmp_path / "b"), "--model", "m", "-q",
            input=src.read_text())
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "b" / "requests-00001.jsonl").read_text().splitlines()) == 2


@pytest.mark.slow
def test_a_folder_that_is_not_a_batch_is_named(tmp_path: Path) -> None:
    for sub in ("submit", "status"):
        r = cli("batch", sub, str(tmp_path))
        assert r.returncode == 2 and "holds no manifest.sqlite" in r.stderr
    r = cli("batch", "collect", str(tmp_path), str(tmp_path / "v.jsonl"))
    assert r.returncode == 2 and "holds no manifest.sqlite" in r.stderr


@pytest.mark.slow
def test_collect_to_stdout_needs_the_side_files(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["FAKE:pass"])
    folder = tmp_path / "b"
    assert cli("batch", "prepare", str(src), str(folder), "--model", "fake-judge-1",
               "--base-url", "http://127.0.0.1:9/v1", "-q").returncode == 0
    files = write_split([row for _, row in results(folder)], tmp_path / "r", parts=1)
    r = cli("batch", "collect", str(folder), "-", *map(str, files))
    assert r.returncode == 2 and "give --rejects, --report and --store" in r.stderr
    r = cli("batch", "collect", str(folder), "-", *map(str, files), "--rejects",
            str(tmp_path / "x.jsonl"), "--report", str(tmp_path / "x.json"), "--store",
            str(tmp_path / "s.sqlite"), "-q")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "pass"


@pytest.mark.slow
def test_a_missing_key_for_the_public_endpoint_is_a_usage_error(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    assert cli("batch", "prepare", str(src), str(tmp_path / "b"), "--model", "m",
               "-q").returncode == 0
    r = cli("batch", "submit", str(tmp_path / "b"), env={"OPENAI_API_KEY": ""})
    assert r.returncode == 2 and "set OPENAI_API_KEY in the environment" in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("name", "text", "said"), [
    ("cases.jsonl", '{"id": "c1", "input": "i", "output": "o"}\n', "looks like a cases file"),
    ("table.csv", "id,input,output\nc1,i,o\n", "CSV"),
])
def test_prepare_says_when_the_input_is_plainly_not_judge_states(tmp_path: Path, name: str,
                                                                 text: str, said: str) -> None:
    (tmp_path / name).write_text(text)
    r = cli("batch", "prepare", str(tmp_path / name), str(tmp_path / "b"), "--model", "m")
    assert r.returncode == 4 and said in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and not (tmp_path / "b").exists()


@pytest.mark.slow
def test_collect_says_when_a_result_file_is_plainly_not_results(tmp_path: Path) -> None:
    src = states(tmp_path / "in", ["a"])
    assert cli("batch", "prepare", str(src), str(tmp_path / "b"), "--model", "m",
               "-q").returncode == 0
    r = cli("batch", "collect", str(tmp_path / "b"), str(tmp_path / "v.jsonl"), str(src))
    assert r.returncode == 4
    assert "looks like a judge-states file (build's output), not a batch result file" in r.stderr
    assert not (tmp_path / "v.jsonl").exists()
