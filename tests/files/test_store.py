"""Files read as a cluster reads them: the ranges of a file own every line exactly once (a
line is owned by the range its first byte lies in, whatever the range size), and several
files read in order number their lines and offsets on from file to file."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._files.lines import Chunk, read_chunks, read_files
from evalstream._files.store import InputFile, TaskReader, input_volume, resolve, tasks_of


def _lines_of(reader: TaskReader) -> list[tuple[int, bytes]]:
    found = []
    for item in read_chunks(reader, 1 << 20, first_offset=reader.start):
        assert type(item) is Chunk
        found += list(zip(item.offsets(), item.lines, strict=True))
    return found


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=300),
                      st.lists(st.sampled_from([b"\n", b"ab", b"{}", b"\xef\xbb\xbf", b"x" * 50]),
                               max_size=30).map(b"".join)),
       range_bytes=st.integers(1, 40))
def test_ranges_own_every_line_once(tmp_path_factory: object, data: bytes,
                                    range_bytes: int) -> None:
    path = Path(str(tmp_path_factory.mktemp("r"))) / "f.jsonl"  # type: ignore[attr-defined]
    path.write_bytes(data)
    # The oracle: every line start (after each newline but the last byte) and its line.
    expected = list(zip(*_oracle(data), strict=True))
    # A local file's ranges are aligned in the client, a URL's by each task: the same lines.
    import fsspec

    url = f"memory://ranges/{len(data)}-{range_bytes}.jsonl"
    fsspec.filesystem("memory").pipe(url, data)
    for name in (str(path), url):
        got = []
        for task in tasks_of([InputFile(name, len(data), False)], range_bytes):
            assert task.aligned is (name == str(path))
            with TaskReader(task) as reader:
                assert reader.start >= task.start
                got += _lines_of(reader) if len(data) else []
        assert got == expected, name


def _oracle(data: bytes) -> tuple[list[int], list[bytes]]:
    at = 0
    if data.startswith(b"\xef\xbb\xbf"):  # a BOM at the start of the file is no text
        data, at = data[3:], 3
    if not data:
        return [], []
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    starts = []
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    return starts, lines


def test_several_files_read_as_one(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"a1\na2")  # no final newline: a2 ends with the file
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(b"\xef\xbb\xbfb1\n\nb3\n"))  # BOM
    (tmp_path / "c.jsonl").write_bytes(b"")
    (tmp_path / "d.jsonl").write_bytes(b"d1\n")
    files = resolve([str(tmp_path / "a.jsonl"), str(tmp_path / "*.jsonl.gz"),
                     str(tmp_path / "[cd].jsonl")])
    assert [Path(f.url).name for f in files] == ["a.jsonl", "b.jsonl.gz", "c.jsonl", "d.jsonl"]
    got = []
    for item in read_files([f.url for f in files]):
        assert type(item) is Chunk
        got += [(item.line + i, at, line) for i, (at, line)
                in enumerate(zip(item.offsets(), item.lines, strict=True))]
    # Offsets count each file's decompressed bytes: a (5), b (3 + 3 + 1 + 3 = 10), c (0).
    assert got == [(1, 0, b"a1"), (2, 3, b"a2"), (3, 8, b"b1"), (4, 11, b""), (5, 12, b"b3"),
                   (6, 15, b"d1")]


def test_a_single_stream_is_unchanged() -> None:
    one = list(read_chunks(io.BufferedReader(io.BytesIO(b"\xef\xbb\xbfx\ny\n"))))
    assert one == [Chunk(1, 3, [b"x", b"y"])]


def test_copy_range_streams_in_blocks_and_refuses_a_short_part(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstream._files import store
    from evalstream.errors import OutputError

    part = tmp_path / "part"
    part.write_bytes(bytes(range(256)) * 40)
    monkeypatch.setattr(store, "COPY_BLOCK", 1000)
    blocks: list[bytes] = []
    store.copy_range(str(part), 7, 9000, blocks.append)
    assert b"".join(blocks) == part.read_bytes()[7:9000]
    assert max(map(len, blocks)) == 1000  # never the whole range at once
    with pytest.raises(OutputError, match=r"ends at byte 10,240, before byte 20,000"):
        store.copy_range(str(part), 0, 20_000, blocks.append)


def test_input_volume_is_what_a_run_reads_at_least(tmp_path: Path) -> None:
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(b"x" * 1000)
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress(b"y" * 5000))
    assert input_volume(None, str(plain)) == 1000
    assert input_volume(None, "-") is None  # stdin: not known up front
    assert input_volume(None, str(packed)) is None
    files = resolve([str(plain), str(packed)])
    # A compressed file counts its own size, which its text only exceeds.
    assert input_volume(files, str(plain)) == 1000 + packed.stat().st_size
