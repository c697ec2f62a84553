"""agree on a panel's verdicts (issue 26): each juror against the labels (against the plain
join of ``plain.py`` and statsmodels, on each juror's own decision written again in plain
Python), the agreement among the votes (statsmodels' ``fleiss_kappa``, the ``krippendorff``
package), the split and unstable states, every style, and a file without votes unchanged."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evalstream
from evalstream._cli import main
from tests.helpers import SAMPLES
from tests.verdicts.plain import plain_agree
from tests.verdicts.test_agree import check_cell

krippendorff = pytest.importorskip("krippendorff")
from statsmodels.stats.inter_rater import fleiss_kappa  # noqa: E402

JURORS = (("a", "model-a", 1), ("b", "model-b", 3), ("c", "model-c", 1))
RUBRICS = ("r1", "r2")


def plain_mode(statuses: list[str]) -> str:
    """A juror's own decision: the mode of its scored samples, more than half scored, no
    tie; else unscored."""
    scored = [s for s in statuses if s != "unscored"]
    if not len(scored) > len(statuses) / 2:
        return "unscored"
    counts = Counter(scored).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "unscored"
    return counts[0][0]


def panel_files(folder: Path, n: int = 240, seed: int = 4) -> tuple[Path, Path,
                                                                     list[dict[str, Any]]]:
    """Cases with labels and a panel's verdicts on them: jurors of different accuracy, some
    votes unscored, some labels missing or na, one scenario a case."""
    rng = random.Random(seed)
    cases, verdicts = [], []
    for i in range(n):
        case_id = f"case-{i:03d}"
        expected = {}
        truths = {}
        for rubric in RUBRICS:
            truth = rng.choice(["pass", "pass", "fail", "na"])
            truths[rubric] = truth
            if rng.random() < 0.85:
                expected[rubric] = {"status": truth,
                                    "source": rng.choice(["human", "synthetic"])}
        cases.append({"id": case_id, "input": "q", "output": "a",
                      "metadata": {"scenario": rng.choice(["x", "y", "z"])},
                      "expected": expected or None})
        for rubric in RUBRICS:
            if rng.random() < 0.05:
                continue  # no verdict for this state
            votes = []
            for juror, model, samples in JURORS:
                right = {"a": 0.9, "b": 0.7, "c": 0.55}[juror]
                for s in range(samples):
                    if rng.random() < 0.08:
                        votes.append({"judge": juror, "model": model, "sample": s,
                                      "status": "unscored", "rationale": None,
                                      "usage": None, "request_id": None,
                                      "error": {"cause": "timeout", "detail": "x"}})
                        continue
                    status = truths[rubric] if rng.random() < right else rng.choice(
                        ["pass", "fail", "na"])
                    votes.append({"judge": juror, "model": model, "sample": s,
                                  "status": status, "rationale": f"{juror} says {status}",
                                  "usage": {"input_tokens": 10, "output_tokens": 2},
                                  "request_id": f"r{i}{juror}{s}"})
            statuses = [v["status"] for v in votes]
            decision = plain_mode(statuses)
            scored = [x for x in statuses if x != "unscored"]
            verdicts.append({"case_id": case_id, "rubric_id": rubric, "status": decision,
                             "rationale": None, "votes": votes,
                             "panel": {"rule": "majority", "votes": len(votes),
                                       "scored": len(scored),
                                       "agreed": 0 if decision == "unscored"
                                       else statuses.count(decision)}})
    cases_path, verdicts_path = folder / "cases.jsonl", folder / "panel.jsonl"
    cases_path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    verdicts_path.write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    return cases_path, verdicts_path, verdicts


def juror_text(verdicts: list[dict[str, Any]], juror: str) -> str:
    """The juror's own verdicts, decided again in plain Python, as a verdict file."""
    out = []
    for v in verdicts:
        mine = [x["status"] for x in v["votes"] if x["judge"] == juror]
        if mine:
            out.append(json.dumps({"case_id": v["case_id"], "rubric_id": v["rubric_id"],
                                   "status": plain_mode(mine)}))
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict[str, Any]]]:
    return panel_files(tmp_path_factory.mktemp("panel"))


@pytest.mark.slow
def test_each_juror_is_counted_against_the_labels_as_agree_counts_a_judge(
        panel: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    cases, path, verdicts = panel
    report = evalstream.agree(path, cases, by="scenario")
    found = report.panel  # type: ignore[attr-defined]
    assert found.jurors == [j for j, _, _ in JURORS]
    assert [r.rubric for r in found.rubrics] == list(RUBRICS)
    cases_text = cases.read_text()
    for r in found.rubrics:
        for cell, (juror, model, samples) in zip(r.jurors, JURORS, strict=True):
            assert (cell.juror, cell.models, cell.samples) == (juror, [model], samples)
            plain = plain_agree(juror_text(verdicts, juror), cases_text, "scenario")[r.rubric]
            check_cell(cell.all, plain.all)
            assert set(cell.by_source) == set(plain.by_source)
            for source, c in cell.by_source.items():
                check_cell(c, plain.by_source[source])
            for g in cell.by_group:
                check_cell(g, plain.by_group[g.group])
    # The worst juror agrees least with the labels, as generated (b's mode of three samples
    # may pass a's single answer).
    kappas = [j.all.kappa.value for j in found.rubrics[0].jurors]
    assert min(kappas) == kappas[2]


def test_agreement_among_the_votes_is_statsmodels_and_krippendorff(
        panel: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    cases, path, verdicts = panel
    report = evalstream.agree(path, cases)
    for r in report.panel.rubrics:  # type: ignore[attr-defined]
        mine = [v for v in verdicts if v["rubric_id"] == r.rubric]
        counts = np.array([[sum(x["status"] == s for x in v["votes"])
                            for s in ("pass", "fail", "na")] for v in mine])
        complete = counts[counts.sum(axis=1) == 5]
        assert r.fleiss_kappa.states == len(complete)
        assert r.fleiss_kappa.value == pytest.approx(fleiss_kappa(complete), abs=1e-6)
        pairable = counts[counts.sum(axis=1) >= 2]
        assert r.krippendorff_alpha.states == len(pairable)
        assert r.krippendorff_alpha.value == pytest.approx(
            krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal"),
            abs=1e-6)
        for e in (r.fleiss_kappa, r.krippendorff_alpha):
            assert e.low < e.value < e.high
        split = [v["case_id"] for v in mine
                 if len({x["status"] for x in v["votes"]} - {"unscored"}) > 1]
        unstable = [v["case_id"] for v in mine
                    if len({x["status"] for x in v["votes"] if x["judge"] == "b"}
                           - {"unscored"}) > 1]
        assert (r.verdicts, r.split, r.unstable) == (len(mine), len(split), len(unstable))
        assert r.split_ids == split[:20] and r.unstable_ids == unstable[:20]
        assert r.split_share == pytest.approx(len(split) / len(mine))
        assert r.rules == ["majority"]


@pytest.mark.slow
def test_the_panel_adds_to_agree_and_changes_nothing_it_said(
        tmp_path: Path, panel: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    cases, path, verdicts = panel
    stripped = tmp_path / "decisions.jsonl"
    stripped.write_text("".join(json.dumps({k: v for k, v in x.items()
                                            if k not in ("votes", "panel")}) + "\n"
                                for x in verdicts))
    with_votes = json.loads(_json(tmp_path / "a.json", path, cases))
    without = json.loads(_json(tmp_path / "b.json", stripped, cases))
    panel_part = with_votes.pop("panel")
    assert "panel" not in without
    for report in (with_votes, without):
        report["verdicts"].pop("path")
    assert with_votes == without  # the panel's decisions, counted as any judge's
    assert panel_part["rubrics"][0]["jurors"][0]["juror"] == "a"
    # The records in memory give the same agreement among the jurors.
    records = [json.loads(line) for line in path.read_text().splitlines()]
    among = evalstream.panel_agreement(records)
    for mine, theirs in zip(among, panel_part["rubrics"], strict=True):
        assert mine.rubric == theirs["rubric"] and mine.jurors == []
        assert mine.fleiss_kappa.value == theirs["fleiss_kappa"]["value"]
        assert mine.krippendorff_alpha.low == theirs["krippendorff_alpha"]["low"]
        assert (mine.split, mine.unstable) == (theirs["split"], theirs["unstable"])


def _json(out: Path, verdicts: Path, cases: Path) -> str:
    evalstream.agree(verdicts, cases, format="json", output=out)
    return out.read_text()


def test_every_style_shows_the_jurors(tmp_path: Path,
                                      panel: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    cases, path, _ = panel
    assert main(["agree", str(path), str(cases), "--format", "markdown", "-o",
                 str(tmp_path / "a.md"), "--html", str(tmp_path / "a.html"), "--by",
                 "scenario"]) == 0
    text = (tmp_path / "a.md").read_text()
    assert "## The panel's jurors" in text and "### r1: the panel and its jurors" in text
    assert "| the panel (majority) |" in text and "| b (model-b, 3 samples) |" in text
    assert "Fleiss kappa" in text and "Krippendorff alpha" in text and "Split states" in text
    assert "| a | scenario = x |" in text
    html = (tmp_path / "a.html").read_text()
    assert "The panel&#x27;s jurors" in html or "The panel's jurors" in html
    assert html.count('class="chart chart-kappa"') == 2 * len(RUBRICS)  # agree's, and ours


def test_a_file_without_votes_is_agree_as_it_was(tmp_path: Path) -> None:
    report = evalstream.agree(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl")
    assert not hasattr(report, "panel")
    out = tmp_path / "a.json"
    evalstream.agree(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl", format="json",
                     output=out)
    assert '"panel"' not in out.read_text()


def test_panel_agreement_refuses_a_record_that_is_no_verdict() -> None:
    with pytest.raises(evalstream.UsageError,
                       match=r"verdict record 2: .*`\$\.votes\[0\]\.status`"):
        evalstream.panel_agreement([
            {"case_id": "c", "rubric_id": "r", "status": "pass",
             "votes": [{"judge": "a", "status": "pass"}]},
            {"case_id": "d", "rubric_id": "r", "status": "pass",
             "votes": [{"judge": "a", "status": "maybe"}]}])


# -- issue 26 met issue 25 (the merge): coverage first, stale verdicts left out ---------------
def test_a_stale_verdict_is_left_out_of_every_juror_and_of_the_agreement_among_them(
        tmp_path: Path) -> None:
    """agree's stale verdicts (judged on another state than build makes of the cases today)
    are left out of each juror's row as of the panel's, and out of the agreement among the
    jurors and the split and unstable states: the figures are those of the file without
    them, the stale ones counted (``Cell.stale``, ``RubricPanel.stale``); every juror's row
    says over how many labels it is computed (coverage first)."""
    lines = (SAMPLES / "panel.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    # Stale: the split and unstable states among them, so that the shares move.
    stale = {i for i, r in enumerate(records)
             if (r["case_id"], r["rubric_id"]) in {("case-02", "tool-backed-claims"),
                                                   ("case-21", "policy-compliance"),
                                                   ("case-05", "tool-backed-claims")}}
    assert len(stale) == 3
    marked = tmp_path / "stale.jsonl"
    marked.write_text("".join(
        json.dumps({**r, "state_hash": "1" * 32} if i in stale else r) + "\n"
        for i, r in enumerate(records)))
    without = tmp_path / "without.jsonl"
    without.write_text("".join(x + "\n" for i, x in enumerate(lines) if i not in stale))
    cases = SAMPLES / "cases.jsonl"
    a = evalstream.agree(marked, cases, format="json")
    b = evalstream.agree(without, cases, format="json")
    assert a.stale is not None and a.stale.counts.stale == 3
    panel_a, panel_b = a.panel, b.panel  # type: ignore[attr-defined]
    seen_stale = 0
    for ra, rb in zip(panel_a.rubrics, panel_b.rubrics, strict=True):
        assert ra.rubric == rb.rubric
        left_out = sum(records[i]["rubric_id"] == ra.rubric for i in stale)
        assert (ra.stale, rb.stale, ra.verdicts) == (left_out, 0, rb.verdicts)
        for name in ("fleiss_kappa", "krippendorff_alpha", "split", "split_share",
                     "split_ids", "unstable", "unstable_share", "unstable_ids"):
            assert getattr(ra, name) == getattr(rb, name), (ra.rubric, name)
        for ja, jb in zip(ra.jurors, rb.jurors, strict=True):
            for name in ("pairs", "accuracy", "kappa", "fail_precision", "fail_recall",
                         "unscored", "na_verdicts"):
                assert getattr(ja.all, name) == getattr(jb.all, name), (ra.rubric, name)
            assert ja.all.coverage is not None and jb.all.coverage is not None
            # The same labels; those of stale verdicts left out as stale, not as missing.
            assert ja.all.coverage.labels == jb.all.coverage.labels
            assert ja.all.stale == ja.all.coverage.left_out["stale"]
            assert ja.all.stale + ja.all.labels_without_verdict == jb.all.labels_without_verdict
            seen_stale += ja.all.stale
    assert seen_stale == 3 * len(panel_a.jurors)  # each stale verdict, for every juror
    # The tables lead with coverage, and say what was left out of the agreement among them.
    out = tmp_path / "a.md"
    evalstream.agree(marked, cases, format="markdown", output=out)
    text = out.read_text()
    assert "| judge | labels | pairs | accuracy | over all labels |" in text
    assert "stale left out)" in text
