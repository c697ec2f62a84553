"""The streaming reader: line numbers, offsets, BOM, CRLF, long lines, any block size."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._files.lines import (
    BOM,
    Chunk,
    HeldInput,
    LongLine,
    RangeReader,
    open_input,
    read_chunks,
)
from evalstream.errors import InputError


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


@pytest.mark.slow
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


@settings(max_examples=300, deadline=None)
@given(data=st.lists(st.sampled_from([b"ab", b"\n", b"c"]), max_size=30).map(b"".join),
       pos=st.integers(0, 70), limit=st.integers(0, 70), size=st.integers(1, 70))
def test_a_descriptor_and_a_file_object_find_the_same_lines(
        tmp_path_factory: Any, data: bytes, pos: int, limit: int, size: int) -> None:
    from evalstream._files.lines import line_start, read_line_at

    # The reference: the first line start in [pos, limit), else limit; a line's first bytes.
    starts = [i for i in range(max(pos, 0), min(limit, len(data) + 1))
              if i == 0 or data[i - 1:i] == b"\n"]
    expected_start = 0 if pos <= 0 else (starts[0] if starts else limit)
    expected_line = data[pos:].split(b"\n")[0][:size]
    path = tmp_path_factory.mktemp("positions") / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        with open(path, "rb") as f:
            for source in (fd, f):
                assert line_start(source, pos, limit) == expected_start
                assert read_line_at(source, pos, size) == expected_line
                with RangeReader(source, pos, limit) as r:
                    assert r.read() == data[pos:limit]
    finally:
        os.close(fd)


# -- byte ranges for workers ---------------------------------------------------------------------
def _reference_starts(data: bytes, range_bytes: int) -> list[int]:
    """Range starts the obvious way: 0, and the first line start at or after each nominal
    boundary, without repeats or the end of the file."""
    starts = {0}
    for nominal in range(range_bytes, len(data), range_bytes):
        nl = data.find(b"\n", nominal - 1)
        if nl >= 0 and nl + 1 < len(data):
            starts.add(nl + 1)
    return sorted(starts)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 60), max_size=40), st.integers(1, 50), st.booleans())
def test_ranges_are_line_aligned_contiguous_and_never_empty(
        tmp_path_factory: Any, lengths: list[int], range_bytes: int, last_newline: bool) -> None:
    from evalstream._files.lines import range_tasks

    data = b"\n".join(b"x" * n for n in lengths) + (b"\n" if last_newline else b"")
    path = tmp_path_factory.mktemp("ranges") / "in.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        tasks = range_tasks(fd, len(data), range_bytes)
    finally:
        os.close(fd)
    if not data:
        assert tasks == []
        return
    assert [i for i, _, _ in tasks] == list(range(len(tasks)))
    assert [a for _, a, _ in tasks] == _reference_starts(data, range_bytes)
    assert tasks[-1][2] == len(data)
    for (_, a, b), (_, c, _) in zip(tasks, tasks[1:], strict=False):
        assert a < b == c


def test_ranges_over_a_long_line_read_each_byte_once(tmp_path: Path,
                                                     monkeypatch: Any) -> None:
    from evalstream._files import lines

    size = 64 << 20  # one 64 MiB line between two short ones, ranges of 1 MiB
    path = tmp_path / "long.jsonl"
    with open(path, "wb") as f:
        f.write(b"first\n")
        f.seek(size - 6)  # a sparse hole of NUL bytes: no newline in it
        f.write(b"\nlast\n")
    read = []
    preadv = os.preadv

    def counted(fd: int, buffers: list[memoryview], at: int) -> int:
        got = preadv(fd, buffers, at)
        read.append(got)
        return got

    monkeypatch.setattr(lines.os, "preadv", counted)
    fd = os.open(path, os.O_RDONLY)
    try:
        tasks = lines.range_tasks(fd, size, 1 << 20)
    finally:
        os.close(fd)
    # The first range owns the lines that start in its first MiB: `first` and the long one.
    assert [(a, b) for _, a, b in tasks] == [(0, size - 5), (size - 5, size)]
    # Linear: about the file once (a search per range was ~32 times the file here).
    assert sum(read) <= size + (1 << 16), sum(read)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_a_held_input_reads_the_file_it_opened_every_time(tmp_path: Path, suffix: str) -> None:
    data = b"".join(b'{"n": %d}\n' % i for i in range(50_000))
    packed = {".jsonl": data, ".jsonl.gz": gzip.compress(data),
              ".jsonl.zst": zstandard.ZstdCompressor().compress(data)}[suffix]
    path = tmp_path / f"in{suffix}"
    path.write_bytes(packed)
    with HeldInput(str(path)) as held:
        assert not held.spooled and held.head(4) == packed[:4]
        with held.open() as first:
            assert first.read(10) == data[:10]  # a reading left half-way
        (tmp_path / "new").write_bytes(b"other\n")
        (tmp_path / "new").replace(path)  # a new file renamed into place
        for _ in range(2):
            with held.open() as again:
                assert again.read() == data


def test_a_folder_is_no_held_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=f"cannot read {tmp_path}: Is a directory"):
        HeldInput(str(tmp_path))


def test_a_held_input_changed_in_place_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"n": 1}\n')
    with HeldInput(str(path)) as held:
        held.open().close()
        with open(path, "ab") as f:
            f.write(b'{"n": 2}\n')
        with pytest.raises(InputError, match="in.jsonl changed while it was read"):
            held.open()
        with pytest.raises(InputError, match="changed while it was read"):
            held.check_unchanged()


def test_a_stream_is_held_as_a_copy_nobody_can_see(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    spool = tmp_path / "spool"
    spool.mkdir()
    data = b'{"n": 1}\n' * 100_000
    writer = subprocess.Popen([sys.executable, "-c", "import sys; open(sys.argv[1], 'wb')"
                               ".write(b'{\"n\": 1}\\n' * 100_000)", str(fifo)])
    with HeldInput(str(fifo), str(spool)) as held:
        assert writer.wait(timeout=30) == 0
        assert held.spooled and list(spool.iterdir()) == []
        for _ in range(2):
            with held.open() as stream:
                assert stream.read() == data
