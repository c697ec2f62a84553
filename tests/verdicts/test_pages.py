"""The agree and compare pages in a real headless Chromium: no console errors, the charts
drawn with the report's figures, hostile text shown as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstream._render.agree_html import agree_page, compare_page
from evalstream._verdicts.agree import AgreeOptions
from evalstream._verdicts.agree import run as agree
from evalstream._verdicts.compare import CompareOptions
from evalstream._verdicts.compare import run as compare
from tests.browser import load
from tests.helpers import SAMPLES

pytestmark = pytest.mark.slow  # see pyproject.toml: `-m "not slow"` skips it

BLUE, RED, GREEN = bytes.fromhex("4e79a7"), bytes.fromhex("e15759"), bytes.fromhex("59a14f")

CELLS_JS = """JSON.stringify([...document.querySelectorAll('svg.chart-confusion')].map(svg =>
  [...svg.querySelectorAll('g.cell')].map(g => [g.classList.contains('agree'),
                                                Number(g.dataset.count)])))"""


def test_agree_page_in_chromium(tmp_path: Path) -> None:
    report = agree(AgreeOptions(str(SAMPLES / "verdicts.jsonl"), str(SAMPLES / "cases.jsonl"),
                                by="scenario"))
    page = tmp_path / "agree.html"
    page.write_text(agree_page(report))
    result = load(page, CELLS_JS, full_page=True)
    assert result.errors == []
    drawn = json.loads(result.value)
    # Label pass, then fail: pass and fail verdicts, then those left out of the scored
    # figures (na, unscored, stale, no verdict): coverage first (issue 25).
    expected = [[[True, c.pass_pass], [False, c.pass_fail], [False, c.pass_na],
                 [False, c.pass_unscored], [False, c.pass_stale], [False, c.pass_no_verdict],
                 [False, c.fail_pass], [True, c.fail_fail], [False, c.fail_na],
                 [False, c.fail_unscored], [False, c.fail_stale], [False, c.fail_no_verdict]]
                for c in (r.all.confusion for r in report.rubrics
                          if r.all.coverage and r.all.coverage.labels)]
    assert drawn == expected
    assert not result.blank()
    colours = result.colours()
    assert BLUE in colours and RED in colours  # agreement and misses are both drawn
    counts = load(page, "[document.querySelectorAll('g.kappa').length, "
                        "document.querySelectorAll('script').length]").value
    with_kappa = sum(1 for r in report.rubrics
                     for cell in [r.all, *r.by_source.values(), *r.by_group] if cell.kappa)
    assert counts == [with_kappa, 0]


def test_compare_page_in_chromium(tmp_path: Path) -> None:
    report = compare(CompareOptions(str(SAMPLES / "verdicts.jsonl"), str(SAMPLES / "verdicts-b.jsonl")))
    page = tmp_path / "compare.html"
    page.write_text(compare_page(report))
    result = load(page, """JSON.stringify([...document.querySelectorAll('rect.flip')].map(r =>
        [r.classList.contains('pass-to-fail'), r.querySelector('title').textContent]))""")
    assert result.errors == []
    flips = json.loads(result.value)
    expected = []
    for r in report.rubrics:
        t = r.counts.transitions
        expected += [[True, f"{r.rubric}: {t['pass->fail']} pass -> fail"],
                     [False, f"{r.rubric}: {t['fail->pass']} fail -> pass"]]
    assert flips == expected
    assert not result.blank()
    assert GREEN in result.colours()


def test_hostile_text_is_shown_as_text(tmp_path: Path) -> None:
    hostile = "</title><script>alert(1)</script><img src=x onerror=alert(2)>"
    rubric = "<b>rubric&amp;"
    case_id = "<i>case"
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": case_id, "input": "i", "output": "o",
                                 "metadata": {"team": hostile},
                                 "expected": {rubric: {"status": "fail",
                                                       "source": "human"}}}) + "\n")
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(json.dumps({"case_id": case_id, "rubric_id": rubric,
                                    "status": "pass"}) + "\n")
    page = tmp_path / "agree.html"
    page.write_text(agree_page(agree(AgreeOptions(str(verdicts), str(cases), by="team"))))
    result = load(page, "[document.querySelectorAll('script, img, i').length, "
                        "[...document.querySelectorAll('b')].filter(b => "
                        "b.textContent.includes('rubric')).length, document.body.textContent]")
    assert result.errors == []
    injected, bold_rubric, text = result.value
    assert (injected, bold_rubric) == (0, 0)  # the page's cards use <b>; none from the data
    assert hostile in text and rubric in text and case_id in text
