"""``--from inspect-grades``: inspect_ai's model-graded scores as verdicts, from logs written by
inspect_ai itself; each verdict says what inspect's own reader says (status, rationale byte
for byte), and ``agree``, ``compare`` and ``view`` read them against labels and against an
evalstream judge run on the same cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalstream._cli import main
from evalstream._convert import Options, run
from evalstream._judge import live
from evalstream._verdicts import records
from evalstream.errors import UsageError
from tests.convert.inspect_logs import GRADES, write_logs_apart
from tests.helpers import ROOT
from tests.judge.support import FakeServer, options

# Slow as a module: inspect_ai writes the logs (seconds), and a judge run asks a fake server.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("logs")
    return write_logs_apart(folder, {"eval": ("eval", 1), "json": ("json", 1),
                                     "epochs": ("eval", 2)})


def inspect_reads(log: Path) -> list[dict[str, Any]]:
    """Every score of every sample as inspect_ai's own reader (``read_eval_log``) reads it:
    the oracle (run apart: inspect warns about its dependencies, errors in this process)."""
    code = ("import json, math, sys\n"
            "from inspect_ai.log import read_eval_log\n"
            "log = read_eval_log(sys.argv[1])\n"
            "out = []\n"
            "for s in log.samples:\n"
            "    for name, score in (s.scores or {}).items():\n"
            "        v = score.value\n"
            "        if isinstance(v, float) and not math.isfinite(v): v = repr(v)\n"
            "        out.append({'id': s.id, 'epoch': s.epoch, 'scorer': name, 'value': v,\n"
            "                    'explanation': score.explanation,\n"
            "                    'graded': 'grading' in (score.metadata or {})})\n"
            "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, str(log)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "INSPECT_LOG_LEVEL": "error"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def grades(tmp_path: Path, log: Path, name: str = "verdicts.jsonl", **kw: Any
           ) -> tuple[Any, list[dict[str, Any]]]:
    out = tmp_path / name
    report, _ = run(Options(input=str(log), output=str(out), format="inspect-grades", **kw))
    return report, [json.loads(line) for line in out.read_bytes().splitlines()]


STATUS = {"C": "pass", "I": "fail", "N": "na"}


@pytest.mark.parametrize("kind", ["eval", "json", "epochs"])
def test_each_verdict_says_what_inspects_own_reader_says(tmp_path: Path, logs: dict[str, Path],
                                                        kind: str) -> None:
    report, verdicts = grades(tmp_path, logs[kind])
    oracle = inspect_reads(logs[kind])
    epochs = 2 if kind == "epochs" else 1
    graded = {(str(s["id"]) if epochs == 1 else f"{s['id']}.epoch-{s['epoch']}", s["scorer"]): s
              for s in oracle if s["graded"]}
    assert graded and {(v["case_id"], v["rubric_id"]) for v in verdicts} == set(graded)
    for v in verdicts:
        score = graded[(v["case_id"], v["rubric_id"])]
        assert v["rationale"] == score["explanation"]  # byte for byte
        assert v["rationale"] in GRADES.values() or v["rationale"].endswith(GRADES["2"])
        if score["value"] == "nan":  # inspect's unscored score: never a pass
            assert v["status"] == "unscored"
            assert v["error"] == {"cause": "peer_unscored",
                                  "detail": "inspect_ai scored it NaN (grader_failed)"}
        else:
            assert v["status"] == STATUS[score["value"]] and "error" not in v
        assert v["judge"] == {"model": "mockllm/model", "provider": "inspect_ai",
                              "scorer": "model_graded_qa"}
    # Every sample accounted for; the scores that are no judge's counted, not lost.
    c = report.counts
    assert c.rows == c.cases + c.rejected + c.blank == 2 * epochs and c.rejected == 0
    assert c.verdicts == len(verdicts) == 2 * epochs
    assert report.verdicts == {"model_graded_qa": {"pass": epochs, "unscored": epochs}}
    assert report.unscored == {"peer_unscored": epochs}
    assert report.unmapped_scores == {s: {"not model-graded": 2 * epochs}
                                      for s in ("match", "includes", "partial", "extreme")}
    decode = records.decoder().decode  # what agree, compare and view read
    for line in (tmp_path / "verdicts.jsonl").read_bytes().splitlines():
        decode(line)


def test_a_partial_grade_is_not_a_verdict(tmp_path: Path, logs: dict[str, Path]) -> None:
    src = json.loads(logs["json"].read_text().replace("NaN", "null"))
    src["samples"][0]["scores"]["model_graded_qa"]["value"] = "P"
    src["samples"][1]["scores"]["model_graded_qa"]["value"] = 0.5
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(src))
    _, verdicts = grades(tmp_path, path)
    assert [(v["status"], v["error"]) for v in verdicts] == [
        ("unscored", {"cause": "not_a_verdict",
                      "detail": "inspect_ai's grade \"P\" is neither pass nor fail"}),
        ("unscored", {"cause": "not_a_verdict",
                      "detail": "inspect_ai's grade 0.5 is neither pass nor fail"})]


def test_a_sample_without_a_grade_is_a_reject(tmp_path: Path, logs: dict[str, Path]) -> None:
    src = json.loads(logs["json"].read_text().replace("NaN", "null"))
    del src["samples"][0]["scores"]["model_graded_qa"]
    src["samples"][1]["error"] = {"message": "boom", "traceback": "", "traceback_ansi": ""}
    path = tmp_path / "ungraded.json"
    path.write_text(json.dumps(src))
    report, verdicts = grades(tmp_path, path)
    assert verdicts == [] and report.exit_code == 1
    rejects = [json.loads(x) for x in (tmp_path / "verdicts.rejects.jsonl").read_text().splitlines()]
    assert [(r["row"], r["id"], r["error"]) for r in rejects] == [
        (1, "2", "The sample has no model-graded score (its scores: `match`, `includes`, "
                 "`partial`, `extreme`); a score is a judge's verdict when it keeps the "
                 "grader's exchange (`metadata.grading`), as model_graded_qa and "
                 "model_graded_fact write it."),
        (2, "q1", "The sample ended in an error; inspect_ai graded nothing of it.")]


def test_ids_line_up_with_the_cases_of_the_same_log(tmp_path: Path, logs: dict[str, Path]) -> None:
    for template in (None, "arith.{#}.{epoch}"):
        sub = tmp_path / str(template is None)
        sub.mkdir()
        cases = sub / "cases.jsonl"
        run(Options(input=str(logs["epochs"]), output=str(cases), format="inspect",
                    id_from=template))
        _, verdicts = grades(sub, logs["epochs"], id_from=template)
        case_ids = [json.loads(x)["id"] for x in cases.read_text().splitlines()]
        assert [v["case_id"] for v in verdicts] == case_ids


def test_the_output_is_a_verdicts_target(tmp_path: Path, logs: dict[str, Path]) -> None:
    # Its own kind in the run's transaction: a cases file is never replaced by verdicts.
    cases = tmp_path / "cases.jsonl"
    run(Options(input=str(logs["eval"]), output=str(cases), format="inspect"))
    with pytest.raises(UsageError, match="holds a cases file, and this run would replace it "
                                         "with verdicts"):
        grades(tmp_path, logs["eval"], name="cases.jsonl")
    grades(tmp_path, logs["eval"])
    grades(tmp_path, logs["eval"])  # its own earlier output: replaced


# -- agree, compare and view read them ------------------------------------------------------------
RUBRIC = """
[[rubric]]
id = "model_graded_qa"
question = "Does assistant_response answer user_input correctly? Answer status \\"pass\\" if it does, \\"fail\\" if not, \\"na\\" if there is nothing to answer; in reason, quote it."
shows = ["user_input", "assistant_response"]
"""
HUMAN = {"q1": "pass", "2": "fail"}  # labels a person gave the two answers


def _plain(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeServer]:
    server = FakeServer("--retry-after", "0.1")
    yield server
    server.stop()


def test_agree_compare_and_view_read_inspects_judge(
        tmp_path: Path, logs: dict[str, Path], judge_server: FakeServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    # The cases from the log, with a person's labels; inspect's judge as verdicts.
    cases = tmp_path / "cases.jsonl"
    run(Options(input=str(logs["eval"]), output=str(cases), format="inspect"))
    labelled = [dict(c, expected={"model_graded_qa": {"status": HUMAN[c["id"]], "source": "human"}})
                for c in _plain(cases)]
    cases.write_text("".join(json.dumps(c) + "\n" for c in labelled))
    _, theirs = grades(tmp_path, logs["eval"], name="inspect.verdicts.jsonl")
    inspect_v = tmp_path / "inspect.verdicts.jsonl"

    # agree: inspect's judge against the labels, as a plain reading of both files says.
    assert main(["agree", str(inspect_v), str(cases), "--format", "json", "-o",
                 str(tmp_path / "agree.json")]) == 0
    [rubric] = json.loads((tmp_path / "agree.json").read_text())["rubrics"]
    status = {v["case_id"]: v["status"] for v in theirs}
    scored = [k for k in HUMAN if status[k] in ("pass", "fail")]
    assert rubric["all"]["pairs"] == len(scored) == 1
    assert rubric["all"]["accuracy"] == sum(status[k] == HUMAN[k] for k in scored) / len(scored)
    assert rubric["all"]["unscored"] == sum(s == "unscored" for s in status.values()) == 1
    assert rubric["rationales"]["unscored"] == [v["rationale"] for v in theirs
                                                if v["status"] == "unscored"]

    # An evalstream run on the same cases (the fake judge passes everything).
    rubrics = tmp_path / "rubrics.toml"
    rubrics.write_text(RUBRIC)
    states = tmp_path / "states.jsonl"
    assert main(["build", str(cases), str(states), "--rubrics", str(rubrics), "-q"]) == 0
    ours = tmp_path / "evalstream.verdicts.jsonl"
    live.run(options(judge_server, states, ours))
    mine = {v["case_id"]: v["status"] for v in _plain(ours)}
    assert set(mine) == set(status)

    # compare: the two judges never saw the same thing (inspect's shows the target), so no
    # pair is comparable unless asked; asked, the flips are those of the two files.
    out = tmp_path / "compare.json"
    assert main(["compare", str(inspect_v), str(ours), "--format", "json", "-o", str(out)]) == 0
    counts = json.loads(out.read_text())["rubrics"][0]["counts"]
    assert counts["paired"] == 2 and counts["not_comparable"] == 2 and counts["compared"] == 0
    assert main(["compare", str(inspect_v), str(ours), "--format", "json", "-o", str(out),
                 "--include-incomparable"]) == 0
    counts = json.loads(out.read_text())["rubrics"][0]["counts"]
    expected = {f"{status[k]}->{mine[k]}" for k in status}
    assert {t for t, n in counts["transitions"].items() if n} == expected
    assert sum(counts["transitions"].values()) == 2

    # view: each check page shows inspect's verdict and its rationale.
    site = tmp_path / "site"
    assert main(["view", str(inspect_v), "--cases", str(cases), "--export", str(site)]) == 0
    pages = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "The submission says 4, which meets the criterion." in pages
    assert "peer_unscored" in pages
    capsys.readouterr()
