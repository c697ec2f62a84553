"""stats in a terminal: one screen by default, --full and --section for the rest; long
group names cut at the end, never two alike, with a key (tables and HTML charts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstream._cli import main
from evalstream._options import SECTIONS as OPTION_SECTIONS
from evalstream._render.names import MARK, cut_names, key_note
from evalstream._render.stats import SECTIONS
from tests.helpers import SAMPLES

CASES = str(SAMPLES / "cases.jsonl")


@given(st.lists(st.text(min_size=0, max_size=60), max_size=30), st.integers(4, 40))
def test_cut_names_are_distinct_short_and_keep_their_beginning(names: list[str],
                                                               width: int) -> None:
    shown = cut_names(names, width)
    assert set(shown) == set(names)
    assert len(set(shown.values())) == len(shown)  # never two alike
    for name, label in shown.items():
        if len(name) <= width:
            assert label == name
        else:
            assert len(label) <= width + 2 and MARK in label
            assert name.startswith(label[:label.index(MARK)])


def test_names_sharing_a_long_beginning_are_numbered_and_keyed() -> None:
    names = [f"tau2-bench telecom customer-service {x}" for x in ("a", "b")] + ["short"]
    shown = cut_names(names, 24)
    assert [shown[n] for n in names] == ["tau2-bench telecom cu…~1", "tau2-bench telecom cu…~2",
                                         "short"]
    assert key_note(shown) == ("Names cut to fit: tau2-bench telecom cu…~1 = tau2-bench "
                               "telecom customer-service a; tau2-bench telecom cu…~2 = "
                               "tau2-bench telecom customer-service b.")


def _stats(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["stats", CASES, *args]) == 0
    return capsys.readouterr().out


def test_one_screen_by_default_full_and_sections_on_request(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert OPTION_SECTIONS == SECTIONS  # the copy --help lists
    summary = _stats(capsys)
    assert len(summary.splitlines()) <= 50
    for heading in ("Groups by scenario", "Expected labels", "Checks build would write"):
        assert heading in summary
    assert "Metadata keys" not in summary and "Line size" not in summary
    assert summary.rstrip().endswith("--format markdown or json: complete).")
    assert "Not shown: overview, sizes, coverage, metadata." in summary
    full = _stats(capsys, "--full")
    for heading in ("Overview", "Metadata keys", "Line size", "Coverage", "By status"):
        assert heading in full
    assert len(full.splitlines()) > 3 * len(summary.splitlines())
    only = _stats(capsys, "--section", "metadata", "--section", "checks")
    assert "Metadata keys" in only and "Checks build would write" in only
    assert "Groups by" not in only and "Not shown" not in only
    markdown = _stats(capsys, "--format", "markdown")  # complete, as before
    assert "Metadata keys" in markdown and "Not shown" not in markdown


def test_long_group_names_in_tables_and_charts(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    groups = [f"tau2-bench telecom customer-service-{x}" for x in "abcd"]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "input": "i", "output": "o",
                                         "metadata": {"scenario": g}}) + "\n"
                             for i, g in enumerate(groups * 3)))
    assert main(["stats", str(cases), "--html", str(tmp_path / "p.html")]) == 0
    out = capsys.readouterr().out
    for i in range(1, 5):
        assert f"…~{i}" in out
    assert "Names cut to fit:" in out and groups[3] in out.replace("\n", " ").replace("  ", " ")
    page = (tmp_path / "p.html").read_text()
    labels = re.findall(r'text-anchor="end">([^<]*)</text>', page)
    chart = labels[:4]
    assert len(set(chart)) == 4 and all("…" in label for label in chart)
