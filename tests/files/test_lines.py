"""The streaming reader: line numbers, offsets, BOM, CRLF, long lines, any block size."""

from __future__ import annotations

import gzip
import io
import os

import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream.files.lines import BOM, Chunk, LongLine, RangeReader, open_input, read_chunks


def flatten(data: bytes, max_line_bytes: int = 1 << 30, block_size: int = 1 << 20,
            ) -> list[tuple[int, int, bytes | int]]:
    """(line number, offset, line bytes or the size of a long line) for every line."""
    rows: list[tuple[int, int, bytes | int]] = []
    for item in read_chunks(io.BytesIO(data), max_line_bytes, block_size):
        if isinstance(item, Chunk):
            rows += zip(range(item.line, item.line + len(item.lines)), item.offsets(), item.lines,
                        strict=True)
        else:
            assert isinstance(item, LongLine)
            rows.append((item.line, item.offset, item.size))
    return rows


def reference(data: bytes, max_line_bytes: int = 1 << 30) -> list[tuple[int, int, bytes | int]]:
    """The same, computed the obvious way on the whole input."""
    start = len(BOM) if data.startswith(BOM) else 0
    body = data[start:]
    parts = body.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    rows: list[tuple[int, int, bytes | int]] = []
    offset = start
    for n, part in enumerate(parts, 1):
        rows.append((n, offset, part if len(part) <= max_line_bytes else len(part)))
        offset += len(part) + 1
    return rows


def test_lines_numbers_and_offsets() -> None:
    data = b'{"a":1}\n\n  \r\n{"b":2}\r\nlast-no-newline'
    assert flatten(data) == [(1, 0, b'{"a":1}'), (2, 8, b""), (3, 9, b"  \r"),
                             (4, 13, b'{"b":2}\r'), (5, 22, b"last-no-newline")]


def test_bom_is_removed_only_at_the_start() -> None:
    data = BOM + b"one\n" + BOM + b"two\n"
    assert flatten(data) == [(1, 3, b"one"), (2, 7, BOM + b"two")]


def test_empty_input_has_no_lines() -> None:
    assert flatten(b"") == []
    assert flatten(b"\n") == [(1, 0, b"")]


def test_long_lines_are_skipped_not_assembled() -> None:
    data = b"short\n" + b"x" * 100 + b"\nok\n" + b"y" * 50
    rows = flatten(data, max_line_bytes=20, block_size=7)
    assert rows == [(1, 0, b"short"), (2, 6, 100), (3, 107, b"ok"), (4, 110, 50)]


def test_long_line_keeps_its_head_for_the_reject() -> None:
    data = b"z" * 100_000 + b"\n"
    (item,) = list(read_chunks(io.BytesIO(data), max_line_bytes=10, block_size=4096))
    assert isinstance(item, LongLine)
    assert (item.size, item.head) == (100_000, b"z" * 8_000)


@settings(max_examples=300, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"\n", b"\r", b"{}", b"\xef\xbb\xbf", b"\xff", b" "]),
                     max_size=60).map(b"".join),
       block_size=st.integers(1, 16), max_line=st.integers(1, 12))
def test_any_block_size_gives_the_same_lines(data: bytes, block_size: int, max_line: int) -> None:
    assert flatten(data, max_line, block_size) == reference(data, max_line)


def test_compressed_inputs(tmp_path: object) -> None:
    from pathlib import Path

    base = Path(str(tmp_path))
    data = b'{"id":"a"}\n{"id":"b"}\n'
    (base / "x.jsonl.gz").write_bytes(gzip.compress(data))
    (base / "x.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    for name in ("x.jsonl.gz", "x.jsonl.zst"):
        with open_input(str(base / name)) as stream:
            assert [ln for c in read_chunks(stream) for ln in c.lines] == [b'{"id":"a"}',
                                                                         b'{"id":"b"}']


def test_range_reader_reads_only_its_range(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "r"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        r = RangeReader(fd, 2, 7)
        assert r.read(3) + r.read(10) + r.read(1) == b"23456"
    finally:
        os.close(fd)
