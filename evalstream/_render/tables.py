"""A small neutral document model (headings, paragraphs, tables of plain values) rendered
to the terminal with rich and to markdown; ``evalstream.html`` renders the same tables.

Commands describe *what* to show once, as a list of blocks, and each output style decides
*how*. Cells hold plain values (text, counts, numbers, shares); a table's columns say how
to format them, so every style prints the same figures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:  # rich is imported only when a table is printed
    from rich.console import Console
    from rich.text import Text

@dataclass(frozen=True)
class Link:
    """A text cell that links to ``href`` where the style can (HTML, markdown); the text
    alone elsewhere. ``href`` is a relative path or None (no page to link to)."""

    text: str
    href: str | None = None

    def __str__(self) -> str:
        return self.text


Cell = str | int | float | Link | None
Kind = Literal["text", "count", "number", "share"]
MISSING = "-"


@dataclass(frozen=True)
class Column:
    """A table column: its header, how its values are formatted, and how they align.

    ``count``: an integer with thousands separators; ``number``: ``digits`` decimals
    (integral values print without them); ``share``: a fraction printed as a percentage;
    ``text``: as is. ``None`` prints as ``-`` in every kind.
    """

    name: str
    kind: Kind = "text"
    digits: int = 1

    @property
    def numeric(self) -> bool:
        return self.kind != "text"

    def format(self, value: Cell) -> str:
        """The value as this column prints it."""
        if value is None:
            return MISSING
        if self.kind == "text" or isinstance(value, (str, Link)):
            return str(value)
        if self.kind == "count":
            return f"{int(value):,}"
        if self.kind == "share":
            return f"{value * 100:.{self.digits}f}%"
        if float(value).is_integer():
            return f"{int(value):,}"
        return f"{value:,.{self.digits}f}"


@dataclass
class Table:
    """Rows of cells under named columns, with an optional title and a note below."""

    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    title: str | None = None
    note: str | None = None

    def add(self, *cells: Cell) -> None:
        """Append a row; it must have one cell per column."""
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def formatted(self) -> list[list[str]]:
        """Every row as the strings its columns print."""
        return [[c.format(v) for c, v in zip(self.columns, row, strict=True)]
                for row in self.rows]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


Block = Heading | Paragraph | Table


# -- rich ----------------------------------------------------------------------------------------
FIRST_WIDTH = 24


def _widths(table: Table, rows: list[list[str]]) -> list[int]:
    """The narrowest each column can be: figures never wrap, headers wrap only between words,
    text keeps up to 16 characters on a line, the first column (which names the row) up to
    FIRST_WIDTH: a name cut to fit (``render.names``) is never wrapped again."""
    widths = []
    for i, column in enumerate(table.columns):
        longest = max((len(row[i]) for row in rows), default=1)
        word = max((len(w) for w in column.name.split()), default=1)
        keep = FIRST_WIDTH if i == 0 else 16
        widths.append(max(word, longest if column.numeric else min(longest, keep)))
    return widths


def _fit(widths: list[int], width: int) -> list[list[int]]:
    """Column indexes of the tables a table is split into so that each fits ``width``;
    every part repeats the first column, which names the row."""
    parts: list[list[int]] = [[0]]
    used = widths[0] + 2
    for i in range(1, len(widths)):
        if used + widths[i] + 2 > width and len(parts[-1]) > 1:
            parts.append([0])
            used = widths[0] + 2
        parts[-1].append(i)
        used += widths[i] + 2
    return parts


# C0 and C1 controls other than tab and newline, and the line and paragraph separators:
# what a terminal may act on. Other characters, non-breaking spaces included, print as is.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def literal(value: str, style: str = "") -> Text:
    """``value`` as rich text printed exactly as written: never read as markup, and with
    control characters escaped (``\\u001b``) so that data cannot move the cursor, retitle the
    terminal or write to the clipboard."""
    from rich.text import Text

    return Text(_CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", value), style=style)


def render_rich(blocks: Iterable[Block], console: Console) -> None:
    """Print the blocks to a rich console, fitted to its width.

    A table too wide for the console is split into several, each repeating the first
    column; no column is dropped or cut. Text is printed literally (no rich markup), so
    values from a dataset cannot restyle the output. Colour follows the console: none
    when it is not a terminal or when ``NO_COLOR`` is set.
    """
    from rich import box
    from rich.table import Table as RichTable

    first = True
    for block in blocks:
        if isinstance(block, Heading):
            if not first:
                console.print()
            console.print(literal(block.text, style="bold cyan" if block.level > 1
                                  else "bold underline"))
        elif isinstance(block, Paragraph):
            console.print(literal(block.text))
        else:
            rows = block.formatted()
            widths = _widths(block, rows)
            natural = [max(w, len(c.name)) for w, c in zip(widths, block.columns, strict=True)]
            # Headers wrap only when the table does not fit with them on one line.
            roomy = sum(natural) + 2 * (len(natural) - 1) <= console.width
            parts = _fit(widths, console.width)
            for n, part in enumerate(parts):
                title = block.title
                if title and n:
                    title += " (continued)"
                table = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                                  title=literal(title, style="italic") if title else None,
                                  title_justify="left", collapse_padding=True)
                for i in part:
                    column = block.columns[i]
                    table.add_column(literal(column.name),
                                     justify="right" if column.numeric else "left",
                                     min_width=widths[i], overflow="fold",
                                     max_width=None if roomy or not column.numeric
                                     else widths[i])
                for row in rows:
                    table.add_row(*(literal(row[i]) for i in part))
                console.print(table)
            if block.note:
                console.print(literal(block.note, style="dim"))
        first = False


# -- markdown ------------------------------------------------------------------------------------
_MD_ESCAPES = str.maketrans({
    "\\": "\\\\", "|": "\\|", "*": "\\*", "_": "\\_", "`": "\\`", "[": "\\[", "]": "\\]",
    "~": "\\~", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " ",
})


def md_escape(text: str) -> str:
    """Text that markdown (GitHub's) shows literally, on one line, also inside a table cell."""
    return text.translate(_MD_ESCAPES)


def _md_cell(text: str, value: Cell) -> str:
    if isinstance(value, Link) and value.href:
        # Inside <...> a link target may hold spaces; `<`, `>` and line ends cannot occur in
        # it, and a `|` would end the table cell.
        target = value.href.replace("|", "%7C").replace("<", "%3C").replace(">", "%3E")
        return f"[{md_escape(text)}](<{target}>)"
    return md_escape(text)


def to_markdown(blocks: Sequence[Block]) -> str:
    """The blocks as GitHub-flavoured markdown, ending with one newline."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f"{'#' * block.level} {md_escape(block.text)}")
        elif isinstance(block, Paragraph):
            parts.append(md_escape(block.text))
        else:
            lines = []
            if block.title:
                lines += [f"**{md_escape(block.title)}**", ""]
            lines.append("| " + " | ".join(md_escape(c.name) for c in block.columns) + " |")
            lines.append("|" + "|".join("---:" if c.numeric else "---"
                                        for c in block.columns) + "|")
            for row, cells in zip(block.formatted(), block.rows, strict=True):
                lines.append("| " + " | ".join(_md_cell(text, value)
                                               for text, value in zip(row, cells, strict=True))
                             + " |")
            if block.note:
                lines += ["", md_escape(block.note)]
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def to_text(blocks: Sequence[Block], width: int) -> str:
    """Blocks as plain text (no colour, no terminal codes), tables fitted to ``width``."""
    import io

    from evalstream._render.console import terminal

    text = io.StringIO()
    render_rich(blocks, terminal(text, width=width, force_terminal=False, no_color=True,
                                highlight=False, emoji=False))
    return text.getvalue()


def print_blocks(blocks: Sequence[Block], file: TextIO) -> None:
    """Blocks printed to a terminal (fitted to its width; no colour unless it is one)."""
    from evalstream._render.console import terminal

    render_rich(blocks, terminal(file, highlight=False, emoji=False))


def render_format(blocks: Sequence[Block], fmt: str, width: int) -> bytes:
    """Blocks as ``markdown`` or as plain-text tables (``table``) ``width`` wide."""
    return (to_markdown(blocks) if fmt == "markdown" else to_text(blocks, width)).encode()


def p_value(p: float) -> str:
    """A p-value as people read it: four decimals, or ``< 0.0001`` (never ``0.0000``)."""
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"
