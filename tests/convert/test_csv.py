"""CSV and TSV read row by row (issue 23, item 20): one ragged row, one row that is not
UTF-8 or one quoted cell with text after its closing quote is a reject with its row number,
and the other rows are read. The reader is checked against Polars (well-formed tables of any
text, as Polars writes them) and against Python's csv module (ragged tables)."""

from __future__ import annotations

import csv
import gzip
import io
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._convert import tables
from evalstream.errors import InputError
from tests.convert.support import convert, validate_accepts

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _read(data: bytes, separator: str = ",", quoting: bool = True,
          max_line_bytes: int = 1 << 20) -> tuple[list[str], list[Any]]:
    columns, rows = tables.csv_table(io.BytesIO(data), "t.csv", separator, quoting,
                                     max_line_bytes)
    return columns, list(rows)


def test_a_ragged_row_is_a_reject_with_its_row_and_line(tmp_path: Path) -> None:
    # Issue 23: one row with a cell too many stopped the whole file (exit 2, no row number).
    src = tmp_path / "t.csv"
    src.write_bytes(b'q,a\nx,y\n"multi\nline",z\nx,y,extra\nshort\nu,v\n')
    result = convert(tmp_path, src, maps=["input=q,output=a"])
    assert [c["input"] for c in result.cases] == ["x", "multi\nline", "u"]
    assert [(r["row"], r["column"], r["error"]) for r in result.rejects] == [
        (3, None, "Row 3 (line 5) has 3 cells where the header has 2 columns; each row needs "
                  "one cell a column (quote a cell that holds the separator)."),
        (4, None, "Row 4 (line 6) has 1 cell where the header has 2 columns; each row needs "
                  "one cell a column (quote a cell that holds the separator).")]
    assert result.rejects[0]["raw"] == "x,y,extra"
    assert result.report.rejected_by_kind == {"ragged row": 2}
    validate_accepts(result.out)


def test_a_row_that_is_not_utf8_is_a_reject_naming_its_column(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_bytes(b"q,a\nx,y\ncaf\xe9,ok\nu,v\n")
    result = convert(tmp_path, src, maps=["input=q,output=a"])
    assert [c["input"] for c in result.cases] == ["x", "u"]
    [reject] = result.rejects
    assert (reject["row"], reject["column"]) == (2, "q")
    assert reject["error"].startswith("Column 'q' of row 2 (line 3) is not UTF-8 text (unexpected "
                                      "end of data at byte 3 of the cell)")
    assert result.report.rejected_by_kind == {"invalid UTF-8": 1}


def test_text_after_a_closing_quote_is_a_reject(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_bytes(b'q,a\n"x"y,z\nu,v\n')
    result = convert(tmp_path, src, maps=["input=q,output=a"])
    [reject] = result.rejects
    assert reject["row"] == 1 and reject["error"].startswith(
        "Row 1 (line 2) has text after the closing quote of cell 1")
    assert [c["input"] for c in result.cases] == ["u"]


@pytest.mark.parametrize(("data", "message"), [
    (b'q,a\n"unclosed,x\ny,z\n', "the quoted cell opened in the row starting on line 2 is "
                                  "never closed"),
    (b"q,\xff\nx,y\n", r"its header \(line 1\) is not UTF-8 text"),
    (b'"q"x,a\nx,y\n', r"its header \(line 1\) has text after the closing quote"),
    (b"q,a\n" + b"x" * 100 + b",y\n", "line 2 is 102 bytes, over --max-line-bytes"),
    (b'q,a\n"' + b"x\n" * 60 + b'",y\n', "the row starting on line 2 runs past --max-line-bytes"),
])
def test_what_stops_the_file(data: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message):
        _read(data, max_line_bytes=100)


def test_compressed_and_piped_csv_are_read_as_streams(tmp_path: Path) -> None:
    # No temporary copy for Polars any more: .gz and stdin are read as they stream.
    data = b'q,a\nx,"y\nz"\nu,v\n'
    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(data))
    (tmp_path / "t.csv").write_bytes(data)
    (tmp_path / "a").mkdir()
    plain = convert(tmp_path / "a", tmp_path / "t.csv", maps=["input=q,output=a"])
    packed = convert(tmp_path, tmp_path / "t.csv.gz", maps=["input=q,output=a"])
    assert plain.cases == packed.cases and len(packed.cases) == 2


def _frame(rows: list[list[str | None]], width: int) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=[f"c{i}" for i in range(width)], orient="row")


@pytest.mark.slow
@SETTINGS
@given(st.integers(1, 4).flatmap(lambda w: st.tuples(
           st.just(w), st.lists(st.lists(st.none() | TEXT, min_size=w, max_size=w),
                                max_size=6))),
       st.sampled_from(["necessary", "always", "non_numeric"]),
       st.sampled_from([",", "\t", ";", "|"]), st.booleans())
def test_the_reader_reads_what_polars_writes_as_polars_reads_it(
        table: tuple[int, list[list[str | None]]], quote_style: str, separator: str,
        crlf: bool) -> None:
    width, rows = table
    frame = _frame(rows, width)
    data = frame.write_csv(separator=separator, quote_style=quote_style,  # type: ignore[arg-type]
                           line_terminator="\r\n" if crlf else "\n").encode()
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        f.write(data)
        f.flush()
        expected = pl.read_csv(f.name, separator=separator, infer_schema=False,
                               raise_if_empty=False)
    columns, got = _read(data, separator)
    assert columns == expected.columns
    read = [None if r.blank else r.values for r in got]
    assert [r.problem for r in got] == [None] * len(got)
    wanted = [None if all(v is None for v in row.values()) else row
              for row in expected.iter_rows(named=True)]
    assert read == wanted


@pytest.mark.slow
@SETTINGS
@given(st.lists(TEXT, min_size=1, max_size=4),
       st.lists(st.lists(TEXT, min_size=1, max_size=6), max_size=8), st.sampled_from([",", "\t"]))
def test_ragged_tables_against_the_csv_module(header: list[str], rows: list[list[str]],
                                              separator: str) -> None:
    # Every cell quoted (QUOTE_ALL), so an empty cell is "" both ways; a row of another
    # width is a reject with its number, the others are the csv module's cells.
    text = io.StringIO(newline="")
    csv.writer(text, delimiter=separator, quoting=csv.QUOTE_ALL, lineterminator="\n") \
        .writerows([header, *rows])
    columns, got = _read(text.getvalue().encode(), separator)
    assert len(got) == len(rows)
    for number, (row, item) in enumerate(zip(rows, got, strict=True), 1):
        assert item.number == number
        if len(row) == len(header):
            assert item.problem is None and list(item.values.values()) == row
        else:
            assert item.values is None and item.problem.kind == "ragged row"
            assert item.problem.sentence.startswith(f"Row {number} ")


# Lines of quotes, separators, CRs, NULs, spaces and text: every case of both rules.
LINE = st.text(st.sampled_from(['"', '"', ",", "\t", "\r", "\x00", " ", "a", "é", "\x85"]),
               max_size=14)


@SETTINGS
@given(LINE, st.sampled_from([",", "\t"]))
def test_a_line_the_csv_module_reads_is_read_as_the_rules_read_it(line: str,
                                                                   separator: str) -> None:
    """The csv module (in C) reads the usual quoted row: only where its cells are exactly
    those of the reader's own rules (a quote opens a cell only at its start, `""` inside is
    a quote, an empty cell is null, a quoted empty one text, text after a closing quote is
    a problem). Anything else it must leave to them."""
    data = line.encode()
    got = tables._quoted_line(separator)(data)
    if got is None:
        return
    cells, problem = tables._cut(data, separator.encode(), True)
    assert problem is None and [c.decode() for c in cells] == got  # type: ignore[union-attr]


def test_usual_rows_with_and_without_quotes_read_as_before() -> None:
    # Each through its fast way (one line, cut in C) and beside rows that need the rules.
    data = (b'q,a,c\nplain,text,here\n"quoted, with comma","a ""b"" c",x\n'
            b'"",,z\ncaf\xc3\xa9,"na\xc3\xafve",\xf0\x9f\x98\x80\n"multi\nline",y,z\n'
            b'"open"after,y,z\n\r\n')
    columns, rows = _read(data)
    assert columns == ["q", "a", "c"]
    assert [(r.values, r.problem and r.problem.kind, r.blank) for r in rows] == [
        ({"q": "plain", "a": "text", "c": "here"}, None, False),
        ({"q": "quoted, with comma", "a": 'a "b" c', "c": "x"}, None, False),
        ({"q": "", "a": None, "c": "z"}, None, False),
        ({"q": "café", "a": "naïve", "c": "😀"}, None, False),
        ({"q": "multi\nline", "a": "y", "c": "z"}, None, False),
        (None, "malformed CSV", False),
        (None, None, True)]
