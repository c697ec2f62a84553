"""`agree A B C --cases CASES` (issue 26): each row is `agree RUN CASES`'s figures for its rubric,
the best agreement with people first, with the unscored rate and the tokens and cost per
1,000 states from the verdicts' usage at the prices given; `agree VERDICTS CASES` as it was."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

import evalstream
from evalstream._cli import main
from tests.helpers import SAMPLES

RUNS = {"good": 0.95, "fair": 0.75, "poor": 0.5}  # how often each run's judge is right


def runs(folder: Path, n: int = 150) -> tuple[list[Path], Path]:
    rng = random.Random(9)
    cases, truths = [], {}
    for i in range(n):
        truth = {r: rng.choice(["pass", "fail"]) for r in ("r1", "r2")}
        truths[f"c{i}"] = truth
        cases.append({"id": f"c{i}", "input": "q", "output": "a",
                      "expected": {r: {"status": s, "source": "human"} for r, s in
                                   truth.items()}})
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    paths = []
    for name, right in RUNS.items():
        lines = []
        for case_id, truth in truths.items():
            for rubric, label in truth.items():
                if rng.random() < 0.04:
                    lines.append({"case_id": case_id, "rubric_id": rubric,
                                  "status": "unscored", "rationale": None,
                                  "judge": {"model": f"{name}-model"}, "usage": None,
                                  "error": {"cause": "timeout", "detail": "x"}})
                    continue
                status = label if rng.random() < right else {"pass": "fail",
                                                              "fail": "pass"}[label]
                lines.append({"case_id": case_id, "rubric_id": rubric, "status": status,
                              "judge": {"model": f"{name}-model"},
                              "usage": {"input_tokens": 100 * len(name),
                                        "output_tokens": 10}})
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        paths.append(path)
    return paths, folder / "cases.jsonl"


@pytest.mark.slow
def test_each_row_is_agree_on_its_run_and_the_best_comes_first(tmp_path: Path) -> None:
    paths, cases = runs(tmp_path)
    prices = {"good-model": (1.0, 2.0), "fair-model": (0.5, 1.0)}  # poor's: none given
    report = evalstream.agree_judges(paths, cases, prices=prices)
    assert [r.rubric for r in report.rubrics] == ["r1", "r2"]
    for r in report.rubrics:
        assert [row.run for row in r.rows] == [str(p) for p in paths]  # by kappa: good first
        kappas = [row.kappa.value for row in r.rows if row.kappa is not None]
        assert kappas == sorted(kappas, reverse=True)
        for row, path in zip(r.rows, paths, strict=True):
            one = next(x for x in evalstream.agree(path, cases).rubrics if x.rubric == r.rubric)
            assert (row.pairs, row.accuracy, row.kappa, row.fail_precision, row.fail_recall,
                    row.unscored, row.unscored_rate) == (
                one.all.pairs, one.all.accuracy, one.all.kappa, one.all.fail_precision,
                one.all.fail_recall, one.verdicts["unscored"], one.unscored_rate)
            mine = [json.loads(x) for x in path.read_text().splitlines()]
            mine = [x for x in mine if x["rubric_id"] == r.rubric]
            name = path.stem
            said = [x["usage"] for x in mine if x["usage"]]
            assert row.verdicts == len(mine) and row.judge == f"{name}-model"
            assert row.input_tokens_per_1000 == pytest.approx(
                sum(u["input_tokens"] for u in said) / len(mine) * 1000, abs=1e-3)
            if name == "poor":
                assert row.cost_per_1000 is None and row.unpriced == ["poor-model"]
            else:
                price_in, price_out = prices[f"{name}-model"]
                cost = sum(u["input_tokens"] * price_in + u["output_tokens"] * price_out
                           for u in said) / 1e6
                assert row.cost_per_1000 == pytest.approx(cost / len(mine) * 1000, abs=1e-6)


def test_a_panels_run_is_priced_by_its_votes_models(tmp_path: Path) -> None:
    verdict = {"case_id": "c0", "rubric_id": "r1", "status": "pass",
               "judge": {"model": "panel"}, "usage": {"input_tokens": 30, "output_tokens": 3},
               "votes": [{"judge": "x", "model": "m-x", "sample": 0, "status": "pass",
                          "usage": {"input_tokens": 10, "output_tokens": 1}},
                         {"judge": "y", "model": "m-y", "sample": 0, "status": "pass",
                          "usage": {"input_tokens": 20, "output_tokens": 2}}],
               "panel": {"rule": "majority", "votes": 2, "scored": 2, "agreed": 2}}
    path = tmp_path / "panel.jsonl"
    path.write_text(json.dumps(verdict) + "\n")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c0", "input": "q", "output": "a", "expected": {
        "r1": {"status": "pass", "source": "human"}}}) + "\n")
    report = evalstream.agree_judges([path, path], cases,
                                     prices=["m-x=1,10", "m-y=2,20"])
    row = report.rubrics[0].rows[0]
    assert row.cost_per_1000 == pytest.approx((10 * 1 + 1 * 10 + 20 * 2 + 2 * 20) / 1e6 * 1000)
    assert (row.input_tokens_per_1000, row.output_tokens_per_1000) == (30_000, 3_000)


def test_the_command_line_takes_both_shapes(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    paths, cases = runs(tmp_path)
    out = tmp_path / "judges.json"
    argv = ["agree", *map(str, paths), "--cases", str(cases), "--price",
            "good-model=1,2", "--format", "json", "-o", str(out), "--html",
            str(tmp_path / "judges.html")]
    assert main(argv) == 0
    shown = json.loads(out.read_text())
    assert shown == json.loads(evalstream._verdicts.judges.encode(  # type: ignore[attr-defined]
        evalstream.agree_judges(paths, cases, prices=["good-model=1,2"])))
    assert shown["prices"] == {"good-model": {"input": 1.0, "output": 2.0}}
    html = (tmp_path / "judges.html").read_text()
    assert html.count('class="chart chart-kappa"') == 2
    assert main(["agree", str(paths[0]), "--cases", str(cases), "--format", "json", "-o",
                 str(tmp_path / "one.json")]) == 0  # one run and --cases: agree VERDICTS CASES
    assert main(["agree", str(paths[0]), str(cases), "--format", "json", "-o",
                 str(tmp_path / "two.json")]) == 0
    assert (tmp_path / "one.json").read_text() == (tmp_path / "two.json").read_text()
    assert main(["agree", str(paths[0]), "--cases", str(cases), "--format", "markdown"]) == 0
    capsys.readouterr()
    # Without --cases the first file is the verdicts and the rest the cases (issue 30): runs
    # given without --cases are refused as verdicts where cases belong, naming both shapes.
    assert main(["agree", *map(str, paths)]) == 4
    assert ("looks like a verdicts file, not a cases file" in capsys.readouterr().err)
    for argv, said in (
            ([str(paths[0])], "agree takes VERDICTS CASES... (the cases: one file, several or "
                              "a glob), or the verdict files of several runs and --cases "
                              "CASES; 1 file given without --cases."),
            ([str(paths[0]), str(cases), "--price", "m=1,2"],
             "--price applies to several runs side by side"),
            ([*map(str, paths), "--cases", str(cases), "--by", "scenario"],
             "--by applies to one run (agree VERDICTS CASES...)"),
            ([*map(str, paths), "--cases", str(cases), "--price", "m=1"],
             "--price: m: give two prices")):
        assert main(["agree", *argv]) == 2
        assert said in capsys.readouterr().err


def test_markdown_ranks_the_runs(tmp_path: Path) -> None:
    paths, cases = runs(tmp_path)
    out = tmp_path / "judges.md"
    evalstream.agree_judges(paths, cases, format="markdown", output=out)
    text = out.read_text()
    assert text.startswith("# evalstream agree: judges side by side")
    table = text[text.index("r1: which judge agrees best"):]
    assert table.index("good.jsonl") < table.index("fair.jsonl") < table.index("poor.jsonl")
    assert "No price for fair-model, good-model, poor-model" in text


@pytest.mark.slow
def test_agree_on_one_file_through_the_new_shape_is_the_golden(tmp_path: Path) -> None:
    """`agree VERDICTS CASES`, read by the parser of both shapes, writes what it wrote."""
    from tests.verdicts.test_agree import AGREE_GOLDEN

    shutil.copy(SAMPLES / "verdicts.jsonl", tmp_path / "verdicts.jsonl")
    shutil.copy(SAMPLES / "cases.jsonl", tmp_path / "cases.jsonl")
    out = tmp_path / "agree.md"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["agree", "verdicts.jsonl", "cases.jsonl", "--by", "scenario",
                     "--max-ids", "5", "--format", "markdown", "-o", str(out)]) == 0
    finally:
        os.chdir(cwd)
    assert out.read_bytes() == (AGREE_GOLDEN / "agree.md").read_bytes()


# -- issue 26 met issue 25 (the merge): coverage first and stale verdicts, per run ------------
def test_each_run_has_its_coverage_and_its_stale_verdicts_as_agree_finds_them(
        tmp_path: Path) -> None:
    """Several runs side by side apply agree's coverage and stale check to each run: a row
    is exactly ``agree RUN CASES``'s for its rubric (its coverage, its stale verdicts left
    out), and --fail-on-stale exits 1 when one run has one."""
    sample = (SAMPLES / "verdicts.jsonl").read_text().splitlines()
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text("".join(x + "\n" for x in sample))
    records = [json.loads(x) for x in sample]
    changed = [i for i, r in enumerate(records) if "state_hash" in r][:4]
    stale = tmp_path / "stale.jsonl"
    stale.write_text("".join(
        json.dumps({**r, "state_hash": "1" * 32} if i in changed else r) + "\n"
        for i, r in enumerate(records)))
    cases = SAMPLES / "cases.jsonl"
    report = evalstream.agree_judges([fresh, stale], cases)
    assert [c.counts.stale for c in report.stale] == [0, 4] and report.exit_code == 0
    for path in (fresh, stale):
        alone = {r.rubric: r for r in evalstream.agree(path, cases).rubrics}
        for r in report.rubrics:
            (row,) = [x for x in r.rows if x.run == str(path)]
            cell = alone[r.rubric].all
            assert (row.pairs, row.accuracy, row.kappa, row.stale, row.coverage) == \
                (cell.pairs, cell.accuracy, cell.kappa, cell.stale, cell.coverage)
    # (a stale verdict counts in a row where its check has a pass/fail label)
    assert 0 < sum(x.stale for r in report.rubrics for x in r.rows) <= 4
    assert evalstream.agree_judges([fresh, stale], cases, fail_on_stale=True).exit_code == 1
    out = tmp_path / "j.md"
    evalstream.agree_judges([fresh, stale], cases, format="markdown", output=out)
    text = out.read_text()
    assert "| run | judge | labels | pairs | kappa |" in text and "| over all labels |" in text
    assert f"{stale.name}: 4 stale verdicts (judged on another state or rubric than" in \
        text.replace("\\_", "_")
    # The command line: the stale options apply to several runs as to one.
    assert main(["agree", str(fresh), str(stale), "--cases", str(cases), "--fail-on-stale",
                 "-o", str(tmp_path / "cli.json"), "--format", "json"]) == 1


def test_cases_of_several_runs_may_be_several_files_or_a_glob(tmp_path: Path) -> None:
    # Issue 30: --cases repeated, or a glob, read in order as one, as build reads them.
    paths, cases = runs(tmp_path)
    lines = cases.read_text().splitlines(keepends=True)
    (tmp_path / "shards").mkdir()
    for i in range(3):
        (tmp_path / "shards" / f"{i}.jsonl").write_text("".join(lines[i * 50:(i + 1) * 50]))
    one = tmp_path / "one.json"
    assert main(["agree", *map(str, paths), "--cases", str(cases), "--format", "json", "-o",
                 str(one)]) == 0
    expected = json.loads(one.read_text())
    for given in (["--cases", str(tmp_path / "shards" / "*.jsonl")],
                  [x for i in range(3) for x in ("--cases", str(tmp_path / "shards" /
                                                                f"{i}.jsonl"))]):
        out = tmp_path / "several.json"
        assert main(["agree", *map(str, paths), *given, "--format", "json", "-o", str(out),
                     "--force"]) == 0
        shown = json.loads(out.read_text())
        assert shown["cases"].pop("path") != expected["cases"]["path"]
        assert shown == {**expected, "cases": {k: v for k, v in expected["cases"].items()
                                               if k != "path"}}


def test_the_tables_note_says_what_the_unscored_rate_is_a_share_of(tmp_path: Path) -> None:
    out = tmp_path / "judges.md"
    report = evalstream.agree_judges([SAMPLES / "verdicts.jsonl"], SAMPLES / "cases.jsonl",
                                     format="markdown", output=out)
    row = report.rubrics[0].rows[0]
    assert row.unscored_rate == row.unscored / row.verdicts
    assert ("unscored: the share of the run's verdicts on the rubric (stale ones too, "
            "labelled or not) left unscored.") in " ".join(out.read_text().split())
