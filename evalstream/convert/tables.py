"""Rows from tables and JSON, in bounded memory and input order.

CSV, TSV and Parquet are read by Polars, as lazy scans collected in batches of
``BATCH_ROWS`` rows (Polars' streaming engine): memory holds one batch, never the file.
CSV cells are read as text (no type inference: a CSV holds text, and ``007`` must stay
``007``). JSONL is read by evalstream's one line loop (``cases.reading``) with msgspec, one
line at a time: Polars infers one schema for all lines and stops at the first line that
differs, where each line here is its own row. A JSON array is streamed element by element
with ijson.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO

import msgspec

from evalstream.cases.reading import Problem, RecordKind, RecordReader
from evalstream.cases.rejects import Reject, explain, long_line_reject, raw_text
from evalstream.convert import depth
from evalstream.convert.rows import Row, RowProblem, type_word
from evalstream.errors import InputError, WrongFileError
from evalstream.files.lines import LongLine, open_input, read_chunks
from evalstream.files.sniff import head_of

BATCH_ROWS = 4_096  # rows a batch: measured flat memory at 1 GB with little cost in speed


def polars_rows(frames: Iterator[Any], first: int = 1) -> Iterator[Row]:
    """Rows of a sequence of Polars data frames, numbered from ``first``."""
    number = first - 1
    for frame in frames:
        for values in frame.iter_rows(named=True):
            number += 1
            yield Row(number, values, blank=all(v is None for v in values.values()))


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


@contextlib.contextmanager
def plain_file(path: str) -> Iterator[str]:
    """A path Polars can scan: ``path`` itself, or (for stdin and ``.gz``/``.zst``) a
    temporary copy of the decompressed bytes, removed afterwards. Polars would decompress a
    compressed CSV whole in memory; the copy keeps memory flat at the cost of disk."""
    if path != "-" and not path.lower().endswith((".gz", ".zst")):
        yield path
        return
    fd, tmp = tempfile.mkstemp(prefix="evalstream-convert-", suffix=".csv")
    try:
        with os.fdopen(fd, "wb") as out:
            stream = open_input(path)
            try:
                shutil.copyfileobj(stream, out, 1 << 20)
            except (OSError, EOFError) as exc:
                raise InputError(f"cannot read {path}: {exc}") from exc
            finally:
                if path != "-":
                    stream.close()
        yield tmp
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def csv_scan(path: str, separator: str, quoting: bool = True) -> Any:
    """A lazy CSV scan with every column read as text; without ``quoting``, quote
    characters are text like any other (TSV files written without quoting)."""
    import polars as pl

    return pl.scan_csv(path, separator=separator, infer_schema=False, has_header=True,
                       quote_char='"' if quoting else None, encoding="utf8",
                       raise_if_empty=False)


def parquet_scan(paths: str | list[str]) -> Any:
    import polars as pl

    return pl.scan_parquet(paths)


# -- JSON lines ------------------------------------------------------------------------------------
class _ObjectLines:
    """How ``convert`` reads JSONL rows through the one line loop (``cases.reading``): any
    JSON object nested at most ``depth.MAX_DEPTH`` levels is a row; the problem of the
    last reject is kept for the row."""

    def __init__(self) -> None:
        self.last_kind = ""
        self.last_column: str | None = None  # the column of the last reject, when known
        self.kind = RecordKind(decode=msgspec.json.Decoder(dict[str, Any]).decode,
                               reject=self._reject, too_long=self._too_long, check=self._check)

    def _check(self, value: dict[str, Any], line_no: int, line: bytes) -> Problem | None:
        # A line with fewer opening brackets than the limit cannot nest deeper (a count in C,
        # where a walk is Python).
        if len(line) <= 2 * depth.MAX_DEPTH or \
                line.count(b"[") + line.count(b"{") <= depth.MAX_DEPTH:
            return None
        path = depth.deep_path(value)
        return None if path is None else self._deep(line_no, line, path)

    def _deep(self, line_no: int, line: bytes, path: depth.Path) -> Problem:
        # The same problem as a JSON array's element nested as deep (json_array_rows).
        problem = depth.row_problem(path)
        self.last_kind, self.last_column = problem.kind, problem.column
        return Reject(line_no, 0, None, None, problem.sentence, raw_text(line)), self.last_kind

    def _reject(self, line_no: int, offset: int, line: bytes, exc: BaseException
                ) -> tuple[Reject, str]:
        if isinstance(exc, RecursionError):
            return self._deep(line_no, line, depth.path_in(line))
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
            yield Row(number, item[3])
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
