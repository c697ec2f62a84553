"""``--from promptfoo-grades``: promptfoo's llm-rubric grades as verdicts, from a results file
promptfoo 0.121.20 wrote against evalstream's fake judge (``promptfoo/results.json``, made by
``promptfoo/make_results.py``: CI does not install promptfoo). Each verdict says what the file
says (status, rationale byte for byte, read with the standard library's json), promptfoo's
fail-open grades are unscored with a cause, never pass, every result is a verdict or a
reject, and ``agree``, ``compare`` and ``view`` read them."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalstream._cli import main
from evalstream._convert import Options, run
from evalstream._convert.formats import infer, named
from evalstream._files.sniff import check_cases_input
from evalstream._judge import live
from evalstream._verdicts import records
from evalstream.errors import WrongFileError
from tests.convert.support import GOLDEN
from tests.helpers import ROOT, golden
from tests.judge.support import FakeServer, options

HERE = Path(__file__).resolve().parent / "promptfoo"
RESULTS = HERE / "results.json"


def _convert(tmp_path: Path, **kw: Any) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    out = tmp_path / "verdicts.jsonl"
    report, _ = run(Options(input=str(RESULTS), output=str(out), **kw))
    read = [json.loads(x) for x in out.read_bytes().splitlines()]
    rejects = [json.loads(x) for x in (tmp_path / "verdicts.rejects.jsonl").read_bytes().splitlines()]
    return report, read, rejects


def _components() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Each result's llm-rubric components, as the standard library's json reads the file."""
    for result in json.loads(RESULTS.read_text())["results"]["results"]:
        for component in result["gradingResult"]["componentResults"]:
            if component["assertion"]["type"] == "llm-rubric":
                yield result, component


def test_the_fixture_is_promptfoos_run_of_its_config() -> None:
    data = json.loads(RESULTS.read_text())
    assert data["metadata"]["promptfooVersion"] == "0.121.20"
    config = yaml.safe_load((HERE / "promptfooconfig.yaml").read_text())
    assert [t["description"] for t in data["config"]["tests"]] == \
        [t["description"] for t in config["tests"]]
    assert len(data["results"]["results"]) == len(config["tests"])


def test_each_verdict_says_what_the_file_says(tmp_path: Path) -> None:
    report, verdicts, rejects = _convert(tmp_path)
    assert report.format == "promptfoo-grades" and report.writes == "verdicts"
    assert report.inferred == "its content: a promptfoo results file"
    by_key = {(v["case_id"], v["rubric_id"]): v for v in verdicts}
    seen = 0
    for result, component in _components():
        key = (result["vars"].get("id"), component["assertion"].get("metric", "llm-rubric"))
        if key not in by_key:
            continue  # a rejected result (below)
        seen += 1
        v = by_key[key]
        assert v["rationale"] == component["reason"]  # byte for byte
        assert v["judge"]["model"] == result["testCase"]["options"]["provider"]["id"]
        if v["status"] in ("pass", "fail"):  # only where promptfoo's grade is the grader's
            assert v["status"] == ("pass" if component["pass"] else "fail")
            assert not component.get("metadata", {}).get("graderError")
    assert seen == len(verdicts) == 6
    decode = records.decoder().decode
    for line in (tmp_path / "verdicts.jsonl").read_bytes().splitlines():
        decode(line)


def test_fail_open_grades_are_unscored_never_pass(tmp_path: Path) -> None:
    # promptfoo wrote pass for pf-3 (an answer without `pass`) and fail for pf-4 and pf-5 (a
    # server error, an answer without JSON): none of them is the grader's verdict.
    said = {r["vars"].get("id"): c for r, c in _components()}
    assert said["pf-3"]["pass"] is True and said["pf-3"]["score"] == 0
    assert said["pf-4"]["pass"] is False and said["pf-4"]["metadata"]["graderError"] is True
    _, verdicts, _ = _convert(tmp_path)
    status = {v["case_id"]: (v["status"], v.get("error", {}).get("cause")) for v in verdicts}
    assert status == {"pf-1": ("pass", None), "pf-2": ("fail", None),
                      "pf-3": ("unscored", "peer_fail_open"), "pf-4": ("unscored", "peer_error"),
                      "pf-5": ("unscored", "peer_error"), "pf-6": ("pass", None)}


def test_every_result_is_a_verdict_or_a_reject(tmp_path: Path) -> None:
    report, verdicts, rejects = _convert(tmp_path)
    c = report.counts
    assert c.rows == 9 == c.cases + c.rejected + c.blank and c.verdicts == len(verdicts)
    assert [(r["row"], r["id"], r["column"]) for r in rejects] == [
        (7, "pf-7", "gradingResult.componentResults[1].assertion"),
        (8, "pf-8", "gradingResult"), (9, None, "vars.id")]
    assert rejects[0]["error"].endswith("give each a `metric` of its own, which is the "
                                        "verdict's rubric id.")
    assert rejects[1]["error"] == "The result has no llm-rubric assertion: no judge graded it."
    assert rejects[2]["error"].startswith("The test has no `vars.id`; give each test a "
                                          "`vars.id` (the id of its case), or --id-from")
    assert report.unmapped_scores == {"contains": {"not model-graded": 1}}  # pf-6's
    assert report.verdicts == {"capital": {"pass": 1},
                               "llm-rubric": {"fail": 1, "pass": 1, "unscored": 3}}
    assert report.unscored == {"peer_error": 2, "peer_fail_open": 1}
    assert report.exit_code == 1
    out = (tmp_path / "verdicts.jsonl").read_bytes()
    golden("promptfoo_grades.golden.txt", out + b"--- rejects\n"
           + (tmp_path / "verdicts.rejects.jsonl").read_bytes(), GOLDEN)


def test_id_from_makes_ids_from_the_results_fields(tmp_path: Path) -> None:
    report, verdicts, rejects = _convert(tmp_path, id_from="pf.{testIdx}.{promptIdx}")
    # Row 9's test has no `vars.id`: with a template it has an id, and is judged.
    assert [v["case_id"] for v in verdicts] == [f"pf.{i}.0" for i in (0, 1, 2, 3, 4, 5, 8)]
    assert [r["row"] for r in rejects] == [7, 8]
    assert report.ids == "column pf.{testIdx}.{promptIdx}"


def test_an_invalid_id_names_where_it_came_from(tmp_path: Path) -> None:
    _, verdicts, rejects = _convert(tmp_path, id_from="pf x/{testIdx}")
    assert not verdicts
    invalid = [r for r in rejects if r["path"] == "$.case_id"]
    assert len(invalid) == 7
    assert all(r["column"] == "pf x/{testIdx}" and "is not a slug" in r["error"]
               for r in invalid)


def test_stdin_and_gzip_give_the_files_verdicts(tmp_path: Path) -> None:
    # The results array is streamed: stdin and .gz are read as the file is.
    _, verdicts, _ = _convert(tmp_path)
    expected = (tmp_path / "verdicts.jsonl").read_bytes()
    assert len(verdicts) == 6
    done = subprocess.run([sys.executable, "-m", "evalstream", "convert", "-", "-", "--from",
                           "promptfoo-grades", "-q"], input=RESULTS.read_bytes(),
                          capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 1 and done.stdout == expected, done.stderr  # 1: its rejects
    packed = tmp_path / "results.json.gz"
    packed.write_bytes(gzip.compress(RESULTS.read_bytes()))
    report, _ = run(Options(input=str(packed), output=str(tmp_path / "gz.jsonl")))
    assert report.format == "promptfoo-grades"
    assert (tmp_path / "gz.jsonl").read_bytes() == expected


def test_a_results_file_given_as_cases_says_how_its_verdicts_come_in(tmp_path: Path) -> None:
    with pytest.raises(WrongFileError) as info:
        check_cases_input(str(RESULTS))
    assert str(info.value) == (
        f"{RESULTS} is a promptfoo results file (`promptfoo eval -o`), not JSONL cases (one JSON "
        f"object per line); convert its verdicts: `evalstream convert {RESULTS} verdicts.jsonl "
        "--from promptfoo-grades`.")
    assert infer(str(RESULTS))[0] is named("promptfoo-grades")


# -- agree, compare and view read them ------------------------------------------------------------
RUBRIC = """
[[rubric]]
id = "llm-rubric"
question = "Does assistant_response name the capital of France? Answer status \\"pass\\" if it does, \\"fail\\" if not, \\"na\\" if there is nothing to answer; in reason, quote it."
shows = ["user_input", "assistant_response"]
"""
HUMAN = {"pf-1": "pass", "pf-2": "fail", "pf-3": "fail", "pf-4": "fail", "pf-5": "fail"}


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeServer]:
    server = FakeServer("--retry-after", "0.1")
    yield server
    server.stop()


@pytest.mark.slow
def test_agree_compare_and_view_read_promptfoos_judge(
        tmp_path: Path, judge_server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    # The cases promptfoo's tests hold, with a person's labels.
    config = yaml.safe_load((HERE / "promptfooconfig.yaml").read_text())
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({
        "id": t["vars"]["id"], "input": "What is the capital of France?",
        "output": t["vars"]["answer"].split(" FAKE:")[0],
        "expected": {"llm-rubric": {"status": HUMAN[t["vars"]["id"]], "source": "human"}}}) + "\n"
        for t in config["tests"] if t["vars"].get("id") in HUMAN))
    _, theirs, _ = _convert(tmp_path)
    promptfoo_v = tmp_path / "verdicts.jsonl"

    assert main(["agree", str(promptfoo_v), str(cases), "--format", "json", "-o",
                 str(tmp_path / "agree.json")]) == 0
    rubric = next(r for r in json.loads((tmp_path / "agree.json").read_text())["rubrics"]
                  if r["rubric"] == "llm-rubric")
    status = {v["case_id"]: v["status"] for v in theirs if v["rubric_id"] == "llm-rubric"}
    scored = [k for k in HUMAN if status[k] in ("pass", "fail")]
    assert rubric["all"]["pairs"] == len(scored) == 2
    assert rubric["all"]["accuracy"] == 1.0  # pf-1 and pf-2: the grader's own verdicts
    assert rubric["all"]["unscored"] == 3  # never counted as agreeing, or as passes

    rubrics = tmp_path / "rubrics.toml"
    rubrics.write_text(RUBRIC)
    states = tmp_path / "states.jsonl"
    assert main(["build", str(cases), str(states), "--rubrics", str(rubrics), "-q"]) == 0
    ours = tmp_path / "evalstream.verdicts.jsonl"
    live.run(options(judge_server, states, ours))
    mine = {v["case_id"]: v["status"] for v in [json.loads(x) for x in ours.read_text().splitlines()]}
    out = tmp_path / "compare.json"
    assert main(["compare", str(promptfoo_v), str(ours), "--format", "json", "-o", str(out),
                 "--include-incomparable"]) == 0
    found = next(r for r in json.loads(out.read_text())["rubrics"] if r["rubric"] == "llm-rubric")
    assert {t for t, n in found["counts"]["transitions"].items() if n} == \
        {f"{status[k]}->{mine[k]}" for k in mine}

    site = tmp_path / "site"
    assert main(["view", str(promptfoo_v), "--cases", str(cases), "--export", str(site)]) == 0
    pages = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "peer_fail_open" in pages and "fake fail 3c4cccf2" in pages
    capsys.readouterr()
