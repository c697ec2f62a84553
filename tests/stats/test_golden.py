"""The sample dataset's stats as a table (rich, 100 columns, no terminal), markdown and JSON,
compared with golden files; EVALSTREAM_REGEN_GOLDEN=1 rewrites them."""

from __future__ import annotations

import io
import os

import pytest
from rich.console import Console

from evalstream._api.reports import stats_shown
from evalstream._render.stats import blocks
from evalstream._render.tables import render_rich
from evalstream._stats.stats import StatsOptions, collect
from tests.helpers import ROOT, golden


def render(result, fmt: str) -> bytes:  # type: ignore[no-untyped-def]
    """The report as ``evalstream.stats`` writes it to a file (-o), in every section."""
    return stats_shown(None).rendered(result, fmt)


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    cwd = os.getcwd()
    os.chdir(ROOT)  # the report names its input as given: keep it relative
    try:
        return collect(StatsOptions(input="data/samples/cases.jsonl"))
    finally:
        os.chdir(cwd)


def test_table_golden(result) -> None:  # type: ignore[no-untyped-def]
    text = io.StringIO()
    render_rich(blocks(result), Console(file=text, width=100, force_terminal=False))
    golden("stats_cases.table.txt", text.getvalue().encode())
    assert render(result, "table") == text.getvalue().encode()


def test_markdown_golden(result) -> None:  # type: ignore[no-untyped-def]
    golden("stats_cases.md", render(result, "markdown"))


def test_json_golden(result) -> None:  # type: ignore[no-untyped-def]
    golden("stats_cases.json", render(result, "json"))


def test_bad_samples_markdown_golden() -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        result = collect(StatsOptions(input="data/samples/bad.jsonl", by=["scenario", "split"]))
    finally:
        os.chdir(cwd)
    golden("stats_bad.md", render(result, "markdown"))
