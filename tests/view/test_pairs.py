"""view of pairwise verdicts (issue 28): the list of inconsistent pairs against a plain
reading of the verdicts, a pair's page (run B's response beside run A's, both orders), run
B's cases indexed and their rejects explained, the static export and the server."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from evalstream._checks.rubrics import load_rubrics
from evalstream._files.transaction import FOLDER, Target, Transaction
from evalstream._view.check import check_page
from evalstream._view.export import export
from evalstream._view.index import Options
from evalstream._view.lists import Filters
from evalstream._view.pages import list_page, overview, rejects_page
from evalstream._view.run import open_site
from tests.verdicts.test_bias import _pair_verdict
from tests.view.support import entries, server

RUBRIC = """
[[rubric]]
id = "better"
kind = "pairwise"
question = "Which response answers user_input better?"
shows = ["user_input", "assistant_response"]
"""
ANSWERS = [("response_1", "response_2"), ("response_1", "response_1"), ("response_2", "tie"),
           ("response_2", "response_2"), ("tie", "tie"), ("response_1", None),
           ("response_2", "response_1"), ("response_1", "response_1")]
KIND = {("response_1", "response_1"): "response_1 both times",
        ("response_2", "response_2"): "response_2 both times",
        ("response_2", "tie"): "a tie in one order"}


def files(tmp: Path) -> dict[str, Path]:
    a, b, verdicts = [], [], []
    for i, (ab, ba) in enumerate(ANSWERS):
        a.append({"id": f"p{i}", "input": f"q{i}", "output": f"run A says {i} <b>bold</b>",
                  "expected": {"better": {"status": "pass", "source": "human"}}})
        b.append({"id": f"p{i}", "input": f"q{i}", "output": f"run B says {i} <script>x"})
        verdicts.append(_pair_verdict(f"p{i}", ab, ba, (20, 30)))
    paths = {name: tmp / f"{name}.jsonl" for name in ("a", "b", "v")}
    paths["a"].write_text("".join(json.dumps(c) + "\n" for c in a))
    paths["b"].write_text("".join(json.dumps(c) + "\n" for c in b)
                          + json.dumps(b[0]) + "\n" + "{broken\n")
    paths["v"].write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    paths["r"] = tmp / "pairwise.toml"
    paths["r"].write_text(RUBRIC)
    return paths


def options(paths: dict[str, Path], **kw: Any) -> Options:
    return Options(verdicts=str(paths["v"]), cases=str(paths["a"]),
                   compare_cases=str(paths["b"]), rubrics=load_rubrics([str(paths["r"])]), **kw)


def test_the_inconsistent_pairs_are_those_whose_orders_disagree(tmp_path: Path) -> None:
    paths = files(tmp_path)
    with open_site(options(paths)) as s:
        assert "pairs" in s.lists.available()
        found = entries(s, "pairs")
        plain = [(f"p{i}", "better", KIND[answers]) for i, answers in enumerate(ANSWERS)
                 if answers in KIND]
        assert sorted(found, key=lambda e: (list(KIND.values()).index(e[2]), e[0])) == found
        assert sorted(found) == sorted(plain)
        assert entries(s, "pairs", Filters(kind="a tie in one order")) == \
            [("p2", "better", "a tie in one order")]
        html, shown = list_page(s, "pairs", Filters(), 1)
        assert len(shown) == 4 and "response_1 both times" in html
        # A pairwise check is never a skip of run A's case.
        assert entries(s, "skipped") == []
        assert "compare-cases" in overview(s)


def test_a_pair_page_shows_both_responses_and_both_orders(tmp_path: Path) -> None:
    paths = files(tmp_path)
    with open_site(options(paths)) as s:
        html = check_page(s, "p1", "better")
        assert html is not None
        assert "run A says 1 &lt;b&gt;bold&lt;/b&gt;" in html
        assert "run B says 1 &lt;script&gt;x" in html and "<script>x" not in html
        assert "The two orders" in html and "a tie: the two orders disagree" in html
        assert "response_1 = run A" in html and "response_1 = run B" in html
        # The state rebuilt from both cases: run A's response first.
        assert "as build --pair-with makes its first order" in html
        unscored = check_page(s, "p5", "better")
        assert unscored is not None and "unscored: an order has no usable answer" in unscored
        # Run B's rejects are listed and explained like any file's.
        page = rejects_page(s, "compare-cases", None, 1)
        assert "already used on line 1" in page and "malformed" in page.lower()
    without = Options(verdicts=str(paths["v"]), cases=str(paths["a"]),
                      rubrics=load_rubrics([str(paths["r"])]))
    with open_site(without) as s:
        html = check_page(s, "p1", "better")
        assert html is not None and "give run B's cases with --compare-cases" in html


def test_run_a_s_cases_may_be_several_files_run_b_s_one(tmp_path: Path) -> None:
    """The merge of issue 30 with issue 28: --cases (run A) takes several files or a glob,
    read in order as one; --compare-cases (run B) is one file, as build --pair-with RUN_B
    reads it (each run one file): a glob there is refused with a sentence, not a traceback."""
    import evalstream
    from evalstream._cli import main

    paths = files(tmp_path)
    lines = paths["a"].read_text().splitlines(keepends=True)
    shards = [tmp_path / "a-0.jsonl", tmp_path / "a-1.jsonl"]
    shards[0].write_text("".join(lines[:5]))
    shards[1].write_text("".join(lines[5:]))
    several = dataclasses.replace(options(paths), case_inputs=list(map(str, shards)),
                                  cases=" ".join(map(str, shards)))
    with open_site(several) as s, open_site(options(paths)) as one:
        for case in ("p1", "p6"):  # one case of each part: the page but the files it names
            page = check_page(s, case, "better")
            assert page is not None and "run B says" in page
            assert page.replace(several.cases, str(paths["a"])) == \
                check_page(one, case, "better")
        assert entries(s, "pairs") == entries(one, "pairs")
    b = paths["b"]
    glob = str(b.parent / "b*.jsonl")
    with pytest.raises(evalstream.UsageError, match="--compare-cases takes one file of run B"):
        evalstream.export_view(paths["v"], [str(x) for x in shards], tmp_path / "out",
                               compare_cases=glob, rubric_files=[paths["r"]])
    assert main(["view", str(paths["v"]), "--cases", str(tmp_path / "a-*.jsonl"),
                 "--compare-cases", glob, "--rubrics", str(paths["r"]), "--export",
                 str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_export_and_the_server_hold_the_pairs(tmp_path: Path) -> None:
    paths = files(tmp_path)
    folder = tmp_path / "review"
    with open_site(options(paths)) as s:
        targets = Transaction([], [Target("export", str(folder), FOLDER,
                                          refusal=lambda _: "no")], None)
        with targets:
            report = export(s, str(folder), targets.open_folder("export"), limit=10)
    assert report.exit_code == 1  # run B's file has rejected lines
    page = (folder / "lists" / "pairs.html").read_text()
    assert "Inconsistent pairs" in page and page.count('class="key"') >= 4
    with server(str(paths["v"]), "--cases", str(paths["a"]), "--compare-cases",
                str(paths["b"]), "--rubrics", str(paths["r"])) as srv:
        status, _, body = srv.get("list/pairs")
        assert status == 200 and b"response_2 both times" in body
        status, _, raw = srv.get("raw/compare-cases/0")
        assert status == 200 and raw.startswith(b'{"id": "p0"')


def test_a_pair_page_first_rebuilds_with_the_index_s_output_bound(tmp_path: Path) -> None:
    """The states rebuilt for pages (a pair's or a case's, whichever comes first) share one
    Checker, made with the --max-output-tokens the index was built with."""
    paths = files(tmp_path)
    with open_site(options(paths, max_output_tokens=2_048)) as s:
        assert check_page(s, "p1", "better") is not None
        checker = s.source._checker
        assert checker is not None and checker.budget.reserved.output == 2_048
