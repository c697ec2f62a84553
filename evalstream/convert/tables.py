"""Rows from tables and JSON, in bounded memory and input order.

CSV, TSV and Parquet are read by Polars, as lazy scans collected in batches of
``BATCH_ROWS`` rows (Polars' streaming engine): memory holds one batch, never the file.
CSV cells are read as text (no type inference: a CSV holds text, and ``007`` must stay
``007``). JSONL is read with evalstream's own line reader and msgspec, one line at a time:
Polars infers one schema for all lines and stops at the first line that differs, where each
line here is its own row. A JSON array is streamed element by element with ijson.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO

import msgspec

from evalstream.cases.rejects import explain, long_line_reject
from evalstream.convert.rows import Row, RowProblem, type_word
from evalstream.errors import InputError, WrongFileError
from evalstream.files.lines import Chunk, open_input, read_chunks
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
    """The column names of a lazy scan (reads only the header or the schema)."""
    import polars as pl

    try:
        return list(scan.collect_schema().names())
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"cannot read {name}: {_first_line(exc)}") from exc


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
_decode = msgspec.json.Decoder().decode


def jsonl_rows(stream: BinaryIO, max_line_bytes: int) -> Iterator[Row]:
    """One row a line; blank lines counted as blank; a line that is not a JSON object is a
    row with its problem (the sentence ``validate`` gives for malformed JSON)."""
    for item in read_chunks(stream, max_line_bytes):
        if not isinstance(item, Chunk):
            rej = long_line_reject(item, max_line_bytes)
            yield Row(item.line, None, RowProblem(rej.error, None, "$", kind="line too long"),
                      raw=item.head)
            continue
        for i, line in enumerate(item.lines):
            number = item.line + i
            if not line.strip():
                yield Row(number, None, blank=True)
                continue
            try:
                value = _decode(line)
            except (msgspec.DecodeError, RecursionError) as exc:
                path, sentence = explain(exc, line)
                yield Row(number, None, RowProblem(_as_row(sentence), None, path,
                                                   kind="malformed JSON"), raw=line)
                continue
            if not isinstance(value, dict):
                yield Row(number, None, RowProblem(
                    f"The line is {type_word(value)}, not a JSON object; each line must be one "
                    "object.", None, "$", kind="not an object"), raw=line)
                continue
            yield Row(number, value)


def _as_row(sentence: str) -> str:
    # validate's sentences speak of cases; here a line is a row of the source.
    return sentence.replace("each case must be", "each line must be")


def json_array_rows(stream: BinaryIO, name: str) -> Iterator[Row]:
    """The elements of a top-level JSON array, one row each (1-based element numbers)."""
    import ijson

    head, stream = head_of(stream, 1 << 12)
    start = head.lstrip()[:1]
    if start != b"[":
        what = "an object" if start == b"{" else "not a JSON array"
        raise WrongFileError(f"{name} is {what}; --from json reads a top-level array of row "
                             "objects (for a list under a key: `jq -c '.KEY[]' FILE` and "
                             "--from jsonl).")
    number = 0
    try:
        for value in ijson.items(stream, "item", use_float=True):
            number += 1
            if isinstance(value, dict):
                yield Row(number, value)
            else:
                yield Row(number, None, RowProblem(
                    f"Element {number} is {type_word(value)}, not an object; each element of "
                    "the array must be one row object.", None, "$", kind="not an object"))
    except ijson.JSONError as exc:
        raise InputError(f"cannot read {name} as a JSON array after element {number}: "
                         f"{_first_line(exc)}") from exc
