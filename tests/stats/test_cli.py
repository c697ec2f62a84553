"""`evalstream stats` on the command line: formats, files, exit codes, reports, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalstream._cli import main
from tests.helpers import ROOT, SAMPLES, build, loaded_after

CASES = str(SAMPLES / "cases.jsonl")
BAD = str(SAMPLES / "bad.jsonl")


def test_default_is_a_table_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", CASES, "-q"]) == 0
    out = capsys.readouterr().out
    assert "48 lines = 48 cases + 0 rejected + 0 blank" in out
    assert "Groups by scenario" in out and "booking" in out
    assert "\x1b[" not in out  # not a terminal: no colour codes


def test_json_to_a_file_is_the_documented_shape(tmp_path: Path) -> None:
    out = tmp_path / "stats.json"
    assert main(["stats", CASES, "--format", "json", "-o", str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    assert data["shape"] == "evalstream.stats/2"
    assert list(data) == ["shape", "evalstream", "input", "by", "rubrics", "tokenizer", "budget",
                          "overview", "total", "groups", "labels", "checks", "metadata",
                          "histograms", "first_rejects", "warnings", "exit_code"]
    assert data["overview"]["cases"] == sum(g["cases"] for g in data["groups"]) == 48
    assert [p.name for p in tmp_path.iterdir()] == ["stats.json"]  # no temporary left over


def test_same_input_gives_the_same_bytes(tmp_path: Path) -> None:
    for name in ("a.json", "b.json"):
        main(["stats", CASES, "--format", "json", "-o", str(tmp_path / name), "-q"])
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_markdown_and_html_together(tmp_path: Path) -> None:
    md, page = tmp_path / "stats.md", tmp_path / "stats.html"
    assert main(["stats", CASES, "--format", "markdown", "-o", str(md), "--html", str(page),
                 "-q"]) == 0
    assert md.read_text().startswith("# evalstream stats: ")
    assert "| group | cases |" in md.read_text()
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "<svg" in html


def test_rejects_exit_1_and_are_only_counted(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stats.json"
    assert main(["stats", BAD, "--format", "json", "-o", str(out), "-q"]) == 1
    data = json.loads(out.read_text())
    o = data["overview"]
    assert o["rejected"] > 0 and o["lines"] == o["cases"] + o["rejected"] + o["blank"]
    assert sum(o["rejected_by_kind"].values()) == o["rejected"]
    assert data["exit_code"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["stats.json"]  # no rejects file
    assert main(["stats", BAD, "-q"]) == 1
    assert "give --rejects FILE" in capsys.readouterr().out


def test_rejects_file_holds_what_validate_writes(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "stats.rejects.jsonl", tmp_path / "validate.rejects.jsonl"
    assert main(["stats", BAD, "--rejects", str(mine), "--format", "json",
                 "-o", str(tmp_path / "s.json"), "-q"]) == 1
    assert main(["validate", BAD, "--rejects", str(theirs), "--report",
                 str(tmp_path / "r.json"), "-q"]) == 1
    assert mine.read_bytes() == theirs.read_bytes()
    report = json.loads((tmp_path / "r.json").read_text())
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["overview"]["rejected_by_kind"] == report["rejected_by_kind"]
    for key in ("lines", "cases", "rejected", "blank"):
        assert data["overview"][key] == report["counts"][key]


@pytest.mark.parametrize(("args", "message"), [
    (["--by", "scenario,,split"], "give metadata keys separated by commas"),
    (["--by", "split,split"], "names a key twice"),
    (["--rubrics", "nope.toml"], "cannot read the rubric file"),
    (["--format", "json", "-o", CASES], "the input and output paths are the same file"),
    (["--html", CASES], "the input and html paths are the same file"),
    (["--rejects", "-"], "the output and the rejects cannot both go to stdout"),
    (["--html", "-", "-o", "x.json"], None),
])
def test_usage_errors_exit_2(args: list[str], message: str | None, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    if message is None:  # the control: one of these to stdout is fine
        assert main(["stats", CASES, "-q", *args]) == 0
        assert capsys.readouterr().out.startswith("<!doctype html>")
        return
    assert main(["stats", CASES, "-q", *args]) == 2
    assert message in capsys.readouterr().err


def test_missing_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(tmp_path / "none.jsonl"), "-q"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_unwritable_output_exits_2_and_writes_nothing(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "no" / "such" / "dir" / "stats.json"
    page = tmp_path / "stats.html"
    assert main(["stats", CASES, "--format", "json", "-o", str(target), "--html", str(page),
                 "-q"]) == 2
    assert "cannot create" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_build_report_is_rendered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, out = build(tmp_path, Path(BAD).read_bytes())
    path = tmp_path / "states.report.json"
    assert path.exists()
    assert main(["stats", str(path)]) == 1  # the dataset had rejects
    text = " ".join(capsys.readouterr().out.split())  # as rich wrapped it to the width
    assert f"evalstream build report: {report.input}" in text
    assert f"{report.counts.lines:,} lines = {report.counts.cases:,} cases" in text
    for rubric in report.checks_by_rubric:
        assert rubric in text
    md = tmp_path / "report.md"
    page = tmp_path / "report.html"
    assert main(["stats", str(path), "--format", "markdown", "-o", str(md),
                 "--html", str(page)]) == 1
    assert "| rubric | written |" in md.read_text()
    assert "<svg" in page.read_text()
    assert main(["stats", str(path), "--by", "split"]) == 2
    assert "is already a report; --by apply to datasets only" in capsys.readouterr().err


def test_a_stats_json_is_rendered_again(tmp_path: Path) -> None:
    first = tmp_path / "stats.json"
    main(["stats", CASES, "--format", "json", "-o", str(first), "-q"])
    again = tmp_path / "again.json"
    assert main(["stats", str(first), "--format", "json", "-o", str(again)]) == 0
    assert again.read_bytes() == first.read_bytes()


@pytest.mark.slow
def test_stdin_and_stdout() -> None:
    done = subprocess.run([sys.executable, "-m", "evalstream", "stats", "-", "--format", "json"],
                          input=Path(CASES).read_bytes(), capture_output=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["overview"]["cases"] == 48


@pytest.mark.slow
def test_no_color_and_terminal_width(tmp_path: Path) -> None:
    # A real run with a narrow COLUMNS: every table fits, nothing is dropped.
    env = {**os.environ, "COLUMNS": "60", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "evalstream", "stats", CASES, "--full"], env=env,
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 60
    for figure in ("1,588", "29.4%", "medical-triage"):  # from the last columns of wide tables
        assert figure in done.stdout


def test_stats_does_not_slow_down_help_or_build() -> None:
    code = "from evalstream import _cli as cli\ncli.parser()"
    assert loaded_after(code, ("polars", "numpy", "rich")) == []


def test_compressed_input(tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "cases.jsonl.gz"
    packed.write_bytes(gzip.compress(Path(CASES).read_bytes()))
    plain, squeezed = tmp_path / "plain.json", tmp_path / "gz.json"
    main(["stats", CASES, "--format", "json", "-o", str(plain), "-q"])
    assert main(["stats", str(packed), "--format", "json", "-o", str(squeezed), "-q"]) == 0
    a, b = json.loads(plain.read_text()), json.loads(squeezed.read_text())
    assert a.pop("input") != b.pop("input")
    assert a == b  # bytes counts the decompressed stream


def test_pages_for_an_empty_dataset_and_a_validate_report(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["stats", str(empty), "--html", str(tmp_path / "e.html"), "--format",
                 "markdown", "-o", str(tmp_path / "e.md"), "-q"]) == 0
    assert "No case has expected labels." in (tmp_path / "e.html").read_text()
    assert main(["validate", CASES, "--report", str(tmp_path / "v.report.json"),
                 "--rejects", str(tmp_path / "v.rejects.jsonl"), "-q"]) == 0
    assert main(["stats", str(tmp_path / "v.report.json"), "--html",
                 str(tmp_path / "v.html"), "--format", "markdown",
                 "-o", str(tmp_path / "v.md")]) == 0
    assert "evalstream validate report" in (tmp_path / "v.md").read_text()


def _mutations(report: Any, seed: int, n: int) -> list[Any]:
    """``n`` copies of a decoded JSON report, each with one value emptied, cut or changed."""
    import copy
    import random

    def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        found = [at]
        items = value.items() if isinstance(value, dict) else enumerate(value) \
            if isinstance(value, list) else []
        for key, child in items:
            found += paths(child, (*at, key))
        return found

    rng = random.Random(seed)
    every = paths(report)[1:]
    out = []
    while len(out) < n:
        crafted = copy.deepcopy(report)
        at = rng.choice(every)
        parent = crafted
        for key in at[:-1]:
            parent = parent[key]
        value = parent[at[-1]]
        if isinstance(value, list):
            parent[at[-1]] = value[:-1] if value and rng.random() < 0.5 else []
        elif isinstance(value, dict):
            parent[at[-1]] = {}
        elif isinstance(value, int) and not isinstance(value, bool):
            parent[at[-1]] = rng.choice([-1, 0, 10**12])
        elif isinstance(value, float):
            parent[at[-1]] = rng.choice([-1.0, 1e300])
        elif isinstance(value, str):
            parent[at[-1]] = rng.choice(["", "xyz"])
        else:
            continue
        out.append(crafted)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["stats", "report"])
def test_a_crafted_report_is_rendered_or_refused_never_a_crash(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    if kind == "stats":
        assert main(["stats", CASES, "--format", "json", "-o", "good.json", "-q"]) == 0
    else:
        assert main(["validate", CASES, "--report", "good.json", "-q"]) == 0
    good = json.loads(Path("good.json").read_text())
    capsys.readouterr()
    refused = 0
    for i, crafted in enumerate(_mutations(good, 7, 60)):
        Path("crafted.json").write_text(json.dumps(crafted))
        for args in (["--html", f"p{i}.html", "-o", f"o{i}.md", "--format", "markdown"], []):
            code = main(["stats", "crafted.json", *args])
            err = capsys.readouterr().err
            assert code in (0, 1, 2), err
            if code == 2:
                refused += 1
                assert "evalstream: error:" in err and "Traceback" not in err
                assert not Path(f"p{i}.html").exists() and not Path(f"o{i}.md").exists()
    if kind == "stats":
        assert refused  # some mutations break the shape: they are refused, not rendered


def test_a_stats_json_with_missing_counts_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.json"
    assert main(["stats", CASES, "--format", "json", "-o", str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    del data["labels"][0]["total"]["status"]["na"]
    out.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["stats", str(out), "--html", str(tmp_path / "p.html")]) == 2
    err = capsys.readouterr().err
    assert f"{out} is not a report evalstream can render (`labels[0].total.status` has the " \
           "keys ['fail', 'pass']; expected ['pass', 'fail', 'na'])" in err
    assert not (tmp_path / "p.html").exists()


@pytest.mark.slow
def test_another_commands_json_is_named_not_read_as_cases(tmp_path: Path) -> None:
    agree_json = tmp_path / "agree.json"
    done = subprocess.run([sys.executable, "-m", "evalstream", "agree", str(SAMPLES / "verdicts.jsonl"),
                           str(SAMPLES / "cases.jsonl"), "--format", "json", "-o", str(agree_json)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "evalstream", "stats", str(agree_json)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 4
    assert "is the JSON of `evalstream agree`" in done.stderr and done.stdout == ""


def test_a_stats_json_of_another_shape_is_refused_with_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"shape": "evalstream.stats/1", "evalstream": "0.1.0"}))
    assert main(["stats", str(old), "-q"]) == 2
    assert capsys.readouterr().err == (
        f"evalstream: error: {old} is a stats JSON of shape 'evalstream.stats/1', written by "
        "another version of evalstream (this one reads 'evalstream.stats/2'); run stats on "
        "the dataset again.\n")


def test_the_tokenizer_is_named_and_used(tmp_path: Path) -> None:
    out = tmp_path / "stats.json"
    assert main(["stats", CASES, "--tokenizer", "cl100k_base", "--format", "json", "-o",
                 str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    assert data["tokenizer"] == "cl100k_base"
    md = tmp_path / "stats.md"
    assert main(["stats", str(out), "--format", "markdown", "-o", str(md)]) == 0
    assert "(tokens, exact, cl100k\\_base; budget 32,000)" in md.read_text()
