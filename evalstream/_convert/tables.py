"""Rows from tables and JSON, in bounded memory and input order.

Parquet is read by Polars, as lazy scans collected in batches of ``BATCH_ROWS`` rows
(Polars' streaming engine): memory holds one batch, never the file. CSV and TSV are read
record by record from the one line reader (``files.lines``), each cell as text (no type
inference: a CSV holds text, and ``007`` must stay ``007``), so a bad row is one reject.
JSONL is read by evalstream's one line loop (``cases.reading``) with msgspec, one
line at a time: Polars infers one schema for all lines and stops at the first line that
differs, where each line here is its own row. A JSON array is streamed element by element
with ijson.
"""

from __future__ import annotations

import csv
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import msgspec

from evalstream._cases.reading import Problem, RecordKind, RecordReader
from evalstream._cases.rejects import Reject, explain, long_line_reject, raw_text
from evalstream._convert import depth
from evalstream._convert.rows import Row, RowProblem, type_word, values_row
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES, Chunk, LongLine, read_chunks
from evalstream._files.sniff import head_of
from evalstream.errors import InputError, WrongFileError

BATCH_ROWS = 4_096  # rows a batch: measured flat memory at 1 GB with little cost in speed
PY_ROWS = 512  # rows of a batch in Python objects at once (iter_rows' own buffer)


def polars_rows(frames: Iterator[Any], first: int = 1) -> Iterator[Row]:
    """Rows of a sequence of Polars data frames, numbered from ``first``."""
    number = first - 1
    for frame in frames:
        columns = frame.columns
        # Each column to a Python list (in Rust), then a dict a row: the same values as
        # iter_rows(named=True), measured 2.1-2.5 us a row against its 2.7-4.4. A slice of
        # PY_ROWS rows at a time (as iter_rows buffers them), so that wide rows hold a
        # slice's values in Python, not a batch's.
        for start in range(0, frame.height, PY_ROWS):
            part = frame.slice(start, PY_ROWS)
            lists = [part.get_column(c).to_list() for c in columns]
            rows = zip(*lists, strict=True) if lists else ()
            for values in (dict(zip(columns, row, strict=True)) for row in rows):
                number += 1
                # Blank when every value is null: most rows hold none, found by one scan in C.
                yield values_row((number, values, None, None in values.values()
                                  and all(v is None for v in values.values()), b""))


def batches(scan: Any, name: str) -> Iterator[Any]:
    """The batches of a lazy scan; a Polars error while reading is an InputError."""
    import polars as pl

    try:
        yield from scan.collect_batches(chunk_size=BATCH_ROWS)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"cannot read {name}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().split("\n")[0][:500]


def scan_columns(scan: Any, name: str) -> list[str]:
    """The column names of a lazy scan (reads only the header or the schema), after
    ``check_nesting``."""
    import polars as pl

    try:
        schema = scan.collect_schema()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"cannot read {name}: {_first_line(exc)}") from exc
    check_nesting(schema, name)
    return list(schema.names())


def check_nesting(schema: Any, name: str) -> None:
    """An InputError when a column's type nests deeper than ``depth.MAX_DEPTH`` levels (the
    row being level 1), before any row is read: Polars crashed with a stack overflow
    reading a Parquet list nested ~370 levels, so such a file is refused, not read."""
    for column, dtype in schema.items():
        levels = 1 + _type_nesting(dtype)
        if levels > depth.MAX_DEPTH:
            raise InputError(f"cannot read {name}: column {column!r} holds values nested "
                             f"{levels:,} levels deep; convert reads values nested at most "
                             f"{depth.MAX_DEPTH:,} levels deep. Flatten the column, or store it "
                             "as JSON text (and --parse-json it).")


def _type_nesting(dtype: Any) -> int:
    """How many lists, arrays and structs a Polars type nests (a text column: 0)."""
    deepest, todo = 0, [(dtype, 0)]
    while todo:  # iterative: the type may nest deeper than Python's stack
        inner_type, level = todo.pop()
        deepest = max(deepest, level)
        inner = getattr(inner_type, "inner", None)  # List, Array
        if inner is not None:
            todo.append((inner, level + 1))
        todo.extend((f.dtype, level + 1) for f in getattr(inner_type, "fields", None) or ())
    return deepest


# -- CSV and TSV -----------------------------------------------------------------------------------
# A quoted cell's text: up to its closing quote (a `"` alone) or the end of the line.
_QUOTED = re.compile(rb'[^"]*(?:""[^"]*)*')  # unrolled: 5x faster than (?:[^"]|"")*


def csv_table(stream: BinaryIO, name: str, separator: str, quoting: bool = True,
              max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> tuple[list[str], Iterator[Row]]:
    """The header's column names and the rows of a CSV or TSV stream. Without ``quoting``,
    quote characters are text like any other (TSV files written without quoting).

    Read here rather than by Polars, so that one bad row is a reject with its row number
    and the rest is read: Polars stopped the whole file at a row with a cell too many, or
    bytes that are not UTF-8, naming no row. The rules are RFC 4180's, as Polars read them:
    a cell that starts with a quote runs to its closing quote (``""`` is a quote, newlines
    are text); a quote anywhere else is text; an empty cell is null, a quoted empty cell
    the empty string; a CR before a row's newline is dropped; a repeated column name gets
    Polars' ``_duplicated_N`` suffix."""
    records = _records(read_chunks(stream, max_line_bytes), name, separator.encode(), quoting,
                       max_line_bytes)
    header = next(records, None)
    if header is None:
        return [], iter(())
    line, raw, cells, _, problem = header
    if cells is None:
        cells, problem = _cut(raw, separator.encode(), quoting)
    if problem is not None:
        raise InputError(f"cannot read {name}: its header (line {line}) {problem}.")
    try:
        names = [(c or b"").decode() for c in cells]
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {name}: its header (line {line}) is not UTF-8 text "
                         f"({exc.reason} at byte {exc.start} of a column name).") from None
    seen: dict[str, int] = {}
    columns = []
    for column in names:
        repeats = seen.get(column, 0)
        seen[column] = repeats + 1
        columns.append(column if not repeats else f"{column}_duplicated_{repeats - 1}")
    return columns, _csv_rows(records, columns, separator, quoting)


# A record as _records yields it: its first line, its bytes, its cells (bytes; None for an
# empty unquoted cell) or, for a record on one line, None and the cells as text when the csv
# module read them (else None: cut the line), and what is wrong with it (None, or a clause).
CsvRecord = tuple[int, bytes, "list[bytes | None] | None", "list[str] | None", "str | None"]


def _csv_rows(records: Iterator[CsvRecord], columns: list[str], separator: str,
              quoting: bool) -> Iterator[Row]:
    width = len(columns)
    sep = separator.encode()
    for number, (line, raw, cells, texts, problem) in enumerate(records, 1):
        if cells is None:
            # A record on one line (the usual), decoded once and cut in C: by str.split
            # without quotes (the separator is one ASCII byte: never inside a UTF-8
            # character), else by the csv module. Measured 1.6 us a row less than a decode
            # per cell, and 4 us less than the cells found in Python.
            if texts is None:
                try:
                    texts = raw.removesuffix(b"\r").decode().split(separator)
                except UnicodeDecodeError:
                    texts = None
            if texts is not None and len(texts) == width:
                if "" in texts:  # an empty cell is null
                    yield values_row((number, {c: v or None for c, v in
                                               zip(columns, texts, strict=True)}, None,
                                      not any(texts), b""))
                else:
                    yield values_row((number, dict(zip(columns, texts, strict=True)), None,
                                      False, b""))
                continue
            cells, problem = _cut(raw, sep, quoting)
        if problem is not None:
            yield Row(number, None, RowProblem(f"Row {number} (line {line}) {problem}.",
                                               kind="malformed CSV"), raw=raw)
        elif len(cells) != width:
            if raw in (b"", b"\r"):  # an empty line: a row of empty cells, as Polars read it
                yield Row(number, None, blank=True)
                continue
            yield Row(number, None, RowProblem(
                f"Row {number} (line {line}) has {len(cells)} cell{'s' * (len(cells) != 1)} "
                f"where the header has {width} column{'s' * (width != 1)}; each row needs one "
                "cell a column (quote a cell that holds the separator).", kind="ragged row"),
                raw=raw)
        else:
            try:
                values = {c: None if v is None else v.decode()
                          for c, v in zip(columns, cells, strict=True)}
            except UnicodeDecodeError:
                yield _not_utf8(number, line, raw, columns, cells)
                continue
            yield values_row((number, values, None, all(v is None for v in cells), b""))


def _not_utf8(number: int, line: int, raw: bytes, columns: list[str],
              cells: list[bytes | None]) -> Row:
    for column, cell in zip(columns, cells, strict=True):
        try:
            (cell or b"").decode()
        except UnicodeDecodeError as exc:
            return Row(number, None, RowProblem(
                f"Column {column!r} of row {number} (line {line}) is not UTF-8 text ({exc.reason} "
                f"at byte {exc.start} of the cell); tables must be UTF-8: convert the file "
                "(e.g. `iconv -f LATIN1 -t UTF-8`).", column, kind="invalid UTF-8"), raw=raw)
    raise AssertionError("every cell decodes")  # only called when one does not


def _cut(raw: bytes, sep: bytes, quoting: bool) -> tuple[list[bytes | None], str | None]:
    """The cells of a record on one line, found by the rules of ``_cells``, and its
    problem."""
    if not quoting or b'"' not in raw:
        return [c or None for c in raw.removesuffix(b"\r").split(sep)], None
    cells: list[bytes | None] = []
    open_cell, problem = _cells(raw, sep, cells, None, None)
    assert open_cell is None, "a record on one line closes its quotes"
    return cells, problem


class _OneLine:
    """The lines a ``csv.reader`` reads, one at a time: it asks for another only when a
    quoted cell stays open, and then gets none (the record is read by ``_cells``)."""

    __slots__ = ("line",)

    def __init__(self) -> None:
        self.line: str | None = None

    def __iter__(self) -> _OneLine:
        return self

    def __next__(self) -> str:
        line = self.line
        if line is None:
            raise StopIteration
        self.line = None
        return line


def _quoted_line(separator: str) -> Callable[[bytes], list[str] | None]:
    """A reader of one line with quotes: its cells when the csv module (in C) reads exactly
    the cells ``_cells`` would, else None. The two rules agree on every line both accept
    (tests/convert/test_csv.py); the csv module cannot tell a quoted empty cell (text) from
    an empty one (null), refuses text after a closing quote and a quote left open, and reads
    a CR as a line end, so a line with an empty cell, a CR, or that it refuses or that is
    not UTF-8 goes to ``_cells``."""
    feed = _OneLine()
    reader = csv.reader(feed, delimiter=separator, strict=True)

    def read(line: bytes) -> list[str] | None:
        try:
            text = line.removesuffix(b"\r").decode()
        except UnicodeDecodeError:
            return None
        if "\r" in text:
            return None
        feed.line = text
        try:
            cells = next(reader)
        except (csv.Error, StopIteration):
            feed.line = None
            return None
        return cells if cells and "" not in cells else None  # (an empty line reads as [])

    return read


def _records(items: Iterator[Chunk | LongLine], name: str, sep: bytes, quoting: bool,
             limit: int) -> Iterator[CsvRecord]:
    """Each record of the stream (``CsvRecord``), in order."""
    quoted_line = _quoted_line(sep.decode())
    cells: list[bytes | None] = []
    lines: list[bytes] = []
    open_cell: list[bytes] | None = None  # the lines of a quoted cell not closed yet
    problem: str | None = None
    first = size = 0
    for item in items:
        if type(item) is LongLine:
            raise InputError(f"cannot read {name}: line {item.line} is {item.size:,} bytes, over "
                             f"--max-line-bytes ({limit:,}); raise it to read this table (a "
                             "CSV row cannot be skipped without reading it).")
        assert type(item) is Chunk
        for number, line in enumerate(item.lines, item.line):
            if not lines and len(line) < limit:
                if not quoting or b'"' not in line:
                    yield number, line, None, None, None  # the usual record: its reader cuts it
                    continue
                texts = quoted_line(line)
                if texts is not None:
                    yield number, line, None, texts, None
                    continue
            if not lines:
                first = number
            lines.append(line)
            size += len(line) + 1
            if size > limit:
                raise InputError(f"cannot read {name}: the row starting on line {first} runs "
                                 f"past --max-line-bytes ({limit:,} bytes): a quoted cell may "
                                 "be unclosed (a quote in a cell is written `\"\"`).")
            if open_cell is None and (not quoting or b'"' not in line):
                # The usual line: a whole record without quotes, cut in C.
                cells.extend(c or None for c in line.removesuffix(b"\r").split(sep))
            else:
                open_cell, problem = _cells(line, sep, cells, open_cell, problem)
                if open_cell is not None:
                    continue
            yield first, b"\n".join(lines), cells, None, problem
            cells, lines, problem, size = [], [], None, 0
    if lines:
        raise InputError(f"cannot read {name}: the quoted cell opened in the row starting on "
                         f"line {first} is never closed; the file may be cut short, or a quote "
                         "inside a quoted cell is not doubled (`\"\"`).")


def _cells(line: bytes, sep: bytes, cells: list[bytes | None], open_cell: list[bytes] | None,
           problem: str | None) -> tuple[list[bytes] | None, str | None]:
    """Add the cells ``line`` completes to ``cells``; return the lines of a quoted cell it
    leaves open (None when the record ends here) and the record's problem."""
    pos = 0
    if open_cell is not None:  # inside a quoted cell since an earlier line
        close = _QUOTED.match(line).end()  # type: ignore[union-attr]
        if close == len(line):
            return [*open_cell, line], problem
        cells.append(b"\n".join([*open_cell, line[:close]]).replace(b'""', b'"'))
        pos = line.find(sep, close + 1)
        after = line[close + 1:] if pos < 0 else line[close + 1:pos]
        if after and after != b"\r":
            problem = problem or _text_after_quote(len(cells))
        if pos < 0:
            return None, problem
    else:
        line = sep + line  # every cell is matched with the separator before it
    # One regex call finds every cell: (quote, quoted text, closing quote, text after the
    # closing quote, unquoted text); the per-cell work left in Python is a few steps.
    found = _cell_pattern(sep).findall(line, pos)
    last = len(found) - 1
    for i, (quote, text, closed, after, plain) in enumerate(found):
        if not quote:
            cells.append((plain.removesuffix(b"\r") if i == last else plain) or None)
        elif not closed:  # the quoted cell goes on after this line (it is the last)
            return [text], problem
        else:
            cells.append(text.replace(b'""', b'"'))
            if after and not (i == last and after == b"\r"):
                problem = problem or _text_after_quote(len(cells))
    return None, problem


@functools.cache
def _cell_pattern(sep: bytes) -> re.Pattern[bytes]:
    s = re.escape(sep)
    return re.compile(s + rb'(?:(")([^"]*(?:""[^"]*)*)(")?([^' + s + rb']*)|([^' + s + rb']*))')


def _text_after_quote(cell: int) -> str:
    return (f"has text after the closing quote of cell {cell} (a quoted cell ends at its "
            "closing quote; a quote inside it is written `\"\"`)")


def parquet_scan(paths: str | list[str]) -> Any:
    import polars as pl

    return pl.scan_parquet(paths)


# -- JSON lines ------------------------------------------------------------------------------------
# A line that is an object of ``depth.Shallow`` values nests three levels at most: it needs no
# depth bound (see there).
_Shallow = dict[str, depth.Shallow]


class _ObjectLines:
    """How ``convert`` reads JSONL rows through the one line loop (``cases.reading``): any
    JSON object nested at most ``depth.MAX_DEPTH`` levels is a row; the problem of the
    last reject is kept for the row."""

    def __init__(self) -> None:
        self.last_kind = ""
        self.last_column: str | None = None  # the column of the last reject, when known
        # Deeper lines, not objects, not JSON: read as any object, its errors as ever.
        self._read = depth.ShallowFirst(msgspec.json.Decoder(_Shallow).decode,
                                        msgspec.json.Decoder(dict[str, Any]).decode)
        self.kind = RecordKind(decode=self._read, reject=self._reject,
                               too_long=self._too_long, check=self._check)

    def _check(self, value: dict[str, Any], line_no: int, line: bytes) -> Problem | None:
        if value is self._read.last:  # read as _Shallow: three levels at most
            return None
        # A line that opens fewer arrays and objects than the limit cannot nest deeper (found
        # in C, where a walk is Python).
        if not depth.may_be_deeper(line):
            return None
        path = depth.deep_path(value)
        return None if path is None else self._deep(line_no, 0, line, path)  # offset: reader's

    def _deep(self, line_no: int, offset: int, line: bytes, path: depth.Path) -> Problem:
        # The same problem as a JSON array's element nested as deep (json_array_rows).
        problem = depth.row_problem(path)
        self.last_kind, self.last_column = problem.kind, problem.column
        return Reject(line_no, offset, None, None, problem.sentence, raw_text(line)), \
            self.last_kind

    def _reject(self, line_no: int, offset: int, line: bytes, exc: BaseException
                ) -> tuple[Reject, str]:
        if isinstance(exc, RecursionError):
            return self._deep(line_no, offset, line, depth.path_in(line))
        self.last_column = None
        if isinstance(exc, msgspec.ValidationError) and _syntax_ok(line):
            value = msgspec.json.decode(line)
            self.last_kind = "not an object"
            return Reject(line_no, offset, None, "$", f"The line is {type_word(value)}, not a "
                          "JSON object; each line must be one object.", raw_text(line)), \
                self.last_kind
        path, sentence = explain(exc, line)
        self.last_kind = "malformed JSON"
        return Reject(line_no, offset, None, path, _as_row(sentence), raw_text(line)), \
            self.last_kind

    def _too_long(self, item: LongLine, max_line_bytes: int) -> Reject:
        self.last_kind, self.last_column = "line too long", None
        return long_line_reject(item, max_line_bytes)


def _syntax_ok(line: bytes) -> bool:
    try:
        msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def jsonl_rows(stream: BinaryIO, max_line_bytes: int) -> Iterator[Row]:
    """One row a line, read by the shared line loop: a blank line is a blank row; a line
    that is not a JSON object is a row with its problem (``validate``'s sentence for
    malformed JSON)."""
    lines = _ObjectLines()
    reader = RecordReader(lines.kind, max_line_bytes)
    seen = 0  # the reader yields every line but blanks: the gaps are the blank lines
    for item in reader.read(read_chunks(stream, max_line_bytes)):
        number = item.line if isinstance(item, Reject) else item[0]
        while seen + 1 < number:
            seen += 1
            yield Row(seen, None, blank=True)
        seen = number
        if isinstance(item, Reject):
            yield Row(number, None, RowProblem(item.error, lines.last_column, item.path,
                                               kind=lines.last_kind), raw=item.raw.encode())
        else:
            yield values_row((number, item[3], None, False, b""))
    while seen < reader.counts.lines:
        seen += 1
        yield Row(seen, None, blank=True)


def _as_row(sentence: str) -> str:
    # validate's sentences speak of cases; here a line is a row of the source.
    return sentence.replace("each case must be", "each line must be")


def json_array_rows(stream: BinaryIO, name: str) -> Iterator[Row]:
    """The elements of a top-level JSON array, one row each (1-based element numbers), each
    built from ijson's parse events and held to ``depth.MAX_DEPTH`` as a JSONL line is."""
    import ijson

    head, stream = head_of(stream, 1 << 12)
    start = head.lstrip()[:1]
    if start != b"[":
        what = "an object" if start == b"{" else "not a JSON array"
        raise WrongFileError(f"{name} is {what}; --from json reads a top-level array of row "
                             "objects (for a list under a key: `jq -c '.KEY[]' FILE` and "
                             "--from jsonl).")
    number = 0
    events = ijson.basic_parse(stream, use_float=True)
    try:
        next(events)  # the array's start
        for value in depth.elements(events):
            number += 1
            if isinstance(value, depth.Deep):
                yield Row(number, None, depth.row_problem(value.path),
                          raw=msgspec.json.encode(value.partial))
            elif isinstance(value, dict):
                yield Row(number, value)
            else:
                yield Row(number, None, RowProblem(
                    f"Element {number} is {type_word(value)}, not an object; each element of "
                    "the array must be one row object.", None, "$", kind="not an object"))
        for _ in events:  # text after the array: ijson says it is not JSON
            pass
    except ijson.JSONError as exc:
        raise InputError(f"cannot read {name} as a JSON array after element {number}: "
                         f"{_first_line(exc)}") from exc
