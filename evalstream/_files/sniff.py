"""What a file plainly is, from its first bytes: for inputs that are not JSONL at all.

A CSV, a pretty-printed JSON document, a Parquet file or gzip data without a ``.gz`` name
read as JSONL gives one reject per line and exit 1, the same as one bad line in a million.
``diagnose`` looks at the first bytes and names what the file is, with the fix, or returns
None for anything that may be JSONL (bad lines in a JSONL file stay per-line rejects).
``check_cases_input`` and ``check_cases_stream`` raise ``WrongFileError`` (exit 4) for
commands that read cases; ``head_of`` peeks at a stream without losing a byte of it.

This is the bottom layer: it imports nothing of evalstream but its errors. It says what a
file is and the fixes that need no other command; how a file of another format becomes
cases (``convert --from ...``) is convert's to say, asked for through ``sniffed.way_in``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zlib
from typing import BinaryIO

from evalstream._files.sniffed import Sniffed, quoted, way_in
from evalstream.errors import InputError, WrongFileError

HEAD_BYTES = 1 << 16  # enough for several lines of any table, and the magic of any format
_LINES = 8  # lines of text looked at (the first may be a header)


_NOT_DATA = "give the dataset, not a picture: evaluation cases must be JSONL text"
# (magic bytes, kind, what, fix); checked in order on the file's raw first bytes. A fix ""
# (or the first step of one): the way in is to convert the file, which convert says.
_MAGIC: list[tuple[bytes, str, str, str]] = [
    (b"PAR1", "parquet", "a Parquet file", ""),
    (b"ARROW1", "arrow", "an Arrow IPC file", ""),
    (b"\xff\xff\xff\xff", "arrow-stream", "Arrow IPC stream data (a Hugging Face dataset shard?)",
     ""),
    (b"SQLite format 3\x00", "sqlite", "an SQLite database",
     "export a table as CSV (`sqlite3 -header -csv FILE 'select * from T' > t.csv`)"),
    (b"%PDF-", "pdf", "a PDF document", "evaluation cases must be JSONL text"),
    (b"BZh", "bzip2", "bzip2-compressed data",
     "decompress it first (`bzip2 -dc FILE > cases.jsonl`), or pipe it in: "
     "`bzip2 -dc FILE | evalstream ... -`"),
    (b"\xfd7zXZ\x00", "xz", "xz-compressed data",
     "decompress it first (`xz -dc FILE > cases.jsonl`), or pipe it in: "
     "`xz -dc FILE | evalstream ... -`"),
    (b"7z\xbc\xaf\x27\x1c", "7z", "a 7-Zip archive", "extract the JSONL file from it first"),
    # Images: read as JSONL, a PNG was 522 lines of garbage rejects and exit 1 (issue 30).
    (b"\x89PNG\r\n\x1a\n", "image", "a PNG image", _NOT_DATA),
    (b"\xff\xd8\xff", "image", "a JPEG image", _NOT_DATA),
    (b"GIF87a", "image", "a GIF image", _NOT_DATA),
    (b"GIF89a", "image", "a GIF image", _NOT_DATA),
]
_GZIP, _ZSTD, _ZIP = b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"PK\x03\x04"
_UTF16 = (b"\xff\xfe", b"\xfe\xff")
_UTF32 = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
_BOM = b"\xef\xbb\xbf"
_MARKUP = re.compile(rb"\s*(<!doctype html|<html|<\?xml|<!--|<head|<body|<table)", re.I)
_INSPECT_JSON = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
# `promptfoo eval -o results.json`: an object whose first member is the eval's id.
_PROMPTFOO_JSON = re.compile(rb'^\s*\{\s*"evalId"\s*:\s*"')


def diagnose(head: bytes, name: str = "") -> Sniffed | None:
    """What the file whose first bytes are ``head`` plainly is, or None when it may be JSONL.

    ``name`` is its path (``-`` for stdin): a ``.gz``/``.zst`` name makes gzip/zstd
    bytes expected rather than wrong (the caller then diagnoses the decompressed head).
    """
    lower = name.lower()
    if head.startswith(_GZIP):
        return None if lower.endswith(".gz") else _misnamed("gzip", ".gz", name)
    if head.startswith(_ZSTD):
        return None if lower.endswith(".zst") else _misnamed("zstd", ".zst", name)
    if head.startswith(_ZIP):
        return _zip(head)
    for magic, kind, what, fix in _MAGIC:
        if head.startswith(magic):
            return Sniffed(kind, what, fix)
    if _is_tar(head):
        return Sniffed("tar", "a tar archive", "extract the JSONL file from it first "
                       "(`tar -xf FILE`)")
    if head.startswith(_UTF32) or head.startswith(_UTF16) or _nul_between_chars(head):
        return Sniffed("utf-16", "UTF-16 text", "convert it to UTF-8 first: "
                       "`iconv -f UTF-16 -t UTF-8 FILE > cases.utf8.jsonl`")
    if lower.endswith((".gz", ".zst")) and head:
        ext = ".gz" if lower.endswith(".gz") else ".zst"
        return Sniffed("not-compressed", f"named {ext} but not compressed",
                       f"rename it without {ext}")
    return _text(head.removeprefix(_BOM))


def _misnamed(fmt: str, ext: str, name: str) -> Sniffed:
    tool = "gzip" if fmt == "gzip" else "zstd"
    if name in ("", "-"):  # a stream has no name to fix
        return Sniffed(fmt, f"{fmt}-compressed data",
                       f"decompress it on the way in (`{tool} -dc FILE | evalstream ... -`)")
    return Sniffed(fmt, f"{fmt}-compressed data without a {ext} name",
                   f"rename it to end in {ext} (`mv FILE FILE{ext}`), or decompress it first")


def _is_tar(head: bytes) -> bool:
    """Whether ``head`` opens with a tar header: ``ustar`` at byte 257 (POSIX and GNU tar),
    and the header's checksum right, so that text which happens to hold "mustard" there is
    never called an archive."""
    if len(head) < 512 or head[257:263] not in (b"ustar\x00", b"ustar "):
        return False
    try:
        stored = int(head[148:156].strip(b" \x00") or b"-1", 8)
    except ValueError:
        return False
    return stored == sum(head[:148]) + 8 * 32 + sum(head[156:512])


def _nul_between_chars(head: bytes) -> bool:
    # UTF-16 without a byte order mark: ASCII text then has a NUL in every other byte.
    sample = head[:200]
    return len(sample) >= 8 and sample.count(0) >= len(sample) // 3


def _zip(head: bytes) -> Sniffed:
    if b"_journal/start.json" in head or b"header.json" in head or b"samples/" in head:
        return Sniffed("inspect-eval", "an inspect_ai eval log (.eval)", "")
    if b"[Content_Types].xml" in head or b"xl/" in head:
        return Sniffed("xlsx", "an Excel or other Office document", "save the sheet as CSV")
    return Sniffed("zip", "a zip archive", "extract the JSONL file from it first (`unzip FILE`)")


def _text(head: bytes) -> Sniffed | None:
    start = head.lstrip()
    if not start:
        return None
    if _MARKUP.match(start):
        return Sniffed("html", "an HTML or XML page", "download the data file itself, "
                       "not the web page that links to it")
    if _INSPECT_JSON.match(start) and b'"eval"' in start:
        return Sniffed("inspect-json", "an inspect_ai eval log (JSON)", "")
    if _PROMPTFOO_JSON.match(start) and b'"results"' in start:
        return Sniffed("promptfoo-results", "a promptfoo results file (`promptfoo eval -o`)", "")
    lines = _first_lines(start)
    first = lines[0].strip()
    if any(_is_object_line(line) for line in lines):
        return None  # some line is a case-shaped object: bad lines get their own rejects
    if first in (b"{", b"["):
        return _pretty(first)
    if first.startswith(b"["):
        return _array(first, len(lines), complete=len(start) < HEAD_BYTES)
    if first.startswith(b"{"):
        if len(lines) > 1 and re.match(rb'\s+("|\}|\])', lines[1]):
            return _pretty(b"{")
        return None
    return _table(start)


def _first_lines(start: bytes) -> list[bytes]:
    lines = [x for x in start.split(b"\n")[:_LINES + 1] if x.strip()]
    if len(start) >= HEAD_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut by the head
    return lines[:_LINES] or [start]


def _is_object_line(line: bytes) -> bool:
    text = line.strip()
    if not text.startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _pretty(first: bytes) -> Sniffed:
    if first == b"[":
        return _ARRAY
    return Sniffed("json-document", "one pretty-printed JSON document",
                   "if it holds one case, write it on one line (`jq -c . FILE > cases.jsonl`); "
                   "if it holds a list of cases under a key, `jq -c '.KEY[]' FILE > "
                   "cases.jsonl`")


def _array(first: bytes, lines: int, complete: bool) -> Sniffed | None:
    try:
        value = json.loads(first)
    except (ValueError, RecursionError):
        value = None
    if value is not None and lines > 1 and complete:
        return None  # a one-line array among other lines: a bad line, not a JSON file
    return _ARRAY


_ARRAY = Sniffed("json-array", "a JSON array",
                 "write one element a line (`jq -c '.[]' FILE > cases.jsonl`)")


def _table(start: bytes) -> Sniffed | None:
    text = start[:HEAD_BYTES].decode("utf-8", "replace")
    if len(start) >= HEAD_BYTES:
        text = text[:text.rfind("\n") + 1] or text
    for delimiter, kind in (("\t", "tsv"), (",", "csv"), (";", "csv"), ("|", "csv")):
        try:
            rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
                    if r][:_LINES]
        except csv.Error:  # e.g. a NUL or a lone CR outside quotes: not a table this way
            continue
        widths = {len(r) for r in rows}
        # Plainly a table: rows of one width (two columns or more) under a header that names
        # every column; a lone line only if its cells look like column names (a damaged case
        # line such as `z"id":"0", input:""` is not a table).
        if rows and len(widths) == 1 and widths.pop() >= 2 and \
                all(cell.strip() for cell in rows[0]) and \
                (len(rows) >= 2 or all(_COLUMN_NAME.match(cell) for cell in rows[0])):
            columns = ", ".join(_shown(c) for c in rows[0][:8])
            more = ", ..." if len(rows[0]) > 8 else ""
            label = "a TSV table" if kind == "tsv" else "a CSV table"
            if delimiter in ";|":
                label += f" (separated by {delimiter!r})"
            return Sniffed(kind, f"{label} (first row: {columns}{more})", "", delimiter)
    return None


_COLUMN_NAME = re.compile(r"^\s*[\w .\-/()]+\s*$")


def _shown(cell: str) -> str:
    cell = cell.strip()
    return cell if len(cell) <= 40 and cell.isprintable() else json.dumps(cell[:40])


# -- inputs ---------------------------------------------------------------------------------------
def read_head(path: str, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of the file at ``path``."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def decompressed_head(head: bytes, name: str) -> bytes:
    """The first bytes of the content of a ``.gz``/``.zst`` file whose raw head is ``head``
    (as much as ``head`` holds); ``head`` itself for other names."""
    lower = name.lower()
    try:
        if lower.endswith(".gz") and head.startswith(_GZIP):
            return zlib.decompressobj(wbits=31).decompress(head, HEAD_BYTES)
        if lower.endswith(".zst") and head.startswith(_ZSTD):
            import zstandard

            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(head))
            try:
                return reader.read(HEAD_BYTES)
            except zstandard.ZstdError:
                return b""
    except zlib.error:
        return b""
    return head


# -- which evalstream JSONL a file holds ----------------------------------------------------------
# The top-level keys that mark each kind of line (all of them must be present).
_KINDS = (
    ("judge states", ("case_id", "rubric_id", "question", "state")),
    ("verdicts", ("case_id", "rubric_id", "status")),
    ("rejects", ("line", "offset", "error", "raw")),
    ("cases", ("id", "input", "output")),
    ("openai chat", ("messages",)),  # after cases, which may have messages too
    ("otel traces", ("resourceSpans",)),  # OTLP JSON, as a collector's file exporter writes
    ("batch requests", ("custom_id", "method", "body")),  # OpenAI Batch API, vllm run-batch
    ("message batch requests", ("custom_id", "params")),  # Anthropic Message Batches
    ("batch results", ("custom_id",)),  # after the requests, which have a custom_id too
)
_SAID = {"cases": "a cases file", "verdicts": "a verdicts file",
         "judge states": "a judge-states file (build's output)", "rejects": "a rejects file",
         "openai chat": "OpenAI chat transcripts",
         "otel traces": "OpenTelemetry traces (OTLP JSON)",
         "batch requests": "a batch request file (`evalstream batch prepare` writes them)",
         "message batch requests": "an Anthropic batch request file (`evalstream batch "
                                   "prepare` writes them)",
         "batch results": "a batch result file"}
# What each reader accepts: a verdict file may be build's output (exact verdicts, and judge
# states counted as checks without a verdict yet); judge reads build's output only.
ACCEPTS = {"cases": ("cases",), "verdicts": ("verdicts", "judge states"),
           "judge states": ("judge states", "verdicts"), "batch results": ("batch results",)}


def said(kind: str) -> str:
    """A kind of ``jsonl_kind`` said for people: ``a cases file``."""
    return _SAID.get(kind, kind)


def jsonl_kind(head: bytes) -> str | None:
    """Which evalstream JSONL the first JSON-object line of ``head`` plainly is (``cases``,
    ``verdicts``, ``judge states``, ``rejects``), or None when no line tells."""
    for line in _first_lines(head.removeprefix(_BOM).lstrip()):
        text = line.strip()
        if not text.startswith(b"{"):
            continue
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            kind = next((kind for kind, keys in _KINDS if all(k in value for k in keys)), None)
            if kind == "openai chat" and (not isinstance(value["messages"], list) or
                                          {"id", "input", "output"} & set(value)):
                return None  # a case with a damaged key, not a transcript: the reject says
            return kind
    return None


def _check_kind(head: bytes, name: str, want: str, usage: str) -> None:
    kind = jsonl_kind(head)
    if kind is not None and kind not in ACCEPTS[want]:
        said = "the standard input" if name == "-" else name
        way = way_in(Sniffed(kind, _SAID[kind], "")) if want == "cases" else None
        if way:  # lines another format holds (OpenAI chats): convert says how they become cases
            usage = "; " + way.replace("FILE", quoted(name))
        raise WrongFileError(f"{said} looks like {_SAID[kind]}, not {_SAID[want]} "
                             f"(its first line has {_keys(kind)}){usage}.")


def _keys(kind: str) -> str:
    keys = next(k for name, k in _KINDS if name == kind)
    return ", ".join(f"`{k}`" for k in keys)


def check_input(path: str, want: str = "cases", usage: str = "") -> None:
    """Raise ``WrongFileError`` when the file at ``path`` is plainly not JSONL of the kind
    ``want`` (``cases``, ``verdicts``, ``judge states``, ``batch results``): another format,
    or another of evalstream's own files. ``usage`` ends the sentence (e.g. the command's
    argument order)."""
    if path == "-":
        return
    check_head(read_head(path), path, want, usage)


def check_head(head: bytes, name: str, want: str = "cases", usage: str = "") -> None:
    """Raise ``WrongFileError`` when a file called ``name`` whose first bytes (as stored,
    not decompressed) are ``head`` is plainly not JSONL of the kind ``want``."""
    content = decompressed_head(head, name)
    found = diagnose(head, name) or diagnose(content, "")
    if found is not None:
        raise WrongFileError(found.sentence(name))
    _check_kind(content, name, want, usage)


def check_cases_input(path: str) -> None:
    """Raise ``WrongFileError`` when the file at ``path`` is plainly not JSONL cases."""
    check_input(path, "cases", _CASES_USAGE)


def check_cases_head(head: bytes, name: str) -> None:
    """Raise ``WrongFileError`` when a file called ``name`` whose first bytes (as stored,
    not decompressed) are ``head`` is plainly not JSONL cases (a cluster task's check of a
    file it reads)."""
    check_head(head, name, "cases", _CASES_USAGE)


_CASES_USAGE = "; build, validate and stats read cases (`id`, `input`, `output`)"


def head_of(stream: BinaryIO, size: int = HEAD_BYTES) -> tuple[bytes, BinaryIO]:
    """Up to ``size`` first bytes of ``stream``, and a stream that still yields every byte
    (the same stream when it can peek or seek; else one that replays the head)."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        head = peek(size)[:size]
        if len(head) >= size or not head:
            return head, stream
    if _seekable(stream):
        at = stream.tell()
        head = _read_up_to(stream, size)
        stream.seek(at)
        return head, stream
    head = _read_up_to(stream, size)
    return head, io.BufferedReader(_Replay(head, stream), 1 << 18)


def _read_up_to(stream: BinaryIO, size: int) -> bytes:
    """``size`` bytes, or fewer at the end: a pipe may return less than asked at a time."""
    parts, got = [], 0
    while got < size:
        part = stream.read(size - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _seekable(stream: BinaryIO) -> bool:
    try:
        return stream.seekable()
    except (AttributeError, ValueError, OSError):
        return False


class _Replay(io.RawIOBase):
    """The bytes already read from a stream, then the rest of the stream."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def check_stream(stream: BinaryIO, name: str = "-", want: str = "cases",
                 usage: str = _CASES_USAGE) -> BinaryIO:
    """Raise ``WrongFileError`` when ``stream`` (already decompressed) is plainly not JSONL of
    the kind ``want``; else return the stream to read it from, with nothing lost."""
    head, stream = head_of(stream)
    found = diagnose(head, "")
    if found is not None:
        raise WrongFileError(found.sentence(name))
    _check_kind(head, name, want, usage)
    return stream


def check_cases_stream(stream: BinaryIO, name: str = "-") -> BinaryIO:
    """Raise ``WrongFileError`` when ``stream`` is plainly not JSONL cases; else return the
    stream to read it from, with nothing lost."""
    return check_stream(stream, name)
