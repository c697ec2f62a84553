"""The stats and report pages in a real headless Chromium: they load without console
errors, offline, and their charts are drawn."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstream._cli import main
from tests.browser import load, require_chromium
from tests.helpers import SAMPLES, build

pytestmark = pytest.mark.slow  # see pyproject.toml: `-m "not slow"` skips it

COUNT_MARKS = """({
  charts: document.querySelectorAll('svg.chart').length,
  bars: document.querySelectorAll('svg.chart-bar rect.bar').length,
  segments: document.querySelectorAll('svg.chart-stacked rect.segment').length,
  columns: document.querySelectorAll('svg.chart-column rect.column').length,
  ranges: document.querySelectorAll('svg.chart-range g.range').length,
  drawn: [...document.querySelectorAll('svg.chart rect.bar, svg.chart rect.segment')]
           .filter(r => r.getBoundingClientRect().width > 0).length,
  tables: document.querySelectorAll('table').length,
  scripts: document.scripts.length,
})"""


@pytest.fixture(autouse=True)
def chromium() -> None:
    require_chromium()


def test_stats_page_loads_and_draws_its_charts(tmp_path: Path) -> None:
    page = tmp_path / "stats.html"
    assert main(["stats", str(SAMPLES / "cases.jsonl"), "--html", str(page), "--format",
                 "json", "-o", str(tmp_path / "stats.json"), "-q"]) == 0
    result = load(page, COUNT_MARKS)
    assert result.errors == []
    marks = result.value
    assert marks["scripts"] == 0
    assert marks["charts"] >= 9
    assert marks["bars"] == 7  # cases per scenario: one bar per group
    assert marks["segments"] > 20 and marks["columns"] >= 3 and marks["ranges"] == 3 * 7
    assert marks["drawn"] == marks["bars"] + marks["segments"]  # every mark has a size
    assert marks["tables"] >= 8
    assert not result.blank()
    assert len(result.colours()) > 20  # bars in several colours, not a page of text


def test_report_page_loads_and_draws(tmp_path: Path) -> None:
    build(tmp_path, (SAMPLES / "bad.jsonl").read_bytes())
    page = tmp_path / "report.html"
    assert main(["stats", str(tmp_path / "states.report.json"), "--html", str(page),
                 "--format", "json", "-o", str(tmp_path / "r.json")]) == 1
    result = load(page, COUNT_MARKS)
    assert result.errors == []
    assert result.value["segments"] >= 5 and result.value["bars"] >= 5
    assert not result.blank()


def test_the_helper_sees_errors_and_blank_pages(tmp_path: Path) -> None:
    # Controls for the two tests above: a broken page is caught, a blank one is blank.
    broken = tmp_path / "broken.html"
    broken.write_text('<!doctype html><html><body><p>x</p><img src="https://cdn.example/x.png">'
                      "<script>console.error('boom'); undefinedFunction();</script></body></html>")
    result = load(broken)
    joined = "\n".join(result.errors)
    assert "boom" in joined and "undefinedFunction" in joined and "cdn.example" in joined
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><html><body></body></html>")
    assert load(blank).blank()
