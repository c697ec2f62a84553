"""Coverage first (issue 25): a judge that answers `na` on every fail label of the sample and
`pass` on the rest read 100.0% accuracy and "missed 0" on every rubric. Every figure now
says over how many labels it is computed, the confusion matrix has the columns left out, and
the summary leads with the worst coverage. Checked against a plain reading of the files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import evalstream
from evalstream._render.agree import blocks
from evalstream._render.tables import Paragraph, render_format
from evalstream._verdicts.coverage import COVERAGE_FLOOR, coverage, is_bad, worst_first
from tests.helpers import SAMPLES


def labels_of(cases: Path) -> dict[tuple[str, str], str]:
    found = {}
    for line in cases.read_text().splitlines():
        case = json.loads(line)
        for rubric, label in (case.get("expected") or {}).items():
            found[(case["id"], rubric)] = label["status"]
    return found


def na_on_fail(states: Path, labels: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    """The verdicts of the issue's judge, on every check build wrote (its exact rubric's
    too): `na` where the label is fail, `pass` elsewhere, with the checks' hashes."""
    out = []
    for line in states.read_text().splitlines():
        record = json.loads(line)
        key = (record["case_id"], record["rubric_id"])
        status = "na" if labels.get(key) == "fail" else "pass"
        out.append({"case_id": key[0], "rubric_id": key[1], "status": status,
                    "rationale": "The rubric does not apply." if status == "na" else "Fine.",
                    "judge": {"model": "lazy-judge"}, "rubric_hash": record["rubric_hash"],
                    **({"state_hash": record["state_hash"]} if "state_hash" in record else {}),
                    "exposure": record["exposure"]})
    return out


@pytest.fixture(scope="module")
def lazy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("lazy")
    states = folder / "states.jsonl"
    evalstream.build(SAMPLES / "cases.jsonl", states)
    verdicts = na_on_fail(states, labels_of(SAMPLES / "cases.jsonl"))
    path = folder / "verdicts.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    return path, verdicts


def test_a_judge_answering_na_on_every_fail_label_does_not_read_100(
        lazy: tuple[Path, list[dict[str, Any]]]) -> None:
    path, verdicts = lazy
    labels = labels_of(SAMPLES / "cases.jsonl")
    report = evalstream.agree(path, SAMPLES / "cases.jsonl")
    # The rubrics judged that the sample labels (the starter rubrics of issue 30 are judged
    # too, but no case of the sample labels them: they have no figure to read 100).
    judged = {v["rubric_id"] for v in verdicts} & {rubric for _, rubric in labels}
    fails = {r: [k for k, s in labels.items() if k[1] == r and s == "fail"
                 and any((v["case_id"], v["rubric_id"]) == k for v in verdicts)]
             for r in judged}
    assert sum(len(f) for f in fails.values()) == 36  # the count on the sample
    for r in report.rubrics:
        if r.rubric not in judged:
            continue
        c = r.all
        assert c.coverage is not None
        scored = [k for k, s in labels.items() if k[1] == r.rubric and s == "pass"
                  and any((v["case_id"], v["rubric_id"]) == k for v in verdicts)]
        # The scored figures are perfect, and say over how few labels they are.
        assert (c.accuracy, c.confusion.fail_pass, c.pairs) == (1.0, 0, len(scored))
        assert c.confusion.fail_na == c.na_verdicts == len(fails[r.rubric])
        assert c.coverage.labels == len(scored) + len(fails[r.rubric]) + \
            c.labels_without_verdict + c.unscored
        assert c.coverage.accuracy_all_labels == pytest.approx(len(scored) / c.coverage.labels)
        assert c.coverage.accuracy_all_labels < 1
        assert sorted(r.examples.na_verdicts) == sorted(k[0] for k in fails[r.rubric])
    # The one-screen summary leads with it: the first paragraph, worst first.
    first = next(b for b in blocks(report) if isinstance(b, Paragraph))
    assert first.text.startswith(f"Coverage first: {len(judged)} rubrics scored less than 90% "
                                 "of their pass/fail labels.")
    worst = min((r for r in report.rubrics if r.rubric in judged),
                key=lambda r: r.all.coverage.accuracy_all_labels)  # type: ignore[union-attr]
    assert first.text.index(worst.rubric) < min(first.text.index(r) for r in judged
                                                if r != worst.rubric)
    for r in report.rubrics:
        if r.rubric in judged:
            c = r.all.coverage
            assert c is not None
            assert (f"{r.rubric}: accuracy 100.0% covers {c.scored:,} of {c.labels:,} pass/fail "
                    f"labels ({c.scored_share:.1%}); left out: {c.left_out['na_verdicts']:,} na "
                    f"verdicts") in first.text
            assert f"over all {c.labels:,} labels {c.accuracy_all_labels:.1%}." in first.text
    # The confusion matrix has the na and unscored columns, in every style.
    text = render_format(blocks(report), "table", 200).decode()
    assert "label \\ judge  pass  fail  na  unscored  stale  no verdict" in text
    markdown = render_format(blocks(report), "markdown", 200).decode()
    assert "| label \\\\ judge | pass | fail | na | unscored | stale | no verdict |" in markdown
    assert "**na verdicts (label pass or fail, judge na)**" in markdown
    assert report.exit_code == 0


def test_the_na_verdicts_are_disagreements_in_view(lazy: tuple[Path, list[dict[str, Any]]],
                                                   tmp_path: Path) -> None:
    from evalstream._view.index import Options, build
    from evalstream._view.lists import NA_VERDICT_KIND, Lists

    path, verdicts = lazy
    lists = Lists(build(Options(verdicts=str(path), cases=str(SAMPLES / "cases.jsonl"))))
    entries = lists["disagreements"]
    kinds = dict(entries.counts(lists.index, "kind"))
    assert kinds == {NA_VERDICT_KIND: sum(1 for v in verdicts if v["status"] == "na")}


def test_coverage_arithmetic_and_order() -> None:
    c = coverage(pairs=6, agreed=5, na_verdicts=2, unscored=1, stale=0, no_verdict=1)
    assert (c.labels, c.scored_share, c.accuracy_all_labels) == (10, 0.6, 0.5)
    assert is_bad(c) and not is_bad(coverage(9, 9, 1, 0, 0, 0))
    assert coverage(0, 0, 0, 0, 0, 0).scored_share is None
    good = coverage(10, 10, 0, 0, 0, 0)
    worse = coverage(2, 1, 8, 0, 0, 0)
    assert [n for n, _ in worst_first([("a", c), ("b", good), ("c", worse)])] == ["c", "a"]
    assert COVERAGE_FLOOR == 0.9
