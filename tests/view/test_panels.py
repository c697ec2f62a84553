"""view on a panel's verdicts (issue 26): the split panels list holds exactly the verdicts
whose scored votes differ (a plain reading of the file), by pattern, filterable like the
other lists; the check page shows every vote with its rationale, as inert text."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import evalstream
from evalstream._view.check import check_page
from evalstream._view.lists import Filters
from tests.view.support import CASES, entries, site


def panel_file(folder: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A panel's verdicts on the sample cases' first checks: some split, one unscored vote."""
    cases = [json.loads(x) for x in CASES.read_text().splitlines() if x.strip()]
    verdicts = []
    for i, case in enumerate(cases[:24]):
        statuses = [("pass", "pass", "pass"), ("pass", "fail", "pass"), ("fail", "na", "fail"),
                    ("pass", "unscored", "pass"), ("fail", "pass", "unscored")][i % 5]
        votes = [{"judge": j, "model": f"model-{j}", "sample": 0, "status": s,
                  "rationale": None if s == "unscored" else f"<script>{j} says {s}</script>",
                  "usage": {"input_tokens": 5, "output_tokens": 1}, "request_id": None,
                  **({"error": {"cause": "timeout", "detail": "no answer"}}
                     if s == "unscored" else {})}
                 for j, s in zip("abc", statuses, strict=True)]
        scored = [s for s in statuses if s != "unscored"]
        top = Counter(scored).most_common(1)[0]
        verdicts.append({"case_id": case["id"], "rubric_id": "tool-backed-claims",
                         "status": top[0], "rationale": "r", "votes": votes,
                         "panel": {"rule": "majority", "votes": 3, "scored": len(scored),
                                   "agreed": top[1]}})
    path = folder / "panel.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    return path, verdicts


def test_the_split_list_is_the_verdicts_whose_votes_differ(tmp_path: Path) -> None:
    path, verdicts = panel_file(tmp_path)
    with site(path) as s:
        assert "split" in s.lists.available()
        found = entries(s, "split")

        def pattern(v: dict[str, Any]) -> str:
            n = Counter(x["status"] for x in v["votes"])
            return ", ".join(f"{n[k]} {k}" for k in ("pass", "fail", "na", "unscored")
                             if n[k])

        split = [v for v in verdicts
                 if len({x["status"] for x in v["votes"]} - {"unscored"}) > 1]
        assert sorted(found) == sorted((v["case_id"], v["rubric_id"], pattern(v))
                                       for v in split)
        # By pattern (in the order patterns were met), in file order within one.
        order = list(dict.fromkeys(pattern(v) for v in split))
        assert [k for _, _, k in found] == sorted((pattern(v) for v in split),
                                                  key=order.index)
        one = s.lists["split"].kind_names[0]
        assert entries(s, "split", Filters(kind=one)) == [e for e in found if e[2] == one]
        assert entries(s, "split", Filters(rubric="escalation")) == []


def test_the_check_page_shows_each_vote_with_its_rationale(tmp_path: Path) -> None:
    path, verdicts = panel_file(tmp_path)
    with site(path) as s:
        v = verdicts[4]  # fail, pass, unscored
        html = check_page(s, v["case_id"], v["rubric_id"])
    assert html is not None
    votes = html[html.index("<h2>The votes</h2>"):]
    assert "Decided by <b>majority</b> over 2 scored of 3 votes; 1 agree" in votes
    for juror in "ab":
        assert f"&lt;script&gt;{juror} says" in votes
    assert "<b>timeout</b>: no answer" in votes and "<script>" not in votes


def test_the_export_writes_the_split_list_and_a_file_without_votes_has_none(
        tmp_path: Path) -> None:
    path, _ = panel_file(tmp_path)
    evalstream.export_view(path, CASES, tmp_path / "out")
    page = (tmp_path / "out" / "lists" / "split.html").read_text()
    assert "Split panels" in page and "1 pass, 1 fail, 1 unscored" in page
    with site() as s:
        assert "split" not in s.lists.available() and len(s.lists["split"]) == 0


def test_the_check_page_shows_the_verdicts_confidence(tmp_path: Path) -> None:
    """judge --confidence (issue 29): each status's probability and where it came from."""
    path, verdicts = panel_file(tmp_path)
    verdicts[1]["confidence"] = {"pass": 2 / 3, "fail": 1 / 3, "na": 0.0, "source": "samples"}
    verdicts[2] = {k: v for k, v in verdicts[2].items() if k not in ("votes", "panel")}
    verdicts[2]["confidence"] = {"pass": 0.125, "fail": 0.75, "na": 0.125, "source": "logprobs"}
    path.write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    with site(path) as s:
        pages = [check_page(s, v["case_id"], v["rubric_id"]) for v in verdicts[:3]]
    assert all(p is not None for p in pages)
    assert 'class="confidence"' not in pages[0]  # type: ignore[operator]
    assert "66.7%" in pages[1] and "the share of the panel" in pages[1]  # type: ignore[operator]
    assert "75.0%" in pages[2] and "12.5%" in pages[2]  # type: ignore[operator]
    assert "log probabilities" in pages[2]  # type: ignore[operator]
