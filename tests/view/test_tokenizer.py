"""view decides which checks are over the budget with the tokenizer build counted with, as the
judge states and verdicts record it (``exposure.tokens.tokenizer``): a ``--tokenizer
cl100k_base`` build near the budget is shown without checks it did not skip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import evalstream
from evalstream._checks.rubrics import RubricSet, load_rubrics
from tests.view.support import entries, site

RUBRIC = """
[[rubric]]
id = "polite"
question = "Is assistant_response polite? Answer pass or fail."
shows = ["user_input", "assistant_response"]
"""
# "@a" is one token a pair in cl100k_base and two in o200k_base: 2,000 of them sit between
# the two encodings' counts of the same state.
LONG = "@a" * 2_000
BUDGET = 4_500


def _built(tmp: Path, tokenizer: Literal["o200k_base", "cl100k_base"]) -> tuple[Path, Path, Path, evalstream.RunReport]:
    """Cases (one long answer, one short), a rubric, build's states with ``tokenizer``, and
    a verdict for each state (its exposure copied, as judge does)."""
    cases, rubrics = tmp / "cases.jsonl", tmp / "rubrics.toml"
    cases.write_text(json.dumps({"id": "long", "input": "q", "output": LONG}) + "\n"
                     + json.dumps({"id": "short", "input": "q", "output": "a"}) + "\n")
    rubrics.write_text(RUBRIC)
    states = tmp / f"{tokenizer}.states.jsonl"
    report = evalstream.build(cases, states, rubric_files=[rubrics], max_tokens=BUDGET,
                              tokenizer=tokenizer)
    verdicts = tmp / f"{tokenizer}.verdicts.jsonl"
    lines = []
    for line in states.read_text().splitlines():
        s = json.loads(line)
        lines.append(json.dumps({
            "case_id": s["case_id"], "rubric_id": s["rubric_id"], "status": "pass",
            "rationale": "fine", "judge": {"model": "m", "provider": "openai"}, "usage": None,
            "rubric_hash": s["rubric_hash"], "state_hash": s["state_hash"],
            "exposure": s["exposure"]}))
    verdicts.write_text("".join(x + "\n" for x in lines))
    return cases, rubrics, verdicts, report


def _rubrics(tmp: Path) -> RubricSet:
    return load_rubrics([str(tmp / "rubrics.toml")])


def _over_budget(tmp: Path, verdicts: Path, **options: object) -> list[tuple[str, str, str]]:
    with site(verdicts, tmp / "cases.jsonl", rubrics=_rubrics(tmp),
              max_tokens=BUDGET, **options) as s:
        return [e for e in entries(s, "skipped") if e[2] == "over budget"]


def test_a_cl100k_build_near_the_budget_has_no_false_skips(tmp_path: Path) -> None:
    _, _, verdicts, report = _built(tmp_path, "cl100k_base")
    # The long case fits in cl100k_base and not in o200k_base: the test is near the budget.
    assert report.counts.skipped == 0 and report.counts.checks == 2
    o200k = evalstream.build(tmp_path / "cases.jsonl", tmp_path / "o200k.states.jsonl",
                             rubric_files=[tmp_path / "rubrics.toml"], max_tokens=BUDGET)
    assert o200k.counts.skipped == 1
    # view shows both verdicts and skips nothing: it counts as build did.
    assert _over_budget(tmp_path, verdicts) == []
    with site(verdicts, tmp_path / "cases.jsonl", rubrics=_rubrics(tmp_path),
              max_tokens=BUDGET) as s:
        assert s.index.options.tokenizer == "cl100k_base"
        assert entries(s, "skipped") == []
        assert {e[0] for e in entries(s, "verdicts")} == {"long", "short"}


def test_the_states_say_the_tokenizer_when_given(tmp_path: Path) -> None:
    """--states (build's output) is read for it first; verdicts that record nothing (another
    tool's, converted) leave it to the states."""
    _, _, verdicts, _ = _built(tmp_path, "cl100k_base")
    bare = tmp_path / "bare.verdicts.jsonl"
    bare.write_text("".join(
        json.dumps({k: v for k, v in json.loads(line).items() if k != "exposure"}) + "\n"
        for line in verdicts.read_text().splitlines()))
    states = tmp_path / "cl100k_base.states.jsonl"
    assert _over_budget(tmp_path, bare, states=str(states)) == []
    # Without states, nothing records a tokenizer: build's default, o200k_base, as before.
    assert [e[:2] for e in _over_budget(tmp_path, bare)] == [("long", "polite")]


def test_an_o200k_build_still_skips_what_it_skipped(tmp_path: Path) -> None:
    cases, rubrics, verdicts, report = _built(tmp_path, "o200k_base")
    assert report.counts.skipped == 1
    assert [e[:2] for e in _over_budget(tmp_path, verdicts)] == [("long", "polite")]


def test_a_tokenizer_evalstream_does_not_know_is_passed_over(tmp_path: Path) -> None:
    """A record naming another tokenizer (hostile data, another tool's) is no build's: the
    next record that names a known one decides, else build's default; the page still opens."""
    _, _, verdicts, _ = _built(tmp_path, "cl100k_base")
    lines = verdicts.read_text().splitlines(keepends=True)
    verdicts.write_text(lines[0].replace('"cl100k_base"', '"<b>p50k</b>"') + "".join(lines[1:]))
    assert _over_budget(tmp_path, verdicts) == []
    verdicts.write_text(verdicts.read_text().replace('"cl100k_base"', '"p50k_base"'))
    assert [e[:2] for e in _over_budget(tmp_path, verdicts)] == [("long", "polite")]
