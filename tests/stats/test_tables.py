"""The neutral table model: formatting, markdown escaping, rich fitted to the width."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from evalstream._render.tables import (
    Column,
    Heading,
    Paragraph,
    Table,
    md_escape,
    render_rich,
    to_markdown,
)


@pytest.mark.parametrize(("kind", "value", "text"), [
    ("count", 1234567, "1,234,567"),
    ("number", 12.345, "12.3"),
    ("number", 12.0, "12"),
    ("number", 1234.56, "1,234.6"),
    ("share", 0.2196, "22.0%"),
    ("share", 1, "100.0%"),
    ("text", "booking", "booking"),
    ("count", None, "-"),
    ("share", None, "-"),
])
def test_column_formats(kind: str, value: object, text: str) -> None:
    assert Column("x", kind).format(value) == text  # type: ignore[arg-type]


def test_a_row_must_fill_every_column() -> None:
    t = Table([Column("a"), Column("b", "count")])
    with pytest.raises(ValueError, match="a row of 1 cells for 2 columns"):
        t.add("only one")


def test_markdown_escapes_what_a_dataset_could_inject() -> None:
    hostile = "a|b *bold* _it_ `code` [link](x) <script>\nnext"
    assert md_escape(hostile) == ("a\\|b \\*bold\\* \\_it\\_ \\`code\\` \\[link\\](x) "
                                  "&lt;script&gt; next")
    t = Table([Column("group"), Column("cases", "count")])
    t.add(hostile, 3)
    md = to_markdown([Heading("Title", 1), Paragraph("p"), t])
    lines = md.splitlines()
    assert lines[0] == "# Title" and lines[2] == "p"
    assert lines[4:6] == ["| group | cases |", "|---|---:|"]
    assert lines[6].count(" | ") == 1  # one cell separator: the pipe in the value is escaped
    assert md.endswith("| 3 |\n")


def _render(blocks: list, width: int) -> str:  # type: ignore[type-arg]
    out = io.StringIO()
    render_rich(blocks, Console(file=out, width=width, force_terminal=False))
    return out.getvalue()


def test_rich_splits_a_wide_table_and_drops_nothing() -> None:
    columns = [Column("group")] + [Column(f"figure {i}", "count") for i in range(12)]
    t = Table(columns, title="Wide")
    t.add("medical-triage", *(1_000_000 + i for i in range(12)))
    text = _render([t], 60)
    assert max(len(line) for line in text.splitlines()) <= 60
    for i in range(12):
        assert f"{1_000_000 + i:,}" in text
    assert text.count("medical-triage") >= 2  # each part repeats the row's name
    assert "Wide (continued)" in text
    assert _render([t], 300).count("medical-triage") == 1


def test_rich_prints_dataset_text_literally() -> None:
    t = Table([Column("group"), Column("n", "count")])
    t.add("[bold red]not markup[/]", 1)
    text = _render([Paragraph("[link=x]p[/link]"), t], 80)
    assert "[bold red]not markup[/]" in text and "[link=x]p[/link]" in text


def test_no_colour_without_a_terminal_or_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    t = Table([Column("group"), Column("n", "count")], title="T", note="note")
    blocks = [Heading("H"), t]
    assert "\x1b[" not in _render(blocks, 80)
    colour = re.compile(r"\x1b\[(?:[0-9;]*;)?(3[0-8]|9[0-7])[;m]")
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    render_rich(blocks, Console(file=out, width=80, force_terminal=True, color_system="standard"))
    assert colour.search(out.getvalue())  # a terminal gets a coloured heading...
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    render_rich(blocks, Console(file=out, width=80, force_terminal=True, color_system="standard"))
    assert "\x1b[1m" in out.getvalue() and not colour.search(out.getvalue())  # ...not here
